/*
 * stats: running statistics (min, max, sum, count, latest) of a series.
 * Plain values with no locking; the owner decides who may touch them.
 */
#ifndef LC_CORE_STATS_H
#define LC_CORE_STATS_H

#include <stdint.h>

typedef struct lc_stats {
    double min;
    double max;
    double sum;
    double latest;
    uint64_t count;
} lc_stats;

void lc_stats_reset(lc_stats *s);
void lc_stats_add(lc_stats *s, double v);
/* Fold `src` into `dst`; latest becomes src's latest when src has values. */
void lc_stats_merge(lc_stats *dst, const lc_stats *src);
double lc_stats_mean(const lc_stats *s);

#endif
