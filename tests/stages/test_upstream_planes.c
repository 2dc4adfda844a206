/*
 * tensor_generator's `planes`: planes 104..111 as upstream's C++ loader
 * writes them (`planes: upstream`: whatever the input format, each a
 * constant plane: the castling bytes and side_to_move_or_enpassant as
 * floats, rule50_count / 99 in float, zero, one) and as each input format
 * defines them (`planes: input_format`, the default: lc0's encoder, with
 * rule50 scaled as the legacy chunkparser does), checked against values
 * worked out by hand:
 * - hand-built V6 records: format 3 with odd bytes (1, 128, 129, 4, 16),
 *   format 133 with the side-to-move bit, format 1 the same both ways;
 * - real positions of the sample games (tests/data) in every input format
 *   upstream's tensor generator takes (1, 2, 3, 4, 5, 132, 133): castling
 *   rights all there, some lost, all lost; en passant on the d- and g-file;
 *   rule50 0, 37, 99 and 100; white and black to move; a canonical
 *   transform. Formats 4 and 132 are format-3 records relabeled, 133 format-5
 *   records relabeled: lc0 writes the same bytes for them (below);
 * - every layout that makes planes: current and legacy, dense and packed
 *   (the packed rows expanded here by hand: bit times aux), the history
 *   planes 0..103 the record's in each;
 * - the default's rule50 plane equals the legacy chunkparser's (Python's
 *   double division rounded to float32) for every byte 0..255;
 * - a `planes` value that is not one is refused.
 */
#include "check.h"
#include "testutil.h"

#include "core/clock.h"
#include "format/batch.h"
#include "format/gzip.h"
#include "format/lc0/frame.h"
#include "standalone.h"
#include "stages/items.h"
#include "stages/registry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define V6_SIZE 8356
#define PLANE_FLOATS (LC_INPUT_PLANES * 64)

static void put_u32(uint8_t *r, size_t off, uint32_t v)
{
    memcpy(r + off, &v, 4);
}

static void put_f32(uint8_t *r, size_t off, float v)
{
    memcpy(r + off, &v, 4);
}

/* A V6 record of input format fmt at the doc's offsets: one legal move,
 * distinct history planes, the given castling, side-to-move-or-en-passant,
 * rule50 and invariance bytes. */
static lc_frame frame_of(uint32_t fmt, const uint8_t castling[4], uint8_t stm, uint8_t rule50,
                         uint8_t invariance)
{
    uint8_t *r = calloc(1, V6_SIZE);
    put_u32(r, 0, 6);
    put_u32(r, 4, fmt);
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        put_f32(r, 8 + 4 * i, i == 100 ? 1.0f : -1.0f);
    for (unsigned p = 0; p < LC_HISTORY_PLANES; p++) {
        uint64_t w = 0x9E3779B97F4A7C15ull * (p + 1);
        memcpy(r + 7440 + 8 * p, &w, 8);
    }
    memcpy(r + 8272, castling, 4);
    r[8276] = stm;
    r[8277] = rule50;
    r[8278] = invariance;
    put_f32(r, 8308, 1.0f); /* result_q */
    lc_frame f;
    CHECK_OK(lc_frame_from_record(r, 6, &f, NULL));
    free(r);
    return f;
}

/* Run frames f[0..n-1] through a tensor_generator of batch size n with the
 * given settings lines; the batch's planes tensor as n x 112 x 64 floats
 * into out (packed batches expanded here: a square is its bit times the
 * plane's aux value, 1 for planes 0..103). */
