/*
 * game_file: what parquet_game_source.c and game_file.c share, and nothing
 * else includes. parquet_game_source.c is the stage: its settings, its life
 * cycle, the workers' loop, the epochs and emitting a file's games.
 * game_file.c is one file of the epoch: planning it (which row groups this
 * rank reads, queued as units), reading a row group into a recycled chunk,
 * freeing it, and logging a bad file once. How it behaves is told at the
 * top of parquet_game_source.c.
 */
#ifndef LC_STAGES_GAME_FILE_H
#define LC_STAGES_GAME_FILE_H

#include "core/error.h"
#include "core/log.h"
#include "core/thread.h"
#include "format/parquet/games.h"
#include "format/parquet/parquet.h"
#include "stages/epoch_files.h"
#include "stages/stage.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct source_config {
    char *path;
    unsigned threads;
    uint64_t epochs; /* 0: without end */
    bool shuffle;
    bool watch;
    char defaulted[64]; /* the variable whose default names the path, or "" */
} source_config;

/* A bad file already logged, as it was then. */
typedef struct reported {
    char *path;
    int64_t size, mtime_ns;
} reported;

typedef struct game_file {
    char *path;
    const char *base; /* inside path */
    lc_parquet_file *pf;
    int col[LC_GAME_COLS]; /* < 0 when absent */
    size_t n_rg;
    uint64_t *rg_first; /* first row of each row group; [n_rg] = rows */
    uint64_t seed;      /* for the order of its games */
    bool sharded;       /* world > 1: keep only the games in mine */
    lc_hash_set mine;   /* id hashes of this rank's games (read-only once planned) */
    uint64_t epoch;     /* the epoch it was planned in */
    /* Under the stage lock. */
    size_t pending;        /* row groups not yet read */
    size_t read_ok;        /* row groups read */
    lc_game_chunk *chunks; /* row groups read */
    uint8_t *damaged;      /* n_rg flags (NULL while none is) */
} game_file;

typedef struct game_unit {
    game_file *f;
    size_t rg;
} game_unit;

typedef struct game_source {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    /* Under mu. */
    lc_epoch_files files; /* the epoch's files (its own thread watches) */
    game_unit *units;
    size_t n_units, head_unit, cap_units;
    unsigned busy;       /* workers planning a file, reading a row group or emitting */
    unsigned files_open; /* planned and not yet emitted */
    uint64_t epoch;      /* epochs started */
    bool done;           /* the last epoch is read */
    uint64_t epoch_good; /* files of this epoch that gave rows (or had none to give) */
    double backoff;      /* seconds to wait after an epoch with nothing readable */
    reported *reported;  /* bad files already logged */
    size_t n_reported, cap_reported;
    lc_game_chunk *spare; /* recycled chunks */
    unsigned n_spare;
    atomic_uint_fast64_t seq;
    atomic_uint_fast64_t n_files, n_rg_read, n_games, n_rows, n_bad_files, n_bad_rg, n_rows_no_id,
        n_other_rank, n_dropped, n_share_rows, n_all_rows;
    atomic_uint_fast64_t epoch_gauge, files_done_gauge, held_gauge;
} game_source;

/* Should a problem with this file be logged? Once per path, and again when
 * the file has changed since. */
bool game_file_first_report(game_source *g, const char *path);

/* A file (or a row group of it) skipped: a warning the first time and when
 * the file has changed, else a debug line. */
#define SKIP_WARN(s, g, path, ...)                                                                 \
    lc_log(game_file_first_report((g), (path)) ? LC_LOG_WARN : LC_LOG_DEBUG, __VA_ARGS__)

/* Under no lock; takes path. Opens the file, works out which of its row
 * groups this rank reads and queues them (or drops the file). scratch: a
 * column the thread keeps for the game ids. */
void game_file_plan(lc_stage *s, game_source *g, char *path, uint64_t epoch,
                    lc_parquet_column *scratch);
/* Read row group rg of f into a chunk (*out; NULL when it keeps no row). */
int game_file_read_row_group(game_source *g, game_file *f, size_t rg, lc_game_chunk **out,
                             lc_error *err);
/* Free f, its chunks back to the spare list. NULL: nothing. */
void game_file_free(game_source *g, game_file *f);

#endif
