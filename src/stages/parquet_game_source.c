/*
 * parquet_game_source: reads Parquet tables of analysed games
 * (docs/chess-transformer-data.md) and emits one "game" item per game: its
 * rows sorted by ply.
 *
 * Work. An epoch lists the *.parquet files under `path` and, with
 * `shuffle`, puts them in a random order drawn from the run seed and the
 * epoch number, the same on every rank (stages/epoch_files.h). N worker
 * threads share the epoch's work through one mutex-protected list: "plan
 * the next file" and "read this row group".
 *
 * A file's row groups are read in parallel, each exactly once and one at a
 * time per thread (the reader streams a column chunk at a time). When the
 * file's last row group is read, its rows are grouped into games and the
 * games emitted in one random permutation of the whole file (with
 * `shuffle`; else in the order of their first row), each game as one
 * allocation. How rows become games, and how the ranks share a file's
 * games (world > 1: planning reads the game_id column first), is
 * format/parquet/games.h. Memory: the decoded rows of the files being read
 * or emitted, at most `threads` files at a time (150 to 180 bytes a row for
 * typical FEN tables).
 *
 * Bad input. Rows with a null fen, played_move or best_move are passed on
 * with that string NULL (the row's presence flag): whether they spoil the
 * game (decoder) or only their position (encoder) depends on the consumer's
 * mode, so game_tokenizer checks and counts them. A row without a game_id is
 * counted and skipped. A file that cannot be opened or lacks a game column
 * is logged (naming the file and column) and counted; the stage goes on with
 * the next file. A row group that cannot be read is logged (file, column,
 * row group) and counted; the file's other games are emitted, except those
 * whose rows reach the edges of the damaged row group (they may continue
 * into it), which are counted as dropped.
 *
 * Quiet logs. A bad file, one that does not open or a row group of which
 * does not read, is warned about once in a run (the stage's life), and
 * again only when it changes (size or modification time); later failures
 * of it go to the debug level, and each is still counted. An epoch in which
 * no file could be read (each one failed to open, or all its row groups to
 * read) is followed by a wait that doubles from 1 s up to a minute, with
 * one warning when that begins, so a directory of bad files neither spins
 * nor floods the log.
 * The first epoch is logged at info level, later ones at most once a
 * minute (the rest at debug level).
 *
 * Watching. With `watch` (the default) and a directory, a thread watches
 * the tree with inotify: a .parquet file closed after writing or moved in
 * joins the current epoch at once (after the files listed), unless the
 * epoch already has it; later epochs list it anyway.
 *
 * `epochs` epochs are read (0: without end); then the output closes.
 * Progress (the batch stream's): the epoch, the files whose games are all
 * emitted, of the epoch's files times the epochs left, and the games.
 */
#include "stages/game_file.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/text.h"
#include "format/chess/chess_tokens.h"
#include "stages/items.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const lc_setting source_settings[] = {
    {.key = "path",
     .type = LC_SETTING_TEXT,
     LC_SETTING_AT(source_config, path),
     .required = true,
     .nonempty = true,
     .meaning = "a directory of .parquet files, or one file",
     .example = "${LCMON_PARQUET:-tests/parquet/fixtures}"},
    LC_SETTING_THREADS(source_config, threads, "1", 64),
    LC_SETTING_ROW(source_config, epochs, "epochs", LC_SETTING_WHOLE, "0",
                   "passes over the data, 0 for without end", "1"),
    LC_SETTING_ROW(source_config, shuffle, "shuffle", LC_SETTING_BOOL, "true",
                   "games in an order drawn from the seed at each pass", "false"),
    LC_SETTING_ROW(source_config, watch, "watch", LC_SETTING_BOOL, "true",
                   "read files that appear later too", "false"),
    {0},
};

static int source_config_check(void *p, lc_problems *ps)
{
    source_config *c = p;
    if (!c->path) /* missing: the reader said so */
        return 0;
    return lc_config_expand_path_noting(&c->path, "path",
                                        "a directory of .parquet files, or one file", c->defaulted,
                                        sizeof c->defaulted, ps);
}

