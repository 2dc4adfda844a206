/*
 * input_format_convert on lc0's own games (tests/data: formats 1, 2, 3 and
 * 5, written by lc0 v0.31.2 and v0.33-dev during self-play from the start
 * position): a game converted to its own format is the very bytes lc0
 * wrote (which checks the game reading, the history rules, the
 * repetitions, the transform, the en-passant byte and the policy's move
 * against lc0 in every format it wrote); a game converted to any of 1, 2,
 * 3, 4, 5, 132, 133 and back is the very bytes again (nothing is lost: the
 * records are re-encoded from the game, which starts at the start
 * position); in every converted record the played move is the move that
 * leads to the next record's board, in the record's own transform (what
 * upstream's Validate checks); where two games in two formats share their
 * first positions, the conversion of the one gives lc0's own encoding of
 * the other; a stored game's frames converted one at a time (the table)
 * equal its converted records' frames. The hand-built positions are in
 * test_input_format_hand.c.
 */
#include "check.h"
#include "frames.h"
#include "records.h"
#include "testutil.h"

#include "format/gzip.h"
#include "format/lc0/rescore/game_history.h"
#include "format/lc0/rescore/input_format_convert.h"
#include "format/lc0/rescore/input_format_encode.h"
#include "format/lc0/record.h"

#include <dirent.h>

#define V6 LC_V6_RECORD_SIZE
#define OFF(field) offsetof(lc_v6_record, field)

static const uint32_t formats[7] = {1, 2, 3, 4, 5, 132, 133};
static const char *const folders[5] = {"lc0-909a408-fmt1", "lc0-v0.31.2-fmt1", "lc0-v0.31.2-fmt2",
                                       "lc0-v0.31.2-fmt3", "lc0-v0.31.2-fmt5"};

typedef struct game {
    uint8_t *data;
    uint32_t n;
} game;

/* Every game of a sample folder, decompressed. */
static size_t load_games(const char *sub, game *out, size_t cap)
{
    char *dir = lc_xasprintf("%s/%s", tu_test_data(), sub);
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    size_t count = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(names[i]->d_name);
        if (count < cap && len > 3 && strcmp(names[i]->d_name + len - 3, ".gz") == 0) {
            char *path = lc_xasprintf("%s/%s", dir, names[i]->d_name);
            size_t glen, rlen;
            uint8_t *gz = tu_read_file(path, &glen);
            lc_error err;
            if (gz &&
                lc_gunzip(gz, glen, LC_INFLATE_AUTO, 1 << 26, &out[count].data, &rlen, &err) == 0) {
                out[count].n = (uint32_t)(rlen / V6);
                count++;
            }
            free(gz);
            free(path);
        }
        free(names[i]);
    }
    free(names);
    free(dir);
    CHECK(count > 0);
    return count;
}

static void free_games(game *g, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(g[i].data);
}

static uint8_t *convert_copy(const game *g, uint32_t to)
{
    uint8_t *r = malloc((size_t)g->n * V6);
    memcpy(r, g->data, (size_t)g->n * V6);
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_game_convert_format(r, V6, g->n, 6, to, &err);
    if (rc != 0)
        fprintf(stderr, "convert to %u: %s\n", to, err.msg);
    CHECK_EQ_INT(rc, 0);
    return r;
}

/* The first record of two that differ, or n. */
static uint32_t first_diff(const uint8_t *a, const uint8_t *b, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        if (memcmp(a + (size_t)k * V6, b + (size_t)k * V6, V6) != 0)
            return k;
    return n;
}

