/*
 * log: leveled logging into a ring buffer of the last lines, and optionally
 * to stderr or a file.
 *
 * Any thread may log. Lines are kept in a ring of LC_LOG_RING_DEFAULT (1000) lines that
 * the screen reads with lc_log_read(); each line has a sequence number, so a
 * reader asks for "everything after the last line I saw" and learns how many
 * it missed when the ring wrapped. Writing to stderr is on by default and is
 * switched off by the screen while curses owns the terminal. Control
 * characters and invalid UTF-8 in a line (a file's name) are escaped as
 * \n, \xHH ... (lc_text_escape): a line is one line on every output.
 */
#ifndef LC_CORE_LOG_H
#define LC_CORE_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum lc_log_level {
    LC_LOG_DEBUG = 0,
    LC_LOG_INFO = 1,
    LC_LOG_WARN = 2,
    LC_LOG_ERROR = 3,
} lc_log_level;

#define LC_LOG_LINE_MAX 320
#define LC_LOG_RING_DEFAULT 1000

typedef struct lc_log_entry {
    uint64_t seq;     /* 1, 2, 3, ... in the order lines were logged */
    double wall_time; /* seconds since the epoch */
    lc_log_level level;
    char thread[16];
    char text[LC_LOG_LINE_MAX];
} lc_log_entry;

void lc_log(lc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define LC_DEBUG(...) lc_log(LC_LOG_DEBUG, __VA_ARGS__)
#define LC_INFO(...) lc_log(LC_LOG_INFO, __VA_ARGS__)
#define LC_WARN(...) lc_log(LC_LOG_WARN, __VA_ARGS__)
#define LC_ERROR(...) lc_log(LC_LOG_ERROR, __VA_ARGS__)

/*
 * A limit on lines about one kind of event that may come often (a game
 * dropped, a file refused): the first `first` events are said in full, then
 * at most one summary line every `every_ns`, counting the events it stands
 * for. Any thread; a static or zeroed struct with first and every_ns set
 * (LC_LOG_LIMIT) is ready.
 *
 *   static lc_log_limit lim = LC_LOG_LIMIT(5, 60);
 *   uint64_t n;
 *   switch (lc_log_limit_event(&lim, &n)) {
 *   case LC_LOG_LIMIT_FULL:    LC_WARN("dropping %s: %s", name, why); break;
 *   case LC_LOG_LIMIT_SUMMARY: LC_WARN("%llu more dropped, the last %s", n, name); break;
 *   }
 */
typedef struct lc_log_limit {
    unsigned first;
    uint64_t every_ns;
    atomic_uint_fast64_t seen;    /* events so far */
    atomic_uint_fast64_t held;    /* events since the last line, not said */
    atomic_uint_fast64_t last_ns; /* when the last summary was said (0: none yet) */
} lc_log_limit;
#define LC_LOG_LIMIT(first_n, every_s)                                                             \
    {                                                                                              \
        .first = (first_n), .every_ns = (every_s)*1000000000ull                                    \
    }
enum { LC_LOG_LIMIT_QUIET = 0, LC_LOG_LIMIT_FULL = 1, LC_LOG_LIMIT_SUMMARY = 2 };
/* One event: say it in full, say a summary of *held events (this one
 * included), or nothing (counted for the next summary). */
int lc_log_limit_event(lc_log_limit *l, uint64_t *held);
/* The events not said yet (for a last summary at the end), now taken. */
uint64_t lc_log_limit_rest(lc_log_limit *l);

/* Lines below this level are discarded (default LC_LOG_INFO). */
void lc_log_set_level(lc_log_level level);
bool lc_log_enabled(lc_log_level level);
/* Echo lines to stderr (default on). */
void lc_log_set_stderr(bool on);
/* Also append lines to this file (NULL to stop); the caller keeps ownership. */
void lc_log_set_file(FILE *file);

/* Copy up to max entries with seq > after, oldest first, into out. Returns the
 * number copied. *next_after (if not NULL) receives the seq of the last entry
 * copied (or `after` when none). */
size_t lc_log_read(uint64_t after, lc_log_entry *out, size_t max, uint64_t *next_after);
/* Sequence number of the newest line (0 when nothing was logged). */
uint64_t lc_log_last_seq(void);

const char *lc_log_level_name(lc_log_level level);
bool lc_log_level_parse(const char *name, lc_log_level *out);

/* The calling thread's name as used in log lines ("main" when unnamed). */
void lc_thread_set_log_name(const char *name);
const char *lc_thread_log_name(void);

#endif
