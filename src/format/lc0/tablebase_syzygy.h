/*
 * tablebase_syzygy: the Syzygy half of tablebase.c, through Fathom
 * (Debian's libfathom), kept apart because Fathom and Gaviota both name a
 * function tb_init: their headers cannot meet in one file, and the two
 * shared libraries cannot both be linked, since the dynamic linker would
 * bind every call to tb_init (Fathom's own internal one too) to whichever
 * library comes first. So Fathom is not linked: it is loaded with dlopen
 * (RTLD_LOCAL, its symbols kept out of the global scope) and its functions
 * taken with dlsym. Fathom's tb_free is never called (it calls tb_init
 * through the global scope, which would reach Gaviota's); unloading asks
 * Fathom's tb_init for the empty set of folders instead, which frees the
 * tables. Only with LC_HAVE_SYZYGY; for tablebase.c alone.
 */
#ifndef LC_FORMAT_TABLEBASE_SYZYGY_H
#define LC_FORMAT_TABLEBASE_SYZYGY_H

#include "core/error.h"
#include "format/lc0/position.h"

#include <stdbool.h>

/* Load Fathom (once a process) and its tables from the folders joined by
 * ':'; *largest the most pieces. */
int lc_syzygy_load(const char *joined, unsigned *largest, lc_error *err);
void lc_syzygy_unload(void);
/* WDL as tablebase.h's lc_tablebases_wdl (the counter taken as 0). */
int lc_syzygy_wdl(const lc_position *p);
/* Fathom's root probe (under a lock: it is not thread-safe): every move's
 * result with the position's fifty-move counter, and its distance to the
 * next zeroing move in plies. False when it fails (no DTZ table). */
bool lc_syzygy_root(const lc_position *p, const lc_move *moves, unsigned n, signed char *wdl,
                    int *dist);

#endif
