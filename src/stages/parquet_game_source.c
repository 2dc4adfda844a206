/*
 * parquet_game_source: reads Parquet tables of analysed games
 * (docs/chess-transformer-data.md) and emits one "game" item per game: its
 * rows sorted by ply.
 *
 * Work. An epoch lists the *.parquet files under `path` (recursively, names
 * starting with '.' ignored, sorted by name) and, with `shuffle`, puts them
 * in a random order drawn from the run seed and the epoch number, the same
 * on every rank. N worker threads share the epoch's work through one
 * mutex-protected list: "plan the next file" and "read this unit". Units of
 * a file are handed out before the next file is planned, so the threads read
 * the row groups of one file in parallel and memory stays bounded.
 *
 * Planning a file reads only its game_id column, one row group at a time,
 * and finds the runs of equal ids. When every game's rows are contiguous
 * (the usual table, written game by game), each game belongs to the row
 * group holding its first row, and that row group is a unit: its games' rows,
 * which may run on into the following row groups. When some game's rows are
 * scattered (a table sorted otherwise), the whole file is one unit, so no
 * game is ever split. A unit's identity is the file's name and its first
 * row; sharding keeps the units whose share (lc_share_of) is this rank, so
 * each game is read by exactly one rank and, within a rank, by one thread.
 *
 * Reading a unit reads the game columns of its row groups, groups the rows
 * by game_id, sorts each game by ply and emits the games (shuffled with
 * `shuffle`, else in file order), each as one allocation. Rows with a null
 * fen, played_move or best_move are passed on with that string NULL (the
 * row's presence flag): whether they spoil the game (decoder) or only their
 * position (encoder) depends on the consumer's mode, so game_tokenizer
 * checks and counts them. A row without a game_id is counted and skipped. A
 * file that cannot be opened or lacks a game column, and a unit that cannot
 * be read, are logged (naming the file, column and row group) and counted;
 * the stage goes on with the rest.
 *
 * `epochs` epochs are read (0: without end); then the output closes.
 */
#include "stages/stage.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/text.h"
#include "format/chess_tokens.h"
#include "format/parquet.h"
#include "stages/items.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct pgs_config {
    char *path;
    unsigned *threads_opt;
    uint64_t *epochs_opt;
    bool *shuffle_opt;
    /* Resolved by config_check. */
    unsigned threads;
    uint64_t epochs; /* 0: without end */
    bool shuffle;
} pgs_config;

static const cyaml_schema_field_t pgs_fields[] = {
    CYAML_FIELD_STRING_PTR("path", CYAML_FLAG_POINTER, pgs_config, path, 1, CYAML_UNLIMITED),
    CYAML_FIELD_UINT_PTR("threads", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, pgs_config,
                         threads_opt),
    CYAML_FIELD_UINT_PTR("epochs", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, pgs_config,
                         epochs_opt),
    CYAML_FIELD_BOOL_PTR("shuffle", CYAML_FLAG_POINTER | CYAML_FLAG_OPTIONAL, pgs_config,
                         shuffle_opt),
    CYAML_FIELD_END,
};

static int pgs_config_check(void *p, lc_error *err)
{
    pgs_config *c = p;
    int rc = lc_config_expand_path(&c->path, "path", "a directory of .parquet files, or one file",
                                   err);
    if (lc_config_threads(&c->threads, c->threads_opt, 1, 64, err))
        rc = LC_ECONFIG;
    c->epochs = c->epochs_opt ? *c->epochs_opt : 0;
    c->shuffle = c->shuffle_opt ? *c->shuffle_opt : true;
    return rc;
}

/* The columns, by the names of the doc. win, draw and loss may be absent
 * (then every value counts as missing); the others are required. */
enum { C_ID, C_PLY, C_FEN, C_PLAYED, C_BEST, C_WIN, C_DRAW, C_LOSS, N_COLS };
static const char *const col_names[N_COLS] = {"game_id",   "ply", "fen",  "played_move",
                                              "best_move", "win", "draw", "loss"};
#define N_REQUIRED 5

typedef struct pq_file {
    char *path;
    const char *base; /* inside path */
    lc_parquet_file *pf;
    int col[N_COLS]; /* -1 when absent */
    size_t n_rg;
    uint64_t *rg_first; /* first row of each row group; [n_rg] = rows */
    unsigned refs;      /* units not yet read (under the stage lock) */
} pq_file;

