/*
 * tablebase_upstream: the probes lc0's rescorer makes (format/lc0/
 * tablebase.h, "Upstream's probes") on the real Syzygy tables of
 * tests/syzygy (every 3- and 4-piece table, WDL and DTZ; the format
 * tests get LCMON_SYZYGY_PATH pointing there) and on Debian's Gaviota
 * 3-piece tables (gaviotatb, found as test_tablebase finds them).
 *
 * Positions are written in the usual coordinates ("Kb6 Qh7" for White,
 * "Kb8" for Black, and who moves); the expected answers are worked out by
 * hand in the comments, or (marked so) are lc0's own expectations from its
 * src/syzygy/syzygy_test.cc. Conventions checked (lc0's): WDL folded to
 * win 1 / draw 0 / loss -1; DTZ in plies to the next capture, pawn move or
 * mate, positive when the side to move wins, a mated side -1; a root
 * probe's move counts one ply more than the DTZ after it, a zeroing move
 * 1 when it wins, a mate 1.
 *
 * Last, Syzygy and Gaviota must agree on every legal KQvK, KRvK and KPvK
 * position (either side with the piece, either side to move, no castling,
 * no en passant): the same result, and in KQvK and KRvK Gaviota's plies to
 * mate equal to Syzygy's |DTZ| (the stronger side never captures or moves
 * a pawn there, so the next zeroing event is the mate; a mated side has DTZ
 * -1 and DTM 0). The count and the time are printed. Under AddressSanitizer
 * or ThreadSanitizer (TU_SANITIZED) only every 7th position is checked, and
 * LCMON_TB_EVERY=N checks every Nth anywhere.
 *
 * Skipped (77) with a message without Syzygy (the build or the variable);
 * the Gaviota parts are skipped with a message without Gaviota.
 */
#include "board_test.h"
#include "check.h"
#include "testutil.h"

#include "format/lc0/rescore/tablebase.h"

#include <pthread.h>
#include <time.h>

static lc_tablebases *tb;

static lc_position pos(const char *w, const char *b, bool btm, unsigned rule50)
{
    lc_position p = bt_position(w, b, btm);
    p.rule50 = (uint8_t)rule50;
    return p;
}

static int dtz_of(const lc_position *p)
{
    bool ok = false;
    int d = lc_tablebases_syzygy_dtz(tb, p, &ok);
    CHECK(ok);
    return ok ? d : 9999;
}

/* ---- WDL ---- */

static int wdl(const char *w, const char *b, bool btm)
{
    lc_position p = pos(w, b, btm, 0);
    return lc_tablebases_syzygy_wdl(tb, &p);
}