/* Under mu: list the files of the next epoch. */
static void start_epoch(lc_stage *s, game_source *g)
{
    const source_config *c = s->config;
    g->epoch++;
    lc_epoch_files_list(&g->files, c->shuffle,
                        s->env->seed ^ lc_game_text_hash(s->name, strlen(s->name)), g->epoch);
    g->epoch_good = 0;
    atomic_store(&g->epoch_gauge, g->epoch);
    atomic_store(&g->files_done_gauge, 0);
    lc_run_progress *p = s->env->progress;
    if (p && c->epochs) {
        /* The files of the epochs to come are taken to be this epoch's. */
        atomic_store(&p->epoch, (uint_fast32_t)g->epoch);
        atomic_store(&p->epochs, (uint_fast32_t)c->epochs);
        uint64_t left = c->epochs >= g->epoch ? c->epochs - g->epoch + 1 : 0;
        atomic_store(&p->files_total, atomic_load(&p->files_done) + g->files.n * left);
    }
}

/* ---- emitting a file's games ------------------------------------------- */

/* Copy a string cell (or NULL for a null value) to *p. */
static void copy_cell(const lc_parquet_column *c, size_t i, char **p, const char **out,
                      size_t *out_len)
{
    if (!c->valid[i]) {
        *out = NULL;
        *out_len = 0;
        return;
    }
    const char *s = lc_parquet_string(c, i, out_len);
    memcpy(*p, s, *out_len);
    *out = *p;
    *p += *out_len;
}

static size_t cell_len(const lc_parquet_column *c, size_t i)
{
    return c->valid[i] ? (size_t)(c->offsets[i + 1] - c->offsets[i]) : 0;
}

static bool emit_game(lc_stage *s, game_source *g, const game_file *f, const lc_game_ref *refs,
                      size_t n, lc_load_meter *meter)
{
    char num[32];
    size_t id_len;
    const char *id = lc_game_id_text(&refs[0].chunk->cols[LC_GCOL_ID], refs[0].i, num, &id_len);
    size_t base_len = strlen(f->base) + 1;
    size_t bytes = n * sizeof(lc_chess_row) + base_len + id_len + 1;
    for (size_t k = 0; k < n; k++) {
        const lc_parquet_column *c = refs[k].chunk->cols;
        size_t i = refs[k].i;
        bytes += cell_len(&c[LC_GCOL_FEN], i) + cell_len(&c[LC_GCOL_PLAYED], i) +
                 cell_len(&c[LC_GCOL_BEST], i);
    }
    char *mem = lc_xmalloc(bytes);
    lc_chess_row *rows = (lc_chess_row *)mem;
    char *p = mem + n * sizeof(lc_chess_row);
    for (size_t k = 0; k < n; k++) {
        const lc_parquet_column *c = refs[k].chunk->cols;
        size_t i = refs[k].i;
        lc_chess_row *o = &rows[k];
        copy_cell(&c[LC_GCOL_FEN], i, &p, &o->fen, &o->fen_len);
        copy_cell(&c[LC_GCOL_PLAYED], i, &p, &o->played, &o->played_len);
        copy_cell(&c[LC_GCOL_BEST], i, &p, &o->best, &o->best_len);
        o->win = lc_game_number(&c[LC_GCOL_WIN], i, &o->has_win);
        o->draw = lc_game_number(&c[LC_GCOL_DRAW], i, &o->has_draw);
        o->loss = lc_game_number(&c[LC_GCOL_LOSS], i, &o->has_loss);
    }
    lc_game_item item = {.rows = rows, .n_rows = (uint32_t)n, .mem = mem};
    memcpy(p, f->base, base_len);
    item.file = p;
    p += base_len;
    memcpy(p, id, id_len);
    p[id_len] = '\0';
    item.id = p;
    item.seq = atomic_fetch_add(&g->seq, 1);
    if (lc_stage_emit(s, &item, meter) != 0) {
        free(mem);
        return false;
    }
    atomic_fetch_add(&g->n_games, 1);
    if (s->env->progress)
        atomic_fetch_add(&s->env->progress->records, 1);
    atomic_fetch_add(&g->n_rows, n);
    return true;
}

/* Every row group of f is read: group its rows into games and emit them in
 * one permutation of the file. false when the output closed or the stage
 * stops. */
