/*
 * games: see games.h.
 */
#include "format/parquet/games.h"

#include "core/rng.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const col_names[LC_GAME_COLS] = {"game_id",   "ply", "fen",  "played_move",
                                                    "best_move", "win", "draw", "loss"};
#define N_REQUIRED 5

int lc_game_columns(lc_parquet_file *pf, const char *path, int col[LC_GAME_COLS], lc_error *err)
{
    for (int k = 0; k < LC_GAME_COLS; k++) {
        col[k] = lc_parquet_find_column(pf, col_names[k]);
        if (col[k] < 0 && (k < N_REQUIRED || col[k] != -ENOENT))
            return lc_error_set(err, LC_EFORMAT,
                                "%s: column '%s' %s (the game columns are game_id, ply, fen, "
                                "played_move, best_move and optionally win, draw, loss)",
                                path, col_names[k],
                                col[k] == -ENOENT ? "is missing"
                                                  : "has a type that cannot be read");
        /* The kind each column must have: text for the FEN and the moves,
         * numbers for ply and the outcome; game_id may be either. */
        if (col[k] >= 0 && k != LC_GCOL_ID) {
            lc_parquet_kind kind = lc_parquet_column_at(pf, (size_t)col[k])->kind;
            bool text = k == LC_GCOL_FEN || k == LC_GCOL_PLAYED || k == LC_GCOL_BEST;
            if (text != (kind == LC_PARQUET_KIND_STRING))
                return lc_error_set(err, LC_EFORMAT, "%s: column '%s' holds %s, not %s", path,
                                    col_names[k],
                                    kind == LC_PARQUET_KIND_STRING ? "strings" : "numbers",
                                    text ? "strings" : "numbers");
        }
    }
    return 0;
}

/* ---- game ids ----------------------------------------------------------- */

uint64_t lc_game_text_hash(const char *s, size_t n)
{
    return lc_mix64(lc_fnv1a(s, n));
}

/* Integer and float ids hash their value; the same function serves planning
 * and reading, so the ranks agree. */
uint64_t lc_game_id_hash(const lc_parquet_column *c, size_t i)
{
    uint64_t h;
    if (c->kind == LC_PARQUET_KIND_STRING) {
        size_t n;
        const char *p = lc_parquet_string(c, i, &n);
        h = lc_game_text_hash(p, n);
    } else {
        uint64_t bits;
        if (c->kind == LC_PARQUET_KIND_INT64) {
            bits = (uint64_t)c->i64[i];
        } else {
            double v = c->f64[i] == 0.0 ? 0.0 : c->f64[i]; /* -0 and 0 are one id */
            memcpy(&bits, &v, sizeof bits);
        }
        h = lc_mix64(bits ^ 0x67616d655f696400u);
    }
    return h ? h : 1; /* 0 marks a free slot in the sets */
}

/* Compare the ids of two rows (of the same file, so of one kind). */
static int compare_ids(const lc_parquet_column *a, size_t i, const lc_parquet_column *b, size_t j)
{
    if (a->kind == LC_PARQUET_KIND_STRING) {
        size_t n, m;
        const char *p = lc_parquet_string(a, i, &n), *q = lc_parquet_string(b, j, &m);
        if (n != m)
            return n < m ? -1 : 1;
        return memcmp(p, q, n);
    }
    if (a->kind == LC_PARQUET_KIND_INT64)
        return (a->i64[i] > b->i64[j]) - (a->i64[i] < b->i64[j]);
    return (a->f64[i] > b->f64[j]) - (a->f64[i] < b->f64[j]);
}

const char *lc_game_id_text(const lc_parquet_column *c, size_t i, char *buf, size_t *len)
{
    if (c->kind == LC_PARQUET_KIND_STRING)
        return lc_parquet_string(c, i, len);
    int n = c->kind == LC_PARQUET_KIND_INT64 ? snprintf(buf, 32, "%lld", (long long)c->i64[i])
                                             : snprintf(buf, 32, "%.17g", c->f64[i]);
    *len = (size_t)n;
    return buf;
}

double lc_game_number(const lc_parquet_column *c, size_t i, bool *has)
{
    *has = c->n > i && c->valid[i];
    if (!*has)
        return 0.0;
    return c->kind == LC_PARQUET_KIND_DOUBLE ? c->f64[i] : (double)c->i64[i];
}

/* ---- sets and maps of id hashes ------------------------------------------ */

