/*
 * input_format_convert: hand-built positions whose planes, policy and
 * bytes after a conversion were worked out by hand below (a 1 -> 3 that
 * needs a flip and its reverse; a 1 -> 3 that keeps one history step and
 * finds an en-passant file, and back; a lost castling right that ends the
 * history; 1 <-> 2 castling bytes; relabels; refusals), then lc0's own
 * games: every format-3 sample position converted to format 1 is a sound
 * position (both kings once, the same legal moves, the played move among
 * them) and converts back to the very bytes lc0 wrote, which checks the
 * transform, the history lc0 keeps and the en-passant file against lc0
 * itself; format-1 positions go 1 -> 3 -> 1 unchanged but for the history
 * steps the canonical formats leave out; frames convert as records do.
 * docs/pipelines.md "new_input_format" gives the rules.
 */
#include "check.h"
#include "frames.h"
#include "records.h"
#include "testutil.h"

#include "format/chess/chess_vocab.h"
#include "format/gzip.h"
#include "format/lc0/input_format_convert.h"
#include "format/lc0/record.h"

#include <dirent.h>

#define V6 LC_V6_RECORD_SIZE
#define OFF(field) offsetof(lc_v6_record, field)

/* The plane word with square s set (lc0 keeps square s at bit s ^ 7). */
static uint64_t sq(int s)
{
    return 1ULL << (s ^ 7);
}

static int move_id(const char *uci)
{
    return lc_chess_move_id(uci, strlen(uci));
}

/* A format-`fmt` V6 record: no piece, every policy entry -1. */
static uint8_t *blank(uint32_t fmt)
{
    uint8_t *r = calloc(1, V6);
    rec_put_u32(r, OFF(version), 6);
    rec_put_u32(r, OFF(input_format), fmt);
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        rec_put_prob(r, i, -1.0f);
    rec_put_u32(r, OFF(visits), 100);
    return r;
}

static void put_plane(uint8_t *r, int plane, uint64_t w)
{
    rec_put_u64(r, OFF(planes) + 8 * (size_t)plane, w);
}

static uint64_t plane(const uint8_t *r, int p)
{
    return lc_rec_plane(r, (size_t)p);
}

static unsigned legal_count(const uint8_t *r)
{
    unsigned n = 0;
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        n += lc_rec_probability(r, i) != -1.0f;
    return n;
}

static void convert_ok(uint8_t *r, uint32_t to)
{
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_record_convert_format(r, 6, to, &err);
    if (rc != 0)
        fprintf(stderr, "convert to %u: %s\n", to, err.msg);
    CHECK_EQ_INT(rc, 0);
}