static void planes_run(const char *settings, const lc_frame *f, unsigned n, float *out)
{
    char yaml[256];
    snprintf(yaml, sizeof yaml, "batch_size: %u\n%s", n, settings);
    bool packed = tu_contains(settings, "packed: true");
    lc_queue *in = lc_queue_new("in", &lc_item_frame, 4, LC_OVERFLOW_BLOCK);
    lc_stage *s = NULL;
    lc_error err;
    if (lc_standalone_new(lc_stage_class_find("tensor_generator"), "tensors", yaml, in, 4, NULL, &s,
                          &err) != 0) {
        fprintf(stderr, "tensor_generator: %s\n", err.msg);
        exit(2);
    }
    CHECK_OK(lc_standalone_start(s, NULL));
    for (unsigned i = 0; i < n; i++) {
        CHECK_OK(lc_standalone_put_frame(in, &f[i]));
    }
    lc_queue_close(in); /* the stage takes frames in blocks: the end lets it go */
    lc_batch_item item;
    CHECK_OK(lc_queue_get_until(s->output, &item, NULL, lc_now_ns() + 30000000000ull));
    lc_batch *b = item.batch;
    CHECK_EQ_U64(b->rows, n);
    if (!packed) {
        memcpy(out, lc_batch_tensor(b, 0), (size_t)n * PLANE_FLOATS * sizeof(float));
    } else {
        for (unsigned row = 0; row < n; row++) {
            const uint8_t *bits =
                (const uint8_t *)lc_batch_tensor(b, 0) + row * LC_INPUT_PLANES * 8;
            const float *aux = (const float *)lc_batch_tensor(b, 1) + row * 8;
            float *o = out + (size_t)row * PLANE_FLOATS;
            for (unsigned p = 0; p < LC_INPUT_PLANES; p++)
                for (unsigned sq = 0; sq < 64; sq++) {
                    float bit = (float)((bits[8 * p + sq / 8] >> (7 - sq % 8)) & 1);
                    o[64 * p + sq] = p < LC_HISTORY_PLANES ? bit : bit * aux[p - LC_HISTORY_PLANES];
                }
        }
    }
    lc_item_batch.dispose(&item);
    lc_standalone_stop(s);
    lc_standalone_free(s);
    lc_queue_free(in);
}

/* One frame, layout current, dense or packed. */
static void planes_through(const char *settings, bool packed, const lc_frame *f, float *out)
{
    char lines[128];
    snprintf(lines, sizeof lines, "layout: current\n%s%s", settings,
             packed ? "packed: true\n" : "");
    planes_run(lines, f, 1, out);
}

/* Plane p is v on every square. */
static void check_constant(const float *planes, unsigned p, float v, const char *what)
{
    for (unsigned sq = 0; sq < 64; sq++)
        if (planes[64 * p + sq] != v) {
            fprintf(stderr, "%s: plane %u square %u is %g, want %g\n", what, p, sq,
                    planes[64 * p + sq], v);
            CHECK(!"a plane differs");
            return;
        }
}

/* Planes 0..103: the record's words, square s = bit s ^ 7. */
static void check_history(const float *planes, const lc_frame *f)
{
    for (unsigned p = 0; p < LC_HISTORY_PLANES; p++)
        for (unsigned sq = 0; sq < 64; sq++)
            CHECK_EQ_INT((int)planes[64 * p + sq], (int)((f->planes[p] >> (sq ^ 7)) & 1));
}

/* planes: upstream, dense and packed: the history planes are the record's
 * and planes 104..111 the constants want[0..7]. */
static void check_upstream(const lc_frame *f, const float want[8], const char *what)
{
    float *got = malloc(PLANE_FLOATS * sizeof(float));
    for (int packed = 0; packed < 2; packed++) {
        char name[64];
        snprintf(name, sizeof name, "%s upstream%s", what, packed ? ", packed" : "");
        planes_through("planes: upstream\n", packed, f, got);
        check_history(got, f);
        for (unsigned i = 0; i < 8; i++)
            check_constant(got, 104 + i, want[i], name);
    }
    free(got);
}

