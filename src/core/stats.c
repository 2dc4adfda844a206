#include "core/stats.h"

void lc_stats_reset(lc_stats *s)
{
    s->min = 0;
    s->max = 0;
    s->sum = 0;
    s->latest = 0;
    s->count = 0;
}

void lc_stats_add(lc_stats *s, double v)
{
    if (s->count == 0 || v < s->min)
        s->min = v;
    if (s->count == 0 || v > s->max)
        s->max = v;
    s->sum += v;
    s->latest = v;
    s->count++;
}

void lc_stats_merge(lc_stats *dst, const lc_stats *src)
{
    if (src->count == 0)
        return;
    if (dst->count == 0 || src->min < dst->min)
        dst->min = src->min;
    if (dst->count == 0 || src->max > dst->max)
        dst->max = src->max;
    dst->sum += src->sum;
    dst->count += src->count;
    dst->latest = src->latest;
}

double lc_stats_mean(const lc_stats *s)
{
    return s->count ? s->sum / (double)s->count : 0.0;
}