static void test_flip(void)
{
    /* Format 1, black to move (side_to_move 1), no castling rights, rule50
     * 5. Step 0: our king c1, our pawn a2, their king e8, their pawn h7;
     * step 1 (before their last move): their king on f8 instead. */
    uint8_t *r = blank(1);
    put_plane(r, 5, sq(2));        /* our king c1 */
    put_plane(r, 0, sq(8));        /* our pawn a2 */
    put_plane(r, 11, sq(60));      /* their king e8 */
    put_plane(r, 6, sq(55));       /* their pawn h7 */
    put_plane(r, 13 + 5, sq(2));   /* step 1: the same, */
    put_plane(r, 13 + 0, sq(8));   /* */
    put_plane(r, 13 + 11, sq(61)); /* but their king on f8 */
    put_plane(r, 13 + 6, sq(55));
    rec_put_u8(r, OFF(side_to_move_or_enpassant), 1);
    rec_put_u8(r, OFF(rule50_count), 5);
    rec_put_u8(r, OFF(invariance_info), 0x20); /* bit 5 (adjudicated) is kept */
    rec_put_prob(r, (unsigned)move_id("c1b1"), 0.4f);
    rec_put_prob(r, (unsigned)move_id("c1d2"), 0.3f);
    rec_put_prob(r, (unsigned)move_id("a2a3"), 0.2f);
    rec_put_prob(r, (unsigned)move_id("a2a4"), 0.1f);
    rec_put_u16(r, OFF(played_idx), (uint16_t)move_id("c1d2"));
    rec_put_u16(r, OFF(best_idx), (uint16_t)move_id("a2a4"));
    uint8_t *orig = malloc(V6);
    memcpy(orig, r, V6);

    /* To format 3: no castling right, our king on file c (a-d): flip, and
     * pawns on the board allow nothing more: transform 1. Every square's
     * file f becomes 7 - f: c1 -> f1, a2 -> h2, e8 -> d8, h7 -> a7, f8 ->
     * c8. rule50 5 keeps both steps (back to step 5; step 1 is the oldest
     * held). The moves: c1b1 -> f1g1, c1d2 -> f1e2, a2a3 -> h2h3, a2a4 ->
     * h2h4. invariance_info: transform 1 | bit 7 (black) | bit 5 = 0xA1;
     * side_to_move_or_enpassant: no en-passant file, 0. */
    convert_ok(r, 3);
    uint32_t fmt;
    LC_REC_GET(r, input_format, fmt);
    CHECK_EQ_U64(fmt, 3);
    CHECK_EQ_U64(plane(r, 5), sq(5));
    CHECK_EQ_U64(plane(r, 0), sq(15));
    CHECK_EQ_U64(plane(r, 11), sq(59));
    CHECK_EQ_U64(plane(r, 6), sq(48));
    CHECK_EQ_U64(plane(r, 13 + 11), sq(58));
    CHECK_EQ_U64(plane(r, 13 + 6), sq(48));
    CHECK_EQ_U64(r[OFF(invariance_info)], 0xA1);
    CHECK_EQ_U64(r[OFF(side_to_move_or_enpassant)], 0);
    CHECK(lc_rec_probability(r, (size_t)move_id("f1g1")) == 0.4f);
    CHECK(lc_rec_probability(r, (size_t)move_id("f1e2")) == 0.3f);
    CHECK(lc_rec_probability(r, (size_t)move_id("h2h3")) == 0.2f);
    CHECK(lc_rec_probability(r, (size_t)move_id("h2h4")) == 0.1f);
    CHECK(lc_rec_probability(r, (size_t)move_id("c1b1")) == -1.0f);
    CHECK_EQ_U64(legal_count(r), 4);
    uint16_t played, best;
    LC_REC_GET(r, played_idx, played);
    LC_REC_GET(r, best_idx, best);
    CHECK_EQ_INT(played, move_id("f1e2"));
    CHECK_EQ_INT(best, move_id("h2h4"));

    /* And back to format 1: the transform undone (from invariance bits
     * 0-2), side_to_move 1 from bit 7, bits 0-2 and 7 cleared: the record
     * as it was, byte for byte. */
    convert_ok(r, 1);
    CHECK(memcmp(r, orig, V6) == 0);
    free(r);
    free(orig);
}

static void test_pawnless(void)
{
    /* Format 2, white to move, no castling rights, no pawns: our king a6,
     * our rook a1, their king c3. Our king on file a: flip (a6 -> h6); no
     * pawns, and it is on rank 6 (ranks 5-8): mirror (h6 -> h3); h3 is
     * above the a8-h1 diagonal of the corner: transpose ((r, f) -> (7 - f,
     * 7 - r): h3 = (2, 7) -> (0, 5) = f1). Transform 7. The rook: a1 ->
     * h1 -> h8 -> (7, 7) -> (0, 0) = a1; their king: c3 -> f3 -> f6 =
     * (5, 5) -> (2, 2) = c3. Moves: a1a8 -> a1h1 (a8 -> h8 -> h1 -> (0, 7)
     * = h1); a6b7 -> f1g2 (b7 -> g7 -> g2 = (1, 6) -> (1, 6) = g2). */
    uint8_t *r = blank(2);
    put_plane(r, 5, sq(40));
    put_plane(r, 3, sq(0));
    put_plane(r, 11, sq(18));
    rec_put_prob(r, (unsigned)move_id("a1a8"), 0.75f);
    rec_put_prob(r, (unsigned)move_id("a6b7"), 0.25f);
    rec_put_u16(r, OFF(played_idx), (uint16_t)move_id("a6b7"));
    rec_put_u16(r, OFF(best_idx), (uint16_t)move_id("a1a8"));
    uint8_t *orig = malloc(V6);
    memcpy(orig, r, V6);
    convert_ok(r, 4);
    CHECK_EQ_U64(r[OFF(invariance_info)], 7);
    CHECK_EQ_U64(plane(r, 5), sq(5));
    CHECK_EQ_U64(plane(r, 3), sq(0));
    CHECK_EQ_U64(plane(r, 11), sq(18));
    CHECK(lc_rec_probability(r, (size_t)move_id("a1h1")) == 0.75f);
    CHECK(lc_rec_probability(r, (size_t)move_id("f1g2")) == 0.25f);
    CHECK_EQ_U64(legal_count(r), 2);
    uint16_t played, best;
    LC_REC_GET(r, played_idx, played);
    LC_REC_GET(r, best_idx, best);
    CHECK_EQ_INT(played, move_id("f1g2"));
    CHECK_EQ_INT(best, move_id("a1h1"));
    convert_ok(r, 2); /* and back, byte for byte */
    CHECK(memcmp(r, orig, V6) == 0);
    free(r);
    free(orig);
}