static void test_wdl(void)
{
    CHECK_EQ_INT(lc_tablebases_syzygy_max_pieces(tb), 4);
    /* KQvK, KRvK: the piece wins whoever moves (nothing hangs). */
    CHECK_EQ_INT(wdl("Ka1 Qd3", "Kh8", false), 1);
    CHECK_EQ_INT(wdl("Ka1 Qd4", "Kh8", true), -1);
    CHECK_EQ_INT(wdl("Kc3 Rh2", "Ke5", false), 1);
    CHECK_EQ_INT(wdl("Kc3 Rh2", "Ke5", true), -1);
    /* The queen hangs: Black Ka1 in check from Qb2, which no white piece
     * guards (Kh8 far): Kxb2 is the only move, KvK. */
    CHECK_EQ_INT(wdl("Kh8 Qb2", "Ka1", true), 0);
    /* Stalemate: Ka1 not in check, a2, b1, b2 covered by Qc2. */
    CHECK_EQ_INT(wdl("Kh8 Qc2", "Ka1", true), 0);
    /* KPvK won: the a-pawn runs (a7, a8) before Black's Kh1 gets near;
     * drawn: Black's king in the corner of a rook pawn (a8) holds. */
    CHECK_EQ_INT(wdl("Kc3 Pa6", "Kh1", false), 1);
    CHECK_EQ_INT(wdl("Kc4 Pa4", "Ka8", false), 0);
    CHECK_EQ_INT(wdl("Kc4 Pa4", "Ka8", true), 0);
    /* KRvKP: the rook wins against a pawn on its first square with its
     * king in the corner; Black to move takes a rook left next to its king
     * (Kb3xa2) and queens the b2-pawn next, White's king on h8 too far. */
    CHECK_EQ_INT(wdl("Kd4 Rh1", "Ka8 Pa7", false), 1);
    CHECK_EQ_INT(wdl("Kh8 Ra2", "Kb3 Pb2", true), 1);
    /* KBNvK won; drawn when Black's only move takes the bishop (Bb2+
     * unguarded: b1 and a2 are the knight's on c3). */
    CHECK_EQ_INT(wdl("Kd1 Bc1 Nb1", "Kh8", false), 1);
    CHECK_EQ_INT(wdl("Kd1 Bc1 Nb1", "Kh8", true), -1);
    CHECK_EQ_INT(wdl("Kh8 Bb2 Nc3", "Ka1", true), 0);
    /* Two kings: a draw (Fathom answers it without a table). */
    CHECK_EQ_INT(wdl("Ke1", "Kh8", false), 0);
    /* Not asked: five pieces, castling rights. */
    CHECK_EQ_INT(wdl("Ke1 Qd1 Ra1", "Ke8 Pa7", false), LC_TB_UNKNOWN);
    lc_position p = pos("Ke1 Ra1", "Ke8", false, 0);
    p.castling = true;
    p.castle[0] = 1;
    CHECK_EQ_INT(lc_tablebases_syzygy_wdl(tb, &p), LC_TB_UNKNOWN);
    bool ok = true;
    lc_tablebases_syzygy_dtz(tb, &p, &ok);
    CHECK(!ok);
}

/* ---- DTZ ---- */

static int dtz(const char *w, const char *b, bool btm)
{
    lc_position p = pos(w, b, btm, 0);
    return dtz_of(&p);
}

static void test_dtz(void)
{
    /* Mate in one (Qb7#, Qg8#, Qh8#): 1. After Qb7# Black is mated: -1.
     * Black to move first: Ka8 or Kc8, then Qb7# or Qc7#: -2. */
    CHECK_EQ_INT(dtz("Kb6 Qh7", "Kb8", false), 1);
    CHECK_EQ_INT(dtz("Kb6 Qb7", "Kb8", true), -1);
    CHECK_EQ_INT(dtz("Kb6 Qh7", "Kb8", true), -2);
    /* KRvK mate in two: Ra8+ fails (Kxa8), 1.Rc1 Ka8 2.Rc8#: 3 plies. */
    CHECK_EQ_INT(dtz("Kb6 Ra1", "Kb8", false), 3);
    /* A winning pawn move zeroes at once: a7 (the pawn queens next). */
    CHECK_EQ_INT(dtz("Kc3 Pa6", "Kh1", false), 1);
    /* Draws: 0 (the rook pawn; KvK; the hanging queen; stalemate). */
    CHECK_EQ_INT(dtz("Kc4 Pa4", "Ka8", false), 0);
    CHECK_EQ_INT(dtz("Ke1", "Kh8", false), 0);
    CHECK_EQ_INT(dtz("Kh8 Qb2", "Ka1", true), 0);
    CHECK_EQ_INT(dtz("Kh8 Qc2", "Ka1", true), 0);
    /* lc0's syzygy_test.cc: the longest KRvK (Black Kd2 to move, 32 plies
     * to the mate) and its colour swap and mirrors; the longest KBNvK
     * (-65); Kxf8 draws; a pawn move wins at once (1); a king move first
     * (3); a lost KvKP (-8); a mated side (-1). */
    CHECK_EQ_INT(dtz("Kb1 Rc2", "Kd2", true), -32);
    CHECK_EQ_INT(dtz("Kd2", "Kb1 Rc2", false), -32);
    CHECK_EQ_INT(dtz("Kg1 Rf2", "Ke2", true), -32);
    CHECK_EQ_INT(dtz("Kg8 Rf7", "Ke7", true), -32);
    CHECK_EQ_INT(dtz("Kb1 Bg5 Nh1", "Ke2", true), -65);
    CHECK_EQ_INT(dtz("Ke1 Qf8", "Kg8", true), 0);
    CHECK_EQ_INT(dtz("Kc1", "Kg8 Pf3", true), 1);
    CHECK_EQ_INT(dtz("Kd1", "Ka3 Pc3", true), 3);
    CHECK_EQ_INT(dtz("Kc1", "Kf3 Pc7", false), -8);
    CHECK_EQ_INT(dtz("Ke1", "Kg2 Qd2 Pc3", false), -1);
    /* En passant (lc0's too): White just played a2-a4 beside Black's
     * b4-pawn. With the right, bxa3 wins at once (1); without it Black's
     * only zeroing move b3 loses (-1). */
    CHECK_EQ_INT(dtz("Ke4 Pa4", "Kh8 Pb4", true), -1);
    lc_position p = pos("Ke4 Pa4", "Kh8 Pb4", true, 0);
    p.ep_file = 0;
    CHECK_EQ_INT(lc_tablebases_syzygy_wdl(tb, &p), 1);
    CHECK_EQ_INT(dtz_of(&p), 1);
    /* The counter does not change DTZ (plies from the position on). */
    p = pos("Kb1 Rc2", "Kd2", true, 60);
    CHECK_EQ_INT(dtz_of(&p), -32);
}

