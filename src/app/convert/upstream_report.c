/*
 * upstream_report: what a conversion says (upstream_conv.h): its errors,
 * each at the place of its upstream field, and its notes. Every pass
 * reports through it; it calls none of them.
 */
#include "app/convert/upstream_conv.h"

#include "core/problem.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void up_error_at(conversion *c, unsigned line, unsigned col, const char *fmt, ...)
{
    va_list ap;
    char msg[1024];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Names and values from the text may hold any byte: one error, one
     * line. */
    char shown[4 * sizeof msg];
    size_t n = 0;
    for (const char *p = msg; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            n += (size_t)snprintf(shown + n, sizeof shown - n, "\\x%02x", (unsigned char)*p);
        else
            shown[n++] = *p;
    }
    shown[n] = '\0';
    lc_problem_add_at(&c->errs, (int)line, (int)col, "", "%s", shown);
}

void up_notice(conversion *c, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fflush(c->nf);
    size_t n = strlen(line);
    for (const char *p = c->notes; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len == n && !memcmp(p, line, n))
            return;
        p += len + (nl ? 1 : 0);
    }
    fprintf(c->nf, "%s\n", line);
}