static void test_en_passant(void)
{
    /* Format 1, white to move, rule50 0 (their last move was a pawn's).
     * Step 0: our king e1, our pawn e5, their king e8, their pawn d5.
     * Step 1: their pawn still on d7 (they played d7-d5). Step 2: our pawn
     * still on e4 (we played e4-e5). */
    uint8_t *r = blank(1);
    const uint64_t kings[2] = {sq(4), sq(60)};
    const uint64_t ours[3] = {sq(36), sq(36), sq(28)}, theirs[3] = {sq(35), sq(51), sq(51)};
    for (int t = 0; t < 3; t++) {
        put_plane(r, 13 * t + 5, kings[0]);
        put_plane(r, 13 * t + 11, kings[1]);
        put_plane(r, 13 * t + 0, ours[t]);
        put_plane(r, 13 * t + 6, theirs[t]);
    }
    rec_put_prob(r, (unsigned)move_id("e5d6"), 0.5f);
    rec_put_prob(r, (unsigned)move_id("e1d1"), 0.5f);
    rec_put_u16(r, OFF(played_idx), (uint16_t)move_id("e5d6"));
    uint8_t *orig = malloc(V6);
    memcpy(orig, r, V6);

    /* To format 3: rule50 0 keeps step 0 alone (steps 1, 2 zeroed). The
     * move into step 0 was their d7-d5 (rank 7 to 5 on file d), and our
     * e5 pawn beside it can take it: en-passant file d, byte 1 << 3 = 8.
     * Our king on e1 (file e): no flip; pawns: no more. Transform 0,
     * invariance_info 0 (white), the policy as it was. */
    convert_ok(r, 3);
    CHECK_EQ_U64(r[OFF(side_to_move_or_enpassant)], 8);
    CHECK_EQ_U64(r[OFF(invariance_info)], 0);
    for (int p = 0; p < 13; p++)
        CHECK_EQ_U64(plane(r, p), plane(orig, p));
    for (int p = 13; p < LC_RECORD_PLANES; p++)
        CHECK_EQ_U64(plane(r, p), 0);
    CHECK(memcmp(r + OFF(probabilities), orig + OFF(probabilities), 4 * LC_POLICY_SIZE) == 0);

    /* Back to format 1: step 1 comes back from the en-passant file (step
     * 0 with their d5 pawn on d7); step 2 is lost (zero). */
    convert_ok(r, 1);
    memset(orig + OFF(planes) + 8 * 26, 0, 8 * 13); /* step 2 */
    CHECK(memcmp(r, orig, V6) == 0);

    /* Without our pawn beside it nothing can take: no en-passant file. */
    uint8_t *q = blank(1);
    put_plane(q, 5, sq(4));
    put_plane(q, 11, sq(60));
    put_plane(q, 6, sq(35));
    put_plane(q, 13 + 5, sq(4));
    put_plane(q, 13 + 11, sq(60));
    put_plane(q, 13 + 6, sq(51));
    convert_ok(q, 3);
    CHECK_EQ_U64(q[OFF(side_to_move_or_enpassant)], 0);
    free(q);
    free(r);
    free(orig);
}

