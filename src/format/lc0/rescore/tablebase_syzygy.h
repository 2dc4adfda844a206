/*
 * tablebase_syzygy: the Syzygy half of tablebase.c, through Fathom
 * (Debian's libfathom), kept apart because Fathom and Gaviota both name a
 * function tb_init: their headers cannot meet in one file, and the two
 * shared libraries cannot both be linked, since the dynamic linker would
 * bind every call to tb_init (Fathom's own internal one too) to whichever
 * library comes first. So Fathom is not linked: it is loaded with dlopen
 * (RTLD_LOCAL, its symbols kept out of the global scope) and its functions
 * taken with dlsym. Fathom's tb_free is never called (it calls tb_init
 * through the global scope, which would reach Gaviota's).
 *
 * Closing: Debian's libfathom (1.0+git.20190811) tests munmap's result the
 * wrong way round: every table it unmaps successfully prints
 * "munmap: <the last errno's text>" on stderr (one line per table file
 * mapped: a WDL or DTZ file probed at least once), and a failed unmap
 * prints nothing. So lcmon never unmaps at close: Fathom keeps its tables
 * mapped (read-only file pages, which the kernel reclaims at will) until
 * the next load or the end of the process, when the kernel unmaps them
 * silently. A load replaces the tables Fathom holds (its tb_init unmaps
 * the old ones): for that call only, stderr is sent to a temporary file
 * and every line of it except Fathom's "munmap: " ones is written back to
 * stderr (another thread's message in that moment comes out a moment
 * late). Only with LC_HAVE_SYZYGY; for tablebase.c alone.
 */
#ifndef LC_FORMAT_LC0_RESCORE_TABLEBASE_SYZYGY_H
#define LC_FORMAT_LC0_RESCORE_TABLEBASE_SYZYGY_H

#include "core/error.h"
#include "format/lc0/rescore/position.h"

#include <stdbool.h>

/* Load Fathom (once a process) and the tables of the folders joined by
 * ':' in place of any it holds; *largest the most pieces. Not while
 * another thread probes. */
int lc_syzygy_load(const char *joined, unsigned *largest, lc_error *err);
/* WDL as tablebase.h's lc_tablebases_wdl (the counter taken as 0): a
 * cursed win or blessed loss is a draw, as lc0's rescorer folds them.
 * Thread-safe. */
int lc_syzygy_wdl(const lc_position *p);
/* Fathom's root probe (under a lock: it is not thread-safe): every move's
 * result with the position's fifty-move counter, and its distance to the
 * next zeroing move in plies. False when it fails (no DTZ table). */
bool lc_syzygy_root(const lc_position *p, const lc_move *moves, unsigned n, signed char *wdl,
                    int *dist);
/* lc0's probe_dtz of p (tablebase.h's lc_tablebases_syzygy_dtz), from
 * Fathom's root probe (under the same lock). False when it fails. */
bool lc_syzygy_dtz(const lc_position *p, int *dtz);
/* lc0's root_probe on the n legal moves of p (tablebase.h's
 * lc_tablebases_syzygy_root_probe). */
bool lc_syzygy_root_probe(const lc_position *p, const lc_move *moves, unsigned n, bool has_repeated,
                          bool win_only, bool *safe);

#endif