/* ---- root probes ---- */

/* A move's plies counted from the position before it, as lc0's root probe
 * counts them for a move that does not zero: the DTZ after it negated and
 * one further from 0, a mate 1, a draw 0. */
static int plies_of(const lc_position *child)
{
    lc_move m[LC_MAX_MOVES];
    int d = -dtz_of(child);
    if (d == 1 && lc_position_legal_moves(child, m) == 0 && lc_position_in_check(child))
        return 1;
    return d > 0 ? d + 1 : d < 0 ? d - 1 : 0;
}

/* The moves lc0's root_probe(p, has_repeated, win_only) keeps, as "e1d1"
 * strings in the usual coordinates, sorted by the move generator's order
 * and joined by spaces; "false" when it returns false. */
static const char *root(const lc_position *p, bool has_repeated, bool win_only, char *buf)
{
    lc_move m[LC_MAX_MOVES];
    bool safe[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(p, m);
    if (!lc_tablebases_syzygy_root_probe(tb, p, m, n, has_repeated, win_only, safe))
        return "false";
    size_t k = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < n; i++)
        if (safe[i])
            k += (size_t)sprintf(buf + k, "%s%c%d%c%d%s", k ? " " : "", 'a' + m[i].from % 8,
                                 m[i].from / 8 + 1, 'a' + m[i].to % 8, m[i].to / 8 + 1,
                                 m[i].promotion == LC_QUEEN ? "q" : "");
    return buf;
}

/* The fifty-move counter's effect on a won position's root probe. */
static void test_root_probe_counter(void)
{
    /* White to move after 1...Kd3: DTZ 31. Counter 0: every winning move
     * (rank 1000). Counter 68: only moves with DTZ + 68 <= 99, i.e. the
     * DTZ-best ones (31), keep rank 1000; counter 69: none fits, the
     * DTZ-best rank highest (1000 - 100 = 900) and are kept. */
    lc_position p = pos("Kb1 Rc2", "Kd2", true, 0), after;
    lc_move m[LC_MAX_MOVES];
    bool safe[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&p, m);
    for (unsigned i = 0; i < n; i++)
        if (m[i].to == 43) /* d6 in Black's frame: Kd3 */
            lc_position_play(&p, &m[i], &after);
    after.rule50 = 0;
    CHECK_EQ_INT(dtz_of(&after), 31);
    n = lc_position_legal_moves(&after, m);
    unsigned best = 0, all = 0;
    bool best_safe[LC_MAX_MOVES];
    CHECK(lc_tablebases_syzygy_root_probe(tb, &after, m, n, true, true, best_safe));
    static const int counters[3] = {0, 68, 69};
    for (int c = 0; c < 3; c++) {
        int counter = counters[c];
        after.rule50 = (uint8_t)counter;
        CHECK(lc_tablebases_syzygy_root_probe(tb, &after, m, n, false, true, safe));
        unsigned kept_now = 0;
        for (unsigned i = 0; i < n; i++) {
            lc_position child;
            lc_position_play(&after, &m[i], &child);
            child.rule50 = 0;
            int v = plies_of(&child); /* the move's plies from the root */
            if (counter == 0)
                CHECK_EQ_INT(safe[i], v > 0);
            else
                CHECK_EQ_INT(safe[i], v == 31);
            CHECK_EQ_INT(best_safe[i], v == 31); /* a repetition: fewest plies */
            best += counter == 0 && v == 31;
            all += counter == 0 && safe[i];
            kept_now += safe[i];
        }
        CHECK(kept_now > 0);
    }
    CHECK(best >= 1 && best < all);
}