static void test_format3(void)
{
    /* us_ooo a-file rook, us_oo h-file, them_ooo both, them_oo c-file;
     * en passant on the e-file (0x10); rule50 50: the bytes as floats. */
    const uint8_t castling[4] = {0x01, 0x80, 0x81, 0x04};
    lc_frame f = frame_of(3, castling, 0x10, 50, 0x03);
    const float want[8] = {1.0f, 128.0f, 129.0f, 4.0f, 16.0f, 50.0f / 99.0f, 0.0f, 1.0f};
    check_upstream(&f, want, "format 3");
    /* lcmon's own, for contrast: 104 is us_ooo's a1 and them_ooo's a8 and
     * h8; 108 the en-passant file on rank 8 (e8); rule50 / 99 (format 3). */
    float *got = malloc(PLANE_FLOATS * sizeof(float));
    planes_through("", false, &f, got);
    for (unsigned sq = 0; sq < 64; sq++) {
        CHECK_EQ_INT((int)got[64 * 104 + sq], sq == 0 || sq == 56 || sq == 63);
        CHECK_EQ_INT((int)got[64 * 108 + sq], sq == 60);
    }
    check_constant(got, 109, 50.0f / 99.0f, "format 3 input_format");
    free(got);
    lc_frame_fini(&f);
}

/* Format 133 with the invariance bit: upstream divides rule50 by 99 and
 * leaves plane 110 zero; lcmon's planes divide by 100 and fill 110. */
static void test_format133(void)
{
    const uint8_t castling[4] = {0x00, 0x80, 0x00, 0x00};
    lc_frame f = frame_of(133, castling, 0x00, 30, 0x80);
    const float want[8] = {0.0f, 128.0f, 0.0f, 0.0f, 0.0f, 30.0f / 99.0f, 0.0f, 1.0f};
    check_upstream(&f, want, "format 133");
    float *got = malloc(PLANE_FLOATS * sizeof(float));
    planes_through("planes: input_format\n", false, &f, got);
    check_constant(got, 109, 30.0f / 100.0f, "format 133 input_format");
    check_constant(got, 110, 1.0f, "format 133 input_format");
    free(got);
    lc_frame_fini(&f);
}

static void test_format1_same(void)
{
    const uint8_t castling[4] = {1, 0, 1, 1};
    lc_frame f = frame_of(1, castling, 1, 7, 0);
    float *a = malloc(PLANE_FLOATS * sizeof(float)), *b = malloc(PLANE_FLOATS * sizeof(float));
    planes_through("planes: upstream\n", false, &f, a);
    planes_through("", false, &f, b);
    CHECK(memcmp(a, b, PLANE_FLOATS * sizeof(float)) == 0);
    check_constant(a, 104, 1.0f, "format 1");
    check_constant(a, 105, 0.0f, "format 1");
    check_constant(a, 108, 1.0f, "format 1");
    check_constant(a, 109, 7.0f / 99.0f, "format 1");
    free(a);
    free(b);
    lc_frame_fini(&f);
}

/* ---- real positions, every input format, every layout ---- */

/* What a plane should hold: v on the squares of `squares` (bit s = square
 * s, a1 = 0, h1 = 7, a8 = 56, h8 = 63), 0 elsewhere. */
typedef struct {
    float v;
    uint64_t squares;
} plane_want;

#define ALL (~(uint64_t)0)
#define K(v)                                                                                       \
    {                                                                                              \
        (float)(v), ALL                                                                            \
    } /* v on every square */
#define M(sq)                                                                                      \
    {                                                                                              \
        1.0f, (sq)                                                                                 \
    } /* 1 on the squares sq */
#define A1 ((uint64_t)1 << 0)
#define H1 ((uint64_t)1 << 7)
#define A8 ((uint64_t)1 << 56)
#define D8 ((uint64_t)1 << 59)
#define G8 ((uint64_t)1 << 62)
#define H8 ((uint64_t)1 << 63)

