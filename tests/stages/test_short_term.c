/*
 * short_term: the short-term targets the stages give real V6 games are
 * upstream's (tests/lib/st_reference.h), bit for bit, on every position of
 * every game of tests/data, whatever the path:
 *
 *   - chunk_unpacker from the records and from the packed form (the pool's
 *     store keeps it so, and the targets with it), each use taking one
 *     position in file order (positions_per_chunk: 1), so that every
 *     position is once a use's first: odd ones too, where a sum started
 *     there would put zeros' signs in the wrong domain;
 *   - chunk_rescorer with st_targets: compute: its V7 records, and the patch
 *     it makes for a stored game, each read by an unpacker behind it;
 *   - st_math: double gives lcmon's double sum on each of those paths; a
 *     stored game whose targets are kept in one mode gets the other's when
 *     an unpacker in the other mode uses it (the kept key has the mode),
 *     and a rescorer of the other mode makes its own patch (its settings
 *     key has the mode: counted as patches of other settings);
 *   - a game whose sum is exactly zero at an odd position: a use that
 *     starts there gives upstream's -0 (the sum runs from the even position
 *     before it).
 */
#include "check.h"
#include "frames.h"
#include "st_reference.h"
#include "testutil.h"

#include "core/clock.h"
#include "format/lc0/chunk.h"
#include "format/lc0/frame.h"
#include "format/lc0/packed_chunk.h"
#include "format/lc0/record.h"
#include "format/lc0/st_targets.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define SEED 7

/* One real game: its records and the fields the targets come from. */
typedef struct game {
    char *path;
    lc_chunk_data c;
    float *rq, *rd;
    uint16_t *played;
    lc_packed_chunk *packed[3]; /* one for each run over the stored form */
} game;

static uint32_t bits(float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static void game_load(game *g, char *path, lc_pack_ctx *pack)
{
    memset(g, 0, sizeof *g);
    g->path = path;
    size_t len;
    uint8_t *gz = tu_read_file(path, &len);
    lc_error err;
    lc_error_clear(&err);
    if (!gz || lc_chunk_decode(gz, len, LC_INFLATE_AUTO, 0, &g->c, &err) != 0) {
        fprintf(stderr, "%s: %s\n", path, err.msg);
        exit(2);
    }
    free(gz);
    uint32_t n = (uint32_t)g->c.n_records;
    g->rq = malloc(n * sizeof *g->rq);
    g->rd = malloc(n * sizeof *g->rd);
    g->played = malloc(n * sizeof *g->played);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *rec = g->c.data + (size_t)i * g->c.record_size;
        LC_REC_GET(rec, root_q, g->rq[i]);
        LC_REC_GET(rec, root_d, g->rd[i]);
        LC_REC_GET(rec, played_idx, g->played[i]);
    }
    for (unsigned k = 0; k < 3; k++) {
        const char *why = NULL;
        uint32_t bad_at = 0;
        CHECK_OK(lc_packed_chunk_build(pack, g->c.data, g->c.record_size, n, g->c.version,
                                       &g->packed[k], &why, &bad_at));
    }
}

static void game_fini(game *g)
{
    free(g->path);
    lc_chunk_data_fini(&g->c);
    free(g->rq);
    free(g->rd);
    free(g->played);
    for (unsigned k = 0; k < 3; k++)
        lc_packed_chunk_unref(g->packed[k]);
}

/* Every .gz of every folder of tests/data. */
static game *load_games(size_t *n_games)
{
    lc_pack_ctx *pack = lc_pack_ctx_new(1, 8);
    game *games = NULL;
    size_t n = 0;
    DIR *top = opendir(tu_test_data());
    struct dirent *e;
    while (top && (e = readdir(top))) {
        char *dir = lc_xasprintf("%s/%s", tu_test_data(), e->d_name);
        DIR *sub = e->d_name[0] != '.' ? opendir(dir) : NULL;
        struct dirent *f;
        while (sub && (f = readdir(sub))) {
            size_t len = strlen(f->d_name);
            if (len < 3 || strcmp(f->d_name + len - 3, ".gz") != 0)
                continue;
            games = realloc(games, (n + 1) * sizeof *games);
            game_load(&games[n++], lc_xasprintf("%s/%s", dir, f->d_name), pack);
        }
        if (sub)
            closedir(sub);
        free(dir);
    }
    if (top)
        closedir(top);
    lc_pack_ctx_free(pack);
    *n_games = n;
    return games;
}