static bool emit_file(lc_stage *s, game_source *g, game_file *f, lc_load_meter *meter)
{
    const source_config *c = s->config;
    lc_game_groups gg;
    size_t left_out;
    /* The file's own seed (the run's, its name's and the epoch's): the same
     * games come in the same order whatever the thread or rank. */
    lc_game_group(&gg, f->chunks, f->damaged, f->rg_first, f->n_rg, c->shuffle, f->seed, &left_out);
    if (left_out)
        atomic_fetch_add(&g->n_dropped, left_out);
    bool ok = true;
    for (size_t i = 0; i < gg.n_games && ok; i++) {
        size_t n;
        const lc_game_ref *rows = lc_game_rows(&gg, i, &n);
        ok = lc_run_state_check(&s->run, meter) && emit_game(s, g, f, rows, n, meter);
    }
    lc_game_groups_fini(&gg);
    if (ok && s->env->progress)
        atomic_fetch_add(&s->env->progress->files_done, 1);
    return ok;
}

/* ---- the workers ------------------------------------------------------ */

/* Read one queued row group; the thread that reads a file's last one emits
 * the file. false when the output closed or the stage stops. */
static bool do_unit(lc_stage *s, game_source *g, game_unit u, lc_load_meter *meter)
{
    game_file *f = u.f;
    lc_error err;
    lc_error_clear(&err);
    lc_game_chunk *ch = NULL;
    int rc = game_file_read_row_group(g, f, u.rg, &ch, &err);
    if (rc != 0) {
        SKIP_WARN(s, g, f->path,
                  "%s: skipping row group %zu of %s (games at its edges are dropped too; this "
                  "file's row groups that fail again are counted in bad_row_groups, not "
                  "logged): %s",
                  s->name, u.rg, f->base, err.msg);
        atomic_fetch_add(&g->n_bad_rg, 1);
    } else {
        atomic_fetch_add(&g->n_rg_read, 1);
    }
    lc_mutex_lock(&g->mu);
    if (ch) {
        ch->next = f->chunks;
        f->chunks = ch;
        atomic_fetch_add(&g->held_gauge, ch->n_refs);
    }
    if (rc != 0) {
        if (!f->damaged)
            f->damaged = lc_xcalloc(f->n_rg, 1);
        f->damaged[u.rg] = 1;
    } else {
        f->read_ok++;
    }
    bool last = --f->pending == 0;
    if (last && f->read_ok && f->epoch == g->epoch)
        g->epoch_good++;
    lc_mutex_unlock(&g->mu);
    if (!last)
        return true;
    bool ok = emit_file(s, g, f, meter);
    uint64_t held = 0;
    for (const lc_game_chunk *c = f->chunks; c; c = c->next)
        held += c->n_refs;
    atomic_fetch_sub(&g->held_gauge, held);
    game_file_free(g, f);
    lc_mutex_lock(&g->mu);
    g->files_open--;
    lc_mutex_unlock(&g->mu);
    return ok;
}

