/*
 * rescore_games: the rescorer on every real game of the sample sets
 * (tests/data; also the larger set LCMON_SAMPLES names, when set), all
 * written by lc0 itself in input formats 1, 2, 3 and 5:
 *
 * - each reads as a history (format/lc0/game.h): every record is one legal
 *   move from the one before, with the canonical formats' transforms
 *   changing between records (counted: the test needs some), and passes
 *   upstream's Validate, played_idx included: no game is dropped (upstream
 *   itself drops about half of the format 3 and 5 games, a defect of its
 *   transform that lcmon does not copy: docs/upstream.md);
 * - at the default settings without tables every record comes out bit for
 *   bit as it went in (lc0's records all have plies_left > 0 and whole
 *   results);
 * - the cost of the default rescoring (Validate and the history, no
 *   tables) is printed per position: what every game now pays.
 */
#include "check.h"
#include "sample_games.h"

#include "format/lc0/game.h"
#include "format/lc0/rescore.h"
#include "format/lc0/tablebase.h"

#include <stdlib.h>
#include <time.h>

typedef struct totals {
    size_t games, positions, transformed, transform_changes, dropped;
    double seconds;
} totals;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* a shared machine: CPU time */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct run {
    lc_rescore_config cfg;
    lc_game game;
    totals t;
} run;

static void check_game(const lc_chunk_data *c, const char *path, void *ctx)
{
    run *u = ctx;
    totals *t = &u->t;
    char why[256];
    CHECK(lc_game_read(&u->game, c->data, c->record_size, (uint32_t)c->n_records, c->version, why,
                       sizeof why));
    for (uint32_t i = 0; i < u->game.n; i++) {
        t->transformed += u->game.ply[i].transform != 0;
        t->transform_changes += i > 0 && u->game.ply[i].transform != u->game.ply[i - 1].transform;
    }
    uint8_t *copy = malloc(c->size);
    memcpy(copy, c->data, c->size);
    lc_rescore_counts k = {0};
    enum { PASSES = 5 };
    double t0 = now();
    int rc = LC_RESCORE_KEPT;
    for (int pass = 0; pass < PASSES && rc == LC_RESCORE_KEPT; pass++)
        rc = lc_rescore_game(&u->cfg, copy, c->record_size, (uint32_t)c->n_records, c->version, &k,
                             why, sizeof why);
    t->seconds += (now() - t0) / PASSES;
    CHECK_EQ_INT(rc, LC_RESCORE_KEPT);
    if (rc != LC_RESCORE_KEPT) {
        fprintf(stderr, "%s: dropped: %s\n", path, why);
        t->dropped++;
    }
    CHECK(memcmp(copy, c->data, c->size) == 0);
    CHECK_EQ_U64(k.dropped, 0);
    free(copy);
    t->games++;
    t->positions += c->n_records;
}

static void check_sets(const char *root)
{
    run u = {0};
    lc_rescore_config_init(&u.cfg);
    lc_game_init(&u.game);
    sg_each_game(root, check_game, &u);
    lc_game_fini(&u.game);
    totals t = u.t;
    printf("%s: %zu games, %zu positions (%zu transformed, %zu transform changes), %zu dropped; "
           "default rescoring %.2f us a position\n",
           root, t.games, t.positions, t.transformed, t.transform_changes, t.dropped,
           t.positions ? 1e6 * t.seconds / (double)t.positions : 0.0);
    CHECK(t.games > 0);
    CHECK(t.transform_changes > 0);
}

int main(void)
{
    check_sets(tu_test_data());
    const char *samples = getenv("LCMON_SAMPLES");
    if (samples && *samples)
        check_sets(samples);
    return check_finish();
}
