/*
 * rank: see rank.h.
 */
#include "pipeline/rank.h"

#include <errno.h>
#include <stdlib.h>

static int resolve_int_env(const char *name, int64_t *out, lc_error *err)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || x < 0 || x > 65535)
        return lc_error_set(err, LC_ECONFIG,
                            "environment variable %s='%s' is not a whole number from 0 to "
                            "65535",
                            name, v);
    *out = x;
    return 1;
}

int lc_pipeline_resolve_rank(const lc_config *cfg, lc_stage_env *env, lc_error *err)
{
    int64_t rank = cfg->rank, world = cfg->world_size;
    const char *rank_src = "config";
    if (rank < 0) {
        int rc = resolve_int_env("RANK", &rank, err);
        if (rc < 0)
            return rc;
        rank_src = "RANK";
        if (rc == 0) {
            rc = resolve_int_env("LOCAL_RANK", &rank, err);
            if (rc < 0)
                return rc;
            rank_src = rc ? "LOCAL_RANK" : "default";
            if (rc == 0)
                rank = 0;
        }
    }
    if (world < 0) {
        int rc = resolve_int_env("WORLD_SIZE", &world, err);
        if (rc < 0)
            return rc;
        if (rc == 0)
            world = 1;
        if (world == 0)
            return lc_error_set(err, LC_ECONFIG, "environment variable WORLD_SIZE is 0");
    }
    if (rank >= world)
        return lc_error_set(err, LC_ECONFIG,
                            "rank %lld (from %s) is not below world size %lld; set RANK and "
                            "WORLD_SIZE consistently",
                            (long long)rank, rank_src, (long long)world);
    env->rank = (uint32_t)rank;
    env->world_size = (uint32_t)world;
    env->rank_source = rank_src;
    return 0;
}