/* A chain's head (where chunks go in) and tail stage (frames come out). */
typedef struct chain {
    const char *what;
    uint32_t per_use; /* positions a use emits (positions_per_chunk) */
    lc_queue *in;
    lc_stage *head, *tail; /* head == tail for an unpacker alone */
} chain;

/* An unpacker alone, taking per_use positions a use in file order, with
 * these more settings. */
static chain unpacker_chain(const char *what, uint32_t per_use, const char *more)
{
    chain ch = {.what = what,
                .per_use = per_use,
                .in = lc_queue_new("in", &lc_item_chunk, 4, LC_OVERFLOW_BLOCK)};
    char *yaml = lc_xasprintf("positions_per_chunk: %u\nshuffle: false\n%s", per_use, more);
    ch.head = ch.tail = lc_standalone_running("chunk_unpacker", "unpack", yaml, ch.in, 64, SEED);
    free(yaml);
    return ch;
}

/* A rescorer that computes the targets, then an unpacker that reads them. */
static chain rescorer_chain(const char *what, const char *st_math)
{
    chain ch = {
        .what = what, .per_use = 1, .in = lc_queue_new("in", &lc_item_chunk, 4, LC_OVERFLOW_BLOCK)};
    char *yaml = lc_xasprintf("st_targets: compute\n%s", st_math);
    ch.head = lc_standalone_running("chunk_rescorer", "rescore", yaml, ch.in, 4, SEED);
    ch.tail = lc_standalone_running("chunk_unpacker", "unpack",
                                    "positions_per_chunk: 1\nshuffle: false\n", ch.head->output, 64,
                                    SEED);
    free(yaml);
    return ch;
}

static void chain_free(chain *ch)
{
    if (ch->tail != ch->head)
        lc_standalone_free(ch->tail);
    lc_standalone_free(ch->head);
    lc_queue_free(ch->in);
}

/*
 * Uses 0 to n-1 of game g (number gi) through the chain, from its records
 * (copied for each use) or its stored form `packed`: use u emits positions
 * u * per_use + j (mod n, j < per_use), each of which must have the targets
 * want_q, want_d and the played moves after it. Returns the positions that
 * differ (the first few reported).
 */
/* The next frame out of the chain is position t of g: 1 when it is not, or
 * its targets are not want_q[t], want_d[t] and the played moves after t. */
static uint32_t check_frame(chain *ch, const game *g, uint32_t t, const float *want_q,
                            const float *want_d)
{
    uint32_t n = (uint32_t)g->c.n_records;
    lc_frame f;
    int rc = lc_standalone_get_frame(ch->tail->output, &f, lc_now_ns() + 30000000000ull);
    CHECK_OK(rc);
    if (rc != 0)
        return 1;
    uint16_t opp = t + 1 < n ? g->played[t + 1] : 0xFFFF;
    uint16_t next = t + 2 < n ? g->played[t + 2] : 0xFFFF;
    bool same = bits(f.root_q) == bits(g->rq[t]) && bits(f.q_st) == bits(want_q[t]) &&
                bits(f.d_st) == bits(want_d[t]) && f.opp_played_idx == opp &&
                f.next_played_idx == next;
    if (!same)
        fprintf(stderr, "%s: %s position %u: q_st %08x d_st %08x (%u %u), want %08x %08x (%u %u)\n",
                ch->what, g->path, t, bits(f.q_st), bits(f.d_st), f.opp_played_idx,
                f.next_played_idx, bits(want_q[t]), bits(want_d[t]), opp, next);
    lc_frame_fini(&f);
    return same ? 0 : 1;
}

static uint32_t run_uses(chain *ch, const game *g, uint64_t gi, lc_packed_chunk *packed,
                         const float *want_q, const float *want_d)
{
    uint32_t n = (uint32_t)g->c.n_records, bad = 0;
    for (uint32_t u = 0; u < n; u++) {
        lc_chunk_item c = {
            .version = 6, .n_records = n, .use_count = u, .global_index = gi, .member = 0};
        if (packed) {
            c.packed = lc_packed_chunk_ref(packed);
        } else {
            c.record_size = (uint32_t)g->c.record_size;
            c.data = malloc(n * (size_t)c.record_size);
            memcpy(c.data, g->c.data, n * (size_t)c.record_size);
        }
        CHECK_OK(lc_queue_put(ch->in, &c, NULL));
        for (uint32_t j = 0; j < ch->per_use; j++)
            bad += check_frame(ch, g, (u * ch->per_use + j) % n, want_q, want_d);
    }
    return bad;
}

