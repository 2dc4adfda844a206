/*
 * rescore_games: the rescorer on every real game of the sample sets
 * (tests/data; also the larger set LCMON_SAMPLES names, when set), all
 * written by lc0 itself in input formats 1, 2, 3 and 5:
 *
 * - each reads as a history (format/lc0/rescore/game.h): every record is one legal
 *   move from the one before, with the canonical formats' transforms
 *   changing between records (counted: the test needs some), and passes
 *   upstream's Validate, played_idx included: no game is dropped (upstream
 *   itself drops about half of the format 3 and 5 games, a defect of its
 *   transform that lcmon does not copy: docs/upstream.md);
 * - at the default settings without tables every record comes out bit for
 *   bit as it went in (lc0's records all have plies_left > 0 and whole
 *   results);
 * - the cost of the default rescoring (Validate and the history, no
 *   tables) is printed per position: what every game now pays;
 * - with the tables (LCMON_SYZYGY_PATH, and Debian's Gaviota 3-piece
 *   tables when installed) and a deblunder (threshold 0.10, width 0.06),
 *   what the tables change against none, and each lcmon setting against
 *   upstream's rules: the positions whose result, policy or plies_left
 *   differ, printed (docs/pipelines.md quotes them), no game dropped.
 */
#include "check.h"
#include "sample_games.h"

#include "format/lc0/rescore/game.h"
#include "format/lc0/rescore/rescore.h"
#include "format/lc0/rescore/tablebase.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

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

/* ---- the settings' effects ---- */

typedef struct effect {
    lc_rescore_config a, b; /* b against a */
    size_t games, changed, result, policy, plies_left;
} effect;

static void compare_game(const lc_chunk_data *c, const char *path, void *ctx)
{
    effect *e = ctx;
    uint8_t *x = malloc(c->size), *y = malloc(c->size);
    memcpy(x, c->data, c->size);
    memcpy(y, c->data, c->size);
    lc_rescore_counts k = {0};
    uint32_t n = (uint32_t)c->n_records;
    CHECK_EQ_INT(lc_rescore_game(&e->a, x, c->record_size, n, c->version, &k, NULL, 0), 0);
    CHECK_EQ_INT(lc_rescore_game(&e->b, y, c->record_size, n, c->version, &k, NULL, 0), 0);
    bool changed = false;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = x + (size_t)i * c->record_size, *q = y + (size_t)i * c->record_size;
        const size_t pl = offsetof(lc_v6_record, plies_left), rq = offsetof(lc_v6_record, result_q);
        bool r = memcmp(p + rq, q + rq, 8) != 0, m = memcmp(p + pl, q + pl, 4) != 0;
        bool pol = memcmp(p + 8, q + 8, 4 * LC_POLICY_SIZE) != 0;
        e->result += r;
        e->plies_left += m;
        e->policy += pol;
        changed |= r || m || pol;
    }
    e->changed += changed;
    e->games++;
    free(x);
    free(y);
    (void)path;
}

static void effects(const char *root, const lc_tablebases *tb)
{
    static const char *const names[] = {"the tables (against none)", "zero_losing_moves",
                                        "gaviota_results", "deblunder_rules: lcmon"};
    for (int s = 0; s < 4; s++) {
        effect e = {0};
        lc_rescore_config_init(&e.a);
        e.a.tb = s == 0 ? NULL : tb;
        e.a.deblunder_threshold = 0.10;
        e.a.deblunder_width = 0.06;
        e.b = e.a;
        e.b.tb = tb;
        e.b.zero_losing_moves = s == 1;
        e.b.gaviota_results = s == 2;
        e.b.deblunder_lcmon = s == 3;
        sg_each_game(root, compare_game, &e);
        printf("%s: %s: %zu of %zu games differ; positions: %zu results, %zu policies, %zu "
               "plies_left\n",
               root, names[s], e.changed, e.games, e.result, e.policy, e.plies_left);
    }
}

int main(void)
{
    const char *samples = getenv("LCMON_SAMPLES");
    check_sets(tu_test_data());
    if (samples && *samples)
        check_sets(samples);
    const char *syzygy = getenv("LCMON_SYZYGY_PATH");
    if (!lc_tablebases_have_syzygy() || !syzygy || !*syzygy)
        return check_finish();
    lc_tablebases *tb = NULL;
    lc_error err;
    lc_error_clear(&err);
    const char *gaviota = getenv("LCMON_GAVIOTA_PATH");
    if (!gaviota || !*gaviota)
        gaviota = "/usr/share/gaviotatb/gtb4";
    if (!lc_tablebases_have_gaviota() || access(gaviota, R_OK) != 0)
        gaviota = NULL;
    CHECK_OK(lc_tablebases_open(syzygy, gaviota, &tb, &err));
    if (tb) {
        effects(tu_test_data(), tb);
        if (samples && *samples)
            effects(samples, tb);
        lc_tablebases_close(tb);
    }
    return check_finish();
}