/* Moves are printed in the plane frame: for Black to move the ranks are
 * mirrored (Black's d2 is d7 there). */
static void test_root_probe(void)
{
    char buf[2048];
    /* Kb6 Qh7 against Kb8, White to move: 26 moves (21 of the queen, 5 of
     * the king: a7, b7, c7 touch Black's king), and every one wins (no
     * queen move hangs the queen or stalemates: after Qd7 Ka8 is free).
     * When nothing repeated every winning move is safe (each keeps DTZ +
     * counter <= 99: rank 1000); with a repetition only the fewest plies
     * count: the three mates (Qb7#, Qg8#, Qh8#: 1 ply). With the counter at
     * 98 only 1 ply fits under 99: the mates again. */
    lc_position p = pos("Kb6 Qh7", "Kb8", false, 0);
    CHECK_EQ_STR(root(&p, true, true, buf), "h7b7 h7g8 h7h8");
    CHECK_EQ_STR(root(&p, true, false, buf), "h7b7 h7g8 h7h8");
    lc_move m[LC_MAX_MOVES];
    bool safe[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&p, m);
    CHECK_EQ_INT(n, 26);
    CHECK(lc_tablebases_syzygy_root_probe(tb, &p, m, n, false, true, safe));
    for (unsigned i = 0; i < n; i++) {
        lc_position child;
        lc_position_play(&p, &m[i], &child);
        bool win = lc_tablebases_syzygy_wdl(tb, &child) == -1;
        CHECK(safe[i] && win);
    }
    p.rule50 = 98;
    CHECK_EQ_STR(root(&p, false, true, buf), "h7b7 h7g8 h7h8");
    /* Kb6 Ra1 against Kb8: mate in two by Rc1 (Ka8 Rc8#) or Kc6 (Ka8/Kc8,
     * then the rook mates): 3 plies; with a repetition those two. */
    p = pos("Kb6 Ra1", "Kb8", false, 0);
    CHECK_EQ_STR(root(&p, true, true, buf), "a1c1 b6c6");
    /* KPvK: a7 wins at once (a zeroing move that wins counts 1), the king
     * moves need 3 plies: with a repetition only a7; without, every move
     * (all keep the win). */
    p = pos("Kc3 Pa6", "Kh1", false, 0);
    CHECK_EQ_STR(root(&p, true, true, buf), "a6a7");
    CHECK_EQ_STR(root(&p, false, true, buf), "c3b2 c3c2 c3d2 c3b3 c3d3 c3b4 c3c4 c3d4 a6a7");
    /* lc0's KRvK position, Black Kd2 to move (d7 in Black's frame), lost in
     * 32 plies. Its moves: Kd3 -32 (d6), Ke3 -28 (e6), Kd1 -14 (d8), Ke1
     * -12 (e8). Counter 0: every loss ranks -1000 (2 * 32 < 100): all four
     * safe. Counter 60: a loss in v plies with 2v + 60 >= 100 ranks
     * -1000 + v + 60, so the longest defence Kd3 (-908) beats Ke3 (-912)
     * and the short ones (-1000). Not won: false with win_only. */
    p = pos("Kb1 Rc2", "Kd2", true, 0);
    CHECK_EQ_STR(root(&p, false, false, buf), "d7d6 d7e6 d7d8 d7e8");
    CHECK_EQ_STR(root(&p, false, true, buf), "false");
    p.rule50 = 60;
    CHECK_EQ_STR(root(&p, false, false, buf), "d7d6");
    CHECK_EQ_STR(root(&p, true, false, buf), "d7d6");
    /* Draws: the only move Kxb2 (queen hangs), Kxe2 (rook next to Black's
     * king, Kc1 loses); the rook pawn: every move holds. win_only: false. */
    p = pos("Kh8 Qb2", "Ka1", true, 0);
    CHECK_EQ_STR(root(&p, false, false, buf), "a8b7");
    CHECK_EQ_STR(root(&p, false, true, buf), "false");
    p = pos("Kh8 Re2", "Kd1", true, 0);
    CHECK_EQ_STR(root(&p, false, false, buf), "d8e7");
    p = pos("Kc4 Pa4", "Ka8", true, 0);
    CHECK_EQ_STR(root(&p, true, false, buf), "a1b1 a1a2 a1b2");
    /* No legal move (stalemate): lc0 returns true with no move. */
    p = pos("Kh8 Qc2", "Ka1", true, 0);
    CHECK_EQ_STR(root(&p, false, false, buf), "");
    CHECK_EQ_STR(root(&p, false, true, buf), "false");
    /* KRvKP, Black to move: Kxa2 and b1=Q both zero and win (1 each). */
    p = pos("Kh8 Ra2", "Kb3 Pb2", true, 0);
    CHECK_EQ_STR(root(&p, true, true, buf), "b6a7 b7b8q");
}