typedef struct pq_unit {
    pq_file *f;
    uint64_t begin, end; /* rows of the file */
    uint64_t seed;       /* for the order of its games */
} pq_unit;

_Static_assert(sizeof(pq_unit) <= 64, "shuffle() swaps through 64 bytes");

/* One row of a unit being read: strings live in the scratch arena. */
typedef struct pq_row {
    uint64_t hash;
    uint64_t row; /* in the file */
    int64_t ply;
    size_t id_off, fen_off, played_off, best_off;
    uint32_t id_len, fen_len, played_len, best_len;
    double w, d, l;
    uint8_t has_w, has_d, has_l;
    uint8_t has_fen, has_played, has_best; /* false for a null value */
    uint8_t ply_null;
} pq_row;

typedef struct pq_scratch {
    lc_parquet_column cols[N_COLS];
    pq_row *rows;
    size_t n_rows, cap_rows;
    char *arena;
    size_t n_arena, cap_arena;
    size_t *games; /* start index (into the sorted rows) of every game, then n_rows */
    size_t n_games, cap_games;
} pq_scratch;

typedef struct pgs {
    lc_worker_pool pool;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    /* Under mu. */
    char **paths;
    size_t n_paths, next_path;
    pq_unit *units;
    size_t n_units, head_unit, cap_units;
    unsigned busy;   /* workers planning a file or reading a unit */
    uint64_t epoch;  /* epochs started */
    bool done;       /* the last epoch is read */
    bool warned_empty;
    atomic_uint_fast64_t seq;
    atomic_uint_fast64_t n_files, n_units_read, n_games, n_rows, n_bad_files, n_bad_units,
        n_rows_no_id, n_other_rank, n_scattered_files;
    atomic_uint_fast64_t epoch_gauge, files_done_gauge, files_total_gauge;
} pgs;

/* ---- listing ---------------------------------------------------------- */

typedef struct name_list {
    char **v;
    size_t n, cap;
} name_list;

static void list_add(name_list *l, char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = lc_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = s;
}

static void list_tree(const char *dir, name_list *out)
{
    DIR *d = opendir(dir);
    if (!d) {
        LC_WARN("cannot list %s: %s", dir, strerror(errno));
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *p = lc_xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) != 0) {
            free(p);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            list_tree(p, out);
            free(p);
        } else if (S_ISREG(st.st_mode) && lc_has_suffix(e->d_name, ".parquet")) {
            list_add(out, p);
        } else {
            free(p);
        }
    }
    closedir(d);
}

/* By basename (the sort key), the full path breaking ties. */
static int compare_paths(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    int c = strcmp(lc_basename(x), lc_basename(y));
    return c ? c : strcmp(x, y);
}

/* Fisher-Yates over n elements of `size` bytes (at most 64). */
static void shuffle(void *base, size_t n, size_t size, lc_rng *rng)
{
    char t[64], *v = base;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)lc_rng_below(rng, i);
        memcpy(t, v + (i - 1) * size, size);
        memcpy(v + (i - 1) * size, v + j * size, size);
        memcpy(v + j * size, t, size);
    }
}

static uint64_t text_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return lc_mix64(h);
}

/* Under mu: list the files of the next epoch. */
static void start_epoch(lc_stage *s, pgs *g)
{
    const pgs_config *c = s->config;
    for (size_t i = 0; i < g->n_paths; i++)
        free(g->paths[i]);
    free(g->paths);
    name_list l = {0};
    struct stat st;
    if (stat(c->path, &st) == 0 && S_ISREG(st.st_mode))
        list_add(&l, lc_xstrdup(c->path));
    else
        list_tree(c->path, &l);
    if (l.n)
        qsort(l.v, l.n, sizeof *l.v, compare_paths);
    if (c->shuffle && l.n > 1) {
        lc_rng rng;
        lc_rng_seed(&rng, s->env->seed ^ text_hash(s->name, strlen(s->name)), g->epoch);
        shuffle(l.v, l.n, sizeof *l.v, &rng);
    }
    g->paths = l.v;
    g->n_paths = l.n;
    g->next_path = 0;
    g->epoch++;
    atomic_store(&g->epoch_gauge, g->epoch);
    atomic_store(&g->files_total_gauge, l.n);
    atomic_store(&g->files_done_gauge, 0);
    if (l.n) {
        LC_INFO("%s: epoch %llu: %zu Parquet files under %s", s->name,
                (unsigned long long)g->epoch, l.n, c->path);
        g->warned_empty = false;
    } else if (!g->warned_empty) {
        LC_WARN("%s: no .parquet files under %s; looking again every second", s->name, c->path);
        g->warned_empty = true;
    }
}