bool lc_hash_set_insert(lc_hash_set *s, uint64_t h)
{
    if (h == 0)
        h = 1; /* 0 marks a free slot */
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        uint64_t *v = lc_xcalloc(cap, sizeof *v);
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->v[i])
                continue;
            size_t j = s->v[i] & (cap - 1);
            while (v[j])
                j = (j + 1) & (cap - 1);
            v[j] = s->v[i];
        }
        free(s->v);
        s->v = v;
        s->cap = cap;
    }
    size_t j = h & (s->cap - 1);
    while (s->v[j]) {
        if (s->v[j] == h)
            return true;
        j = (j + 1) & (s->cap - 1);
    }
    s->v[j] = h;
    s->n++;
    return false;
}

bool lc_hash_set_has(const lc_hash_set *s, uint64_t h)
{
    if (h == 0)
        h = 1;
    if (!s->cap)
        return false;
    for (size_t j = h & (s->cap - 1); s->v[j]; j = (j + 1) & (s->cap - 1))
        if (s->v[j] == h)
            return true;
    return false;
}

void lc_hash_set_fini(lc_hash_set *s)
{
    free(s->v);
    *s = (lc_hash_set){0};
}

/* A map from game id hash to the index of the game in first-appearance
 * order, for planning. */
typedef struct game_map {
    uint64_t *keys; /* 0: free */
    uint32_t *vals;
    size_t cap, n;
} game_map;

static uint32_t *map_slot(game_map *m, uint64_t h, bool *added)
{
    if (2 * (m->n + 1) > m->cap) {
        game_map g = {.cap = m->cap ? 2 * m->cap : 1024};
        g.keys = lc_xcalloc(g.cap, sizeof *g.keys);
        g.vals = lc_xmalloc(g.cap * sizeof *g.vals);
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i])
                continue;
            size_t j = m->keys[i] & (g.cap - 1);
            while (g.keys[j])
                j = (j + 1) & (g.cap - 1);
            g.keys[j] = m->keys[i];
            g.vals[j] = m->vals[i];
        }
        g.n = m->n;
        free(m->keys);
        free(m->vals);
        *m = g;
    }
    size_t j = h & (m->cap - 1);
    while (m->keys[j] && m->keys[j] != h)
        j = (j + 1) & (m->cap - 1);
    *added = !m->keys[j];
    if (*added) {
        m->keys[j] = h;
        m->n++;
    }
    return &m->vals[j];
}

/* ---- sharing a file between ranks ---------------------------------------- */

int lc_game_plan_shares(lc_parquet_file *pf, int id_col, const uint64_t *rg_first, size_t n_rg,
                        uint32_t world, uint32_t rank, lc_parquet_column *col, lc_hash_set *mine,
                        uint8_t *need, lc_game_shares *out, lc_error *err)
{
    *out = (lc_game_shares){0};
    uint64_t total = rg_first[n_rg];
    uint64_t *row_hash = lc_xmalloc((total ? total : 1) * sizeof *row_hash); /* 0: no id */
    game_map map = {0};
    uint64_t *rows = NULL, *first = NULL; /* per game, in first-appearance order */
    size_t n_games = 0, cap_games = 0;
    int rc = 0;
    for (size_t rg = 0; rg < n_rg && rc == 0; rg++) {
        rc = lc_parquet_read_column(pf, rg, (size_t)id_col, col, err);
        if (rc != 0)
            break;
        uint64_t base = rg_first[rg];
        for (size_t i = 0; i < col->n && base + i < total; i++) {
            if (!col->valid[i]) {
                row_hash[base + i] = 0;
                out->no_id++;
                continue;
            }
            uint64_t h = lc_game_id_hash(col, i);
            row_hash[base + i] = h;
            bool added;
            uint32_t *slot = map_slot(&map, h, &added);
            if (added) {
                if (n_games == cap_games) {
                    cap_games = cap_games ? 2 * cap_games : 1024;
                    rows = lc_xrealloc(rows, cap_games * sizeof *rows);
                    first = lc_xrealloc(first, cap_games * sizeof *first);
                }
                *slot = (uint32_t)n_games;
                rows[n_games] = 0;
                first[n_games] = h;
                n_games++;
            }
            rows[*slot]++;
        }
    }
    out->n_games = n_games;
    out->with_id = total - out->no_id;
    uint64_t cum = 0;
    for (size_t k = 0; rc == 0 && k < n_games; k++) {
        uint64_t r = out->with_id ? (cum + rows[k] / 2) * world / out->with_id : 0;
        if (r >= world)
            r = world - 1;
        cum += rows[k];
        if (r < 16)
            out->per_rank[r] += rows[k];
        if (r == rank) {
            lc_hash_set_insert(mine, first[k]);
            out->mine_rows += rows[k];
        } else {
            out->other_games++;
        }
    }
    for (size_t rg = 0; rc == 0 && rg < n_rg; rg++)
        for (uint64_t i = rg_first[rg]; i < rg_first[rg + 1] && !need[rg]; i++)
            if (row_hash[i] && lc_hash_set_has(mine, row_hash[i]))
                need[rg] = 1;
    free(row_hash);
    free(map.keys);
    free(map.vals);
    free(rows);
    free(first);
    return rc;
}

