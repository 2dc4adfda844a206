/*
 * syzygy: the Syzygy half of format/lc0/rescore/tablebase.h (Fathom, loaded at run
 * time) on the tables in LCMON_SYZYGY_PATH (folders of .rtbw / .rtbz files,
 * at least the 3-piece ones): the known 3-piece results Gaviota's test
 * checks too, and the move ratings by DTZ. Then closing and opening again
 * print nothing on stderr: Debian's libfathom prints "munmap: ..." for
 * every table it unmaps without error (its test is the wrong way round),
 * six lines at the close here before lcmon stopped unmapping at close
 * (tablebase_syzygy.h); an open of other folders, which makes Fathom
 * replace its tables, drops those lines but lets Fathom's other messages
 * through. DTZ answers, which lcmon keeps (one root probe each), are the
 * same when asked again, and forgotten when other tables are loaded.
 * Without that variable, or in a build without Syzygy, it says
 * why and is skipped (77): the Syzygy tables are not a Debian package.
 */
#include "board_test.h"
#include "check.h"

#include "format/lc0/rescore/tablebase.h"

#include <unistd.h>

static void expect(lc_tablebases *tb, const char *w, const char *b, bool btm, int want)
{
    lc_position p = bt_position(w, b, btm);
    int got = lc_tablebases_wdl(tb, &p);
    if (got != want)
        fprintf(stderr, "%s / %s, %s to move: %d, want %d\n", w, b, btm ? "Black" : "White", got,
                want);
    CHECK_EQ_INT(got, want);
}

/* What f(tb) writes to stderr (fd 2, the file descriptor itself, so that
 * Fathom's perror is caught as well as lcmon's messages); NULL when no
 * temporary file could be made. The caller frees it. */
static char *stderr_of(void (*f)(lc_tablebases **), lc_tablebases **tb)
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved = tmp ? dup(STDERR_FILENO) : -1;
    if (saved < 0 || dup2(fileno(tmp), STDERR_FILENO) < 0) {
        if (tmp)
            fclose(tmp);
        return NULL;
    }
    f(tb);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    long size = ftell(tmp);
    char *text = lc_xcalloc(1, (size_t)(size > 0 ? size : 0) + 1);
    rewind(tmp);
    if (size > 0 && fread(text, 1, (size_t)size, tmp) != (size_t)size)
        text[0] = '\0';
    fclose(tmp);
    return text;
}

static void close_set(lc_tablebases **tb)
{
    lc_tablebases_close(*tb);
    *tb = NULL;
}

static const char *open_dir; /* the folders open_set opens */

static void open_set(lc_tablebases **tb)
{
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_tablebases_open(open_dir, NULL, tb, &err));
}

/* A KRvKP position with White to move, whose DTZ only the 4-piece tables
 * give. */
static lc_position four_pieces(void)
{
    return bt_position("Kb1 Rc2", "Kg8 Pg7", false);
}

/* Probe WDL and DTZ tables (so that Fathom maps some of each): KQK and KRK
 * wins for White to move, lc0's KRK position 32 plies from the mate. The
 * DTZ answers kept (tablebase_syzygy.c): asked again, each the same, and a
 * position that shares the pieces but not the side to move its own. */
static void probe_some(lc_tablebases *tb)
{
    lc_position p = bt_position("Ka1 Qd3", "Kh8", false);
    CHECK_EQ_INT(lc_tablebases_syzygy_wdl(tb, &p), LC_TB_WIN);
    p = bt_position("Kb1 Rc2", "Kd2", true);
    bool ok = false;
    CHECK_EQ_INT(lc_tablebases_syzygy_dtz(tb, &p, &ok), -32);
    CHECK(ok);
    ok = false;
    CHECK_EQ_INT(lc_tablebases_syzygy_dtz(tb, &p, &ok), -32);
    CHECK(ok);
    p = four_pieces();
    int first = lc_tablebases_syzygy_dtz(tb, &p, &ok);
    CHECK(ok && first > 0); /* the rook wins */
    CHECK_EQ_INT(lc_tablebases_syzygy_dtz(tb, &p, &ok), first);
    CHECK(ok);
    p = bt_position("Kb1 Rc2", "Kg8 Pg7", true); /* Black to move: another question */
    int other = lc_tablebases_syzygy_dtz(tb, &p, &ok);
    CHECK(ok && other < 0);
}

/* Close what is open, open it again, open a folder of other tables (the
 * five 3-piece ones linked but KRvK's DTZ file, and a KNNvK.rtbw cut
 * short, which Fathom reports): stderr stays empty but for Fathom's
 * report. */
static void test_quiet_close(lc_tablebases *tb, const char *dir)
{
    probe_some(tb);
    char *text = stderr_of(close_set, &tb);
    CHECK(text != NULL);
    CHECK_EQ_STR(text, "");
    free(text);
    open_dir = dir;
    text = stderr_of(open_set, &tb);
    CHECK_EQ_STR(text, "");
    free(text);
    if (tb) {
        probe_some(tb);
        text = stderr_of(close_set, &tb);
        CHECK_EQ_STR(text, "");
        free(text);
    }
    char other[] = "/tmp/lcmon_syzygy_XXXXXX";
    CHECK(mkdtemp(other) != NULL);
    static const char *const three[] = {"KQvK", "KRvK", "KBvK", "KNvK", "KPvK"};
    for (int i = 0; i < 10; i++) {
        if (i == 3) /* KRvK.rtbz */
            continue;
        char *from = lc_xasprintf("%s/%s.%s", dir, three[i / 2], i % 2 ? "rtbz" : "rtbw");
        char *to = lc_xasprintf("%s/%s.%s", other, three[i / 2], i % 2 ? "rtbz" : "rtbw");
        CHECK_EQ_INT(symlink(from, to), 0);
        free(from);
        free(to);
    }
    char *cut = lc_xasprintf("%s/KNNvK.rtbw", other);
    FILE *f = fopen(cut, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f); /* 0 bytes: Fathom wants a size of 16 modulo 64 */
    open_dir = other;
    printf("(Fathom reports the cut file on stdout too:)\n");
    text = stderr_of(open_set, &tb);
    CHECK_EQ_STR(text, "Incomplete tablebase file KNNvK..rtbw\n");
    free(text);
    if (tb) {
        CHECK_EQ_INT(lc_tablebases_syzygy_max_pieces(tb), 3);
        lc_position p = bt_position("Ka1 Qd3", "Kh8", false);
        bool ok = false;
        CHECK(lc_tablebases_syzygy_dtz(tb, &p, &ok) > 0);
        CHECK(ok);
        /* KRK's DTZ, kept from the tables before, is gone with them:
         * these have no KRvK.rtbz. */
        p = bt_position("Kb1 Rc2", "Kd2", true);
        CHECK_EQ_INT(lc_tablebases_syzygy_wdl(tb, &p), LC_TB_LOSS);
        (void)lc_tablebases_syzygy_dtz(tb, &p, &ok);
        CHECK(!ok);
        text = stderr_of(close_set, &tb);
        CHECK_EQ_STR(text, "");
        free(text);
    }
    unlink(cut);
    free(cut);
    for (int i = 0; i < 10; i++) {
        char *to = lc_xasprintf("%s/%s.%s", other, three[i / 2], i % 2 ? "rtbz" : "rtbw");
        unlink(to); /* KRvK.rtbz: none */
        free(to);
    }
    rmdir(other);
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
    test_quiet_close(tb, dir);
    return check_finish();
}