static void test_castling_history(void)
{
    /* Format 1, rule50 2: we may castle both ways (1, 1), they may not (0,
     * 0). Our king e1, rooks a1 h1; their rooks a8 h8 at every step. Their
     * king: f8 at step 0, e8 at steps 1 and 2 (their last move lost both
     * their rights); our knight f3 at steps 0, 1, g1 at step 2. */
    uint8_t *r = blank(1);
    for (int t = 0; t < 3; t++) {
        put_plane(r, 13 * t + 5, sq(4));
        put_plane(r, 13 * t + 3, sq(0) | sq(7));
        put_plane(r, 13 * t + 9, sq(56) | sq(63));
        put_plane(r, 13 * t + 11, sq(t == 0 ? 61 : 60));
        put_plane(r, 13 * t + 1, sq(t == 2 ? 6 : 21));
    }
    rec_put_u8(r, OFF(castling_us_ooo), 1);
    rec_put_u8(r, OFF(castling_us_oo), 1);
    rec_put_u8(r, OFF(rule50_count), 2);
    uint8_t *orig = malloc(V6);
    memcpy(orig, r, V6);

    /* To format 3: their rights are gone now but their king and rooks
     * stood home at steps 1 and 2, so step 1 had other castling rights:
     * lc0 keeps step 0 alone. We keep rights: transform 0. Castling bytes
     * as rook files: a = 0x01, h = 0x80. */
    convert_ok(r, 3);
    for (int p = 0; p < 13; p++)
        CHECK_EQ_U64(plane(r, p), plane(orig, p));
    for (int p = 13; p < LC_RECORD_PLANES; p++)
        CHECK_EQ_U64(plane(r, p), 0);
    CHECK_EQ_U64(r[OFF(castling_us_ooo)], 0x01);
    CHECK_EQ_U64(r[OFF(castling_us_oo)], 0x80);
    CHECK_EQ_U64(r[OFF(castling_them_ooo)], 0);
    CHECK_EQ_U64(r[OFF(invariance_info)], 0);
    free(r);
    free(orig);
}

static void test_castling_bytes(void)
{
    /* 1 -> 2: flags to rook files (queen side a = bit 0, king side h =
     * bit 7); 2 -> 1: any file to 1. A Chess960 mask (rooks on b and g)
     * keeps only "has the right" in format 1. */
    uint8_t *r = blank(1);
    const uint8_t flags[4] = {1, 1, 0, 1};
    memcpy(r + OFF(castling_us_ooo), flags, 4);
    convert_ok(r, 2);
    const uint8_t masks[4] = {0x01, 0x80, 0, 0x80};
    CHECK(memcmp(r + OFF(castling_us_ooo), masks, 4) == 0);
    convert_ok(r, 1);
    CHECK(memcmp(r + OFF(castling_us_ooo), flags, 4) == 0);
    const uint8_t frc[4] = {0x02, 0x40, 0, 0}, frc_flags[4] = {1, 1, 0, 0};
    rec_put_u32(r, OFF(input_format), 2);
    memcpy(r + OFF(castling_us_ooo), frc, 4);
    convert_ok(r, 1);
    CHECK(memcmp(r + OFF(castling_us_ooo), frc_flags, 4) == 0);
    free(r);
}

static void test_relabel_and_refusals(void)
{
    /* 3 -> 4 -> 132 and 5 -> 133: only input_format changes (rule50 is
     * stored raw; 132 and 133 take plane 110 from invariance bit 7, which
     * every canonical record already has). */
    const uint32_t pairs[4][2] = {{3, 4}, {4, 132}, {132, 3}, {5, 133}};
    for (int i = 0; i < 4; i++) {
        uint8_t *r = blank(pairs[i][0]), *orig = malloc(V6);
        tu_fill(r + OFF(planes), 8 * LC_RECORD_PLANES, (uint32_t)i);
        r[OFF(invariance_info)] = 0x85;
        memcpy(orig, r, V6);
        convert_ok(r, pairs[i][1]);
        rec_put_u32(orig, OFF(input_format), pairs[i][1]);
        CHECK(memcmp(r, orig, V6) == 0);
        free(r);
        free(orig);
    }
    /* Across 5/133 and the others, or to a format lcmon does not read:
     * refused, the record untouched, the message naming the pairs. */
    const uint32_t bad[4][2] = {{1, 5}, {5, 3}, {133, 1}, {3, 7}};
    for (int i = 0; i < 4; i++) {
        CHECK(!lc_input_format_convertible(bad[i][0], bad[i][1]));
        uint8_t *r = blank(bad[i][0]), *orig = malloc(V6);
        memcpy(orig, r, V6);
        lc_error err;
        lc_error_clear(&err);
        CHECK_EQ_INT(lc_record_convert_format(r, 6, bad[i][1], &err), LC_ECONFIG);
        CHECK(tu_contains(err.msg, "1 <-> 2") && tu_contains(err.msg, "5 <-> 133"));
        CHECK(memcmp(r, orig, V6) == 0);
        free(r);
        free(orig);
    }
    const uint32_t good[6][2] = {{1, 2}, {2, 132}, {4, 1}, {133, 133}, {1, 1}, {132, 2}};
    for (int i = 0; i < 6; i++)
        CHECK(lc_input_format_convertible(good[i][0], good[i][1]));
    CHECK(!lc_input_format_convertible(0, 1));
    lc_error err;
    uint8_t *r = blank(0); /* a format lcmon does not read: bad data */
    CHECK_EQ_INT(lc_record_convert_format(r, 6, 1, &err), LC_EFORMAT);
    CHECK(tu_contains(err.msg, "input_format 0"));
    CHECK_EQ_INT(lc_record_convert_format(r, 4, 3, &err), LC_EVERSION);
    free(r);
}

