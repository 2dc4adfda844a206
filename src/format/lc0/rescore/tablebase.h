/*
 * tablebase: endgame tablebases for the rescorer, through the libraries
 * Debian ships: Gaviota (libgaviotatb-dev: WDL and distance to mate, 3 to 5
 * pieces) and Syzygy (libfathom-dev: WDL and distance to zeroing, up to 7
 * pieces). Each is optional at build time (LC_HAVE_GAVIOTA, LC_HAVE_SYZYGY
 * in config.h); a build without one refuses paths for it with a message that
 * says which Debian package to install.
 *
 * Positions are given in the plane frame of an lc0 record (format/lc0/
 * position.h): the side to move is "us", moving up the board; the tables are
 * probed with "us" as White to move (chess is the same game with the colours
 * swapped and the board mirrored when no castling right is left, and the
 * tables are never asked about positions with one). Results are from the
 * side to move's view.
 *
 * The fifty-move rule: lc_tablebases_wdl answers as if the fifty-move
 * counter were 0 (the rescorer only asks it there): Syzygy's cursed wins
 * and blessed losses are draws, and a Gaviota win or loss whose mate is more
 * than 100 plies away is unknown (Gaviota measures distance to mate, so it
 * cannot tell a cursed win). lc_tablebases_rate_moves with distances uses
 * the position's counter where the tables can (Syzygy with DTZ tables).
 *
 * Process-wide state and threads. Both libraries keep their tables in
 * globals: Fathom's tb_init replaces the whole set and TB_LARGEST, Gaviota's
 * tb_init / tbcache_init likewise. So there is one set of tablebases per
 * process: opening the same folders again returns the open set (counted;
 * each open needs its close), opening other folders while a set is open is
 * refused with a message naming both; Gaviota stays loaded after its last
 * close, for the next open of the same folders (tablebase.c says why), and
 * so do Fathom's tables until the next open (tablebase_syzygy.h says why).
 * Probing: Fathom's WDL probe is safe from any thread; Fathom's root probe
 * (DTZ of every move) is not, so lc_tablebases_rate_moves,
 * lc_tablebases_syzygy_dtz and lc_tablebases_syzygy_root_probe take turns
 * behind a lock around it; Gaviota's probes, said to be safe from any
 * thread, gave wrong results now and then from several at once, so they
 * take turns behind a lock of their own (tablebase.c). Opening and closing
 * must not race with probes of the same set (the stage opens before its
 * threads start and closes after they end).
 */
#ifndef LC_FORMAT_LC0_RESCORE_TABLEBASE_H
#define LC_FORMAT_LC0_RESCORE_TABLEBASE_H

#include "core/error.h"
#include "core/problem.h"

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

/* For a config check: the folders of a list as lc_tablebases_open takes
 * it exist and hold tables of the library (Syzygy: *.rtbw; Gaviota: *.gtb
 * or *.gtb.cpN), counted by name without loading them (so it may be asked
 * while another set is open). LC_ECONFIG with every problem added to ps,
 * each about the setting (syzygy_paths, gaviota_paths) and saying what to
 * do. */
int lc_tablebases_check(const char *paths, bool syzygy, lc_problems *ps);

/* The most pieces (kings included) a position may have to be probed. */
unsigned lc_tablebases_max_pieces(const lc_tablebases *tb);

/* One line for the log: which libraries, which folders, how many tables of
 * how many pieces each found. */
void lc_tablebases_describe(const lc_tablebases *tb, char *buf, size_t size);

enum { LC_TB_LOSS = -1, LC_TB_DRAW = 0, LC_TB_WIN = 1, LC_TB_UNKNOWN = 2 };

/* The side to move's result with best play (LC_TB_UNKNOWN when no table
 * answers: too many pieces, castling rights, a missing table). */
int lc_tablebases_wdl(const lc_tablebases *tb, const struct lc_position *p);