/* ---- planning a file -------------------------------------------------- */

/* Under mu. */
static void push_unit(pgs *g, const pq_unit *u)
{
    if (g->head_unit > 0 && g->head_unit == g->n_units) {
        g->head_unit = g->n_units = 0;
    }
    if (g->n_units == g->cap_units) {
        g->cap_units = g->cap_units ? 2 * g->cap_units : 64;
        g->units = lc_xrealloc(g->units, g->cap_units * sizeof *g->units);
    }
    g->units[g->n_units++] = *u;
}

static void file_free(pq_file *f)
{
    if (!f)
        return;
    lc_parquet_close(f->pf);
    free(f->rg_first);
    free(f->path);
    free(f);
}

/* True when the two rows' ids are equal (rows of the same or different
 * row groups: the previous id is kept as a copy in prev). */
typedef struct id_key {
    bool null;
    uint64_t hash;
    char *bytes;
    size_t len, cap;
} id_key;

static void id_of(const lc_parquet_column *c, size_t i, id_key *k)
{
    k->null = !c->valid[i];
    if (k->null) {
        k->len = 0;
        k->hash = 0;
        return;
    }
    const char *p;
    size_t n;
    char num[24];
    if (c->kind == LC_PARQUET_KIND_STRING) {
        p = lc_parquet_string(c, i, &n);
    } else if (c->kind == LC_PARQUET_KIND_INT64) {
        n = (size_t)snprintf(num, sizeof num, "%lld", (long long)c->i64[i]);
        p = num;
    } else {
        n = (size_t)snprintf(num, sizeof num, "%.17g", c->f64[i]);
        p = num;
    }
    if (n > k->cap) {
        k->cap = n + 32;
        k->bytes = lc_xrealloc(k->bytes, k->cap);
    }
    memcpy(k->bytes, p, n);
    k->len = n;
    k->hash = text_hash(p, n);
}

static bool same_id(const id_key *a, const id_key *b)
{
    return !a->null && !b->null && a->hash == b->hash && a->len == b->len &&
           memcmp(a->bytes, b->bytes, a->len) == 0;
}

/* An open-addressing set of 64-bit hashes: true when h was there already. */
typedef struct hash_set {
    uint64_t *v;
    size_t cap, n;
} hash_set;

static bool set_insert(hash_set *s, uint64_t h)
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

/* Run starts of the file (rows where a new game_id begins), and whether
 * every id starts only one run. Reads the game_id column only. */
static int find_runs(pq_file *f, lc_parquet_column *col, uint64_t **starts, size_t *n_starts,
                     bool *contiguous, uint64_t *no_id, lc_error *err)
{
    id_key prev = {.null = true}, cur = {0};
    hash_set seen = {0};
    size_t n = 0, cap = 0;
    uint64_t *v = NULL;
    *contiguous = true;
    *no_id = 0;
    int rc = 0;
    for (size_t rg = 0; rg < f->n_rg; rg++) {
        rc = lc_parquet_read_column(f->pf, rg, (size_t)f->col[C_ID], col, err);
        if (rc != 0)
            break;
        for (size_t i = 0; i < col->n; i++) {
            id_of(col, i, &cur);
            if (cur.null) {
                (*no_id)++;
            } else if (!same_id(&cur, &prev)) {
                if (n == cap) {
                    cap = cap ? 2 * cap : 1024;
                    v = lc_xrealloc(v, cap * sizeof *v);
                }
                v[n++] = f->rg_first[rg] + i;
                if (set_insert(&seen, cur.hash))
                    *contiguous = false;
            }
            /* A null row does not end the run around it. */
            if (!cur.null) {
                id_key t = prev;
                prev = cur;
                cur = t;
            }
        }
    }
    free(prev.bytes);
    free(cur.bytes);
    free(seen.v);
    if (rc != 0) {
        free(v);
        return rc;
    }
    *starts = v;
    *n_starts = n;
    return 0;
}

