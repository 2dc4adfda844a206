/*
 * clock: monotonic time for rates and load, wall time for logs and stamps.
 */
#ifndef LC_CORE_CLOCK_H
#define LC_CORE_CLOCK_H

#include <stdint.h>

/* Monotonic nanoseconds (CLOCK_MONOTONIC). */
uint64_t lc_now_ns(void);
/* Monotonic seconds as a double. */
double lc_now_seconds(void);
/* Wall clock seconds since the epoch. */
double lc_wall_seconds(void);
/* Sleep, restarting after signals, for the given number of seconds. */
void lc_sleep_seconds(double seconds);

#endif