static void test_versions(void)
{
    /* V7: the next positions' moves (opp_played_idx, next_played_idx)
     * are in those positions' frames, which one record does not know: a
     * conversion between the plain and canonical formats makes them
     * unknown (0xFFFF); a relabel keeps them. */
    uint8_t *r = calloc(1, LC_V7_RECORD_SIZE);
    uint8_t *h = blank(1);
    memcpy(r, h, V6);
    rec_put_u32(r, OFF(version), 7);
    rec_put_u16(r, offsetof(lc_v7_record, opp_played_idx), 12);
    rec_put_u16(r, offsetof(lc_v7_record, next_played_idx), 34);
    lc_error err;
    CHECK_OK(lc_record_convert_format(r, 7, 2, &err));
    uint16_t opp, next;
    LC_REC7_GET(r, opp_played_idx, opp);
    LC_REC7_GET(r, next_played_idx, next);
    CHECK(opp == 12 && next == 34);
    CHECK_OK(lc_record_convert_format(r, 7, 3, &err));
    LC_REC7_GET(r, opp_played_idx, opp);
    LC_REC7_GET(r, next_played_idx, next);
    CHECK(opp == 0xFFFF && next == 0xFFFF);
    /* V5 (8308 bytes: nothing past plies_left is touched). */
    uint8_t *v5 = calloc(1, LC_V5_RECORD_SIZE + 8);
    memcpy(v5, h, LC_V5_RECORD_SIZE);
    rec_put_u32(v5, OFF(version), 5);
    v5[OFF(castling_us_oo)] = 1;
    memset(v5 + LC_V5_RECORD_SIZE, 0xAB, 8);
    CHECK_OK(lc_record_convert_format(v5, 5, 2, &err));
    CHECK_EQ_U64(v5[OFF(castling_us_oo)], 0x80);
    CHECK_EQ_U64(v5[LC_V5_RECORD_SIZE], 0xAB);
    free(v5);
    free(h);
    free(r);
}

/* ---- lc0's games ---- */

