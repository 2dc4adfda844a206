/*
 * rank: this process's share of the data and how many share it, from the
 * configuration (rank, world_size) or, where it leaves them out, the
 * environment (RANK, else LOCAL_RANK, else 0; WORLD_SIZE, else 1).
 */
#ifndef LC_PIPELINE_RANK_H
#define LC_PIPELINE_RANK_H

#include "core/error.h"
#include "pipeline/config.h"
#include "stages/stage.h"

/* Fills env's rank, world_size and rank_source: 0, or LC_ECONFIG with err
 * saying which variable or setting is wrong and what to set. */
int lc_pipeline_resolve_rank(const lc_config *cfg, lc_stage_env *env, lc_error *err);

#endif