static void test_own_format(void)
{
    /* Re-encoded in the format lc0 wrote them in, lc0's games come back
     * byte for byte: every plane of every history step (repetition
     * planes included), castling bytes, side_to_move_or_enpassant,
     * invariance_info and the policy. */
    size_t games = 0, records = 0, same = 0;
    for (int d = 0; d < 5; d++) {
        game g[8];
        size_t n = load_games(folders[d], g, 8);
        for (size_t k = 0; k < n; k++) {
            uint32_t fmt;
            LC_REC_GET(g[k].data, input_format, fmt);
            uint8_t *r = convert_copy(&g[k], fmt);
            uint32_t at = first_diff(r, g[k].data, g[k].n);
            if (at < g[k].n)
                fprintf(stderr, "%s game %zu: record %u differs re-encoded as %u\n", folders[d], k,
                        at, fmt);
            same += at == g[k].n ? g[k].n : at;
            records += g[k].n;
            games++;
            free(r);
        }
        free_games(g, n);
    }
    printf("own format: %zu games, %zu records, %zu re-encoded byte for byte\n", games, records,
           same);
    CHECK_EQ_U64(same, records);
}

/* In every record but the last, played_idx is the move to the next record's
 * board in the record's transform, and its probability is not -1. */
static size_t check_played(const uint8_t *recs, uint32_t n)
{
    lc_game_pos *g = malloc(n * sizeof *g);
    lc_error err;
    CHECK_OK(lc_game_history_read(recs, V6, n, 6, g, &err));
    size_t ok = 0;
    for (uint32_t k = 0; k + 1 < n; k++) {
        const uint8_t *rec = recs + (size_t)k * V6;
        uint16_t played;
        LC_REC_GET(rec, played_idx, played);
        int want = g[k].move; /* in the record's own frame (game.h) */
        CHECK_EQ_INT(played, want);
        CHECK(lc_rec_probability(rec, played) >= 0.0f);
        ok += played == want;
    }
    free(g);
    return ok;
}

static void test_every_pair(void)
{
    /* Each folder's games to each format and back: byte for byte. The
     * converted records are themselves a game whose played moves are the
     * moves between its boards, in each record's transform. */
    size_t pairs = 0, back = 0, tried = 0, played = 0, transformed = 0;
    for (int d = 0; d < 5; d++) {
        game g[4];
        size_t n = load_games(folders[d], g, 4);
        for (size_t k = 0; k < n; k++) {
            uint32_t from;
            LC_REC_GET(g[k].data, input_format, from);
            for (int f = 0; f < 7; f++) {
                uint8_t *r = convert_copy(&g[k], formats[f]);
                played += check_played(r, g[k].n);
                for (uint32_t i = 0; i < g[k].n; i++)
                    transformed += lc_input_format_canonical(formats[f]) &&
                                   (r[(size_t)i * V6 + OFF(invariance_info)] & 7);
                lc_error err;
                CHECK_OK(lc_game_convert_format(r, V6, g[k].n, 6, from, &err));
                uint32_t at = first_diff(r, g[k].data, g[k].n);
                if (at < g[k].n)
                    fprintf(stderr, "%s game %zu: %u -> %u -> %u: record %u differs\n", folders[d],
                            k, from, formats[f], from, at);
                back += at == g[k].n;
                tried++;
                free(r);
            }
            pairs++;
        }
        free_games(g, n);
    }
    printf("every pair: %zu games x 7 formats, %zu of %zu back byte for byte; %zu played moves "
           "checked, %zu transformed records (flips: the sample games keep pawns, so the "
           "transpose is tested by hand)\n",
           pairs, back, tried, played, transformed);
    CHECK_EQ_U64(back, tried);
    CHECK(played > 1000 && transformed > 0);
}

/* Whether records a and b hold the same encoding (all but the search's
 * fields: policy, values, indices). */
static bool same_encoding(const uint8_t *a, const uint8_t *b)
{
    return memcmp(a + OFF(input_format), b + OFF(input_format), 4) == 0 &&
           memcmp(a + OFF(planes), b + OFF(planes), 8 * LC_RECORD_PLANES + 6) == 0 &&
           (a[OFF(invariance_info)] & 0x87) == (b[OFF(invariance_info)] & 0x87);
}

/* How many first positions games a and b share (the same boards, from the
 * same side). */