static void plan_file(lc_stage *s, pgs *g, char *path, uint64_t epoch, pq_scratch *sc)
{
    const pgs_config *c = s->config;
    pq_file *f = lc_xcalloc(1, sizeof *f);
    f->path = path;
    f->base = lc_basename(path);
    lc_error err;
    lc_error_clear(&err);
    if (lc_parquet_open(path, &f->pf, &err) != 0) {
        LC_WARN("%s: skipping %s", s->name, err.msg);
        atomic_fetch_add(&g->n_bad_files, 1);
        file_free(f);
        return;
    }
    for (int k = 0; k < N_COLS; k++) {
        f->col[k] = lc_parquet_find_column(f->pf, col_names[k]);
        if (f->col[k] < 0 && (k < N_REQUIRED || f->col[k] != -ENOENT)) {
            LC_WARN("%s: skipping %s: column '%s' %s (the game columns are game_id, ply, fen, "
                    "played_move, best_move and optionally win, draw, loss)",
                    s->name, path, col_names[k],
                    f->col[k] == -ENOENT ? "is missing" : "has a type that cannot be read");
            atomic_fetch_add(&g->n_bad_files, 1);
            file_free(f);
            return;
        }
    }
    f->n_rg = lc_parquet_num_row_groups(f->pf);
    f->rg_first = lc_xmalloc((f->n_rg + 1) * sizeof *f->rg_first);
    uint64_t rows = 0;
    for (size_t rg = 0; rg < f->n_rg; rg++) {
        f->rg_first[rg] = rows;
        rows += (uint64_t)lc_parquet_row_group_rows(f->pf, rg);
    }
    f->rg_first[f->n_rg] = rows;

    uint64_t *starts = NULL, no_id = 0;
    size_t n_starts = 0;
    bool contiguous = true;
    if (find_runs(f, &sc->cols[C_ID], &starts, &n_starts, &contiguous, &no_id, &err) != 0) {
        LC_WARN("%s: skipping %s", s->name, err.msg);
        atomic_fetch_add(&g->n_bad_files, 1);
        file_free(f);
        return;
    }
    atomic_fetch_add(&g->n_files, 1);

    /* The units: [begin, end) row ranges, each holding whole games. */
    pq_unit *units = NULL;
    size_t n_units = 0;
    if (n_starts && !contiguous) {
        LC_INFO("%s: %s: the rows of some games are not contiguous; reading the file as one "
                "unit",
                s->name, f->base);
        atomic_fetch_add(&g->n_scattered_files, 1);
        units = lc_xmalloc(sizeof *units);
        units[n_units++] = (pq_unit){.f = f, .begin = 0, .end = rows};
    } else if (n_starts) {
        units = lc_xmalloc(f->n_rg * sizeof *units);
        size_t k = 0;
        for (size_t rg = 0; rg < f->n_rg; rg++) {
            if (k == n_starts || starts[k] >= f->rg_first[rg + 1])
                continue; /* no game starts here */
            uint64_t begin = starts[k];
            while (k < n_starts && starts[k] < f->rg_first[rg + 1])
                k++;
            uint64_t end = k < n_starts ? starts[k] : rows;
            units[n_units++] = (pq_unit){.f = f, .begin = begin, .end = end};
        }
    }
    free(starts);

    /* This rank's units, in a random order (a file's games are shuffled
     * across its units as well as within them). */
    size_t kept = 0;
    uint32_t world = s->env->world_size ? s->env->world_size : 1;
    for (size_t i = 0; i < n_units; i++) {
        if (world > 1 && lc_share_of(f->base, units[i].begin, world) != s->env->rank) {
            atomic_fetch_add(&g->n_other_rank, 1);
            continue;
        }
        units[i].seed = s->env->seed ^ lc_mix64(epoch * 0x9e3779b97f4a7c15u ^
                                                text_hash(f->base, strlen(f->base)) ^
                                                lc_mix64(units[i].begin));
        units[kept++] = units[i];
    }
    if (c->shuffle && kept > 1) {
        lc_rng rng;
        lc_rng_seed(&rng, units[0].seed, 1);
        shuffle(units, kept, sizeof *units, &rng);
    }
    if (no_id)
        atomic_fetch_add(&g->n_rows_no_id, no_id);
    if (!kept) {
        free(units);
        file_free(f);
        return;
    }
    lc_mutex_lock(&g->mu);
    f->refs = (unsigned)kept;
    for (size_t i = 0; i < kept; i++)
        push_unit(g, &units[i]);
    lc_cond_broadcast(&g->cond);
    lc_mutex_unlock(&g->mu);
    free(units);
}

