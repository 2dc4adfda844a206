/*
 * epoch_files: the files an epoch of parquet_game_source reads. Each epoch
 * lists the *.parquet files under the path (core/dirwalk.h: recursively,
 * names starting with '.' ignored, sorted by name) and, with shuffle, puts
 * them in an order drawn from the seed and the epoch number, the same on
 * every rank. With a watch (core/dirwatch.h), a thread adds every .parquet
 * file closed after writing or moved in to the epoch under way (after the
 * files listed), unless the epoch has it already.
 *
 * Everything is guarded by the owner's mutex, given at init: the owner
 * calls list and next under it, and the watch thread takes it to add a
 * file, then signals the owner's condition.
 */
#ifndef LC_STAGES_EPOCH_FILES_H
#define LC_STAGES_EPOCH_FILES_H

#include "core/dirwatch.h"
#include "core/thread.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lc_epoch_files {
    const char *name; /* the stage's, for the log */
    const char *path; /* a directory or one file */
    pthread_mutex_t *mu;
    pthread_cond_t *cond;
    /* Under mu. */
    char **paths; /* the epoch's files; taken ones are NULL */
    size_t n, next;
    char **seen; /* every file of this epoch, to add none twice */
    size_t n_seen, cap_seen;
    bool closed; /* the last epoch is read: the watch adds nothing */
    bool listed; /* the first epoch is listed: until then the watch adds nothing */
    bool warned_empty;
    uint64_t logged_ns;
    /* The watch. */
    lc_dirwatch *watch;
    lc_thread thread;
    lc_run_state *run;
    atomic_uint_fast64_t total; /* files in the epoch, those added included */
    atomic_uint_fast64_t n_noticed, n_overflows;
    /* Entries named *.parquet that are not regular files (a FIFO...):
     * each said once (skipped, a list of their paths) and counted once. */
    char **skipped;
    size_t n_skipped;
    atomic_uint_fast64_t n_not_regular;
} lc_epoch_files;

void lc_epoch_files_init(lc_epoch_files *ef, const char *name, const char *path,
                         pthread_mutex_t *mu, pthread_cond_t *cond);
/* Under mu: list epoch `epoch` (from 1: the log says it). */
void lc_epoch_files_list(lc_epoch_files *ef, bool shuffle, uint64_t seed, uint64_t epoch);
/* Under mu: the next file (the caller's), NULL when none is left. */
char *lc_epoch_files_next(lc_epoch_files *ef);
static inline bool lc_epoch_files_left(const lc_epoch_files *ef)
{
    return ef->next < ef->n;
}
/* Start watching the path (a directory; anything else is not watched)
 * until run says stopping. Without an inotify instance it warns and
 * leaves new files to the next epoch. 0, or a negative code with err
 * set. */
int lc_epoch_files_watch(lc_epoch_files *ef, lc_run_state *run, lc_error *err);
/* After run says stopping: join the watch (it looks every 200 ms). */
void lc_epoch_files_stop(lc_epoch_files *ef);
void lc_epoch_files_fini(lc_epoch_files *ef);

#endif