typedef struct game {
    uint8_t *data;
    size_t n;
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
                out[count].n = rlen / V6;
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

/* A format-1 position read from format 3 is sound. */
static void check_sound(const uint8_t *r, const uint8_t *from)
{
    CHECK_EQ_INT(__builtin_popcountll(plane(r, 5)), 1);
    CHECK_EQ_INT(__builtin_popcountll(plane(r, 11)), 1);
    CHECK_EQ_U64(legal_count(r), legal_count(from));
    uint16_t played;
    LC_REC_GET(r, played_idx, played);
    CHECK(played < LC_POLICY_SIZE && lc_rec_probability(r, played) >= 0.0f);
    for (int k = 0; k < 4; k++)
        CHECK(r[OFF(castling_us_ooo) + (size_t)k] <= 1);
    CHECK_EQ_U64(r[OFF(side_to_move_or_enpassant)], from[OFF(invariance_info)] >> 7);
    CHECK_EQ_U64(r[OFF(invariance_info)] & 0x87, 0);
}

static void test_format3_games(void)
{
    game g[16];
    size_t n = load_games("lc0-v0.31.2-fmt3", g, 16);
    size_t positions = 0, same = 0, transformed = 0, en_passant = 0;
    uint8_t *r = malloc(V6);
    for (size_t k = 0; k < n; k++) {
        for (size_t i = 0; i < g[k].n; i++) {
            const uint8_t *orig = g[k].data + i * V6;
            memcpy(r, orig, V6);
            convert_ok(r, 1);
            check_sound(r, orig);
            convert_ok(r, 3);
            positions++;
            transformed += (orig[OFF(invariance_info)] & 7) != 0;
            en_passant += orig[OFF(side_to_move_or_enpassant)] != 0;
            if (memcmp(r, orig, V6) == 0)
                same++;
            else
                fprintf(stderr, "game %zu position %zu: 3 -> 1 -> 3 differs (inv 0x%02x)\n", k, i,
                        orig[OFF(invariance_info)]);
        }
    }
    printf("format 3: %zu positions (%zu transformed, %zu with an en-passant file), %zu back "
           "bit for bit\n",
           positions, transformed, en_passant, same);
    CHECK_EQ_U64(same, positions);
    CHECK(transformed > 0);
    free(r);
    free_games(g, n);
}

static void test_format5_first_steps(void)
{
    /* Format 5 keeps only repeated positions in its history, but a
     * position right after a pawn move or capture (rule50 0) holds step 0
     * alone in every canonical format: read as format 4 (the same but for
     * the history), it goes 4 -> 1 -> 4 back bit for bit, which checks
     * the en-passant file against lc0's. */
    game g[16];
    size_t n = load_games("lc0-v0.31.2-fmt5", g, 16);
    size_t positions = 0, same = 0, en_passant = 0;
    uint8_t *r = malloc(V6), *orig = malloc(V6);
    for (size_t k = 0; k < n; k++) {
        for (size_t i = 0; i < g[k].n; i++) {
            memcpy(orig, g[k].data + i * V6, V6);
            if (orig[OFF(rule50_count)] != 0)
                continue;
            rec_put_u32(orig, OFF(input_format), 4);
            memcpy(r, orig, V6);
            convert_ok(r, 1);
            check_sound(r, orig);
            convert_ok(r, 4);
            positions++;
            en_passant += orig[OFF(side_to_move_or_enpassant)] != 0;
            same += memcmp(r, orig, V6) == 0;
        }
    }
    printf("format 5 at rule50 0: %zu positions (%zu with an en-passant file), %zu back bit for "
           "bit\n",
           positions, en_passant, same);
    CHECK_EQ_U64(same, positions);
    CHECK(en_passant > 0);
    free(r);
    free(orig);
    free_games(g, n);
}

/* How many history steps a canonical record holds. */
static int steps_held(const uint8_t *r)
{
    int held = 0;
    for (int t = 0; t < 8; t++)
        for (int p = 0; p < 12; p++)
            if (plane(r, 13 * t + p))
                held = t + 1;
    return held;
}

static void test_format1_games(void)
{
    game g[16];
    size_t n = load_games("lc0-v0.31.2-fmt1", g, 16);
    size_t positions = 0, whole = 0, transformed = 0;
    uint8_t *r = malloc(V6), *want = malloc(V6);
    for (size_t k = 0; k < n; k++) {
        for (size_t i = 0; i < g[k].n; i++) {
            const uint8_t *orig = g[k].data + i * V6;
            memcpy(r, orig, V6);
            convert_ok(r, 3);
            transformed += (r[OFF(invariance_info)] & 7) != 0;
            int held = steps_held(r);
            convert_ok(r, 1);
            /* The steps format 3 keeps come back; the rest are zero
             * (step 1 after an en-passant square comes back too). */
            memcpy(want, orig, V6);
            int back = steps_held(r);
            CHECK(back >= held && held >= 1);
            memset(want + OFF(planes) + 8 * 13 * (size_t)back, 0, 8 * 13 * (size_t)(8 - back));
            CHECK(memcmp(r, want, V6) == 0);
            whole += memcmp(r, orig, V6) == 0;
            positions++;
        }
    }
    printf("format 1: %zu positions (%zu transformed in format 3), %zu with every history step "
           "back\n",
           positions, transformed, whole);
    CHECK(transformed > 0 && whole > 0);
    free(r);
    free(want);
    free_games(g, n);
}

static void test_frames(void)
{
    /* A frame converts as its record does. */
    game g[16];
    size_t n = load_games("lc0-v0.31.2-fmt3", g, 16);
    uint8_t *r = malloc(V6);
    size_t checked = 0;
    for (size_t k = 0; k < n; k++) {
        for (size_t i = 0; i < g[k].n; i += 3) {
            const uint8_t *orig = g[k].data + i * V6;
            lc_frame f, want;
            lc_error err;
            CHECK_OK(lc_frame_from_record(orig, 6, &f, &err));
            CHECK_OK(lc_frame_convert_format(&f, 1, &err));
            memcpy(r, orig, V6);
            convert_ok(r, 1);
            CHECK_OK(lc_frame_from_record(r, 6, &want, &err));
            tf_check_same_fields(&f, &want, true);
            lc_frame_fini(&f);
            lc_frame_fini(&want);
            checked++;
        }
    }
    CHECK(checked > 0);
    free(r);
    free_games(g, n);
}

int main(void)
{
    test_flip();
    test_pawnless();
    test_en_passant();
    test_castling_history();
    test_castling_bytes();
    test_relabel_and_refusals();
    test_versions();
    test_format3_games();
    test_format5_first_steps();
    test_format1_games();
    test_frames();
    return check_finish();
}
