/*
 * lc0_games_records: the generated plies as V6 records of input format 1,
 * laid out as lc0 encodes a position of a game that began at the start
 * position (docs/lc0-training-data.md): history step t holds the position
 * t plies back seen from the side to move now (so every odd step is
 * mirrored top-bottom with the sides swapped), its repetition plane all
 * ones when that position had occurred before; steps before the game's
 * first position stay empty. Then the gzip writer.
 */
#include "lc0_games.h"
#include "lc0_games_plies.h"

#include "format/lc0/record.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <zlib.h>

#define OFF(field) offsetof(lc_v6_record, field)

static void put_f32(uint8_t *r, size_t off, float v)
{
    memcpy(r + off, &v, sizeof v);
}

static void put_u16(uint8_t *r, size_t off, uint16_t v)
{
    memcpy(r + off, &v, sizeof v);
}

static void put_u32(uint8_t *r, size_t off, uint32_t v)
{
    memcpy(r + off, &v, sizeof v);
}

/* Planes 0..103 of record k. */
static void put_planes(const gen_plies *g, size_t k, uint8_t *r)
{
    uint64_t planes[LC_RECORD_PLANES];
    memset(planes, 0, sizeof planes);
    for (size_t t = 0; t < 8 && t <= k; t++) {
        const gen_ply *h = &g->p[k - t];
        for (int i = 0; i < 12; i++) {
            uint64_t bb = h->pos.bb[i];
            if (t % 2) /* the other side's frame: mirrored, sides swapped */
                bb = __builtin_bswap64(h->pos.bb[(i + 6) % 12]);
            planes[13 * t + (size_t)i] = lc_plane_squares(bb);
        }
        planes[13 * t + 12] = h->reps ? ~0ull : 0;
    }
    memcpy(r + OFF(planes), planes, sizeof planes);
}

static void put_values(const gen_ply *p, float m, bool orig_nan, uint8_t *r)
{
    put_f32(r, OFF(root_q), p->root_q);
    put_f32(r, OFF(best_q), p->best_q);
    put_f32(r, OFF(root_d), p->root_d);
    put_f32(r, OFF(best_d), p->best_d);
    put_f32(r, OFF(root_m), m + 0.5f);
    put_f32(r, OFF(best_m), m);
    put_f32(r, OFF(plies_left), m);
    put_f32(r, OFF(played_q), p->played_q);
    put_f32(r, OFF(played_d), p->played_d);
    put_f32(r, OFF(played_m), m);
    put_f32(r, OFF(orig_q), orig_nan ? NAN : p->root_q);
    put_f32(r, OFF(orig_d), orig_nan ? NAN : p->root_d);
    put_f32(r, OFF(orig_m), orig_nan ? NAN : m + 0.5f);
    put_u32(r, OFF(visits), p->visits);
    put_u16(r, OFF(played_idx), p->played);
    put_u16(r, OFF(best_idx), p->best);
    put_f32(r, OFF(policy_kld), p->kld);
    put_f32(r, OFF(q_st), 0.0f);
}

void gen_plies_write(const gen_plies *g, int result_white, bool adjudicated, bool orig_nan,
                     uint8_t *out)
{
    for (size_t k = 0; k < g->n; k++) {
        const gen_ply *p = &g->p[k];
        uint8_t *r = out + k * LC_V6_RECORD_SIZE;
        memset(r, 0, LC_V6_RECORD_SIZE);
        put_u32(r, OFF(version), 6);
        put_u32(r, OFF(input_format), 1);
        for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
            put_f32(r, OFF(probabilities) + 4 * (size_t)i, -1.0f);
        for (unsigned i = 0; i < p->n; i++)
            put_f32(r, OFF(probabilities) + 4 * (size_t)p->policy[i], p->prob[i]);
        put_planes(g, k, r);
        for (int i = 0; i < 4; i++)
            r[OFF(castling_us_ooo) + (size_t)i] = p->pos.castle[i] != 0;
        r[OFF(side_to_move_or_enpassant)] = p->black;
        r[OFF(rule50_count)] = p->pos.rule50;
        r[OFF(invariance_info)] = (uint8_t)((p->proven ? 8 : 0) | (adjudicated ? 32 : 0));
        /* lc0's plies_left: the last record's best_m (1) plus the plies
         * after it; best_m says the same here. */
        put_values(p, (float)(g->n - k), orig_nan, r);
        int res = p->black ? -result_white : result_white;
        put_f32(r, OFF(result_q), (float)res);
        put_f32(r, OFF(result_d), res == 0 ? 1.0f : 0.0f);
    }
}

int lc_gen_write_gz(const char *path, const uint8_t *records, size_t n, lc_error *err)
{
    errno = 0;
    gzFile f = gzopen(path, "wb");
    if (!f)
        return lc_error_set(err, errno ? -errno : -ENOMEM, "%s: cannot create: %s", path,
                            strerror(errno ? errno : ENOMEM));
    int rc = 0;
    for (size_t k = 0; k < n && rc == 0; k++)
        if (gzwrite(f, records + k * LC_V6_RECORD_SIZE, LC_V6_RECORD_SIZE) != LC_V6_RECORD_SIZE)
            rc = lc_error_set(err, -EIO, "%s: cannot write record %zu", path, k);
    if (gzclose(f) != Z_OK && rc == 0)
        rc = lc_error_set(err, -EIO, "%s: cannot finish the gzip stream", path);
    return rc;
}