/* ---- reading a row group ------------------------------------------------ */

int lc_game_read_row_group(lc_parquet_file *pf, const int col[LC_GAME_COLS], size_t rg,
                           uint64_t first_row, const lc_hash_set *mine, lc_game_chunk *ch,
                           uint64_t *no_id, lc_error *err)
{
    ch->n_refs = 0;
    *no_id = 0;
    for (int k = 0; k < LC_GAME_COLS; k++) {
        if (col[k] < 0) {
            ch->cols[k].n = 0;
            continue;
        }
        int rc = lc_parquet_read_column(pf, rg, (size_t)col[k], &ch->cols[k], err);
        if (rc != 0)
            return rc;
    }
    const lc_parquet_column *id = &ch->cols[LC_GCOL_ID], *ply = &ch->cols[LC_GCOL_PLY];
    if (id->n > ch->cap_refs) {
        free(ch->refs);
        ch->cap_refs = id->n;
        ch->refs = lc_xmalloc(ch->cap_refs * sizeof *ch->refs);
    }
    for (size_t i = 0; i < id->n; i++) {
        if (!id->valid[i]) {
            (*no_id)++;
            continue;
        }
        uint64_t h = lc_game_id_hash(id, i);
        if (mine && !lc_hash_set_has(mine, h))
            continue;
        lc_game_ref *r = &ch->refs[ch->n_refs++];
        bool has_ply;
        double p = lc_game_number(ply, i, &has_ply);
        *r = (lc_game_ref){.hash = h,
                           .ply = has_ply && ply->kind == LC_PARQUET_KIND_INT64 ? ply->i64[i]
                                                                                : (int64_t)p,
                           .row = first_row + i,
                           .chunk = ch,
                           .i = (uint32_t)i,
                           .ply_null = !has_ply};
    }
    return 0;
}

void lc_game_chunk_free(lc_game_chunk *ch)
{
    if (!ch)
        return;
    for (int k = 0; k < LC_GAME_COLS; k++)
        lc_parquet_column_fini(&ch->cols[k]);
    free(ch->refs);
    free(ch);
}

/* ---- grouping a file's rows into games ---------------------------------- */

