/*
 * test_log: the log ring. Lines get increasing sequence numbers; reading
 * after a sequence number returns only newer lines; past 1000 lines the ring
 * keeps the newest 1000; lines below the level are discarded; each line
 * records its thread's name; a log file receives the lines; four threads
 * logging at once lose no line; a limit (lc_log_limit) says the first
 * events in full, then one summary a period counting the events held. The ring is process-wide, so
 * every check is relative to lc_log_last_seq() at its start. Echo to stderr is off.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "testutil.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/thread.h"

static lc_log_entry buf[LC_LOG_RING_DEFAULT + 100];

static void test_sequence_and_read(void)
{
    uint64_t base = lc_log_last_seq();
    LC_INFO("first %d", 1);
    LC_WARN("second %s", "two");
    LC_ERROR("third");
    CHECK_EQ_U64(lc_log_last_seq(), base + 3);

    uint64_t next = 0;
    size_t n = lc_log_read(base, buf, 10, &next);
    CHECK_EQ_U64(n, 3);
    CHECK_EQ_U64(next, base + 3);
    CHECK_EQ_U64(buf[0].seq, base + 1);
    CHECK_EQ_U64(buf[1].seq, base + 2);
    CHECK_EQ_U64(buf[2].seq, base + 3);
    CHECK_EQ_STR(buf[0].text, "first 1");
    CHECK_EQ_STR(buf[1].text, "second two");
    CHECK_EQ_STR(buf[2].text, "third");
    CHECK_EQ_INT(buf[0].level, LC_LOG_INFO);
    CHECK_EQ_INT(buf[1].level, LC_LOG_WARN);
    CHECK_EQ_INT(buf[2].level, LC_LOG_ERROR);
    CHECK_EQ_STR(buf[0].thread, "main");
    CHECK(buf[0].wall_time > 1.5e9); /* after 2017: a real wall-clock stamp */
    CHECK(buf[0].wall_time <= buf[2].wall_time);

    /* Only lines after `after`; a reader continues from next_after. */
    n = lc_log_read(base + 1, buf, 10, &next);
    CHECK_EQ_U64(n, 2);
    CHECK_EQ_U64(buf[0].seq, base + 2);
    n = lc_log_read(next, buf, 10, &next);
    CHECK_EQ_U64(n, 0);
    CHECK_EQ_U64(next, base + 3);
    LC_INFO("fourth");
    n = lc_log_read(next, buf, 10, &next);
    CHECK_EQ_U64(n, 1);
    CHECK_EQ_STR(buf[0].text, "fourth");
    CHECK_EQ_U64(next, base + 4);

    /* max limits the copy, oldest first. */
    n = lc_log_read(base, buf, 2, &next);
    CHECK_EQ_U64(n, 2);
    CHECK_EQ_U64(buf[1].seq, base + 2);
    CHECK_EQ_U64(next, base + 2);
    CHECK_EQ_U64(lc_log_read(base, buf, 0, NULL), 0);
    /* Asking beyond the newest returns nothing. */
    CHECK_EQ_U64(lc_log_read(base + 100, buf, 10, &next), 0);
    CHECK_EQ_U64(next, base + 100);

    /* Long lines are cut, not overflowed. */
    char longer[LC_LOG_LINE_MAX * 2];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    LC_INFO("%s", longer);
    n = lc_log_read(base + 4, buf, 10, NULL);
    CHECK_EQ_U64(n, 1);
    CHECK_EQ_U64(strlen(buf[0].text), LC_LOG_LINE_MAX - 1);
}

static void test_ring_wraps(void)
{
    uint64_t base = lc_log_last_seq();
    for (int i = 0; i < 1500; i++)
        LC_INFO("line %d", i);
    uint64_t last = lc_log_last_seq();
    CHECK_EQ_U64(last, base + 1500);

    uint64_t next = 0;
    size_t n = lc_log_read(0, buf, sizeof buf / sizeof buf[0], &next);
    CHECK_EQ_U64(n, LC_LOG_RING_DEFAULT);
    CHECK_EQ_U64(buf[0].seq, last - 999);
    CHECK_EQ_U64(buf[n - 1].seq, last);
    CHECK_EQ_U64(next, last);
    CHECK_EQ_STR(buf[0].text, "line 500");
    CHECK_EQ_STR(buf[n - 1].text, "line 1499");
    int contiguous = 1;
    for (size_t i = 1; i < n; i++)
        contiguous &= buf[i].seq == buf[i - 1].seq + 1;
    CHECK(contiguous);

    /* A reader that fell behind resumes at the oldest line still kept. */
    n = lc_log_read(base + 10, buf, 5, NULL);
    CHECK_EQ_U64(n, 5);
    CHECK_EQ_U64(buf[0].seq, last - 999);
    /* One that is inside the ring gets exactly what follows. */
    n = lc_log_read(last - 3, buf, 10, NULL);
    CHECK_EQ_U64(n, 3);
    CHECK_EQ_U64(buf[0].seq, last - 2);
    CHECK_EQ_STR(buf[2].text, "line 1499");
}

