/*
 * syzygy: the Syzygy half of format/lc0/tablebase.h (Fathom, loaded at run
 * time) on the tables in LCMON_SYZYGY_PATH (folders of .rtbw / .rtbz files,
 * at least the 3-piece ones): the known 3-piece results Gaviota's test
 * checks too, and the move ratings by DTZ. Without that variable, or in a
 * build without Syzygy, it says why and is skipped (77): the Syzygy tables
 * are not a Debian package.
 */
#include "board_test.h"
#include "check.h"

#include "format/lc0/tablebase.h"

static void expect(lc_tablebases *tb, const char *w, const char *b, bool btm, int want)
{
    lc_position p = bt_position(w, b, btm);
    int got = lc_tablebases_wdl(tb, &p);
    if (got != want)
        fprintf(stderr, "%s / %s, %s to move: %d, want %d\n", w, b, btm ? "Black" : "White", got,
                want);
    CHECK_EQ_INT(got, want);
}

int main(void)
{
    const char *dir = getenv("LCMON_SYZYGY_PATH");
    if (!lc_tablebases_have_syzygy()) { /* refused, naming the package */
        lc_tablebases *none = NULL;
        lc_error e;
        lc_error_clear(&e);
        CHECK(lc_tablebases_open("/tmp", NULL, &none, &e) == LC_ECONFIG);
        CHECK(strstr(e.msg, "libfathom-dev") != NULL);
        printf("SKIP: this lcmon was built without Syzygy (install libfathom-dev)\n");
        return check_failures() ? check_finish() : 77;
    }
    if (!dir || !*dir) {
        printf("SKIP: LCMON_SYZYGY_PATH names no folder of Syzygy tables (.rtbw, .rtbz)\n");
        return 77;
    }
    lc_tablebases *tb = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_tablebases_open(dir, NULL, &tb, &err));
    if (!tb) {
        fprintf(stderr, "%s\n", err.msg);
        return check_finish();
    }
    char line[512];
    lc_tablebases_describe(tb, line, sizeof line);
    printf("%s\n", line);
    CHECK(lc_tablebases_max_pieces(tb) >= 3);
    expect(tb, "Ke1 Bc1", "Ke8", false, LC_TB_DRAW);
    expect(tb, "Kd4", "Kh8 Nb1", false, LC_TB_DRAW);
    expect(tb, "Ka1 Qd3", "Kh8", false, LC_TB_WIN);
    expect(tb, "Ka1 Qd4", "Kh8", true, LC_TB_LOSS);
    expect(tb, "Kh8 Qc2", "Ka1", true, LC_TB_DRAW); /* stalemate */
    expect(tb, "Kh8 Re2", "Kd1", true, LC_TB_DRAW); /* Kxe2 */
    expect(tb, "Kc3 Pa6", "Kh1", false, LC_TB_WIN);
    expect(tb, "Ka8 Pa7", "Kc7", false, LC_TB_DRAW); /* stalemate */
    /* By DTZ, the best winning moves of White Kb6 Qh7 against Kb8 are the
     * mates (one ply to the end; no capture or pawn move zeroes sooner). */
    lc_position p = bt_position("Kb6 Qh7", "Kb8", false);
    lc_move m[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&p, m);
    signed char w[LC_MAX_MOVES];
    bool best[LC_MAX_MOVES], by_distance;
    CHECK_EQ_INT(lc_tablebases_rate_moves(tb, &p, m, n, true, w, best, &by_distance), LC_TB_WIN);
    for (unsigned i = 0; i < n && by_distance; i++) {
        lc_position child;
        lc_move cm[LC_MAX_MOVES];
        lc_position_play(&p, &m[i], &child);
        CHECK_EQ_INT(best[i], lc_position_legal_moves(&child, cm) == 0);
    }
    lc_tablebases_close(tb);
    return check_finish();
}
