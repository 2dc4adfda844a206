/*
 * lc0_games: the endgame-rich games of gen/lc0_games.h, read back with
 * lcmon's own reader and checked against what lc0 writes and what
 * upstream's Validate (lc0's rescorer) accepts:
 *
 *   - the openings' records equal the real lc0 records they were taken
 *     from (planes of all 8 history steps, repetition planes, castling,
 *     side to move, rule50): the encoder writes what lc0 writes;
 *   - every record passes lcmon's record checks (lc_chunk_check) and
 *     Validate's ranges: the policy's non-negative entries are exactly the
 *     legal moves of the board the record holds and sum to 1 within 0.99 ..
 *     1.01 (float), visits > 0, best_idx and played_idx legal, q in [-1, 1],
 *     d in [0, 1], m >= 0, plies_left > 0 counting down to 1, rule50 <= 99,
 *     castling and side-to-move bytes 0 or 1, orig_* NaN or in range;
 *   - the game replays: record 0 is the start position, each next record's
 *     board (lc_position_from_record, en passant from the history
 *     included) is the previous one's after its played_idx move;
 *   - the result: -1, 0 or 1 from each side to move (result_d 1 for a
 *     draw), the sign turning with the side; a mate is one (the position
 *     after the last move has no legal move and is in check; the last
 *     mover won, invariance_info bit 3 on its record); a resignation's
 *     result is one the tables contradict (bit 5 on every record);
 *   - the ending: the playout's last position has the named material, the
 *     tables answer there, and every later record has 3 or 4 pieces;
 *   - the same seed gives the same bytes, another seed other games, and
 *     the .gz written reads back to the same records;
 *   - lcmon's rescorer keeps every game (lc_rescore_game with upstream's
 *     default settings, and with the Syzygy tables: never
 *     LC_RESCORE_DROPPED): upstream's Validate takes them all.
 *
 * Twenty games, four of each ending, from seed 7 (a second or so).
 */
#include "check.h"
#include "testutil.h"

#include "format/lc0/chunk.h"
#include "format/lc0/frame.h"
#include "format/lc0/rescore/position.h"
#include "format/lc0/record.h"
#include "format/lc0/rescore/rescore.h"
#include "format/lc0/rescore/tablebase.h"
#include "lc0_games.h"

#define GAMES 20
#define SEED 7

static float f32_at(const uint8_t *r, size_t off)
{
    float v;
    memcpy(&v, r + off, sizeof v);
    return v;
}

#define F(r, field) f32_at(r, offsetof(lc_v6_record, field))

static bool in_range(float v, float lo, float hi)
{
    return v >= lo && v <= hi;
}

/* The openings' records against the real ones: byte for byte from the
 * planes to rule50 (format 2 keeps rook files where format 1 has flags:
 * compared as flags). */
static void check_opening(const lc_gen_game *g, const lc_gen_openings *o)
{
    const lc_gen_opening *op = &o->games[g->info.opening_game];
    size_t len = 0;
    uint8_t *gz = tu_read_file(op->source, &len);
    lc_chunk_data c;
    CHECK(gz != NULL);
    if (!gz)
        return;
    CHECK_OK(lc_chunk_decode(gz, len, LC_INFLATE_ZLIB, 0, &c, NULL));
    CHECK(g->info.opening >= 6 && g->info.opening <= c.n_records);
    const size_t planes = offsetof(lc_v6_record, planes);
    const size_t castling = offsetof(lc_v6_record, castling_us_ooo);
    for (size_t k = 0; k < g->info.opening && k < c.n_records; k++) {
        const uint8_t *mine = g->records + k * LC_V6_RECORD_SIZE, *real = c.data + k * 8356;
        CHECK(memcmp(mine + planes, real + planes, 8 * LC_RECORD_PLANES) == 0);
        for (size_t i = 0; i < 4; i++)
            CHECK_EQ_INT(mine[castling + i], real[castling + i] != 0);
        CHECK_EQ_INT(mine[castling + 4], real[castling + 4]); /* side to move */
        CHECK_EQ_INT(mine[castling + 5], real[castling + 5]); /* rule50 */
    }
    lc_chunk_data_fini(&c);
    free(gz);
}