static void source_worker(lc_stage *s, unsigned index, lc_load_meter *meter)
{
    (void)index;
    game_source *g = s->priv;
    const source_config *c = s->config;
    lc_parquet_column ids = {0}; /* game_id, for planning */
    for (;;) {
        if (!lc_run_state_check(&s->run, meter))
            break;
        lc_mutex_lock(&g->mu);
        if (g->head_unit < g->n_units) {
            game_unit u = g->units[g->head_unit++];
            g->busy++;
            lc_mutex_unlock(&g->mu);
            bool ok = do_unit(s, g, u, meter);
            lc_mutex_lock(&g->mu);
            g->busy--;
            lc_cond_broadcast(&g->cond);
            lc_mutex_unlock(&g->mu);
            if (!ok)
                break;
            continue;
        }
        if (lc_epoch_files_left(&g->files) && g->files_open < c->threads) {
            char *path = lc_epoch_files_next(&g->files);
            uint64_t epoch = g->epoch;
            g->busy++;
            g->files_open++;
            lc_mutex_unlock(&g->mu);
            game_file_plan(s, g, path, epoch, &ids);
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
        if (g->busy == 0 && !lc_epoch_files_left(&g->files)) {
            /* The epoch is read. */
            if (c->epochs && g->epoch >= c->epochs) {
                g->done = true;
                g->files.closed = true;
                lc_cond_broadcast(&g->cond);
                lc_mutex_unlock(&g->mu);
                LC_INFO("%s: %llu epoch%s read", s->name, (unsigned long long)g->epoch,
                        g->epoch == 1 ? "" : "s");
                break;
            }
            bool was_empty = g->epoch > 0 && g->files.n == 0;
            /* Files, none readable: wait longer each time, up to a minute. */
            bool unreadable = g->epoch > 0 && g->files.n > 0 && g->epoch_good == 0;
            double wait = was_empty ? 1.0 : 0.0;
            if (unreadable) {
                g->backoff = g->backoff > 0 ? g->backoff * 2 : 1.0;
                if (g->backoff > 60)
                    g->backoff = 60;
                if (g->backoff == 1.0)
                    LC_WARN("%s: none of the %zu .parquet files under %s could be read (each is "
                            "named above); looking again in 1 s, then less and less often, up "
                            "to once a minute",
                            s->name, g->files.n, c->path);
                wait = g->backoff;
            } else if (g->epoch_good > 0) {
                g->backoff = 0;
            }
            lc_mutex_unlock(&g->mu);
            if (wait > 0 && !lc_run_state_sleep(&s->run, wait, meter))
                break;
            lc_mutex_lock(&g->mu);
            if (g->busy == 0 && g->head_unit == g->n_units && !lc_epoch_files_left(&g->files) &&
                !g->done)
                start_epoch(s, g);
            lc_cond_broadcast(&g->cond);
            lc_mutex_unlock(&g->mu);
            continue;
        }
        /* Others are planning, reading or emitting: wait for work or the end. */
        lc_load_idle(meter);
        lc_cond_wait_until(&g->cond, &g->mu, lc_now_ns() + 200000000u);
        lc_load_busy(meter);
        lc_mutex_unlock(&g->mu);
    }
    lc_parquet_column_fini(&ids);
}

static int source_preflight(const void *config, lc_problems *ps);

static int source_init(lc_stage *s, lc_error *err)
{
    (void)err;
    game_source *g = s->priv;
    lc_mutex_init(&g->mu);
    lc_cond_init(&g->cond);
    const source_config *c = s->config;
    lc_epoch_files_init(&g->files, s->name, c->path, &g->mu, &g->cond);
    lc_stage_warn_unordered(s, c->threads);
    return 0;
}

static int source_start(lc_stage *s, lc_error *err)
{
    const source_config *c = s->config;
    game_source *g = s->priv;
    lc_error_clear(err);
    lc_stage_warn_default_path(s, c->defaulted, c->path, "Parquet files");
    lc_problems ps = LC_PROBLEMS_INIT;
    source_preflight(c, &ps);
    int rc = lc_problems_to_error(&ps, err);
    lc_problems_fini(&ps);
    if (rc != 0)
        return rc;
    uint32_t world = s->env->world_size ? s->env->world_size : 1;
    if (world > 1)
        LC_INFO("%s: reading the games of share %u of %u", s->name, s->env->rank, world);
    return c->watch ? lc_epoch_files_watch(&g->files, &s->run, err) : 0;
}

static void source_stop(lc_stage *s)
{
    game_source *g = s->priv;
    lc_mutex_lock(&g->mu);
    lc_cond_broadcast(&g->cond);
    lc_mutex_unlock(&g->mu);
    lc_epoch_files_stop(&g->files);
}

static void source_fini(lc_stage *s)
{
    game_source *g = s->priv;
    /* Row groups not read (a stop): release their files. */
    for (size_t i = g->head_unit; i < g->n_units; i++) {
        game_file *f = g->units[i].f;
        if (--f->pending == 0)
            game_file_free(g, f);
    }
    while (g->spare) {
        lc_game_chunk *next = g->spare->next;
        lc_game_chunk_free(g->spare);
        g->spare = next;
    }
    free(g->units);
    lc_epoch_files_fini(&g->files);
    for (size_t i = 0; i < g->n_reported; i++)
        free(g->reported[i].path);
    free(g->reported);

    lc_cond_destroy(&g->cond);
    lc_mutex_destroy(&g->mu);
}

enum { G_FILES, G_GAMES, G_PLANNED, G_EPOCH };

static void source_flush(lc_stage *s, lc_stage_metrics *m)
{
    game_source *g = s->priv;
    const source_config *c = s->config;
    /* With several ranks: the rows of this rank's games and of all ranks'
     * (its share is the ratio: 1/world within a game's size). */
    if (c->epochs > 0)
        lc_metric_gauge_of(m, G_EPOCH, (int64_t)atomic_load(&g->epoch_gauge), (int64_t)c->epochs);
    else
        lc_metric_gauge(m, G_EPOCH, (int64_t)atomic_load(&g->epoch_gauge));
    lc_metric_gauge_of(m, G_PLANNED, (int64_t)atomic_load(&g->files_done_gauge),
                       (int64_t)atomic_load(&g->files.total));
    snprintf(m->detail, sizeof m->detail, "%s", c->path);
}

static const lc_metric_info source_metrics[] = {
    [G_FILES] = {"files", "files", LC_SHOW_TOTAL, 0, "files", LC_METRIC_AT(game_source, n_files)},
    [G_GAMES] = {"games", "games", LC_SHOW_RATE, 0, "games/s", LC_METRIC_AT(game_source, n_games)},
    [G_PLANNED] = {"files_planned", "files", LC_SHOW_FILL, 0, "files this epoch",
                   .kind = LC_METRIC_GAUGE},
    [G_EPOCH] = {"epoch", "epochs", LC_SHOW_FILL, LC_SHOW_DIM, "epochs", .kind = LC_METRIC_GAUGE},
    {"row_groups", "row groups", LC_METRIC_AT(game_source, n_rg_read)},
    {"rows", "rows", LC_METRIC_AT(game_source, n_rows)},
    {"bad_files", "files", .kind = LC_METRIC_BAD, LC_METRIC_AT(game_source, n_bad_files)},
    {"not_regular_files", "files", .kind = LC_METRIC_BAD,
     LC_METRIC_AT(game_source, files.n_not_regular)},
    {"bad_row_groups", "row groups", .kind = LC_METRIC_BAD, LC_METRIC_AT(game_source, n_bad_rg)},
    {"bad_games_near_damage", "games", .kind = LC_METRIC_BAD, LC_METRIC_AT(game_source, n_dropped)},
    {"bad_rows_without_game_id", "rows", .kind = LC_METRIC_BAD,
     LC_METRIC_AT(game_source, n_rows_no_id)},
    {"other_rank_games", "games", LC_METRIC_AT(game_source, n_other_rank)},
    {"rank_rows", "rows", LC_METRIC_AT(game_source, n_share_rows)},
    {"all_ranks_rows", "rows", LC_METRIC_AT(game_source, n_all_rows)},
    {"rows_held", "rows", .kind = LC_METRIC_GAUGE, LC_METRIC_AT(game_source, held_gauge)},
    {"files_noticed", "files", LC_SHOW_TOTAL, LC_SHOW_DIM | LC_SHOW_NONZERO, "new files seen",
     "new", LC_METRIC_AT(game_source, files.n_noticed)},
    {"watch_overflows", "overflows", LC_METRIC_AT(game_source, files.n_overflows)},
    {0},
};

/* --check-config: the path is a directory or a file that can be read. */
static int source_preflight(const void *config, lc_problems *ps)
{
    const source_config *c = config;
    struct stat st;
    if (stat(c->path, &st) != 0)
        return lc_problem_add(ps, "path", "%s: %s (give a directory of .parquet files or one file)",
                              c->path, strerror(errno));
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
        return lc_problem_add(ps, "path", "%s is neither a directory nor a file", c->path);
    if (access(c->path, S_ISDIR(st.st_mode) ? R_OK | X_OK : R_OK) != 0)
        return lc_problem_add(ps, "path", "%s cannot be read: %s", c->path, strerror(errno));
    return 0;
}

static unsigned source_threads(const void *config)
{
    return ((const source_config *)config)->threads;
}

const lc_stage_class lc_parquet_game_source_class = {
    .type_name = "parquet_game_source",
    .summary = "reads games from Parquet tables (shuffled per epoch, split between threads "
               "and ranks)",
    .flags = LC_STAGE_FINITE,
    .input = NULL,
    .output = &lc_item_game,
    .priv_size = sizeof(game_source),
    .worker = source_worker,
    .threads = source_threads,
    .workers = "readers",
    .settings = {source_settings, sizeof(source_config)},
    .config_check = source_config_check,
    .preflight = source_preflight,
    .init = source_init,
    .fini = source_fini,
    .start = source_start,
    .stop = source_stop,
    .flush_metrics = source_flush,
    .metrics = source_metrics,
};
