/*
 * source_order: which of two chunk sources is the newer, for the shuffling
 * chunk pool's `order` setting (its window holds the newest sources, and
 * its anchor counts the sources newer than a file).
 *
 *   name    the basename compared as bytes (lcmon's sort key, and
 *           upstream's current loader's); one name in several subfolders
 *           by the whole key (lc_source_key_compare);
 *   mtime   the file's modification time, then the name (the legacy
 *           chunkparser's default sort_type);
 *   number  the number in the name, then the name (its sort_type number):
 *           the basename with the letters (either case), '_', '-' and '.'
 *           taken off both ends must be a whole number ("game_000123.gz" and
 *           "training.123.gz" are 123); a name that is not is older than
 *           every numbered one (the legacy chunkparser stops there).
 *
 * A key made from a name alone (an anchor naming no file found) has no
 * mtime: compared with one, mtime order falls back to the names.
 */
#ifndef LC_STAGES_POOL_SOURCE_ORDER_H
#define LC_STAGES_POOL_SOURCE_ORDER_H

#include "core/settings.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum lc_source_order {
    LC_ORDER_NAME = 0,
    LC_ORDER_MTIME = 1,
    LC_ORDER_NUMBER = 2,
} lc_source_order;

/* name, mtime, number: the setting's values. */
extern const lc_setting_value lc_source_order_values[];

typedef struct lc_order_key {
    lc_source_order order;
    const char *name;   /* the source's key (not owned) */
    int64_t mtime_ns;   /* -1: unknown */
    const char *digits; /* number order: the number, without leading zeros (in name) */
    size_t n_digits;
    bool numbered;
} lc_order_key;

/* The key of a source whose key is `name` (format/lc0/chunk_source.h) at `path` (NULL: no file,
 * no mtime). The file is stat()ed only for mtime order; a file that cannot
 * be has no mtime. k points into name. */
void lc_order_key_make(lc_source_order order, const char *name, const char *path, lc_order_key *k);
/* <0 when a is older than b, 0 when neither, >0 when a is newer. */
int lc_order_compare(const lc_order_key *a, const lc_order_key *b);

#endif