/* Validate's ranges on one record, and its policy against the legal moves
 * of the board it holds. */
static void check_record(const uint8_t *r, const lc_position *p)
{
    lc_move moves[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(p, moves), legal = 0;
    bool is_legal[LC_POLICY_SIZE] = {false};
    for (unsigned i = 0; i < n; i++)
        is_legal[moves[i].policy] = true;
    float sum = 0;
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++) {
        float v = lc_rec_probability(r, i);
        if (is_legal[i]) {
            legal += in_range(v, 0, 1);
            sum += v;
        } else if (v != -1.0f) {
            CHECK(v == -1.0f);
            break;
        }
    }
    CHECK_EQ_INT(legal, n);
    CHECK(sum >= 0.99f && sum <= 1.01f);
    uint32_t visits;
    uint16_t played, best;
    LC_REC_GET(r, visits, visits);
    LC_REC_GET(r, played_idx, played);
    LC_REC_GET(r, best_idx, best);
    CHECK(visits > 0);
    CHECK(played < LC_POLICY_SIZE && is_legal[played]);
    CHECK(best < LC_POLICY_SIZE && is_legal[best]);
    CHECK(in_range(F(r, root_q), -1, 1) && in_range(F(r, best_q), -1, 1) &&
          in_range(F(r, played_q), -1, 1));
    CHECK(in_range(F(r, root_d), 0, 1) && in_range(F(r, best_d), 0, 1) &&
          in_range(F(r, played_d), 0, 1));
    CHECK(F(r, root_m) >= 0 && F(r, best_m) >= 0 && F(r, played_m) >= 0);
    CHECK(isnan(F(r, orig_q)) || in_range(F(r, orig_q), -1, 1));
    CHECK(isnan(F(r, orig_d)) || in_range(F(r, orig_d), 0, 1));
    CHECK(isnan(F(r, orig_m)) || F(r, orig_m) >= 0);
    const uint8_t *tail = r + offsetof(lc_v6_record, castling_us_ooo);
    CHECK(tail[0] <= 1 && tail[1] <= 1 && tail[2] <= 1 && tail[3] <= 1 && tail[4] <= 1);
    CHECK(tail[5] <= 99);
}

