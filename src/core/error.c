/*
 * error: see error.h. Messages are formatted into the caller's record; the
 * fatal path restores whatever the registered hook restores (the terminal)
 * before it prints, so that the message is readable after a crash.
 */
#include "core/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lc_error_set(lc_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

int lc_error_add(lc_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    size_t len = err->code ? strlen(err->msg) : 0;
    if (!err->code)
        err->code = code;
    if (len && len + 1 < sizeof err->msg)
        err->msg[len++] = '\n';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + len, sizeof err->msg - len, fmt, ap);
    va_end(ap);
    return err->code;
}

int lc_error_prefix(lc_error *err, const char *fmt, ...)
{
    if (!err)
        return LC_EFORMAT;
    char prefix[LC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char joined[LC_ERROR_MSG_MAX];
    snprintf(joined, sizeof joined, "%s%s", prefix, err->msg);
    memcpy(err->msg, joined, sizeof joined);
    return err->code;
}

void lc_error_clear(lc_error *err)
{
    if (err) {
        err->code = 0;
        err->msg[0] = '\0';
    }
}

const char *lc_strerror(int code)
{
    switch (code) {
    case LC_OK:
        return "success";
    case LC_ECLOSED:
        return "queue closed";
    case LC_EFORMAT:
        return "malformed data";
    case LC_ECONFIG:
        return "invalid configuration";
    case LC_ESTOPPED:
        return "stopped";
    case LC_ETRUNC:
        return "truncated data";
    case LC_EVERSION:
        return "unknown version";
    case LC_EGZIP:
        return "corrupt gzip stream";
    case LC_EEMPTY:
        return "empty";
    case LC_ENOTREG:
        return "not a regular file";
    default:
        return code < 0 ? strerror(-code) : "unknown error";
    }
}

static _Atomic(lc_fatal_hook) fatal_hook;

void lc_set_fatal_hook(lc_fatal_hook hook)
{
    atomic_store(&fatal_hook, hook);
}

_Noreturn void lc_fatal(const char *fmt, ...)
{
    lc_fatal_hook hook = atomic_exchange(&fatal_hook, NULL);
    if (hook)
        hook();
    va_list ap;
    va_start(ap, fmt);
    fputs("lcmon: fatal: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void *lc_xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        lc_fatal("out of memory allocating %zu bytes", size);
    return p;
}

void *lc_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        lc_fatal("out of memory allocating %zu x %zu bytes", n, size);
    return p;
}

void *lc_xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    if (!p)
        lc_fatal("out of memory reallocating %zu bytes", size);
    return p;
}

char *lc_xstrdup(const char *s)
{
    return lc_xstrndup(s, strlen(s));
}

char *lc_xstrndup(const char *s, size_t n)
{
    char *p = lc_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *lc_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        lc_fatal("bad format string %s", fmt);
    char *p = lc_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}