/* ---- reading a unit --------------------------------------------------- */

static size_t arena_put(pq_scratch *sc, const char *p, size_t n)
{
    if (sc->n_arena + n > sc->cap_arena) {
        size_t cap = sc->cap_arena ? 2 * sc->cap_arena : (1u << 20);
        while (cap < sc->n_arena + n)
            cap *= 2;
        sc->arena = lc_xrealloc(sc->arena, cap);
        sc->cap_arena = cap;
    }
    size_t off = sc->n_arena;
    if (n)
        memcpy(sc->arena + off, p, n);
    sc->n_arena += n;
    return off;
}

static void string_at(const lc_parquet_column *c, size_t i, pq_scratch *sc, size_t *off,
                      uint32_t *len, uint8_t *present)
{
    *present = c->valid[i] != 0;
    size_t n = 0;
    const char *p = *present ? lc_parquet_string(c, i, &n) : "";
    *off = arena_put(sc, p, n);
    *len = (uint32_t)n;
}

static double number_at(const lc_parquet_column *c, size_t i, uint8_t *has)
{
    *has = c->n > i && c->valid[i];
    if (!*has)
        return 0.0;
    return c->kind == LC_PARQUET_KIND_DOUBLE ? c->f64[i] : (double)c->i64[i];
}

static int compare_rows(const void *a, const void *b, void *arg)
{
    const pq_row *x = a, *y = b;
    const char *arena = arg;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    if (x->id_len != y->id_len)
        return x->id_len < y->id_len ? -1 : 1;
    int c = memcmp(arena + x->id_off, arena + y->id_off, x->id_len);
    if (c)
        return c;
    if (x->ply_null != y->ply_null)
        return x->ply_null ? 1 : -1;
    if (x->ply != y->ply)
        return x->ply < y->ply ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

static void add_game_start(pq_scratch *sc, size_t start)
{
    if (sc->n_games == sc->cap_games) {
        sc->cap_games = sc->cap_games ? 2 * sc->cap_games : 256;
        sc->games = lc_xrealloc(sc->games, sc->cap_games * sizeof *sc->games);
    }
    sc->games[sc->n_games++] = start;
}

/* The first file row of game k (its rows are sorted by ply, not by row). */
static uint64_t game_first_row(const pq_scratch *sc, size_t k)
{
    uint64_t r = UINT64_MAX;
    for (size_t i = sc->games[k]; i < sc->games[k + 1]; i++)
        if (sc->rows[i].row < r)
            r = sc->rows[i].row;
    return r;
}

static int compare_first_rows(const void *a, const void *b, void *arg)
{
    const pq_scratch *sc = arg;
    uint64_t x = game_first_row(sc, *(const size_t *)a), y = game_first_row(sc, *(const size_t *)b);
    return x < y ? -1 : x > y;
}

/* Copy the string at off of the arena to *p and point *out at it, or set
 * *out to NULL for a null value. */
static void copy_string(const pq_scratch *sc, bool present, size_t off, uint32_t len, char **p,
                        const char **out, size_t *out_len)
{
    *out_len = len;
    if (!present) {
        *out = NULL;
        return;
    }
    memcpy(*p, sc->arena + off, len);
    *out = *p;
    *p += len;
}

/* Emit game k (rows games[k] .. games[k+1] of the sorted rows). */
static bool emit_game(lc_stage *s, pgs *g, pq_scratch *sc, const pq_file *f, size_t k,
                      lc_load_meter *meter)
{
    size_t a = sc->games[k], b = sc->games[k + 1], n = b - a;
    size_t bytes = n * sizeof(lc_chess_row) + strlen(f->base) + 1 + sc->rows[a].id_len + 1;
    for (size_t i = a; i < b; i++) {
        const pq_row *r = &sc->rows[i];
        bytes += (size_t)r->fen_len + r->played_len + r->best_len;
    }
    char *mem = lc_xmalloc(bytes);
    lc_chess_row *rows = (lc_chess_row *)mem;
    char *p = mem + n * sizeof(lc_chess_row);
    for (size_t i = a; i < b; i++) {
        const pq_row *r = &sc->rows[i];
        lc_chess_row *o = &rows[i - a];
        copy_string(sc, r->has_fen, r->fen_off, r->fen_len, &p, &o->fen, &o->fen_len);
        copy_string(sc, r->has_played, r->played_off, r->played_len, &p, &o->played,
                    &o->played_len);
        copy_string(sc, r->has_best, r->best_off, r->best_len, &p, &o->best, &o->best_len);
        o->win = r->w;
        o->draw = r->d;
        o->loss = r->l;
        o->has_win = r->has_w;
        o->has_draw = r->has_d;
        o->has_loss = r->has_l;
    }
    lc_game_item item = {.rows = rows, .n_rows = (uint32_t)n, .mem = mem};
    size_t blen = strlen(f->base) + 1;
    memcpy(p, f->base, blen);
    item.file = p;
    p += blen;
    memcpy(p, sc->arena + sc->rows[a].id_off, sc->rows[a].id_len);
    p[sc->rows[a].id_len] = '\0';
    item.id = p;
    item.seq = atomic_fetch_add(&g->seq, 1);
    if (lc_stage_emit(s, &item, meter) != 0) {
        free(mem);
        return false;
    }
    atomic_fetch_add(&g->n_games, 1);
    atomic_fetch_add(&g->n_rows, n);
    return true;
}

/* Read unit u and emit its games; false when the output closed. */
static bool read_unit(lc_stage *s, pgs *g, const pq_unit *u, pq_scratch *sc,
                      lc_load_meter *meter)
{
    const pgs_config *c = s->config;
    const pq_file *f = u->f;
    sc->n_rows = sc->n_arena = sc->n_games = 0;
    lc_error err;
    lc_error_clear(&err);
    for (size_t rg = 0; rg < f->n_rg; rg++) {
        uint64_t lo = f->rg_first[rg], hi = f->rg_first[rg + 1];
        if (hi <= u->begin || lo >= u->end || hi == lo)
            continue;
        for (int k = 0; k < N_COLS; k++) {
            if (f->col[k] < 0) {
                sc->cols[k].n = 0;
                continue;
            }
            if (lc_parquet_read_column(f->pf, rg, (size_t)f->col[k], &sc->cols[k], &err) != 0) {
                LC_WARN("%s: skipping rows %llu-%llu of %s: %s", s->name,
                        (unsigned long long)u->begin, (unsigned long long)u->end, f->base,
                        err.msg);
                atomic_fetch_add(&g->n_bad_units, 1);
                return true;
            }
        }
        uint64_t from = u->begin > lo ? u->begin : lo, to = u->end < hi ? u->end : hi;
        id_key key = {0};
        for (uint64_t r = from; r < to; r++) {
            size_t i = (size_t)(r - lo);
            id_of(&sc->cols[C_ID], i, &key);
            if (key.null)
                continue; /* counted when the file was planned */
            if (sc->n_rows == sc->cap_rows) {
                sc->cap_rows = sc->cap_rows ? 2 * sc->cap_rows : 4096;
                sc->rows = lc_xrealloc(sc->rows, sc->cap_rows * sizeof *sc->rows);
            }
            pq_row *o = &sc->rows[sc->n_rows++];
            o->hash = key.hash;
            o->row = r;
            o->id_off = arena_put(sc, key.bytes, key.len);
            o->id_len = (uint32_t)key.len;
            uint8_t has_ply;
            o->ply = (int64_t)number_at(&sc->cols[C_PLY], i, &has_ply);
            if (has_ply && sc->cols[C_PLY].kind == LC_PARQUET_KIND_INT64)
                o->ply = sc->cols[C_PLY].i64[i];
            o->ply_null = !has_ply;
            string_at(&sc->cols[C_FEN], i, sc, &o->fen_off, &o->fen_len, &o->has_fen);
            string_at(&sc->cols[C_PLAYED], i, sc, &o->played_off, &o->played_len,
                      &o->has_played);
            string_at(&sc->cols[C_BEST], i, sc, &o->best_off, &o->best_len, &o->has_best);
            o->w = number_at(&sc->cols[C_WIN], i, &o->has_w);
            o->d = number_at(&sc->cols[C_DRAW], i, &o->has_d);
            o->l = number_at(&sc->cols[C_LOSS], i, &o->has_l);
        }
        free(key.bytes);
    }
    atomic_fetch_add(&g->n_units_read, 1);
    if (!sc->n_rows)
        return true;

    /* Group by game_id, each game sorted by ply. */
    qsort_r(sc->rows, sc->n_rows, sizeof *sc->rows, compare_rows, sc->arena);
    for (size_t i = 0; i < sc->n_rows; i++) {
        const pq_row *a = &sc->rows[i], *b = i ? &sc->rows[i - 1] : NULL;
        if (!b || a->hash != b->hash || a->id_len != b->id_len ||
            memcmp(sc->arena + a->id_off, sc->arena + b->id_off, a->id_len) != 0)
            add_game_start(sc, i);
    }
    size_t n_games = sc->n_games;
    add_game_start(sc, sc->n_rows); /* the end */

    /* The order: random, or the file's. */
    size_t *order = lc_xmalloc(n_games * sizeof *order);
    for (size_t k = 0; k < n_games; k++)
        order[k] = k;
    if (c->shuffle) {
        lc_rng rng;
        lc_rng_seed(&rng, u->seed, 2);
        shuffle(order, n_games, sizeof *order, &rng);
    } else {
        qsort_r(order, n_games, sizeof *order, compare_first_rows, sc);
    }
    bool ok = true;
    for (size_t k = 0; k < n_games && ok; k++) {
        if (!lc_run_state_check(&s->run, meter)) {
            ok = false;
            break;
        }
        ok = emit_game(s, g, sc, f, order[k], meter);
    }
    free(order);
    return ok;
}

/* ---- the workers ------------------------------------------------------ */

static void release_file(pgs *g, pq_file *f)
{
    lc_mutex_lock(&g->mu);
    bool last = --f->refs == 0;
    lc_mutex_unlock(&g->mu);
    if (last)
        file_free(f);
}

static void pgs_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    pgs *g = s->priv;
    const pgs_config *c = s->config;
    pq_scratch sc = {0};
    for (;;) {
        if (!lc_run_state_check(&s->run, meter))
            break;
        lc_mutex_lock(&g->mu);
        if (g->head_unit < g->n_units) {
            pq_unit u = g->units[g->head_unit++];
            g->busy++;
            lc_mutex_unlock(&g->mu);
            bool ok = read_unit(s, g, &u, &sc, meter);
            release_file(g, u.f);
            lc_mutex_lock(&g->mu);
            g->busy--;
            lc_cond_broadcast(&g->cond);
            lc_mutex_unlock(&g->mu);
            if (!ok)
                break;
            continue;
        }
        if (g->next_path < g->n_paths) {
            char *path = g->paths[g->next_path];
            g->paths[g->next_path++] = NULL;
            uint64_t epoch = g->epoch;
            g->busy++;
            lc_mutex_unlock(&g->mu);
            plan_file(s, g, path, epoch, &sc);
            atomic_fetch_add(&g->files_done_gauge, 1);
            lc_mutex_lock(&g->mu);
            g->busy--;
            lc_cond_broadcast(&g->cond);
            lc_mutex_unlock(&g->mu);
            continue;
        }
        if (g->done) {
            lc_mutex_unlock(&g->mu);
            break;
        }
        if (g->busy == 0) {
            /* The epoch is read. */
            if (c->epochs && g->epoch >= c->epochs) {
                g->done = true;
                lc_cond_broadcast(&g->cond);
                lc_mutex_unlock(&g->mu);
                LC_INFO("%s: %llu epoch%s read", s->name, (unsigned long long)g->epoch,
                        g->epoch == 1 ? "" : "s");
                break;
            }
            bool was_empty = g->epoch > 0 && g->n_paths == 0;
            lc_mutex_unlock(&g->mu);
            if (was_empty && !lc_run_state_sleep(&s->run, 1.0, meter))
                break;
            lc_mutex_lock(&g->mu);
            if (g->busy == 0 && g->head_unit == g->n_units && g->next_path == g->n_paths &&
                !g->done)
                start_epoch(s, g);
            lc_cond_broadcast(&g->cond);
            lc_mutex_unlock(&g->mu);
            continue;
        }
        /* Others are planning or reading: wait for work or the end. */
        lc_load_idle(meter);
        lc_cond_wait_until(&g->cond, &g->mu, lc_now_ns() + 200000000u);
        lc_load_busy(meter);
        lc_mutex_unlock(&g->mu);
    }
    for (int k = 0; k < N_COLS; k++)
        lc_parquet_column_fini(&sc.cols[k]);
    free(sc.rows);
    free(sc.arena);
    free(sc.games);
}