static void test_levels(void)
{
    CHECK(!lc_log_enabled(LC_LOG_DEBUG)); /* default level: info */
    CHECK(lc_log_enabled(LC_LOG_INFO));
    uint64_t base = lc_log_last_seq();
    LC_DEBUG("hidden");
    CHECK_EQ_U64(lc_log_last_seq(), base);

    lc_log_set_level(LC_LOG_WARN);
    CHECK(!lc_log_enabled(LC_LOG_INFO));
    CHECK(lc_log_enabled(LC_LOG_WARN));
    CHECK(lc_log_enabled(LC_LOG_ERROR));
    LC_INFO("hidden");
    LC_WARN("shown warn");
    LC_ERROR("shown error");
    CHECK_EQ_U64(lc_log_last_seq(), base + 2);
    size_t n = lc_log_read(base, buf, 10, NULL);
    CHECK_EQ_U64(n, 2);
    CHECK_EQ_STR(buf[0].text, "shown warn");
    CHECK_EQ_STR(buf[1].text, "shown error");

    lc_log_set_level(LC_LOG_DEBUG);
    LC_DEBUG("shown debug");
    CHECK_EQ_U64(lc_log_last_seq(), base + 3);
    n = lc_log_read(base + 2, buf, 10, NULL);
    CHECK_EQ_U64(n, 1);
    CHECK_EQ_INT(buf[0].level, LC_LOG_DEBUG);
    lc_log_set_level(LC_LOG_INFO);

    const char *names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_STR(lc_log_level_name((lc_log_level)i), names[i]);
        lc_log_level l = (lc_log_level)-1;
        CHECK(lc_log_level_parse(names[i], &l));
        CHECK_EQ_INT(l, i);
    }
    lc_log_level l = LC_LOG_ERROR;
    CHECK(lc_log_level_parse("WARN", &l));
    CHECK_EQ_INT(l, LC_LOG_WARN);
    CHECK(!lc_log_level_parse("verbose", &l));
    CHECK_EQ_INT(l, LC_LOG_WARN);
    CHECK_EQ_STR(lc_log_level_name((lc_log_level)9), "?");
}

/* ---- thread names ---- */

typedef struct named_logger {
    const char *set_name; /* NULL: leave the thread's name alone */
    const char *text;
} named_logger;

static void *log_as(void *arg)
{
    named_logger *nl = arg;
    if (nl->set_name)
        lc_thread_set_log_name(nl->set_name);
    LC_INFO("%s", nl->text);
    return NULL;
}

static void test_thread_names(void)
{
    uint64_t base = lc_log_last_seq();

    /* A plain pthread names itself for the log. */
    named_logger a = {"lc-test-log-9", "from a"};
    pthread_t tid;
    CHECK_EQ_INT(pthread_create(&tid, NULL, log_as, &a), 0);
    CHECK_EQ_INT(pthread_join(tid, NULL), 0);
    /* An unnamed plain pthread logs as "main". */
    named_logger b = {NULL, "from b"};
    CHECK_EQ_INT(pthread_create(&tid, NULL, log_as, &b), 0);
    CHECK_EQ_INT(pthread_join(tid, NULL), 0);
    /* lc_thread_start sets the log name; long names are cut to 15 bytes. */
    named_logger c = {NULL, "from c"};
    lc_thread t;
    memset(&t, 0, sizeof t);
    lc_thread_start(&t, "lc-stage-with-a-long-name", log_as, &c);
    lc_thread_join(&t);
    named_logger d = {"a-name-that-is-far-too-long", "from d"};
    CHECK_EQ_INT(pthread_create(&tid, NULL, log_as, &d), 0);
    CHECK_EQ_INT(pthread_join(tid, NULL), 0);

    size_t n = lc_log_read(base, buf, 10, NULL);
    CHECK_EQ_U64(n, 4);
    CHECK_EQ_STR(buf[0].text, "from a");
    CHECK_EQ_STR(buf[0].thread, "lc-test-log-9");
    CHECK_EQ_STR(buf[1].text, "from b");
    CHECK_EQ_STR(buf[1].thread, "main");
    CHECK_EQ_STR(buf[2].text, "from c");
    CHECK_EQ_STR(buf[2].thread, "lc-stage-with-a");
    CHECK_EQ_STR(buf[3].thread, "a-name-that-is-");
    /* The main thread's own name is untouched. */
    CHECK_EQ_STR(lc_thread_log_name(), "main");
}

/* ---- file output ---- */

static void test_log_file(void)
{
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return;
    lc_log_set_file(f);
    LC_WARN("to the file %d", 42);
    LC_DEBUG("not at this level");
    lc_log_set_file(NULL);
    LC_WARN("after the file was detached");

    rewind(f);
    char text[4 * LC_LOG_LINE_MAX];
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    CHECK(strstr(text, "to the file 42") != NULL);
    CHECK(strstr(text, "warn") != NULL);
    CHECK(strstr(text, "[main]") != NULL);
    CHECK(strstr(text, "not at this level") == NULL);
    CHECK(strstr(text, "detached") == NULL);
    /* One line, newline-terminated. */
    CHECK(len > 0 && text[len - 1] == '\n');
    CHECK(strchr(text, '\n') == text + len - 1);
}

