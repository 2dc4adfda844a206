/*
 * log: see log.h. One mutex guards the ring and the output files; logging is
 * for events (a bad file, a stage starting), not for per-item traffic, so a
 * lock per line is cheap enough and keeps lines whole on every output.
 * A line's control characters and invalid UTF-8 are escaped as it is made
 * (lc_text_escape), so that no output receives them.
 */
#include "core/log.h"

#include "core/clock.h"
#include "core/text.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static lc_log_entry ring[LC_LOG_RING_DEFAULT];
static uint64_t last_seq;
static _Atomic int min_level = LC_LOG_INFO;
static bool to_stderr = true;
static FILE *log_file;
static _Thread_local char thread_name[16];

void lc_thread_set_log_name(const char *name)
{
    snprintf(thread_name, sizeof thread_name, "%s", name);
}

const char *lc_thread_log_name(void)
{
    return thread_name[0] ? thread_name : "main";
}

void lc_log_set_level(lc_log_level level)
{
    atomic_store(&min_level, (int)level);
}

bool lc_log_enabled(lc_log_level level)
{
    return (int)level >= atomic_load(&min_level);
}

void lc_log_set_stderr(bool on)
{
    pthread_mutex_lock(&log_mu);
    to_stderr = on;
    pthread_mutex_unlock(&log_mu);
}

void lc_log_set_file(FILE *file)
{
    pthread_mutex_lock(&log_mu);
    log_file = file;
    pthread_mutex_unlock(&log_mu);
}

const char *lc_log_level_name(lc_log_level level)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    return (unsigned)level < 4 ? names[level] : "?";
}

bool lc_log_level_parse(const char *name, lc_log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(name, lc_log_level_name((lc_log_level)i)) == 0) {
            *out = (lc_log_level)i;
            return true;
        }
    }
    return false;
}

static void write_line(FILE *f, const lc_log_entry *e)
{
    time_t secs = (time_t)e->wall_time;
    struct tm tm;
    localtime_r(&secs, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
    fprintf(f, "%s.%03d %-5s [%s] %s\n", stamp, (int)((e->wall_time - (double)secs) * 1000),
            lc_log_level_name(e->level), e->thread, e->text);
    fflush(f);
}

void lc_log(lc_log_level level, const char *fmt, ...)
{
    if (!lc_log_enabled(level))
        return;
    lc_log_entry e;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    e.wall_time = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    e.level = level;
    snprintf(e.thread, sizeof e.thread, "%s", lc_thread_log_name());
    char raw[LC_LOG_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    /* Every output takes the line from here: a name with a newline or an
     * escape sequence in it (a file's) is written out, never obeyed. */
    lc_text_escape(e.text, sizeof e.text, raw);

    pthread_mutex_lock(&log_mu);
    e.seq = ++last_seq;
    ring[e.seq % LC_LOG_RING_DEFAULT] = e;
    if (to_stderr)
        write_line(stderr, &e);
    if (log_file)
        write_line(log_file, &e);
    pthread_mutex_unlock(&log_mu);
}

uint64_t lc_log_last_seq(void)
{
    pthread_mutex_lock(&log_mu);
    uint64_t s = last_seq;
    pthread_mutex_unlock(&log_mu);
    return s;
}

size_t lc_log_read(uint64_t after, lc_log_entry *out, size_t max, uint64_t *next_after)
{
    size_t n = 0;
    pthread_mutex_lock(&log_mu);
    uint64_t first = last_seq >= LC_LOG_RING_DEFAULT ? last_seq - LC_LOG_RING_DEFAULT + 1 : 1;
    if (after + 1 > first)
        first = after + 1;
    for (uint64_t s = first; s <= last_seq && n < max; s++)
        out[n++] = ring[s % LC_LOG_RING_DEFAULT];
    pthread_mutex_unlock(&log_mu);
    if (next_after)
        *next_after = n ? out[n - 1].seq : after;
    return n;
}

int lc_log_limit_event(lc_log_limit *l, uint64_t *held)
{
    *held = 0;
    uint64_t now = lc_now_ns();
    if (atomic_fetch_add(&l->seen, 1) < l->first) {
        atomic_store(&l->last_ns, now); /* the summaries' minute starts at the last full line */
        return LC_LOG_LIMIT_FULL;
    }
    atomic_fetch_add(&l->held, 1);
    uint64_t last = atomic_load(&l->last_ns);
    if (last != 0 && now - last < l->every_ns)
        return LC_LOG_LIMIT_QUIET;
    /* One thread wins the minute; the others' events wait for the next. */
    if (!atomic_compare_exchange_strong(&l->last_ns, &last, now))
        return LC_LOG_LIMIT_QUIET;
    *held = atomic_exchange(&l->held, 0);
    return LC_LOG_LIMIT_SUMMARY;
}

uint64_t lc_log_limit_rest(lc_log_limit *l)
{
    return atomic_exchange(&l->held, 0);
}