static uint64_t count(lc_stage *s, const char *name)
{
    lc_stage_metrics m;
    lc_standalone_flush(s, &m);
    const lc_metric_slot *c = lc_metrics_find(&m, name);
    return c ? c->count : 0;
}

enum { U_FLOAT, U_DOUBLE, R_FLOAT, R_DOUBLE, N_CHAINS };

static void test_real_games(void)
{
    size_t n_games;
    game *games = load_games(&n_games);
    CHECK(n_games >= 35); /* 7 games in each of 5 folders */
    chain ch[N_CHAINS] = {
        unpacker_chain("unpacker, float", 1, ""),
        unpacker_chain("unpacker, double", 1, "st_math: double\n"),
        rescorer_chain("rescorer, float", ""),
        rescorer_chain("rescorer, double", "st_math: double\n"),
    };
    uint64_t positions = 0, bad = 0;
    for (size_t i = 0; i < n_games; i++) {
        game *g = &games[i];
        uint32_t n = (uint32_t)g->c.n_records;
        float *fq = malloc(n * sizeof *fq), *fd = malloc(n * sizeof *fd);
        float *dq = malloc(n * sizeof *dq), *dd = malloc(n * sizeof *dd);
        CHECK_EQ_U64(g->c.version, 6);
        st_reference(g->rq, g->rd, n, LC_ST_THETA_DEFAULT, fq, fd);
        lc_st_targets(g->rq, g->rd, g->played, n, LC_ST_THETA_DEFAULT, LC_ST_DOUBLE, dq, dd, NULL,
                      NULL);
        uint64_t gi = 1000 + i;
        /* Records: each chain. */
        bad += run_uses(&ch[U_FLOAT], g, gi, NULL, fq, fd);
        bad += run_uses(&ch[U_DOUBLE], g, gi, NULL, dq, dd);
        bad += run_uses(&ch[R_FLOAT], g, gi, NULL, fq, fd);
        bad += run_uses(&ch[R_DOUBLE], g, gi, NULL, dq, dd);
        /* Stored: the unpacker keeps float targets with packed[0], then a
         * double unpacker must not take them, and back; packed[1] the
         * other way round; packed[2] gets a float rescorer's patch, then a
         * double rescorer makes its own. */
        bad += run_uses(&ch[U_FLOAT], g, gi, g->packed[0], fq, fd);
        bad += run_uses(&ch[U_DOUBLE], g, gi, g->packed[0], dq, dd);
        bad += run_uses(&ch[U_FLOAT], g, gi, g->packed[0], fq, fd);
        bad += run_uses(&ch[U_DOUBLE], g, gi, g->packed[1], dq, dd);
        bad += run_uses(&ch[U_FLOAT], g, gi, g->packed[1], fq, fd);
        bad += run_uses(&ch[R_FLOAT], g, gi, g->packed[2], fq, fd);
        bad += run_uses(&ch[R_DOUBLE], g, gi, g->packed[2], dq, dd);
        /* Kept floats differ from the double ones somewhere (else the
         * checks above could not tell the modes apart). */
        bool differ = false;
        for (uint32_t t = 0; t < n; t++)
            differ |= bits(fq[t]) != bits(dq[t]) || bits(fd[t]) != bits(dd[t]);
        CHECK(differ || n < 3);
        positions += n;
        free(fq);
        free(fd);
        free(dq);
        free(dd);
    }
    CHECK_EQ_U64(bad, 0);
    /* The rescorers made a patch a stored game; the double one found the
     * float one's kept (other settings) and made its own for every use. */
    CHECK_EQ_U64(count(ch[R_FLOAT].head, "patches_made"), n_games);
    CHECK_EQ_U64(count(ch[R_DOUBLE].head, "patches_other_settings"), positions);
    printf("%zu real games, %llu positions: every path's targets as upstream's float rule "
           "(st_math: double as lcmon's double sum), %llu differing\n",
           n_games, (unsigned long long)positions, (unsigned long long)bad);
    for (unsigned k = 0; k < N_CHAINS; k++)
        chain_free(&ch[k]);
    for (size_t i = 0; i < n_games; i++)
        game_fini(&games[i]);
    free(games);
}

