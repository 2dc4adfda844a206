/*
 * game_file: one file of parquet_game_source's epoch (stages/game_file.h):
 * planning it, reading its row groups into chunks recycled through the
 * stage's spare list, freeing it, and logging a bad one once.
 */
#include "stages/game_file.h"

#include "core/rng.h"
#include "core/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A file this big (rows this rank holds) is logged with its memory, at
 * about BYTES_PER_ROW a row (decoded columns and references of typical FEN
 * tables, measured). */
#define BIG_FILE_ROWS 4000000u
#define BYTES_PER_ROW 170u

/* Row groups read are lc_game_chunk (format/parquet/games.h), recycled
 * through the stage's spare list, buffers and all: first touches of fresh
 * memory cost more than decoding on some machines. Spare chunks kept for
 * reuse, at most (beyond that they are freed). */
#define MAX_SPARE_CHUNKS 64

/* ---- bad files, logged once ------------------------------------------- */

/* Should a problem with this file be logged? Once per path, and again when
 * the file has changed since. */
bool game_file_first_report(game_source *g, const char *path)
{
    struct stat st;
    int64_t size = -1, mtime = -1;
    if (stat(path, &st) == 0) {
        size = (int64_t)st.st_size;
        mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    }
    bool first = true;
    lc_mutex_lock(&g->mu);
    size_t i = 0;
    while (i < g->n_reported && strcmp(g->reported[i].path, path) != 0)
        i++;
    if (i < g->n_reported) {
        first = g->reported[i].size != size || g->reported[i].mtime_ns != mtime;
    } else {
        if (g->n_reported == g->cap_reported) {
            g->cap_reported = g->cap_reported ? 2 * g->cap_reported : 16;
            g->reported = lc_xrealloc(g->reported, g->cap_reported * sizeof *g->reported);
        }
        g->reported[g->n_reported++].path = lc_xstrdup(path);
    }
    g->reported[i].size = size;
    g->reported[i].mtime_ns = mtime;
    lc_mutex_unlock(&g->mu);
    return first;
}

/* ---- planning a file -------------------------------------------------- */

/* Under mu. */
static void push_unit(game_source *g, const game_unit *u)
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

/* A chunk to read into: a spare one (its buffers warm) or a new one. */
static lc_game_chunk *chunk_get(game_source *g)
{
    lc_mutex_lock(&g->mu);
    lc_game_chunk *ch = g->spare;
    if (ch) {
        g->spare = ch->next;
        g->n_spare--;
    }
    lc_mutex_unlock(&g->mu);
    if (!ch)
        ch = lc_xcalloc(1, sizeof *ch);
    ch->n_refs = 0;
    ch->next = NULL;
    return ch;
}

static void chunk_put(game_source *g, lc_game_chunk *ch)
{
    lc_mutex_lock(&g->mu);
    bool keep = g->n_spare < MAX_SPARE_CHUNKS;
    if (keep) {
        ch->next = g->spare;
        g->spare = ch;
        g->n_spare++;
    }
    lc_mutex_unlock(&g->mu);
    if (!keep)
        lc_game_chunk_free(ch);
}

void game_file_free(game_source *g, game_file *f)
{
    if (!f)
        return;
    while (f->chunks) {
        lc_game_chunk *next = f->chunks->next;
        chunk_put(g, f->chunks);
        f->chunks = next;
    }
    lc_parquet_close(f->pf);
    lc_hash_set_fini(&f->mine);
    free(f->damaged);
    free(f->rg_first);
    free(f->path);
    free(f);
}

/* world > 1: this rank's share of the file's games (f->mine), and the row
 * groups that hold rows of them (need); see format/parquet/games.h. */
static int plan_shares(lc_stage *s, game_source *g, game_file *f, lc_parquet_column *col,
                       uint8_t *need, lc_error *err)
{
    lc_game_shares sh;
    uint32_t world = s->env->world_size, rank = s->env->rank;
    int rc = lc_game_plan_shares(f->pf, f->col[LC_GCOL_ID], f->rg_first, f->n_rg, world, rank, col,
                                 &f->mine, need, &sh, err);
    if (rc != 0)
        return rc;
    if (world <= 16) {
        char list[16 * 24] = "";
        size_t used = 0;
        for (uint32_t r = 0; r < world && used < sizeof list; r++) {
            int w = snprintf(list + used, sizeof list - used, "%s%llu", r ? "/" : "",
                             (unsigned long long)sh.per_rank[r]);
            if (w > 0)
                used += (size_t)w;
        }
        LC_DEBUG("%s: %s: %zu games; rows per rank %s", s->name, f->base, sh.n_games, list);
    }
    if (sh.no_id && rank == 0) /* counted by one rank */
        atomic_fetch_add(&g->n_rows_no_id, sh.no_id);
    atomic_fetch_add(&g->n_other_rank, sh.other_games);
    atomic_fetch_add(&g->n_share_rows, sh.mine_rows);
    atomic_fetch_add(&g->n_all_rows, sh.with_id);
    return 0;
}