static int pgs_init(lc_stage *s, lc_error *err)
{
    (void)err;
    pgs *g = s->priv;
    const pgs_config *c = s->config;
    lc_mutex_init(&g->mu);
    lc_cond_init(&g->cond);
    lc_worker_pool_init(&g->pool, "readers", c->threads);
    return 0;
}

static int pgs_start(lc_stage *s, lc_error *err)
{
    pgs *g = s->priv;
    const pgs_config *c = s->config;
    struct stat st;
    if (stat(c->path, &st) != 0)
        return lc_error_set(err, -errno, "path: %s: %s (give a directory of .parquet files or "
                                         "one file)",
                            c->path, strerror(errno));
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
        return lc_error_set(err, LC_ECONFIG, "path: %s is neither a directory nor a file",
                            c->path);
    uint32_t world = s->env->world_size ? s->env->world_size : 1;
    if (world > 1)
        LC_INFO("%s: reading the games of share %u of %u", s->name, s->env->rank, world);
    lc_worker_pool_start(&g->pool, s, pgs_worker);
    return 0;
}

static void pgs_stop(lc_stage *s)
{
    pgs *g = s->priv;
    lc_mutex_lock(&g->mu);
    lc_cond_broadcast(&g->cond);
    lc_mutex_unlock(&g->mu);
    lc_worker_pool_join(&g->pool);
}