/* ---- concurrent logging ---- */

#define LOGGERS 4
/* Small enough that every line of the burst fits in the ring. */
#define LINES_PER_LOGGER 240

typedef struct burst {
    int id;
    int lines;
    atomic_int *go;
} burst;

static void *log_burst(void *arg)
{
    burst *b = arg;
    while (!atomic_load(b->go)) {
    }
    for (int i = 0; i < b->lines; i++)
        LC_INFO("t%d i%d", b->id, i);
    return NULL;
}

static void run_burst(int lines, atomic_int *go, lc_thread *t, burst *args)
{
    atomic_store(go, 0);
    for (int i = 0; i < LOGGERS; i++) {
        args[i] = (burst){i, lines, go};
        lc_thread_start(&t[i], "lc-test-burst", log_burst, &args[i]);
    }
    atomic_store(go, 1);
    for (int i = 0; i < LOGGERS; i++)
        lc_thread_join(&t[i]);
}

static void test_concurrent(void)
{
    atomic_int go;
    lc_thread t[LOGGERS];
    burst args[LOGGERS];
    memset(t, 0, sizeof t);

    uint64_t base = lc_log_last_seq();
    run_burst(LINES_PER_LOGGER, &go, t, args);
    const int total = LOGGERS * LINES_PER_LOGGER;
    CHECK_EQ_U64(lc_log_last_seq(), base + (uint64_t)total);

    size_t n = lc_log_read(base, buf, sizeof buf / sizeof buf[0], NULL);
    CHECK_EQ_U64(n, total);
    int contiguous = 1, order = 1, malformed = 0;
    int next_i[LOGGERS] = {0};
    for (size_t k = 0; k < n; k++) {
        contiguous &= buf[k].seq == base + 1 + k;
        int id = -1, i = -1;
        if (sscanf(buf[k].text, "t%d i%d", &id, &i) != 2 || id < 0 || id >= LOGGERS) {
            malformed++;
            continue;
        }
        /* Each thread's lines appear once each, in the order it logged them. */
        order &= i == next_i[id];
        next_i[id] = i + 1;
        malformed += strcmp(buf[k].thread, "lc-test-burst") != 0;
    }
    CHECK(contiguous);
    CHECK(order);
    CHECK_EQ_INT(malformed, 0);
    for (int i = 0; i < LOGGERS; i++)
        CHECK_EQ_INT(next_i[i], LINES_PER_LOGGER);

    /* A bigger burst than the ring: the count still adds up, and the ring
     * holds the newest 1000 lines without a gap. */
    const int big = TU_SANITIZED ? 1000 : 5000;
    base = lc_log_last_seq();
    run_burst(big, &go, t, args);
    uint64_t last = lc_log_last_seq();
    CHECK_EQ_U64(last, base + (uint64_t)(LOGGERS * big));
    n = lc_log_read(base, buf, sizeof buf / sizeof buf[0], NULL);
    CHECK_EQ_U64(n, LC_LOG_RING_DEFAULT);
    contiguous = 1;
    for (size_t k = 0; k < n; k++)
        contiguous &= buf[k].seq == last - 999 + k;
    CHECK(contiguous);
}

/* Three in full, then nothing until 50 ms after the third, then one
 * summary of every event held since (this one included), then quiet
 * again for 50 ms; what is left at the end is taken by lc_log_limit_rest. */
static void test_limit(void)
{
    lc_log_limit lim = LC_LOG_LIMIT(3, 0);
    lim.every_ns = 50000000ull;
    uint64_t n = 99;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(lc_log_limit_event(&lim, &n), LC_LOG_LIMIT_FULL);
        CHECK_EQ_U64(n, 0);
    }
    uint64_t t0 = lc_now_ns();
    int quiet = 0;
    while (lc_now_ns() - t0 < 40000000ull && quiet < 1000) {
        CHECK_EQ_INT(lc_log_limit_event(&lim, &n), LC_LOG_LIMIT_QUIET);
        quiet++;
    }
    CHECK(quiet > 0);
    while (lc_now_ns() - t0 < 60000000ull)
        lc_sleep_seconds(0.005);
    /* The quiet ones and this one. */
    CHECK_EQ_INT(lc_log_limit_event(&lim, &n), LC_LOG_LIMIT_SUMMARY);
    CHECK_EQ_U64(n, (uint64_t)quiet + 1);
    CHECK_EQ_INT(lc_log_limit_event(&lim, &n), LC_LOG_LIMIT_QUIET);
    CHECK_EQ_INT(lc_log_limit_event(&lim, &n), LC_LOG_LIMIT_QUIET);
    CHECK_EQ_U64(lc_log_limit_rest(&lim), 2);
    CHECK_EQ_U64(lc_log_limit_rest(&lim), 0);
}

int main(void)
{
    lc_log_set_stderr(false);
    test_sequence_and_read();
    test_ring_wraps();
    test_levels();
    test_thread_names();
    test_log_file();
    test_concurrent();
    test_limit();
    return check_finish();
}