static uint32_t shared_prefix(const game *a, const game *b)
{
    lc_game_pos *ga = malloc(a->n * sizeof *ga), *gb = malloc(b->n * sizeof *gb);
    lc_error err;
    CHECK_OK(lc_game_history_read(a->data, V6, a->n, 6, ga, &err));
    CHECK_OK(lc_game_history_read(b->data, V6, b->n, 6, gb, &err));
    uint32_t k = 0;
    while (k < a->n && k < b->n && ga[k].black == gb[k].black &&
           memcmp(ga[k].pos.bb, gb[k].pos.bb, sizeof ga[k].pos.bb) == 0 &&
           memcmp(ga[k].pos.castle, gb[k].pos.castle, 4) == 0 && ga[k].ep_flag == gb[k].ep_flag)
        k++;
    free(ga);
    free(gb);
    return k;
}

static void test_against_lc0(void)
{
    /* The games of one format converted to another, compared with lc0's
     * own records of that format over the first positions the two games
     * share (the start position at least): 1 -> 3, 1 -> 5, 1 -> 2, 3 -> 1,
     * 5 -> 3 and the rest. */
    size_t compared = 0, equal = 0;
    game a[8], b[8];
    for (int x = 0; x < 5; x++) {
        size_t na = load_games(folders[x], a, 8);
        for (int y = 0; y < 5; y++) {
            uint32_t fa, fb;
            LC_REC_GET(a[0].data, input_format, fa);
            if (strstr(folders[y], "909a408"))
                continue;
            size_t nb = load_games(folders[y], b, 8);
            LC_REC_GET(b[0].data, input_format, fb);
            for (size_t i = 0; i < na && fa != fb; i++) {
                uint8_t *r = convert_copy(&a[i], fb);
                for (size_t j = 0; j < nb; j++) {
                    uint32_t k = shared_prefix(&a[i], &b[j]);
                    for (uint32_t p = 0; p < k; p++) {
                        compared++;
                        equal += same_encoding(r + (size_t)p * V6, b[j].data + (size_t)p * V6);
                    }
                }
                free(r);
            }
            free_games(b, nb);
        }
        free_games(a, na);
    }
    printf("against lc0: %zu shared positions converted, %zu equal to lc0's own encoding\n",
           compared, equal);
    CHECK(compared > 0);
    CHECK_EQ_U64(equal, compared);
}

static void test_frames_table(void)
{
    /* A stored game's frames, converted one at a time from the table made
     * of the game's frames, equal the frames of its converted records. */
    size_t checked = 0;
    for (int d = 2; d < 5; d++) {
        game g[3];
        size_t n = load_games(folders[d], g, 3);
        for (size_t k = 0; k < n; k++) {
            lc_frame *fr = calloc(g[k].n, sizeof *fr);
            lc_error err;
            for (uint32_t i = 0; i < g[k].n; i++)
                CHECK_OK(lc_frame_from_record(g[k].data + (size_t)i * V6, 6, &fr[i], &err));
            for (int f = 0; f < 7; f++) {
                size_t len = 0;
                float *table = lc_game_format_table(fr, g[k].n, formats[f], &len, &err);
                CHECK(table != NULL && len == 2 + 11 * (size_t)g[k].n);
                uint8_t *r = convert_copy(&g[k], formats[f]);
                for (uint32_t i = 0; i < g[k].n; i++) {
                    lc_frame got, want;
                    lc_frame_copy(&got, &fr[i]);
                    CHECK_OK(lc_game_format_table_apply(table, i, &got, &err));
                    CHECK_OK(lc_frame_from_record(r + (size_t)i * V6, 6, &want, &err));
                    tf_check_same_fields(&got, &want, true);
                    lc_frame_fini(&got);
                    lc_frame_fini(&want);
                    checked++;
                }
                CHECK(lc_game_format_table_apply(table, g[k].n, &fr[0], &err) == LC_EFORMAT);
                free(table);
                free(r);
            }
            for (uint32_t i = 0; i < g[k].n; i++)
                lc_frame_fini(&fr[i]);
            free(fr);
        }
        free_games(g, n);
    }
    printf("frames: %zu converted from the table as their records\n", checked);
    CHECK(checked > 0);
}