/* Under no lock; takes path. Opens the file, works out which of its row
 * groups this rank reads and queues them (or drops the file). */
void game_file_plan(lc_stage *s, game_source *g, char *path, uint64_t epoch,
                    lc_parquet_column *scratch)
{
    game_file *f = lc_xcalloc(1, sizeof *f);
    f->path = path;
    f->base = lc_basename(path);
    lc_error err;
    lc_error_clear(&err);
    size_t n_units = 0;
    uint8_t *need = NULL;
    if (lc_parquet_open(path, &f->pf, &err) != 0) {
        SKIP_WARN(s, g, path, "%s: skipping %s", s->name, err.msg);
        goto bad;
    }
    if (lc_game_columns(f->pf, path, f->col, &err) != 0) {
        SKIP_WARN(s, g, path, "%s: skipping %s", s->name, err.msg);
        goto bad;
    }
    f->n_rg = lc_parquet_num_row_groups(f->pf);
    f->rg_first = lc_xmalloc((f->n_rg + 1) * sizeof *f->rg_first);
    uint64_t rows = 0;
    for (size_t rg = 0; rg < f->n_rg; rg++) {
        f->rg_first[rg] = rows;
        rows += (uint64_t)lc_parquet_row_group_rows(f->pf, rg);
    }
    f->rg_first[f->n_rg] = rows;
    f->epoch = epoch;
    f->seed = s->env->seed ^
              lc_mix64(epoch * 0x9e3779b97f4a7c15u ^ lc_game_text_hash(f->base, strlen(f->base)));
    need = lc_xcalloc(f->n_rg ? f->n_rg : 1, 1);
    f->sharded = s->env->world_size > 1;
    if (f->sharded) {
        if (plan_shares(s, g, f, scratch, need, &err) != 0) {
            SKIP_WARN(s, g, path, "%s: skipping %s", s->name, err.msg);
            goto bad;
        }
    } else {
        for (size_t rg = 0; rg < f->n_rg; rg++)
            need[rg] = f->rg_first[rg + 1] > f->rg_first[rg];
    }
    atomic_fetch_add(&g->n_files, 1);
    uint64_t held = 0;
    for (size_t rg = 0; rg < f->n_rg; rg++) {
        n_units += need[rg];
        held += need[rg] ? f->rg_first[rg + 1] - f->rg_first[rg] : 0;
    }
    if (held >= BIG_FILE_ROWS)
        LC_WARN("%s: %s: holding %llu rows for the whole-file game shuffle (about %llu MB; up "
                "to %u such files at once, one per reader thread: fewer threads, or smaller "
                "files, hold less)",
                s->name, f->base, (unsigned long long)held,
                (unsigned long long)(held * BYTES_PER_ROW >> 20),
                ((const source_config *)s->config)->threads);
    lc_mutex_lock(&g->mu);
    /* A file with rows to read counts as good for the epoch once one of its
     * row groups has read (do_unit). */
    if (!n_units && epoch == g->epoch)
        g->epoch_good++;
    if (n_units) {
        f->pending = n_units;
        for (size_t rg = 0; rg < f->n_rg; rg++)
            if (need[rg])
                push_unit(g, &(game_unit){.f = f, .rg = rg});
    } else {
        g->files_open--;
    }
    lc_cond_broadcast(&g->cond);
    lc_mutex_unlock(&g->mu);
    free(need);
    if (!n_units)
        game_file_free(g, f);
    return;
bad:
    atomic_fetch_add(&g->n_bad_files, 1);
    free(need);
    game_file_free(g, f);
    lc_mutex_lock(&g->mu);
    g->files_open--;
    lc_cond_broadcast(&g->cond);
    lc_mutex_unlock(&g->mu);
}

/* ---- reading a row group ------------------------------------------------ */

/* Read row group rg of f into a chunk (*out; NULL when it keeps no row). */
int game_file_read_row_group(game_source *g, game_file *f, size_t rg, lc_game_chunk **out,
                             lc_error *err)
{
    *out = NULL;
    lc_game_chunk *ch = chunk_get(g);
    uint64_t no_id = 0;
    int rc = lc_game_read_row_group(f->pf, f->col, rg, f->rg_first[rg],
                                    f->sharded ? &f->mine : NULL, ch, &no_id, err);
    if (no_id && !f->sharded) /* sharded: counted when planned */
        atomic_fetch_add(&g->n_rows_no_id, no_id);
    if (rc != 0 || !ch->n_refs) {
        chunk_put(g, ch);
        return rc;
    }
    *out = ch;
    return 0;
}
