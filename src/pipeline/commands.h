/*
 * commands: running a command (core/command.h) on a pipeline's stages. The
 * pipeline's own table holds what every stage answers (pause, resume); a
 * class's table (lc_stage_class.commands) what its stages answer besides.
 */
#ifndef LC_PIPELINE_COMMANDS_H
#define LC_PIPELINE_COMMANDS_H

#include "core/command.h"
#include "stages/stage.h"

#include <stddef.h>

/* What every stage answers, ended by a NULL name. */
extern const lc_stage_command lc_every_stage_commands[];

/* The row a stage of class cls runs for `name` (every stage's first), or
 * NULL. */
const lc_stage_command *lc_stage_command_find(const lc_stage_class *cls, const char *name);

/* Run req on the stage it names, or on every stage that has the command
 * (in pipeline order), from the pipeline's control thread: one reply a
 * stage that ran it. Returns res->rc: 0, or a negative code with
 * res->error saying why (no such stage, no stage with the command, the
 * wrong number of arguments, or each stage's refusal, a line each). */
int lc_stages_command(lc_stage *stages, size_t n, const lc_command_request *req,
                      lc_command_result *res);

/* Drop what the queues below stage `from` hold (lc_stage_env.drain_below):
 * its outputs, and the outputs of every stage fed from those, to the
 * sinks. Returns the items dropped. */
uint64_t lc_stages_drain_below(lc_stage *stages, size_t n, const lc_stage *from);

#endif
