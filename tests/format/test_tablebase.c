/*
 * tablebase: the Gaviota 3-piece tables Debian ships (package gaviotatb:
 * KQK, KRK, KPK, KBK, KNK in /usr/share/gaviotatb/gtb4, or the folder
 * LCMON_GAVIOTA_PATH names) probed through format/lc0/rescore/tablebase.h on
 * positions placed by hand whose results are known; the move ratings that
 * the policy sharpening uses; opening rules (one set a process, shared when
 * the same, refused when not; missing folders; the log line). Skipped (77)
 * with a message when this lcmon was built without Gaviota or the tables
 * are not installed.
 */
#include "board_test.h"
#include "check.h"

#include "format/chess/chess_vocab.h"
#include "format/lc0/rescore/tablebase.h"

#include <pthread.h>
#include <sys/stat.h>

static lc_tablebases *tb;

static int wdl(const char *white, const char *black, bool black_to_move)
{
    lc_position p = bt_position(white, black, black_to_move);
    return lc_tablebases_wdl(tb, &p);
}

static void test_known_results(void)
{
    /* Bishop or knight alone cannot mate: draws whoever moves. */
    CHECK_EQ_INT(wdl("Ke1 Bc1", "Ke8", false), LC_TB_DRAW);
    CHECK_EQ_INT(wdl("Ke1 Bc1", "Ke8", true), LC_TB_DRAW);
    CHECK_EQ_INT(wdl("Kd4 Nf3", "Kh8", false), LC_TB_DRAW);
    CHECK_EQ_INT(wdl("Kd4", "Kh8 Nb1", false), LC_TB_DRAW);
    /* Queen or rook: a win for its side, a loss for the lone king... */
    CHECK_EQ_INT(wdl("Ka1 Qd3", "Kh8", false), LC_TB_WIN);
    /* (Qd4 would give check with White to move: no such position.) */
    CHECK_EQ_INT(wdl("Ka1 Qd4", "Kh8", false), LC_TB_UNKNOWN);
    CHECK_EQ_INT(wdl("Ka1 Qd4", "Kh8", true), LC_TB_LOSS);
    CHECK_EQ_INT(wdl("Kc3 Rh2", "Ke5", false), LC_TB_WIN);
    CHECK_EQ_INT(wdl("Ke6", "Kg3 Ra8", false), LC_TB_LOSS);
    /* ...except a stalemate (Black Ka1, not in check, no square: the queen
     * on c2 covers a2, b1 and b2) or a rook the lone king takes (Re2 next
     * to Black's Kd1, the white king far away). */
    CHECK_EQ_INT(wdl("Kh8 Qc2", "Ka1", true), LC_TB_DRAW);
    CHECK_EQ_INT(wdl("Kh8 Re2", "Kd1", true), LC_TB_DRAW);
    /* KPK: the a-pawn runs to a8 before the black king on h1 gets near;
     * the stalemate of White's king on a8 in front of its own pawn. */
    CHECK_EQ_INT(wdl("Kc3 Pa6", "Kh1", false), LC_TB_WIN);
    CHECK_EQ_INT(wdl("Kc3 Pa6", "Kh1", true), LC_TB_LOSS);
    CHECK_EQ_INT(wdl("Ka8 Pa7", "Kc7", false), LC_TB_DRAW);
    /* Black's pawn runs down the board in Black's plane frame just the same. */
    CHECK_EQ_INT(wdl("Kh8", "Kc6 Pa3", true), LC_TB_WIN);
    /* Not in the tables: four pieces, or castling rights. */
    CHECK_EQ_INT(wdl("Ke1 Qd1 Ra1", "Ke8", false), LC_TB_UNKNOWN);
    lc_position p = bt_position("Ke1 Ra1", "Ke8", false);
    p.castling = true;
    p.castle[0] = 1;
    CHECK_EQ_INT(lc_tablebases_wdl(tb, &p), LC_TB_UNKNOWN);
}

static int idx(const char *uci)
{
    return lc_chess_move_id(uci, strlen(uci));
}

static void test_rate_moves(void)
{
    /* Black Kd1 to move against White's Re2 (king on h8): Kc1 is legal and
     * loses (KRK), Kxe2 draws; c2, d2, e1 are covered by the rook. In
     * Black's plane frame (ranks mirrored) Kd1 is on d8: moves d8c8, d8e7. */
    lc_position p = bt_position("Kh8 Re2", "Kd1", true);
    lc_move m[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&p, m);
    CHECK_EQ_INT(n, 2);
    signed char w[LC_MAX_MOVES];
    bool best[LC_MAX_MOVES], by_distance;
    CHECK_EQ_INT(lc_tablebases_rate_moves(tb, &p, m, n, true, w, best, &by_distance), LC_TB_DRAW);
    CHECK(by_distance); /* Gaviota's DTM */
    for (unsigned i = 0; i < n && n == 2; i++) {
        bool capture = m[i].policy == idx("d8e7");
        CHECK(capture || m[i].policy == idx("d8c8"));
        CHECK_EQ_INT(w[i], capture ? LC_TB_DRAW : LC_TB_LOSS);
        CHECK_EQ_INT(best[i], capture);
    }
    /* Without distances: the same results by the cheap WDL probes, no best. */
    CHECK_EQ_INT(lc_tablebases_rate_moves(tb, &p, m, n, false, w, best, &by_distance), LC_TB_DRAW);
    CHECK(!by_distance);
    for (unsigned i = 0; i < n && n == 2; i++) {
        CHECK_EQ_INT(w[i], m[i].policy == idx("d8e7") ? LC_TB_DRAW : LC_TB_LOSS);
        CHECK(!best[i]);
    }
    /* White Kb6 Qh7 against Kb8: a win, and the moves best by distance to
     * mate are exactly the mates in one (checked with the move generator:
     * Black has no move after them and is in check). */
    p = bt_position("Kb6 Qh7", "Kb8", false);
    n = lc_position_legal_moves(&p, m);
    CHECK_EQ_INT(lc_tablebases_rate_moves(tb, &p, m, n, true, w, best, &by_distance), LC_TB_WIN);
    unsigned mates = 0;
    for (unsigned i = 0; i < n; i++) {
        lc_position child;
        lc_move cm[LC_MAX_MOVES];
        lc_position_play(&p, &m[i], &child);
        bool mate = lc_position_legal_moves(&child, cm) == 0 && lc_position_in_check(&child);
        mates += mate;
        CHECK_EQ_INT(best[i], mate);
        if (mate)
            CHECK_EQ_INT(w[i], LC_TB_WIN);
    }
    CHECK(mates >= 2); /* Qh8# and Qb7# at least */
}