/* ---- threads ---- */

/* Three threads probing at once: WDL (no lock), DTZ and root probes (one at
 * a time behind the root-probe lock, whose result buffer is shared) and
 * Gaviota's DTM when open; every answer as in the tests above. */
enum { PROBERS = 3, PROBE_ROUNDS = 150 };

static void *prober(void *arg)
{
    unsigned *wrong = arg;
    lc_position q = pos("Ka1 Qd3", "Kh8", false, 0), r = pos("Kb1 Rc2", "Kd2", true, 0);
    lc_position mate = pos("Kb6 Qh7", "Kb8", false, 0);
    lc_move m[LC_MAX_MOVES];
    bool safe[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&mate, m);
    for (int k = 0; k < PROBE_ROUNDS; k++) {
        bool ok = false;
        unsigned d = 0, kept = 0;
        *wrong += lc_tablebases_syzygy_wdl(tb, &q) != 1;
        *wrong += lc_tablebases_syzygy_dtz(tb, &r, &ok) != -32 || !ok;
        ok = lc_tablebases_syzygy_root_probe(tb, &mate, m, n, true, true, safe);
        for (unsigned i = 0; ok && i < n; i++)
            kept += safe[i];
        *wrong += !ok || kept != 3;
        if (lc_tablebases_have_gaviota_tables(tb))
            *wrong += lc_tablebases_gaviota_dtm(tb, &r, &d) != LC_TB_LOSS || d != 32;
    }
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[PROBERS];
    unsigned wrong[PROBERS] = {0};
    for (int i = 0; i < PROBERS; i++)
        CHECK_EQ_INT(pthread_create(&t[i], NULL, prober, &wrong[i]), 0);
    for (int i = 0; i < PROBERS; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ_INT(wrong[i], 0);
    }
}

/* ---- Gaviota ---- */

static int dtm(const char *w, const char *b, bool btm, unsigned *plies)
{
    lc_position p = pos(w, b, btm, 0);
    *plies = 12345;
    return lc_tablebases_gaviota_dtm(tb, &p, plies);
}

