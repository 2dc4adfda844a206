/*
 * stage_bench: `lcmon_bench stage`, one stage of the lc0 chain alone, run
 * as the pipeline runs it (stage_bench.c says how and what it measures).
 */
#ifndef LC_BENCH_STAGE_BENCH_H
#define LC_BENCH_STAGE_BENCH_H

/* argv[0] is the stage's name (after "stage"); the exit status. */
int stage_bench_main(int argc, char **argv);

#endif