/* The move of p whose policy index is idx, played: false when none. */
static bool play_index(const lc_position *p, uint16_t idx, lc_position *child)
{
    lc_move moves[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(p, moves);
    for (unsigned i = 0; i < n; i++)
        if (moves[i].policy == idx) {
            lc_position_play(p, &moves[i], child);
            return true;
        }
    return false;
}

/* The result fields: -1, 0, 1, result_d 1 for draws, the sign turning
 * with the side to move, plies_left counting down to 1. */
static void check_results(const lc_gen_game *g)
{
    for (size_t k = 0; k < g->n; k++) {
        const uint8_t *r = g->records + k * LC_V6_RECORD_SIZE;
        float q = F(r, result_q), d = F(r, result_d);
        CHECK(q == -1.0f || q == 0.0f || q == 1.0f);
        CHECK_EQ_INT(d, q == 0.0f);
        CHECK_EQ_INT(F(r, plies_left), g->n - k);
        CHECK_EQ_INT(r[offsetof(lc_v6_record, side_to_move_or_enpassant)], k % 2);
        CHECK_EQ_INT(q, (k % 2 ? -1 : 1) * g->info.result_white);
        CHECK_EQ_INT((r[offsetof(lc_v6_record, invariance_info)] & 32) != 0, g->info.adjudicated);
    }
}

/* How the game ended, seen from the last record. */
static void check_end(const lc_gen_game *g, const lc_tablebases *tb, const lc_position *last)
{
    const uint8_t *r = g->records + (g->n - 1) * LC_V6_RECORD_SIZE;
    uint16_t played;
    LC_REC_GET(r, played_idx, played);
    lc_position after;
    CHECK(play_index(last, played, &after));
    lc_move moves[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&after, moves);
    float q = F(r, result_q);
    bool proven = (r[offsetof(lc_v6_record, invariance_info)] & 8) != 0;
    switch (g->info.end) {
    case LC_GEN_END_MATE:
        CHECK(n == 0 && lc_position_in_check(&after));
        CHECK(q == 1.0f && proven && F(r, best_q) == 1.0f);
        break;
    case LC_GEN_END_STALEMATE:
        CHECK(n == 0 && !lc_position_in_check(&after) && q == 0.0f);
        break;
    case LC_GEN_END_FIFTY:
        CHECK(after.rule50 >= 100 && q == 0.0f);
        break;
    case LC_GEN_END_RESIGN: { /* the tables at the last record disagree */
        lc_move m[LC_MAX_MOVES];
        signed char wdl[LC_MAX_MOVES];
        bool best[LC_MAX_MOVES], by_distance;
        unsigned k = lc_position_legal_moves(last, m);
        int top = lc_tablebases_rate_moves(tb, last, m, k, true, wdl, best, &by_distance);
        CHECK(top != LC_TB_UNKNOWN && (float)top != q && g->info.wrong_result);
        break;
    }
    default:
        CHECK(q == 0.0f);
    }
    CHECK(!proven || g->info.end == LC_GEN_END_MATE);
}

/* Replay the game from its records; the material of the ending. */
static void check_game(const lc_gen_game *g, const lc_tablebases *tb, int ending)
{
    lc_chunk_data c = {.data = g->records,
                       .size = g->n * LC_V6_RECORD_SIZE,
                       .version = 6,
                       .record_size = LC_V6_RECORD_SIZE,
                       .n_records = g->n};
    uint32_t bad_at = 0;
    const char *reason = NULL;
    CHECK_EQ_INT(lc_chunk_check(&c, &bad_at, &reason), 0);
    size_t first = g->info.opening + g->info.playout;
    CHECK_EQ_INT(first + g->info.tablebase, g->n);
    CHECK_EQ_INT(g->info.ending, ending);
    lc_position prev, p, start;
    lc_gen_start_position(&start);
    for (size_t k = 0; k < g->n; k++) {
        const uint8_t *r = g->records + k * LC_V6_RECORD_SIZE;
        CHECK(lc_position_from_record(r, 6, &p));
        if (k == 0) {
            CHECK(lc_gen_same_position(&p, &start));
        } else {
            uint16_t played;
            LC_REC_GET(r - LC_V6_RECORD_SIZE, played_idx, played);
            lc_position child;
            CHECK(play_index(&prev, played, &child));
            CHECK(lc_gen_same_position(&child, &p) && child.ep_file == p.ep_file);
        }
        check_record(r, &p);
        if (k == first) {
            CHECK_EQ_INT(lc_gen_ending_of(&p), ending);
            CHECK(lc_tablebases_wdl(tb, &p) != LC_TB_UNKNOWN);
        }
        CHECK(k < first ? p.pieces >= 4 : p.pieces == 3 || p.pieces == 4);
        prev = p;
    }
    CHECK_EQ_INT(lc_gen_ending_of(&prev), g->info.final_ending);
    check_results(g);
    check_end(g, tb, &prev);
}

/* Upstream's Validate (lcmon's rescorer at upstream's defaults, without
 * and with the tables) keeps the game. */
static void check_kept(const lc_gen_game *g, const lc_tablebases *tb)
{
    for (int with_tables = 0; with_tables < 2; with_tables++) {
        lc_rescore_config cfg;
        lc_rescore_config_init(&cfg);
        cfg.tb = with_tables ? tb : NULL;
        uint8_t *copy = malloc(g->n * LC_V6_RECORD_SIZE);
        memcpy(copy, g->records, g->n * LC_V6_RECORD_SIZE);
        lc_rescore_counts counts = {0};
        char why[256];
        int rc = lc_rescore_game(&cfg, copy, LC_V6_RECORD_SIZE, (uint32_t)g->n, 6, &counts, why,
                                 sizeof why);
        CHECK_EQ_INT(rc, LC_RESCORE_KEPT);
        if (rc != LC_RESCORE_KEPT)
            fprintf(stderr, "dropped: %s\n", why);
        CHECK_EQ_U64(counts.dropped, 0);
        free(copy);
    }
}

/* Same seed, same bytes; written and read back, the same records. */
static void check_repeatable(const lc_gen_openings *o, const lc_tablebases *tb,
                             const lc_gen_game *g, uint64_t index, int ending)
{
    lc_gen_game again, other;
    lc_error err;
    CHECK_OK(lc_gen_game_make(o, tb, SEED, index, ending, &again, &err));
    CHECK(again.n == g->n && memcmp(again.records, g->records, g->n * LC_V6_RECORD_SIZE) == 0);
    CHECK_OK(lc_gen_game_make(o, tb, SEED + 1, index, ending, &other, &err));
    CHECK(other.n != g->n || memcmp(other.records, g->records, g->n * LC_V6_RECORD_SIZE) != 0);
    const char *path = tu_path("game_000000.gz");
    CHECK_OK(lc_gen_write_gz(path, g->records, g->n, &err));
    size_t len = 0;
    uint8_t *gz = tu_read_file(path, &len);
    lc_chunk_data c;
    CHECK_OK(lc_chunk_decode(gz, len, LC_INFLATE_AUTO, 0, &c, NULL));
    CHECK(c.n_records == g->n && memcmp(c.data, g->records, c.size) == 0);
    CHECK(len > 9 && gz[4] == 0 && gz[5] == 0 && gz[6] == 0 && gz[7] == 0); /* no time */
    lc_chunk_data_fini(&c);
    free(gz);
    lc_gen_game_free(&again);
    lc_gen_game_free(&other);
}

int main(void)
{
    const char *dir = getenv("LCMON_SYZYGY_PATH");
    if (!lc_tablebases_have_syzygy() || !dir || !*dir) {
        printf("SKIP: no Syzygy (a build without libfathom-dev, or LCMON_SYZYGY_PATH unset)\n");
        return 77;
    }
    lc_error err;
    lc_gen_openings o;
    lc_tablebases *tb = NULL;
    CHECK_OK(lc_gen_openings_load(tu_test_data(), &o, &err));
    CHECK_OK(lc_tablebases_open(dir, NULL, &tb, &err));
    /* tests/data: 7 games of format 1 from each of two lc0 versions and 7 of
     * format 2, every one from the start position and longer than 8 plies. */
    CHECK_EQ_INT(o.n, 21);
    unsigned reached[LC_GEN_ENDINGS] = {0}, wrong = 0, mistakes = 0, blunders = 0, mates = 0;
    size_t positions = 0, few = 0;
    for (uint64_t i = 0; i < GAMES; i++) {
        lc_gen_game g;
        int ending = (int)(i % LC_GEN_ENDINGS);
        CHECK_OK(lc_gen_game_make(&o, tb, SEED, i, ending, &g, &err));
        if (!g.records)
            continue;
        check_opening(&g, &o);
        check_game(&g, tb, ending);
        check_kept(&g, tb);
        if (i < LC_GEN_ENDINGS)
            check_repeatable(&o, tb, &g, i, ending);
        reached[g.info.ending]++;
        wrong += g.info.wrong_result;
        mistakes += g.info.mistakes;
        blunders += g.info.blunders;
        mates += g.info.end == LC_GEN_END_MATE;
        positions += g.n;
        few += g.info.tablebase;
        lc_gen_game_free(&g);
    }
    for (int e = 0; e < LC_GEN_ENDINGS; e++) {
        printf("%s: %u games\n", lc_gen_ending_name(e), reached[e]);
        CHECK_EQ_INT(reached[e], GAMES / LC_GEN_ENDINGS);
    }
    printf("%zu positions, %zu of 3-4 pieces; %u mates, %u results the tables contradict, %u "
           "moves of the endings not best, %u blunders marked\n",
           positions, few, mates, wrong, mistakes, blunders);
    /* Something for the rescorer to fix in every way, in twenty games. */
    CHECK(wrong > 0 && mistakes > 0 && blunders > 0 && mates > 0);
    CHECK(few * 10 > positions); /* endgame-rich: more than a tenth */
    lc_tablebases_close(tb);
    lc_gen_openings_free(&o);
    return check_finish();
}