static void test_gaviota_dtm(void)
{
    unsigned d;
    CHECK(lc_tablebases_have_gaviota_tables(tb)); /* 3-piece tables only: accepted */
    /* The positions of test_dtz: mate in one for White (1 ply), mated
     * (0), mated after one reply (2), KRvK mate in two (3), lc0's longest
     * KRvK (32: in KRvK the next zeroing event is the mate, so DTM = |DTZ|). */
    CHECK_EQ_INT(dtm("Kb6 Qh7", "Kb8", false, &d), LC_TB_WIN);
    CHECK_EQ_INT(d, 1);
    CHECK_EQ_INT(dtm("Kb6 Qb7", "Kb8", true, &d), LC_TB_LOSS);
    CHECK_EQ_INT(d, 0);
    CHECK_EQ_INT(dtm("Kb6 Qh7", "Kb8", true, &d), LC_TB_LOSS);
    CHECK_EQ_INT(d, 2);
    CHECK_EQ_INT(dtm("Kb6 Ra1", "Kb8", false, &d), LC_TB_WIN);
    CHECK_EQ_INT(d, 3);
    CHECK_EQ_INT(dtm("Kb1 Rc2", "Kd2", true, &d), LC_TB_LOSS);
    CHECK_EQ_INT(d, 32);
    CHECK_EQ_INT(dtm("Kd2", "Kb1 Rc2", false, &d), LC_TB_LOSS);
    CHECK_EQ_INT(d, 32);
    /* KPvK won: a7, a8=Q at ply 3, then the queen still has to mate a king
     * in the middle of the board: more than 5 plies, odd (the winner moves
     * last). */
    CHECK_EQ_INT(dtm("Kc3 Pa6", "Kh1", false, &d), LC_TB_WIN);
    CHECK(d > 5 && d % 2 == 1);
    /* Draws: the hanging queen, stalemate, the rook pawn, two kings. */
    CHECK_EQ_INT(dtm("Kh8 Qb2", "Ka1", true, &d), LC_TB_DRAW);
    CHECK_EQ_INT(dtm("Kh8 Qc2", "Ka1", true, &d), LC_TB_DRAW);
    CHECK_EQ_INT(dtm("Kc4 Pa4", "Ka8", false, &d), LC_TB_DRAW);
    CHECK_EQ_INT(dtm("Ke1", "Kh8", false, &d), LC_TB_DRAW);
    /* No table: four pieces (only Debian's 3-piece ones here), castling. */
    CHECK_EQ_INT(dtm("Kd4 Rh1", "Ka8 Pa7", false, &d), LC_TB_UNKNOWN);
    lc_position p = pos("Ke1 Ra1", "Ke8", false, 0);
    p.castling = true;
    p.castle[0] = 1;
    CHECK_EQ_INT(lc_tablebases_gaviota_dtm(tb, &p, &d), LC_TB_UNKNOWN);
}

/* ---- Syzygy and Gaviota on every 3-piece position ---- */

/* The same board seen from the side not to move. */
static lc_position flipped(const lc_position *p)
{
    lc_position q = *p;
    q.ours = q.theirs = 0;
    for (int i = 0; i < 6; i++) {
        q.bb[LC_OURS + i] = __builtin_bswap64(p->bb[LC_THEIRS + i]);
        q.bb[LC_THEIRS + i] = __builtin_bswap64(p->bb[LC_OURS + i]);
        q.ours |= q.bb[LC_OURS + i];
        q.theirs |= q.bb[LC_THEIRS + i];
    }
    return q;
}

static bool kings_apart(int a, int b)
{
    int df = a % 8 - b % 8, dr = a / 8 - b / 8;
    return df * df > 1 || dr * dr > 1;
}

struct agreement {
    unsigned every, dtz_every; /* check every Nth position, DTZ every Nth decisive pawnless one */
    unsigned legal, checked, decisive, dtz_checked, wdl_wrong, dtm_wrong;
};

/* One position: Syzygy's WDL equals Gaviota's result, and for pawnless
 * ones Syzygy's |DTZ| equals Gaviota's DTM (a mated side: -1 and 0). */
static void agree_on(const lc_position *p, bool pawnless, struct agreement *a)
{
    unsigned d = 0;
    int s = lc_tablebases_syzygy_wdl(tb, p), g = lc_tablebases_gaviota_dtm(tb, p, &d);
    a->checked++;
    if (s != g || s == LC_TB_UNKNOWN) {
        if (a->wdl_wrong++ < 5)
            fprintf(stderr, "WDL: Syzygy %d, Gaviota %d (ours %llx, theirs %llx)\n", s, g,
                    (unsigned long long)p->ours, (unsigned long long)p->theirs);
        return;
    }
    if (!pawnless || s == 0 || a->decisive++ % a->dtz_every != 0)
        return;
    bool ok = false;
    int z = lc_tablebases_syzygy_dtz(tb, p, &ok);
    a->dtz_checked++;
    bool same = ok && (d == 0 ? z == -1 : (unsigned)(z < 0 ? -z : z) == d);
    if (!same && a->dtm_wrong++ < 5)
        fprintf(stderr, "DTZ %d (ok %d) vs DTM %u (ours %llx, theirs %llx)\n", z, ok, d,
                (unsigned long long)p->ours, (unsigned long long)p->theirs);
}