static int compare_refs(const void *a, const void *b)
{
    const lc_game_ref *x = a, *y = b;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    int c = compare_ids(&x->chunk->cols[LC_GCOL_ID], x->i, &y->chunk->cols[LC_GCOL_ID], y->i);
    if (c)
        return c;
    if (x->ply_null != y->ply_null)
        return x->ply_null ? 1 : -1;
    if (x->ply != y->ply)
        return x->ply < y->ply ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* Rows in order within one game (same id): by ply, nulls last, then row. */
static int compare_plies(const lc_game_ref *x, const lc_game_ref *y)
{
    if (x->ply_null != y->ply_null)
        return x->ply_null ? 1 : -1;
    if (x->ply != y->ply)
        return x->ply < y->ply ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* A run of consecutive kept rows of one chunk with the same id hash: most
 * often a whole game, already in ply order. Grouping sorts these, not
 * rows. */
struct lc_game_seg {
    const lc_game_ref *refs;
    uint32_t n;
    bool sorted; /* its rows are in ply order */
};

static int compare_segs(const void *a, const void *b)
{
    const struct lc_game_seg *x = a, *y = b;
    return compare_refs(x->refs, y->refs);
}

/* A game: segments [a, b) of the sorted segments; its first and last row. */
struct lc_game_span {
    size_t a, b;
    uint64_t first, last;
};

static int compare_first_rows(const void *a, const void *b)
{
    const struct lc_game_span *x = a, *y = b;
    return (x->first > y->first) - (x->first < y->first);
}

/* True when the game may have rows in a damaged row group: its rows reach
 * the row just before or after one, or span one. */
static bool near_damage(const uint8_t *damaged, const uint64_t *rg_first, size_t n_rg,
                        const struct lc_game_span *gm)
{
    if (!damaged)
        return false;
    for (size_t rg = 0; rg < n_rg; rg++)
        if (damaged[rg] && gm->first <= rg_first[rg + 1] && gm->last + 1 >= rg_first[rg])
            return true;
    return false;
}

static bool same_id(const lc_game_ref *x, const lc_game_ref *y)
{
    return x->hash == y->hash &&
           compare_ids(&x->chunk->cols[LC_GCOL_ID], x->i, &y->chunk->cols[LC_GCOL_ID], y->i) == 0;
}

void lc_game_group(lc_game_groups *gg, const lc_game_chunk *chunks, const uint8_t *damaged,
                   const uint64_t *rg_first, size_t n_rg, bool shuffle, uint64_t seed,
                   size_t *left_out)
{
    *gg = (lc_game_groups){0};
    /* The segments: runs of one id within a chunk. */
    size_t cap_segs = 256;
    struct lc_game_seg *segs = lc_xmalloc(cap_segs * sizeof *segs);
    size_t n_segs = 0;
    for (const lc_game_chunk *ch = chunks; ch; ch = ch->next) {
        for (size_t i = 0; i < ch->n_refs;) {
            size_t j = i + 1;
            bool sorted = true;
            while (j < ch->n_refs && same_id(&ch->refs[j], &ch->refs[i])) {
                sorted = sorted && compare_plies(&ch->refs[j - 1], &ch->refs[j]) <= 0;
                j++;
            }
            if (n_segs == cap_segs) {
                cap_segs *= 2;
                segs = lc_xrealloc(segs, cap_segs * sizeof *segs);
            }
            segs[n_segs++] = (struct lc_game_seg){
                .refs = ch->refs + i, .n = (uint32_t)(j - i), .sorted = sorted};
            i = j;
        }
    }
    qsort(segs, n_segs, sizeof *segs, compare_segs);

    /* Games: runs of segments with the same id (sorted by hash, then id, so
     * two ids that share a hash stay apart). */
    size_t n_games = 0, cap = 64;
    struct lc_game_span *games = lc_xmalloc(cap * sizeof *games);
    for (size_t k = 0; k < n_segs; k++) {
        const lc_game_ref *r = segs[k].refs;
        if (k == 0 || !same_id(r, segs[k - 1].refs)) {
            if (n_games == cap) {
                cap *= 2;
                games = lc_xrealloc(games, cap * sizeof *games);
            }
            games[n_games++] = (struct lc_game_span){.a = k, .first = UINT64_MAX};
        }
        struct lc_game_span *gm = &games[n_games - 1];
        gm->b = k + 1;
        for (uint32_t i = 0; i < segs[k].n; i++) {
            if (r[i].row < gm->first)
                gm->first = r[i].row;
            if (r[i].row > gm->last)
                gm->last = r[i].row;
        }
    }
    /* Games next to a damaged row group may be incomplete. */
    size_t kept = 0;
    for (size_t i = 0; i < n_games; i++)
        if (!near_damage(damaged, rg_first, n_rg, &games[i]))
            games[kept++] = games[i];
    *left_out = n_games - kept;
    n_games = kept;

    if (shuffle) {
        lc_rng rng;
        lc_rng_seed(&rng, seed, LC_RNG_STREAM_GAMES);
        lc_rng_shuffle(&rng, games, n_games, sizeof *games);
    } else {
        qsort(games, n_games, sizeof *games, compare_first_rows);
    }
    gg->segs = segs;
    gg->n_segs = n_segs;
    gg->games = games;
    gg->n_games = n_games;
}

/* Its one sorted segment where it can, else gathered into tmp and sorted. */
const lc_game_ref *lc_game_rows(lc_game_groups *gg, size_t i, size_t *n)
{
    const struct lc_game_span *gm = &gg->games[i];
    const struct lc_game_seg *segs = gg->segs, *first = &segs[gm->a];
    if (gm->b == gm->a + 1 && first->sorted) {
        *n = first->n;
        return first->refs;
    }
    size_t total = 0;
    for (size_t k = gm->a; k < gm->b; k++)
        total += segs[k].n;
    if (total > gg->cap_tmp) {
        gg->cap_tmp = total;
        free(gg->tmp);
        gg->tmp = lc_xmalloc(total * sizeof *gg->tmp);
    }
    size_t m = 0;
    bool sorted = true;
    for (size_t k = gm->a; k < gm->b; k++) {
        sorted = sorted && segs[k].sorted &&
                 (m == 0 || compare_plies(&gg->tmp[m - 1], segs[k].refs) <= 0);
        memcpy(gg->tmp + m, segs[k].refs, segs[k].n * sizeof *gg->tmp);
        m += segs[k].n;
    }
    if (!sorted)
        qsort(gg->tmp, m, sizeof *gg->tmp, compare_refs);
    *n = m;
    return gg->tmp;
}

void lc_game_groups_fini(lc_game_groups *gg)
{
    free(gg->tmp);
    free(gg->games);
    free(gg->segs);
    *gg = (lc_game_groups){0};
}