static void test_opening(const char *dir)
{
    lc_error err;
    lc_error_clear(&err);
    lc_tablebases *again = NULL;
    CHECK_OK(lc_tablebases_open(NULL, dir, &again, &err));
    CHECK(again == tb); /* the same folders: the open set */
    lc_tablebases_close(again);
    char *other = lc_xasprintf("%s/../gtb1", dir);
    CHECK(lc_tablebases_open(NULL, other, &again, &err) == LC_ECONFIG);
    CHECK(strstr(err.msg, "one set") != NULL);
    free(other);
    char line[512];
    lc_tablebases_describe(tb, line, sizeof line);
    printf("%s\n", line);
    CHECK(strstr(line, "gaviota") != NULL);
    CHECK(strstr(line, "5 tables (5 of 3 pieces)") != NULL);
    CHECK_EQ_INT(lc_tablebases_max_pieces(tb), 3);
}

static void test_bad_paths(void)
{
    lc_error err;
    lc_error_clear(&err);
    lc_tablebases *t = NULL;
    CHECK(lc_tablebases_open(NULL, "/nonexistent/gtb", &t, &err) == LC_ECONFIG);
    CHECK(strstr(err.msg, "/nonexistent/gtb") != NULL);
    CHECK(strstr(err.msg, "gaviota_paths") != NULL);
    CHECK(lc_tablebases_open(NULL, "/tmp", &t, &err) == LC_ECONFIG); /* no tables */
    CHECK(strstr(err.msg, "no Gaviota table") != NULL);
    CHECK(lc_tablebases_open("", " , ", &t, &err) == LC_ECONFIG);
    CHECK(t == NULL);
}

/* Three threads probing three tables at once (each position a win for the
 * side to move): Debian's Gaviota gave a draw for one probe in a few
 * thousand this way until lcmon's probes took turns (tablebase.c). */
enum { PROBERS = 3, PROBE_ROUNDS = 300 };

static void *prober(void *arg)
{
    static const char *const pos[PROBERS][2] = {
        {"Ka1 Qd3", "Kh8"}, {"Kc3 Rh2", "Ke5"}, {"Kc3 Pa6", "Kh1"}};
    unsigned *wrong = arg;
    for (int k = 0; k < PROBE_ROUNDS; k++)
        for (int j = 0; j < PROBERS; j++)
            *wrong += wdl(pos[j][0], pos[j][1], false) != LC_TB_WIN;
    return NULL;
}

static void test_concurrent_probes(void)
{
    unsigned total = 0;
    for (int round = 0; round < 200; round++) {
        pthread_t t[PROBERS];
        unsigned wrong[PROBERS] = {0};
        for (int i = 0; i < PROBERS; i++)
            CHECK_EQ_INT(pthread_create(&t[i], NULL, prober, &wrong[i]), 0);
        for (int i = 0; i < PROBERS; i++)
            pthread_join(t[i], NULL);
        for (int i = 0; i < PROBERS; i++)
            total += wrong[i];
    }
    CHECK_EQ_INT(total, 0); /* without the lock: 0 to 140 in 10 runs, 4 of them not 0 */
}

int main(void)
{
    if (!lc_tablebases_have_gaviota()) { /* refused, naming the package */
        lc_error e;
        lc_error_clear(&e);
        CHECK(lc_tablebases_open(NULL, "/usr/share/gaviotatb/gtb4", &tb, &e) == LC_ECONFIG);
        CHECK(strstr(e.msg, "libgaviotatb-dev") != NULL);
    }
    const char *dir = bt_gaviota_dir();
    if (!dir)
        return check_failures() ? check_finish() : 77;
    struct stat st;
    test_bad_paths();
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_tablebases_open(NULL, dir, &tb, &err));
    if (!tb) {
        fprintf(stderr, "%s\n", err.msg);
        return check_finish();
    }
    test_known_results();
    test_rate_moves();
    test_opening(dir);
    test_concurrent_probes();
    lc_tablebases_close(tb);
    /* Closed and opened again (a stage's restart): Gaviota, kept loaded,
     * answers as before. */
    CHECK_OK(lc_tablebases_open(NULL, dir, &tb, &err));
    if (tb) {
        test_known_results();
        test_concurrent_probes();
        lc_tablebases_close(tb);
    }
    /* Closed, a set of other folders opens: the cp1 scheme of the same
     * tables answers the same. */
    char *cp1 = lc_xasprintf("%s/../gtb1", dir);
    if (stat(cp1, &st) == 0) {
        CHECK_OK(lc_tablebases_open(NULL, cp1, &tb, &err));
        if (tb) {
            test_known_results();
            lc_tablebases_close(tb);
        }
    }
    free(cp1);
    return check_finish();
}
