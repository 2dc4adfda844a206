/*
 * problem: see problem.h.
 */
#include "core/problem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lc_problems_init(lc_problems *ps)
{
    memset(ps, 0, sizeof *ps);
    ps->stage = -1;
}

void lc_problems_fini(lc_problems *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        free(ps->v[i].text);
    free(ps->v);
    memset(ps, 0, sizeof *ps);
    ps->stage = -1;
}

void lc_problems_under(lc_problems *ps, int stage, const char *fmt, ...)
{
    ps->stage = stage;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->base, sizeof ps->base, fmt, ap);
    va_end(ap);
}

bool lc_problems_full(const lc_problems *ps)
{
    return ps->n >= (ps->max ? ps->max : LC_PROBLEMS_MAX);
}

size_t lc_problems_count(const lc_problems *ps)
{
    return ps->n + ps->more;
}

int lc_problem_vadd_at(lc_problems *ps, int line, int col, const char *key, const char *fmt,
                       va_list ap)
{
    if (lc_problems_full(ps)) {
        ps->more++;
        return LC_ECONFIG;
    }
    if (ps->n == ps->cap) {
        ps->cap = ps->cap ? 2 * ps->cap : 16;
        ps->v = lc_xrealloc(ps->v, ps->cap * sizeof *ps->v);
    }
    lc_problem *p = &ps->v[ps->n];
    p->stage = ps->stage;
    snprintf(p->path, sizeof p->path, "%s%s%s", ps->base, ps->base[0] && key[0] ? "." : "", key);
    p->line = line;
    p->col = col;
    p->order = ps->n;
    va_list copy;
    va_copy(copy, ap);
    int len = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    p->text = lc_xmalloc(len > 0 ? (size_t)len + 1 : 1);
    p->text[0] = '\0';
    if (len > 0)
        vsnprintf(p->text, (size_t)len + 1, fmt, ap);
    ps->n++;
    return LC_ECONFIG;
}

int lc_problem_add(lc_problems *ps, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = lc_problem_vadd_at(ps, 0, 0, key, fmt, ap);
    va_end(ap);
    return rc;
}

int lc_problem_add_at(lc_problems *ps, int line, int col, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = lc_problem_vadd_at(ps, line, col, key, fmt, ap);
    va_end(ap);
    return rc;
}

static int by_place(const void *a, const void *b)
{
    const lc_problem *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

void lc_problems_sort(lc_problems *ps)
{
    if (ps->n > 1)
        qsort(ps->v, ps->n, sizeof *ps->v, by_place);
}

int lc_problems_to_error(const lc_problems *ps, lc_error *err)
{
    if (!lc_problems_count(ps))
        return 0;
    lc_error_clear(err);
    for (size_t i = 0; i < ps->n; i++) {
        const lc_problem *p = &ps->v[i];
        lc_error_add(err, LC_ECONFIG, "%s%s%s", p->path, p->path[0] ? ": " : "", p->text);
    }
    if (ps->more)
        lc_error_add(err, LC_ECONFIG, "and %zu more problem%s", ps->more, ps->more == 1 ? "" : "s");
    return LC_ECONFIG;
}