/* Every legal position of K + piece against K, the piece the side to
 * move's (strong) or the other's: kings apart, the side not to move not in
 * check, a pawn on ranks 2 to 7. */
static void agree_material(int piece, bool strong, struct agreement *a)
{
    for (int k1 = 0; k1 < 64; k1++)
        for (int k2 = 0; k2 < 64; k2++)
            for (int s = 0; s < 64; s++) {
                if (k1 == k2 || s == k1 || s == k2 || !kings_apart(k1, k2))
                    continue;
                if (piece == LC_PAWN && (s < 8 || s >= 56))
                    continue;
                lc_position p;
                memset(&p, 0, sizeof p);
                p.bb[LC_OURS + LC_KING] = 1ull << k1;
                p.bb[LC_THEIRS + LC_KING] = 1ull << k2;
                p.bb[(strong ? LC_OURS : LC_THEIRS) + piece] = 1ull << s;
                p.ours = p.bb[LC_OURS + LC_KING] | (strong ? 1ull << s : 0);
                p.theirs = p.bb[LC_THEIRS + LC_KING] | (strong ? 0 : 1ull << s);
                p.pieces = 3;
                p.ep_file = -1;
                lc_position q = flipped(&p);
                if (lc_position_in_check(&q))
                    continue; /* the side not to move in check */
                if (a->legal++ % a->every == 0)
                    agree_on(&p, piece != LC_PAWN, a);
            }
}

static void test_agreement(void)
{
    struct agreement a = {.every = 1, .dtz_every = 16};
    const char *every = getenv("LCMON_TB_EVERY");
    if (every && atoi(every) > 0)
        a.every = (unsigned)atoi(every);
    else if (TU_SANITIZED)
        a.every = 7;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    static const int pieces[3] = {LC_QUEEN, LC_ROOK, LC_PAWN};
    for (int i = 0; i < 3; i++) {
        agree_material(pieces[i], true, &a);
        agree_material(pieces[i], false, &a);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("Syzygy and Gaviota on KQvK, KRvK, KPvK: %u legal positions, %u checked (every %u), "
           "DTZ = DTM on %u of their %u won or lost KQvK and KRvK ones, in %.1f s\n",
           a.legal, a.checked, a.every, a.dtz_checked, a.decisive, s);
    CHECK_EQ_INT(a.wdl_wrong, 0);
    CHECK_EQ_INT(a.dtm_wrong, 0);
    CHECK(a.checked > 0);
}

int main(void)
{
    const char *dir = getenv("LCMON_SYZYGY_PATH");
    if (!lc_tablebases_have_syzygy()) {
        printf("SKIP: this lcmon was built without Syzygy (install libfathom-dev)\n");
        return 77;
    }
    if (!dir || !*dir) {
        printf("SKIP: LCMON_SYZYGY_PATH names no folder of Syzygy tables (.rtbw, .rtbz)\n");
        return 77;
    }
    const char *gdir = bt_gaviota_dir(); /* NULL: says why the Gaviota part skips */
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_tablebases_open(dir, gdir, &tb, &err));
    if (!tb) {
        fprintf(stderr, "%s\n", err.msg);
        return check_finish();
    }
    test_wdl();
    test_dtz();
    test_root_probe();
    test_root_probe_counter();
    if (gdir) {
        test_gaviota_dtm();
        test_threads();
        test_agreement();
    } else {
        CHECK(!lc_tablebases_have_gaviota_tables(tb));
        test_threads();
    }
    lc_tablebases_close(tb);
    return check_finish();
}
