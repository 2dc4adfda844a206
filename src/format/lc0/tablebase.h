/*
 * tablebase: endgame tablebases for the rescorer, through the libraries
 * Debian ships: Gaviota (libgaviotatb-dev: WDL and distance to mate, 3 to 5
 * pieces) and Syzygy (libfathom-dev: WDL and distance to zeroing, up to 7
 * pieces). Each is optional at build time (LC_HAVE_GAVIOTA, LC_HAVE_SYZYGY
 * in config.h); a build without one refuses paths for it with a message that
 * says which Debian package to install.
 *
 * Positions are given in the plane frame of an lc0 record (format/lc0/
 * position.h): the side to move is "us", moving up the board. Results are
 * from the side to move's view. Both libraries keep process-wide state, so
 * there is one set of tablebases per process: opening a second set with
 * other paths is refused; probing is safe from any thread once open.
 */
#ifndef LC_FORMAT_TABLEBASE_H
#define LC_FORMAT_TABLEBASE_H

#include "core/error.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct lc_tablebases lc_tablebases;
struct lc_position;

/* Which libraries this build has. */
bool lc_tablebases_have_gaviota(void);
bool lc_tablebases_have_syzygy(void);

/*
 * Open the tables in the given folders (each a list separated by ',' or
 * ':'; NULL or "" for none). A folder that does not exist, or a set of
 * folders holding no table, is an error naming them. *out on success.
 */
int lc_tablebases_open(const char *syzygy_paths, const char *gaviota_paths, lc_tablebases **out,
                       lc_error *err);
void lc_tablebases_close(lc_tablebases *tb);

/* The most pieces (kings included) a position may have to be probed. */
unsigned lc_tablebases_max_pieces(const lc_tablebases *tb);

/* One line for the log: which libraries, which folders, how many tables of
 * how many pieces each found. */
void lc_tablebases_describe(const lc_tablebases *tb, char *buf, size_t size);

enum { LC_TB_LOSS = -1, LC_TB_DRAW = 0, LC_TB_WIN = 1, LC_TB_UNKNOWN = 2 };

/* The side to move's result with best play (LC_TB_UNKNOWN when no table
 * answers: too many pieces, castling rights, a missing table). */
int lc_tablebases_wdl(const lc_tablebases *tb, const struct lc_position *p);

#endif
