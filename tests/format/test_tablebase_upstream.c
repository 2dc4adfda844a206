/*
 * tablebase_upstream: the probes lc0's rescorer makes (format/lc0/
 * tablebase.h, "Upstream's probes") on the real Syzygy tables of
 * tests/data/syzygy (LCMON_SYZYGY_PATH) and Debian's Gaviota 3-piece tables.
 */
#include "board_test.h"
#include "check.h"

#include "format/lc0/tablebase.h"

static lc_tablebases *tb;

static lc_position pos(const char *w, const char *b, bool btm, unsigned rule50)
{
    lc_position p = bt_position(w, b, btm);
    p.rule50 = (uint8_t)rule50;
    return p;
}

static void expect_wdl_dtz(const char *w, const char *b, bool btm, int wdl, int dtz)
{
    lc_position p = pos(w, b, btm, 0);
    bool ok = false;
    int got_wdl = lc_tablebases_syzygy_wdl(tb, &p);
    int got_dtz = lc_tablebases_syzygy_dtz(tb, &p, &ok);
    printf("%s / %s %s: wdl %d dtz %d ok %d\n", w, b, btm ? "btm" : "wtm", got_wdl, got_dtz, ok);
    CHECK_EQ_INT(got_wdl, wdl);
    CHECK(ok);
    CHECK_EQ_INT(got_dtz, dtz);
}

int main(void)
{
    const char *dir = getenv("LCMON_SYZYGY_PATH");
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_tablebases_open(dir, NULL, &tb, &err));
    CHECK_EQ_INT(lc_tablebases_syzygy_max_pieces(tb), 4);
    expect_wdl_dtz("Kb1 Rc2", "Kd2", true, LC_TB_LOSS, -32);
    expect_wdl_dtz("Kd2", "Kb1 Rc2", false, LC_TB_LOSS, -32);
    expect_wdl_dtz("Kg1 Rf2", "Ke2", true, LC_TB_LOSS, -32);
    expect_wdl_dtz("Kg8 Rf7", "Ke7", true, LC_TB_LOSS, -32);
    expect_wdl_dtz("Ke1 Qf8", "Kg8", true, LC_TB_DRAW, 0);
    expect_wdl_dtz("Kc1", "Kg8 Pf3", true, LC_TB_WIN, 1);
    expect_wdl_dtz("Kd1", "Ka3 Pc3", true, LC_TB_WIN, 3);
    expect_wdl_dtz("Kc1", "Kf3 Pc7", false, LC_TB_LOSS, -8);
    expect_wdl_dtz("Kb1 Bg5 Nh1", "Ke2", true, LC_TB_LOSS, -65);
    expect_wdl_dtz("Ke1", "Kg2 Qd2 Pc3", false, LC_TB_LOSS, -1);
    expect_wdl_dtz("Ke4 Pa4", "Kh8 Pb4", true, LC_TB_LOSS, -1);
    lc_position p = pos("Ke4 Pa4", "Kh8 Pb4", true, 0);
    p.ep_file = 0; /* a2-a4 just played: bxa3 e.p. wins */
    bool ok = false;
    CHECK_EQ_INT(lc_tablebases_syzygy_wdl(tb, &p), LC_TB_WIN);
    CHECK_EQ_INT(lc_tablebases_syzygy_dtz(tb, &p, &ok), 1);
    CHECK(ok);
    expect_wdl_dtz("Ke1", "Kh8", false, LC_TB_DRAW, 0);
    lc_tablebases_close(tb);
    return check_finish();
}
