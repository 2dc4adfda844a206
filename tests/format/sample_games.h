/*
 * sample_games: every game of the sample sets lc0 wrote (tests/data, or the
 * larger set LCMON_SAMPLES names, laid out the same way: one folder per
 * lc0 version and input format, one gzip file per game), handed to a
 * callback in name order, for the tests that check something on every
 * real game.
 */
#ifndef LC_TEST_SAMPLE_GAMES_H
#define LC_TEST_SAMPLE_GAMES_H

#include "check.h"
#include "testutil.h"

#include "format/lc0/chunk_source.h"

#include <dirent.h>
#include <stdlib.h>

typedef void (*sg_game_fn)(const lc_chunk_data *c, const char *path, void *ctx);

static inline void sg_each_in_dir(const char *dir, sg_game_fn fn, void *ctx)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0)
        return;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(names[i]->d_name);
        if (len > 3 && strcmp(names[i]->d_name + len - 3, ".gz") == 0) {
            char *path = lc_xasprintf("%s/%s", dir, names[i]->d_name);
            lc_chunk_source *src = tu_chunk_source(path);
            lc_chunk_data c;
            lc_error err;
            lc_error_clear(&err);
            CHECK_OK(lc_chunk_source_load(src, 0, LC_INFLATE_AUTO, &c, &err));
            fn(&c, path, ctx);
            lc_chunk_data_fini(&c);
            lc_chunk_source_unref(src);
            free(path);
        }
        free(names[i]);
    }
    free(names);
}

/* Every game of the five sets under root. */
static inline void sg_each_game(const char *root, sg_game_fn fn, void *ctx)
{
    static const char *const sets[] = {"lc0-909a408-fmt1", "lc0-v0.31.2-fmt1", "lc0-v0.31.2-fmt2",
                                       "lc0-v0.31.2-fmt3", "lc0-v0.31.2-fmt5"};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        char *dir = lc_xasprintf("%s/%s", root, sets[i]);
        sg_each_in_dir(dir, fn, ctx);
        free(dir);
    }
}

#endif