static void test_v7_and_errors(void)
{
    /* V7: opp_played_idx and next_played_idx follow the records they name
     * (a format-3 game to 1: where the next record was transformed, its
     * played move's index changes, and so do these). */
    game g[1];
    size_t n = load_games("lc0-v0.31.2-fmt3", g, 1);
    uint32_t len = g[0].n;
    uint8_t *v7 = calloc(len, LC_V7_RECORD_SIZE);
    for (uint32_t i = 0; i < len; i++) {
        uint8_t *r = v7 + (size_t)i * LC_V7_RECORD_SIZE;
        memcpy(r, g[0].data + (size_t)i * V6, V6);
        rec_put_u32(r, OFF(version), 7);
        uint16_t next[2] = {0xFFFF, 0xFFFF};
        for (uint32_t d = 1; d <= 2 && i + d < len; d++)
            LC_REC_GET(g[0].data + (size_t)(i + d) * V6, played_idx, next[d - 1]);
        rec_put_u16(r, offsetof(lc_v7_record, opp_played_idx), next[0]);
        rec_put_u16(r, offsetof(lc_v7_record, next_played_idx), next[1]);
    }
    lc_error err;
    CHECK_OK(lc_game_convert_format(v7, LC_V7_RECORD_SIZE, len, 7, 1, &err));
    for (uint32_t i = 0; i < len; i++) {
        const uint8_t *r = v7 + (size_t)i * LC_V7_RECORD_SIZE;
        uint16_t opp, next, want[2] = {0xFFFF, 0xFFFF};
        LC_REC7_GET(r, opp_played_idx, opp);
        LC_REC7_GET(r, next_played_idx, next);
        for (uint32_t d = 1; d <= 2 && i + d < len; d++)
            LC_REC_GET(v7 + (size_t)(i + d) * LC_V7_RECORD_SIZE, played_idx, want[d - 1]);
        CHECK(opp == want[0] && next == want[1]);
    }
    free(v7);

    /* Refusals leave the game as it was: V4, an unknown target, an
     * unknown format in the game, records that are not one game (two
     * records swapped). */
    uint8_t *r = malloc((size_t)g[0].n * V6);
    memcpy(r, g[0].data, (size_t)g[0].n * V6);
    CHECK_EQ_INT(lc_game_convert_format(r, V6, g[0].n, 4, 1, &err), LC_EVERSION);
    CHECK_EQ_INT(lc_game_convert_format(r, V6, g[0].n, 6, 7, &err), LC_ECONFIG);
    CHECK(tu_contains(err.msg, "132, 133"));
    rec_put_u32(r + 2 * V6, OFF(input_format), 9);
    CHECK_EQ_INT(lc_game_convert_format(r, V6, g[0].n, 6, 1, &err), LC_EFORMAT);
    CHECK(tu_contains(err.msg, "record 2") && tu_contains(err.msg, "input_format 9"));
    rec_put_u32(r + 2 * V6, OFF(input_format), 3);
    uint8_t *tmp = malloc(V6);
    memcpy(tmp, r + 3 * V6, V6);
    memcpy(r + 3 * V6, r + 4 * V6, V6);
    memcpy(r + 4 * V6, tmp, V6);
    uint8_t *before = malloc((size_t)g[0].n * V6);
    memcpy(before, r, (size_t)g[0].n * V6);
    CHECK_EQ_INT(lc_game_convert_format(r, V6, g[0].n, 6, 1, &err), LC_EFORMAT);
    CHECK(tu_contains(err.msg, "record 3: no legal move of record 2"));
    CHECK(memcmp(r, before, (size_t)g[0].n * V6) == 0);
    CHECK(lc_input_format_convertible(5, 1) && lc_input_format_convertible(1, 133));
    CHECK(!lc_input_format_convertible(0, 1) && !lc_input_format_convertible(3, 7));
    free(tmp);
    free(before);
    free(r);
    free_games(g, n);
}

int main(void)
{
    test_own_format();
    test_every_pair();
    test_against_lc0();
    test_frames_table();
    test_v7_and_errors();
    return check_finish();
}