/*
 * A real position: record `ply` of a sample game, its input_format field
 * set to `fmt` and its rule50 byte to `rule50` (-1: as recorded); up is
 * planes 104..111 with planes: upstream, own with planes: input_format.
 *
 * Relabeling is sound where lc0 writes the same bytes: formats 3, 4 and
 * 132 encode the history alike (4 and 132 differ from 3 only in how plane
 * 109 is scaled and, for 132, plane 110, both made from the record's bytes
 * when the tensor is built), as do 5 and 133; every canonical format writes
 * the castling rights as rook-file masks, the en-passant file as a mask,
 * and bit 7 of invariance_info for black to move (lc0's trainingdata
 * writer). A position whose rule50 is 0 keeps only the current board in
 * every canonical format (the history stops there), so the format-5
 * positions with en passant are also exact format-3, -4 and -132 records.
 * A rule50 set by hand leaves the history planes as recorded: the
 * tensor generator passes them through, and planes 104..111 depend on
 * the bytes 8272..8278 and the format only.
 */
typedef struct {
    const char *game;
    unsigned ply;
    uint32_t fmt;
    int rule50;
    plane_want up[8], own[8];
} position_case;

#define G1 "lc0-v0.31.2-fmt1/game_000013.gz"
#define G2 "lc0-v0.31.2-fmt2/game_000001.gz"
#define G3A "lc0-v0.31.2-fmt3/game_000049.gz"
#define G3B "lc0-v0.31.2-fmt3/game_000054.gz"
#define G5A "lc0-v0.31.2-fmt5/game_000022.gz"
#define G5B "lc0-v0.31.2-fmt5/game_000026.gz"

/* Planes 104..111 by the castling bytes (us_ooo, us_oo, them_ooo, them_oo),
 * side_to_move_or_enpassant and rule50, as upstream writes them. */
#define UP(a, b, c, d, e, r)                                                                       \
    {                                                                                              \
        K(a), K(b), K(c), K(d), K(e), K((float)(r) / 99.0f), K(0), K(1)                            \
    }
/* lcmon's for format 2: 104 the squares of the queenside masks (ours on
 * rank 1, theirs on rank 8), 105 the kingside's, 106 and 107 zero, 108 the
 * side to move s everywhere, 109 r (divided by hand), 110 zero, 111 one. */
#define F2(q, k, s, r)                                                                             \
    {                                                                                              \
        M(q), M(k), K(0), K(0), K(s), K(r), K(0), K(1)                                             \
    }
/* lcmon's for the canonical formats: as format 2's, but 108 the en-passant
 * square ep (on rank 8), and 110 a everywhere. */
#define CAN(q, k, ep, r, a)                                                                        \
    {                                                                                              \
        M(q), M(k), K(0), K(0), M(ep), K(r), K(a), K(1)                                            \
    }

