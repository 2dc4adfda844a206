/*
 * standalone: one stage outside any pipeline, for the tests (the test
 * harness, not part of lcmon). The stage lives as in a pipeline
 * (stages/stage.h's lc_stage_init ... lc_stage_fini); the caller owns the
 * input queue (it puts items and closes it) and reads the output queue.
 * Configuration is the YAML text of the stage-type block.
 */
#ifndef LC_TESTS_STANDALONE_H
#define LC_TESTS_STANDALONE_H

#include "core/error.h"
#include "stages/stage.h"

struct lc_config;

/* A whole configuration from YAML text; on a mistake, says it and exits
 * with 2 (a broken test, not a failed check). */
struct lc_config *lc_test_config(const char *yaml);

/* env may be NULL (seed 0, rank 0 of 1). out_capacity sizes the output
 * queue (ignored for sinks). */
int lc_standalone_new(const lc_stage_class *cls, const char *name, const char *yaml_block,
                      lc_queue *input, size_t out_capacity, const lc_stage_env *env, lc_stage **out,
                      lc_error *err);
/* The same with several inputs (a join) or none (a producer); every
 * output the class names from its config is made (s->outputs). */
int lc_standalone_new_inputs(const lc_stage_class *cls, const char *name, const char *yaml_block,
                             lc_queue *const *inputs, unsigned n_inputs, size_t out_capacity,
                             const lc_stage_env *env, lc_stage **out, lc_error *err);
int lc_standalone_start(lc_stage *s, lc_error *err);
/* A stage of a registered type made and started, with this seed (rank 0
 * of 1), for chains of stages; one that cannot be made or started is a
 * broken test: says why and exits with 2. */
lc_stage *lc_standalone_running(const char *type, const char *name, const char *yaml_block,
                                lc_queue *input, size_t out_capacity, uint64_t seed);
/* Stop: marks stopping, closes every input and output queue (as a pipeline
 * stop does), wakes and joins. */
void lc_standalone_stop(lc_stage *s);
/* Stops if needed and frees the stage, its output queue and its config. */
void lc_standalone_free(lc_stage *s);
/* One metrics flush into m (generic part included). */
void lc_standalone_flush(lc_stage *s, lc_stage_metrics *m);
/* Run a command (core/command.h) on the stage as a pipeline runs it
 * (pipeline/commands.h: the argument count checked, pause and resume
 * included): fills res (free with lc_command_result_fini) and returns
 * res->rc. */
int lc_standalone_command(lc_stage *s, const char *name, unsigned argc, const char *const *argv,
                          lc_command_result *res);

/* Frames by value on a queue of frames, whose items are pointers to frame
 * cells (stages/items.h): put a deep copy of f in a cell of its own (as
 * lc_queue_put: 0 or LC_ECLOSED, the cell then freed); take one into *out
 * (a deep copy the caller finis; the cell freed), as lc_queue_get_until. */
struct lc_frame;
int lc_standalone_put_frame(lc_queue *q, const struct lc_frame *f);
int lc_standalone_get_frame(lc_queue *q, struct lc_frame *out, uint64_t deadline_ns);

#endif