/*
 * theta 1/2, root_q = (0.5, 0.3, 0.3, 0.3, 0.3): in position 0's view (odd
 * plies negated) 0.5, -0.3, 0.3, -0.3, 0.3; from the end: t=4 sq = 0.3;
 * t=3 sq = 0.15 - 0.15 = +0 (an exact zero is +0 in either order),
 * q_st[3] = +0 * -1 = -0; t=2 sq = 0 + 0.15, q_st[2] = 0.15; t=1 sq =
 * 0.075 - 0.15 = -0.075, q_st[1] = 0.075; t=0 sq = -0.0375 + 0.25,
 * q_st[0] = 0.2125. A sum started at position 1 (taken as even) would see
 * -0.3 at 4 and 0.3 at 3, sum +0 there too, and give q_st[3] = +0, not
 * upstream's -0. With 3 positions a use in file order, use 2 takes
 * positions 1, 2 and 3: its sum must start at 0.
 */
static void test_odd_first(void)
{
    enum { N = 5 };
    const float rq[N] = {0.5f, 0.3f, 0.3f, 0.3f, 0.3f}, rd[N] = {0, 0, 0, 0, 0};
    float wq[N], wd[N];
    st_reference(rq, rd, N, 0.5, wq, wd);
    CHECK_EQ_U64(bits(wq[3]), 0x80000000u);
    CHECK(wq[2] == 0.15f && wq[0] == 0.2125f);
    lc_frame f[N];
    uint16_t played[N];
    for (int t = 0; t < N; t++) {
        memset(&f[t], 0, sizeof f[t]);
        f[t].version = 6;
        f[t].input_format = 1;
        f[t].root_q = rq[t];
        f[t].root_d = rd[t];
        f[t].played_idx = f[t].best_idx = played[t] = (uint16_t)(10 * (t + 1));
        f[t].n_policy = 1;
        f[t].policy_idx[0] = f[t].played_idx;
        f[t].policy_val[0] = 1.0f;
    }
    size_t size;
    game g = {.path = "a game of 5 plies", .rq = (float *)rq, .rd = (float *)rd, .played = played};
    g.c.data = tf_records(f, N, 6, &size);
    g.c.record_size = size;
    g.c.n_records = N;
    g.c.version = 6;
    lc_pack_ctx *pack = lc_pack_ctx_new(1, 2);
    const char *why = NULL;
    uint32_t bad_at = 0;
    lc_packed_chunk *packed = NULL;
    CHECK_OK(lc_packed_chunk_build(pack, g.c.data, size, N, 6, &packed, &why, &bad_at));
    lc_pack_ctx_free(pack);
    chain ch = unpacker_chain("unpacker, theta 1/2", 3, "st_theta: 0.5\n");
    CHECK_EQ_U64(run_uses(&ch, &g, 1, NULL, wq, wd), 0);
    CHECK_EQ_U64(run_uses(&ch, &g, 1, packed, wq, wd), 0);
    chain_free(&ch);
    lc_packed_chunk_unref(packed);
    free(g.c.data);
}

/* st_math only with st_targets: compute, in both stages; and only its two
 * values. */
static void test_config(void)
{
    static const char *const types[] = {"chunk_unpacker", "chunk_rescorer"};
    for (unsigned k = 0; k < 2; k++) {
        lc_stage *s = NULL;
        lc_error err;
        lc_error_clear(&err);
        CHECK(lc_standalone_new(lc_stage_class_find(types[k]), "s",
                                "st_targets: keep\nst_math: double\n", NULL, 4, NULL, &s,
                                &err) != 0);
        CHECK(tu_contains(err.msg, "st_math: only used with st_targets: compute"));
        lc_error_clear(&err);
        CHECK(lc_standalone_new(lc_stage_class_find(types[k]), "s",
                                "st_targets: compute\nst_math: half\n", NULL, 4, NULL, &s,
                                &err) != 0);
        CHECK(tu_contains(err.msg, "st_math"));
    }
}

int main(void)
{
    test_config();
    test_odd_first();
    test_real_games();
    return check_finish();
}