static const position_case cases[] = {
    /* Format 1: the bytes are 0/1 flags and the side to move, plane 109
     * rule50 / 99, 110 zero: the same both ways. */
    /* ply 0: all rights, white; rule50 0 */
    {G1, 0, 1, -1, UP(1, 1, 1, 1, 0, 0), UP(1, 1, 1, 1, 0, 0)},
    /* ply 11: 0 1 1 0, black (1); rule50 4 set to 37: 37 / 99 */
    {G1, 11, 1, 37, UP(0, 1, 1, 0, 1, 37), UP(0, 1, 1, 0, 1, 37)},
    /* ply 12: 1 0 0 1, white; rule50 5 set to 99: 1 */
    {G1, 12, 1, 99, UP(1, 0, 0, 1, 0, 99), UP(1, 0, 0, 1, 0, 99)},
    /* ply 51: no rights, black; rule50 set to 100: 100 / 99 */
    {G1, 51, 1, 100, UP(0, 0, 0, 0, 1, 100), UP(0, 0, 0, 0, 1, 100)},

    /* Format 2: rook-file masks (1 = a-file, 128 = h-file); lcmon puts ours
     * on rank 1 and theirs on rank 8 in 104 (queenside) and 105
     * (kingside), 106 and 107 zero, 108 the side to move everywhere, 109
     * / 99. Upstream: the mask bytes as floats. */
    /* ply 0: 1 128 1 128, white, rule50 0 */
    {G2, 0, 2, -1, UP(1, 128, 1, 128, 0, 0), F2(A1 | A8, H1 | H8, 0, 0)},
    /* ply 5: 1 0 1 128 (our kingside right lost), black; rule50 0 set to 37 */
    {G2, 5, 2, 37, UP(1, 0, 1, 128, 1, 37), F2(A1 | A8, H8, 1, 37.0f / 99.0f)},
    /* ply 24: 1 0 0 0, white; rule50 11 set to 99 */
    {G2, 24, 2, 99, UP(1, 0, 0, 0, 0, 99), F2(A1, 0, 0, 1)},
    /* ply 59: no rights, black; rule50 4 set to 100: / 99 in format 2 too */
    {G2, 59, 2, 100, UP(0, 0, 0, 0, 1, 100), F2(0, 0, 1, 100.0f / 99.0f)},

    /* Format 3: as format 2, but 108 is the en-passant file on rank 8;
     * 109 / 99; 110 zero. Upstream writes the same as for format 2: the
     * bytes as floats, 108 the en-passant mask's value (8 = d, 64 = g). */
    /* game 49 ply 0: 1 128 1 128, white, rule50 0 */
    {G3A, 0, 3, -1, UP(1, 128, 1, 128, 0, 0), CAN(A1 | A8, H1 | H8, 0, 0, 0)},
    /* game 49 ply 3: 1 128 1 0, black (invariance 0x80); rule50 1 set to 37 */
    {G3A, 3, 3, 37, UP(1, 128, 1, 0, 0, 37), CAN(A1 | A8, H1, 0, 37.0f / 99.0f, 0)},
    /* game 54 ply 37: 0 0 1 0, black; rule50 0 set to 99 */
    {G3B, 37, 3, 99, UP(0, 0, 1, 0, 0, 99), CAN(A8, 0, 0, 1, 0)},
    /* game 54 ply 42: 1 0 0 0, white; rule50 0 set to 100 */
    {G3B, 42, 3, 100, UP(1, 0, 0, 0, 0, 100), CAN(A1, 0, 0, 100.0f / 99.0f, 0)},
    /* format-5 game 26 ply 30: 0 0 1 128, en passant on the g-file (64),
     * white, rule50 0 */
    {G5B, 30, 3, -1, UP(0, 0, 1, 128, 64, 0), CAN(A8, H8, G8, 0, 0)},
    /* format-5 game 22 ply 85: no rights, en passant 8 (d-file of the
     * flipped board: invariance 0x81, black and flip), rule50 0 */
    {G5A, 85, 3, -1, UP(0, 0, 0, 0, 8, 0), CAN(0, 0, D8, 0, 0)},

    /* Format 4 (hectoplies): format 3's planes with 109 / 100. Upstream's
     * are format 3's: it divides by 99. */
    {G3A, 0, 4, -1, UP(1, 128, 1, 128, 0, 0), CAN(A1 | A8, H1 | H8, 0, 0, 0)},
    {G3A, 3, 4, 37, UP(1, 128, 1, 0, 0, 37), CAN(A1 | A8, H1, 0, 37.0f / 100.0f, 0)},
    {G3B, 37, 4, 99, UP(0, 0, 1, 0, 0, 99), CAN(A8, 0, 0, 99.0f / 100.0f, 0)},
    {G3B, 42, 4, 100, UP(1, 0, 0, 0, 0, 100), CAN(A1, 0, 0, 1, 0)},
    {G5B, 30, 4, -1, UP(0, 0, 1, 128, 64, 0), CAN(A8, H8, G8, 0, 0)},
    {G5A, 85, 4, -1, UP(0, 0, 0, 0, 8, 0), CAN(0, 0, D8, 0, 0)},

    /* Format 132 (hectoplies, armageddon): format 4's, and 110 all ones when
     * black is to move (bit 7 of invariance_info). Upstream: 110 zero. */
    {G3A, 0, 132, -1, UP(1, 128, 1, 128, 0, 0), CAN(A1 | A8, H1 | H8, 0, 0, 0)},
    {G3A, 3, 132, 37, UP(1, 128, 1, 0, 0, 37), CAN(A1 | A8, H1, 0, 37.0f / 100.0f, 1)},
    {G3B, 37, 132, 99, UP(0, 0, 1, 0, 0, 99), CAN(A8, 0, 0, 99.0f / 100.0f, 1)},
    {G3B, 42, 132, 100, UP(1, 0, 0, 0, 0, 100), CAN(A1, 0, 0, 1, 0)},
    {G5B, 30, 132, -1, UP(0, 0, 1, 128, 64, 0), CAN(A8, H8, G8, 0, 0)},
    {G5A, 85, 132, -1, UP(0, 0, 0, 0, 8, 0), CAN(0, 0, D8, 0, 1)},

    /* Format 5 (canonical v2): format 4's rule. */
    {G5B, 30, 5, -1, UP(0, 0, 1, 128, 64, 0), CAN(A8, H8, G8, 0, 0)},
    {G5A, 85, 5, -1, UP(0, 0, 0, 0, 8, 0), CAN(0, 0, D8, 0, 0)},
    /* game 22 ply 79: no rights, black, flip (0x81); rule50 10 set to 37 */
    {G5A, 79, 5, 37, UP(0, 0, 0, 0, 0, 37), CAN(0, 0, 0, 37.0f / 100.0f, 0)},
    /* game 26 ply 112: no rights, white, flip (0x01); rule50 10 set to 99 */
    {G5B, 112, 5, 99, UP(0, 0, 0, 0, 0, 99), CAN(0, 0, 0, 99.0f / 100.0f, 0)},
    /* game 26 ply 57: 0 128 0 0, black; rule50 0 set to 100 */
    {G5B, 57, 5, 100, UP(0, 128, 0, 0, 0, 100), CAN(0, H1, 0, 1, 0)},
    /* game 26 ply 128: en passant 8, white, flip (0x01), rule50 0 */
    {G5B, 128, 5, -1, UP(0, 0, 0, 0, 8, 0), CAN(0, 0, D8, 0, 0)},

    /* Format 133 (v2, armageddon): format 5's, and 110 all ones when black
     * is to move. Upstream: 110 zero. */
    {G5B, 30, 133, -1, UP(0, 0, 1, 128, 64, 0), CAN(A8, H8, G8, 0, 0)},
    {G5A, 85, 133, -1, UP(0, 0, 0, 0, 8, 0), CAN(0, 0, D8, 0, 1)},
    {G5A, 79, 133, 37, UP(0, 0, 0, 0, 0, 37), CAN(0, 0, 0, 37.0f / 100.0f, 1)},
    {G5B, 112, 133, 99, UP(0, 0, 0, 0, 0, 99), CAN(0, 0, 0, 99.0f / 100.0f, 0)},
    {G5B, 57, 133, 100, UP(0, 128, 0, 0, 0, 100), CAN(0, H1, 0, 1, 1)},
    {G5B, 128, 133, -1, UP(0, 0, 0, 0, 8, 0), CAN(0, 0, D8, 0, 0)},
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* The frame of a case: the sample record, relabeled and its rule50 set. */
static lc_frame case_frame(const position_case *c)
{
    char *path = lc_xasprintf("%s/%s", tu_test_data(), c->game);
    size_t glen, rlen;
    uint8_t *gz = tu_read_file(path, &glen), *data = NULL;
    lc_error err;
    if (!gz || lc_gunzip(gz, glen, LC_INFLATE_AUTO, 1 << 26, &data, &rlen, &err) != 0 ||
        rlen < (c->ply + 1) * (size_t)V6_SIZE) {
        fprintf(stderr, "cannot read ply %u of %s (set LC_TEST_DATA)\n", c->ply, path);
        exit(2);
    }
    uint8_t *r = data + c->ply * (size_t)V6_SIZE;
    put_u32(r, 4, c->fmt);
    if (c->rule50 >= 0)
        r[8277] = (uint8_t)c->rule50;
    lc_frame f;
    CHECK_OK(lc_frame_from_record(r, 6, &f, NULL));
    free(data);
    free(gz);
    free(path);
    return f;
}

/* Planes 104..111 of one row against want, square by square, bit for bit. */
static void check_aux(const float *row, const plane_want want[8], const position_case *c,
                      const char *how)
{
    for (unsigned i = 0; i < 8; i++)
        for (unsigned sq = 0; sq < 64; sq++) {
            float v = (want[i].squares >> sq) & 1 ? want[i].v : 0.0f;
            float got = row[64 * (104 + i) + sq];
            if (memcmp(&got, &v, sizeof v) != 0) {
                fprintf(stderr,
                        "%s ply %u as format %u, %s: plane %u square %u is %.9g, want %.9g\n",
                        c->game, c->ply, c->fmt, how, 104 + i, sq, got, v);
                CHECK(!"a plane differs");
                return;
            }
        }
}

/* Every case in one batch, per `planes` value and layout. */
static void test_real_positions(void)
{
    lc_frame frames[N_CASES];
    for (unsigned i = 0; i < N_CASES; i++)
        frames[i] = case_frame(&cases[i]);
    float *out = malloc(N_CASES * PLANE_FLOATS * sizeof(float));
    const char *layouts[4] = {"layout: current\n", "layout: current\npacked: true\n",
                              "layout: legacy\n", "layout: legacy\npacked: true\n"};
    const char *names[4] = {"current", "current packed", "legacy", "legacy packed"};
    for (int up = 0; up < 2; up++)
        for (unsigned l = 0; l < 4; l++) {
            char settings[128];
            snprintf(settings, sizeof settings, "%s%s", layouts[l], up ? "planes: upstream\n" : "");
            planes_run(settings, frames, N_CASES, out);
            char how[128];
            snprintf(how, sizeof how, "planes %s, %s", up ? "upstream" : "input_format", names[l]);
            for (unsigned i = 0; i < N_CASES; i++) {
                check_history(out + i * PLANE_FLOATS, &frames[i]);
                check_aux(out + i * PLANE_FLOATS, up ? cases[i].up : cases[i].own, &cases[i], how);
            }
        }
    free(out);
    for (unsigned i = 0; i < N_CASES; i++)
        lc_frame_fini(&frames[i]);
}

/* The default's plane 109 is the legacy chunkparser's: rule50 divided by
 * 99 (formats 1-3) or 100 (the others) in double precision, packed as a
 * float32. Float division rounds the same for every byte. */
static void test_rule50_as_chunkparser(void)
{
    const uint32_t formats[7] = {1, 2, 3, 4, 5, 132, 133};
    unsigned same = 0;
    for (unsigned k = 0; k < 7; k++)
        for (unsigned r = 0; r < 256; r++) {
            const uint8_t castling[4] = {0, 0, 0, 0};
            lc_frame f = frame_of(formats[k], castling, 0, (uint8_t)r, 0);
            uint64_t words[8];
            float values[8];
            lc_frame_aux_planes(&f, words, values);
            float want = (float)((double)r / (formats[k] > 3 ? 100.0 : 99.0));
            same += memcmp(&values[5], &want, sizeof want) == 0 && words[5] == ALL;
            lc_frame_fini(&f);
        }
    CHECK_EQ_U64(same, 7 * 256);
}

static void test_config(void)
{
    lc_stage *s = NULL;
    lc_error err;
    /* (Both values are taken in both layouts: test_real_positions.) */
    CHECK(lc_standalone_new(lc_stage_class_find("tensor_generator"), "t",
                            "batch_size: 4\nplanes: classical\n", NULL, 4, NULL, &s, &err) != 0);
    CHECK(tu_contains(err.msg, "planes"));
}

int main(void)
{
    test_format3();
    test_format133();
    test_format1_same();
    test_real_positions();
    test_rule50_as_chunkparser();
    test_config();
    return check_finish();
}