static void pgs_fini(lc_stage *s)
{
    pgs *g = s->priv;
    lc_worker_pool_fini(&g->pool);
    /* Units not read (a stop): release their files. */
    for (size_t i = g->head_unit; i < g->n_units; i++) {
        pq_file *f = g->units[i].f;
        if (--f->refs == 0)
            file_free(f);
    }
    free(g->units);
    for (size_t i = 0; i < g->n_paths; i++)
        free(g->paths[i]);
    free(g->paths);
    lc_cond_destroy(&g->cond);
    lc_mutex_destroy(&g->mu);
}

static void pgs_flush(lc_stage *s, lc_stage_metrics *m)
{
    pgs *g = s->priv;
    const pgs_config *c = s->config;
    lc_worker_pool_flush(&g->pool, m);
    lc_metrics_add_count(m, "files", atomic_exchange(&g->n_files, 0));
    lc_metrics_add_count(m, "units", atomic_exchange(&g->n_units_read, 0));
    lc_metrics_add_count(m, "games", atomic_exchange(&g->n_games, 0));
    lc_metrics_add_count(m, "rows", atomic_exchange(&g->n_rows, 0));
    lc_metrics_add_count(m, "bad_files", atomic_exchange(&g->n_bad_files, 0));
    lc_metrics_add_count(m, "bad_units", atomic_exchange(&g->n_bad_units, 0));
    lc_metrics_add_count(m, "bad_rows_without_game_id", atomic_exchange(&g->n_rows_no_id, 0));
    lc_metrics_add_count(m, "other_rank_units", atomic_exchange(&g->n_other_rank, 0));
    lc_metrics_add_count(m, "scattered_files", atomic_exchange(&g->n_scattered_files, 0));
    lc_metrics_set_gauge(m, "epoch", (int64_t)atomic_load(&g->epoch_gauge),
                         (int64_t)c->epochs, c->epochs > 0);
    lc_metrics_set_gauge(m, "files_planned", (int64_t)atomic_load(&g->files_done_gauge),
                         (int64_t)atomic_load(&g->files_total_gauge), true);
    snprintf(m->detail, sizeof m->detail, "%s", c->path);
}

const lc_stage_class lc_parquet_game_source_class = {
    .type_name = "parquet_game_source",
    .summary = "reads games from Parquet tables (shuffled per epoch, split between threads "
               "and ranks)",
    .input = NULL,
    .output = &lc_item_game,
    .priv_size = sizeof(pgs),
    .config_fields = pgs_fields,
    .config_size = sizeof(pgs_config),
    .config_check = pgs_config_check,
    .init = pgs_init,
    .fini = pgs_fini,
    .start = pgs_start,
    .stop = pgs_stop,
    .flush_metrics = pgs_flush,
};