/*
 * Rate the n legal moves of p (lc_position_legal_moves' list) by the
 * tablebases: wdl[i] is move i's result for the side to move (LC_TB_LOSS,
 * DRAW, WIN). Without want_distance that is the WDL of the position each
 * move leads to (as lc_tablebases_wdl, negated, no fifty-move check: the
 * cheap probes, thread-safe, no lock), best[] all false and *by_distance
 * false. With want_distance, best[i] says whether move i reaches the best
 * result and is best by distance among those, *by_distance true: Syzygy's
 * root probe when it answers (the results with the position's fifty-move
 * counter; distance: plies to the next zeroing move), else Gaviota's DTM
 * (plies to mate); fewest when winning, most when losing, and every move
 * that holds a draw is best in a draw. Returns the best result, or
 * LC_TB_UNKNOWN (arrays unspecified) when a move cannot be rated or p has
 * no legal move.
 */
struct lc_move;
int lc_tablebases_rate_moves(const lc_tablebases *tb, const struct lc_position *p,
                             const struct lc_move *moves, unsigned n, bool want_distance,
                             signed char *wdl, bool *best, bool *by_distance);

/*
 * ---- Upstream's probes (issue 33) ----
 *
 * What lc0's rescorer asks of the tables, one function each, with its
 * conventions. Syzygy only where upstream uses Syzygy; Gaviota for distance
 * to mate only.
 */

/* The most pieces Syzygy's tables answer (Fathom's TB_LARGEST; 0 without
 * Syzygy tables): upstream's max_cardinality. */
unsigned lc_tablebases_syzygy_max_pieces(const lc_tablebases *tb);

/* Syzygy's WDL of p folded as lc0's rescorer folds it: a win 1, a loss -1;
 * a draw, a cursed win and a blessed loss 0; LC_TB_UNKNOWN when the probe
 * fails (no Syzygy, no table, too many pieces, castling rights). The
 * fifty-move counter is not looked at. Thread-safe. */
int lc_tablebases_syzygy_wdl(const lc_tablebases *tb, const struct lc_position *p);

/* Syzygy's DTZ of p as lc0's probe_dtz gives it: plies to the next zeroing
 * move, signed from the side to move (> 0 winning, < 0 losing, 0 a draw; a
 * mated side -1), above 100 for a cursed win, below -100 for a blessed
 * loss. The counter is not looked at. *ok false (result 0) when the probe
 * fails. Takes the root-probe lock (Fathom's root probe computes it). */
int lc_tablebases_syzygy_dtz(const lc_tablebases *tb, const struct lc_position *p, bool *ok);

/* lc0's root_probe(pos, has_repeated, win_only, &safe_moves) on the n legal
 * moves of p (lc_position_legal_moves' list): safe[i] says whether move i is
 * one lc0 would return (the moves of the best rank by DTZ, the position's
 * fifty-move counter and has_repeated; docs/pipelines.md gives the ranks).
 * false (safe unspecified) when a probe failed, or win_only and no move
 * wins (best rank 0 or less); p without a legal move: true, nothing safe,
 * unless win_only. Takes the root-probe lock. */
bool lc_tablebases_syzygy_root_probe(const lc_tablebases *tb, const struct lc_position *p,
                                     const struct lc_move *moves, unsigned n, bool has_repeated,
                                     bool win_only, bool *safe);

/* Gaviota's hard probe of p as lc0's rescorer makes it (distance to mate):
 * LC_TB_WIN or LC_TB_LOSS for a mate by or against the side to move, with
 * *dtm its distance in plies; LC_TB_DRAW; LC_TB_UNKNOWN without Gaviota or
 * its table. */
int lc_tablebases_gaviota_dtm(const lc_tablebases *tb, const struct lc_position *p, unsigned *dtm);

/* Whether Gaviota tables are open in this set. */
bool lc_tablebases_have_gaviota_tables(const lc_tablebases *tb);

#endif
