/*
 * error: return codes and human-readable error records.
 *
 * Every function that can fail returns 0 or a negative code: a negated errno
 * value, or one of the LC_E* codes below for conditions errno has no word for.
 * A caller that wants to tell a person what went wrong passes an lc_error; the
 * failing function fills it with a message that names the file, member, field
 * or offset involved. Passing NULL is always allowed. Library errors (zlib,
 * libdeflate, zstd, liblz4, libbrotlidec, libyaml, protobuf-c) are translated into these codes
 * once, at the boundary where they are called.
 *
 * Broken invariants and out-of-memory are not errors but bugs or the end of
 * the world: lc_fatal() runs the registered fatal hook (the screen uses it to
 * restore the terminal), prints the message and aborts.
 */
#ifndef LC_CORE_ERROR_H
#define LC_CORE_ERROR_H

#include <stddef.h>

enum {
    LC_OK = 0,
    LC_ECLOSED = -10001,  /* queue closed (and drained, for getters) */
    LC_EFORMAT = -10002,  /* malformed outside data */
    LC_ECONFIG = -10003,  /* invalid configuration */
    LC_ESTOPPED = -10004, /* the operation was interrupted by a stop request */
    LC_ETRUNC = -10005,   /* outside data ends early */
    LC_EVERSION = -10006, /* unknown record or protocol version */
    LC_EGZIP = -10007,    /* gzip stream that does not decompress */
    LC_EEMPTY = -10008,   /* nothing where something was required */
    LC_ENOTREG = -10009,  /* a FIFO, device or socket where a file was expected */
};

#define LC_ERROR_MSG_MAX 2048

typedef struct lc_error {
    int code;
    char msg[LC_ERROR_MSG_MAX];
} lc_error;

/* Fill err (if not NULL) with code and a formatted message; returns code. */
int lc_error_set(lc_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepend context ("file.tar: ") to an already set message; returns err->code
 * (or LC_EFORMAT when err is NULL). */
int lc_error_prefix(lc_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Add a problem: the first sets err like lc_error_set, later ones append a
 * line ("\n" then the text) and keep the first code; returns err->code (code
 * when err is NULL). For checks that report every problem, not the first. */
int lc_error_add(lc_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void lc_error_clear(lc_error *err);

/* A short text for a code: "queue closed", or strerror() for errno values. */
const char *lc_strerror(int code);

/* Called once by lc_fatal before printing; the screen restores the terminal. */
typedef void (*lc_fatal_hook)(void);
void lc_set_fatal_hook(lc_fatal_hook hook);
_Noreturn void lc_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Allocation that never returns NULL (it calls lc_fatal instead). */
void *lc_xmalloc(size_t size);
void *lc_xcalloc(size_t n, size_t size);
void *lc_xrealloc(void *ptr, size_t size);
char *lc_xstrdup(const char *s);
char *lc_xstrndup(const char *s, size_t n);
char *lc_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
