/*
 * tablebase: Gaviota and Syzygy tables behind one interface (tablebase.h).
 *
 * Opening: the folders are split on ',' and ':', each must exist, and each
 * is listed to count the tables it holds (Syzygy: *.rtbw WDL and *.rtbz DTZ
 * files; Gaviota: *.gtb.cpN, N the compression scheme, or *.gtb). Gaviota
 * reads one scheme at a time: cp4 (its default) when any folder has it,
 * else the scheme with the most tables. Then the libraries load them
 * (Fathom with the folders joined by ':', tablebase_syzygy.c; Gaviota's
 * tb_init and a 16 MiB cache, here). The set is process-wide (see tablebase.h): open_lock
 * guards the one open set and its reference count.
 *
 * Probing puts "us" (the side to move of the plane frame) as White to move:
 * the plane frame already has us moving up, so the squares go as they are.
 * The en-passant square is given only when one of our pawns can take on it.
 */
#include "format/lc0/rescore/tablebase.h"

#include "format/lc0/rescore/position.h"
#include "lc_config.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if LC_HAVE_GAVIOTA
#include <gtb-probe.h>
#endif
#include "format/lc0/rescore/tablebase_syzygy.h"

#define MAX_PIECES 8 /* counts by pieces, 0..7 */

struct lc_tablebases {
    char *syzygy_paths, *gaviota_paths; /* folders joined by ':'; NULL: none */
    unsigned syzygy_max, gaviota_max;   /* most pieces; 0: none */
    unsigned syzygy_wdl[MAX_PIECES], syzygy_dtz[MAX_PIECES];
    unsigned gaviota_tables[MAX_PIECES];
    int gaviota_scheme;
    unsigned refs;
};

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static lc_tablebases *open_set;

/*
 * Gaviota stays loaded after its last close (its folders and scheme kept
 * here, under open_lock), and a later open of the same folders uses it as
 * it is: taken down with tb_done and loaded again with tb_init, the
 * library answered nothing at all for some of the probes made right after
 * from several threads (1 run in about 100 with three threads probing;
 * never without the reload). A reload or restart of the stage opens the
 * same folders; only a change of folders loads it again.
 */
/*
 * Gaviota's probes, one at a time. Debian's libgaviotatb 0.4 is not safe
 * for probes from several threads at once, though its documentation says
 * so: three threads probing KQK, KRK and KPK positions, each a win,
 * got a draw for one probe in a few thousand (calling the library
 * directly, without lcmon's code). A wrong result would be written into
 * the games, so the probes take turns.
 */
static pthread_mutex_t gaviota_probe_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
    char *paths; /* NULL: Gaviota not loaded */
    int scheme;
    const char **list;
} gaviota_loaded;

bool lc_tablebases_have_gaviota(void)
{
    return LC_HAVE_GAVIOTA;
}

bool lc_tablebases_have_syzygy(void)
{
    return LC_HAVE_SYZYGY;
}

/* ---- folders ---- */

/* The folders of a list separated by ',' or ':' (spaces around them
 * dropped), joined by ':'; NULL when the list names none. */
static char *join_folders(const char *list)
{
    if (!list)
        return NULL;
    size_t len = strlen(list), n = 0;
    char *out = lc_xmalloc(len + 1);
    const char *p = list;
    while (*p) {
        size_t k = strcspn(p, ",:");
        const char *a = p, *b = p + k;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        if (b > a) {
            if (n)
                out[n++] = ':';
            memcpy(out + n, a, (size_t)(b - a));
            n += (size_t)(b - a);
        }
        p += k + (p[k] ? 1 : 0);
    }
    out[n] = '\0';
    if (!n) {
        free(out);
        return NULL;
    }
    return out;
}

/* Pieces named by a table's file name stem: "KQvK" 3, "kqk" 3. */
static unsigned stem_pieces(const char *name, size_t stem)
{
    unsigned n = 0;
    for (size_t i = 0; i < stem; i++)
        n += strchr("KQRBNPkqrbnp", name[i]) != NULL && name[i] != 'v';
    return n < MAX_PIECES ? n : MAX_PIECES - 1;
}

static bool ends_with(const char *s, const char *suffix, size_t *stem)
{
    size_t a = strlen(s), b = strlen(suffix);
    *stem = a - b;
    return a > b && strcmp(s + a - b, suffix) == 0;
}

/* Count the tables in every folder of joined; kind 's' Syzygy, 'g' Gaviota
 * (gtb[scheme][pieces]). A folder that is not one is an error. */
static int count_tables(const char *joined, char kind, lc_tablebases *tb,
                        unsigned gtb[5][MAX_PIECES], lc_error *err)
{
    const char *setting = kind == 's' ? "syzygy_paths" : "gaviota_paths";
    char *copy = lc_xstrdup(joined), *save = NULL;
    int rc = 0;
    for (char *dir = strtok_r(copy, ":", &save); dir && !rc; dir = strtok_r(NULL, ":", &save)) {
        struct stat st;
        DIR *d = stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? opendir(dir) : NULL;
        if (!d) {
            rc = lc_error_set(err, LC_ECONFIG, "%s: '%s' is not a folder that can be read", setting,
                              dir);
            break;
        }
        for (struct dirent *e; (e = readdir(d));) {
            size_t stem;
            if (kind == 's' && ends_with(e->d_name, ".rtbw", &stem))
                tb->syzygy_wdl[stem_pieces(e->d_name, stem)]++;
            else if (kind == 's' && ends_with(e->d_name, ".rtbz", &stem))
                tb->syzygy_dtz[stem_pieces(e->d_name, stem)]++;
            else if (kind == 'g' && ends_with(e->d_name, ".gtb", &stem))
                gtb[0][stem_pieces(e->d_name, stem)]++;
            for (int s = 1; kind == 'g' && s <= 4; s++) {
                char suffix[10];
                snprintf(suffix, sizeof suffix, ".gtb.cp%d", s);
                if (ends_with(e->d_name, suffix, &stem))
                    gtb[s][stem_pieces(e->d_name, stem)]++;
            }
        }
        closedir(d);
    }
    free(copy);
    return rc;
}

static unsigned sum(const unsigned *counts);

/* Tables of one library in the folders joined by ':' (by name). */
static unsigned count_by_name(const char *joined, bool syzygy)
{
    lc_tablebases seen = {0};
    unsigned gtb[5][MAX_PIECES] = {{0}}, n = 0;
    lc_error ignored;
    lc_error_clear(&ignored);
    if (count_tables(joined, syzygy ? 's' : 'g', &seen, gtb, &ignored) == 0) {
        n = sum(seen.syzygy_wdl);
        for (int s = 0; !syzygy && s <= 4; s++)
            n += sum(gtb[s]);
    }
    return n;
}

int lc_tablebases_check(const char *paths, bool syzygy, lc_problems *ps)
{
    const char *field = syzygy ? "syzygy_paths" : "gaviota_paths";
    char *joined = join_folders(paths);
    if (!joined)
        return 0;
    char *copy = lc_xstrdup(joined), *save = NULL;
    int rc = 0;
    for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        struct stat st;
        if (stat(dir, &st) != 0)
            rc = lc_problem_add(ps, field, "%s: %s (give the folder of the tables)", dir,
                                strerror(errno));
        else if (!S_ISDIR(st.st_mode))
            rc = lc_problem_add(ps, field, "%s is not a folder (give the folder of the tables)",
                                dir);
    }
    free(copy);
    if (!rc && !count_by_name(joined, syzygy))
        rc = lc_problem_add(ps, field, "no %s table in %s (%s)", syzygy ? "Syzygy" : "Gaviota",
                            paths,
                            syzygy ? "give the folders that hold the .rtbw and .rtbz files"
                                   : "*.gtb.cp4 or another scheme; Debian's gaviotatb package has "
                                     "the 3-piece ones in /usr/share/gaviotatb/gtb4");
    free(joined);
    return rc;
}

static unsigned sum(const unsigned *counts)
{
    unsigned s = 0;
    for (int i = 0; i < MAX_PIECES; i++)
        s += counts[i];
    return s;
}

#if LC_HAVE_GAVIOTA
static unsigned most_pieces(const unsigned *counts)
{
    unsigned m = 0;
    for (unsigned i = 0; i < MAX_PIECES; i++)
        if (counts[i])
            m = i;
    return m;
}

#endif

/* ---- opening ---- */

static int open_syzygy(lc_tablebases *tb, lc_error *err)
{
#if LC_HAVE_SYZYGY
    unsigned gtb_unused[5][MAX_PIECES];
    int rc = count_tables(tb->syzygy_paths, 's', tb, gtb_unused, err);
    if (rc)
        return rc;
    if (!sum(tb->syzygy_wdl))
        return lc_error_set(err, LC_ECONFIG,
                            "syzygy_paths: no Syzygy table (*.rtbw) in %s; point it at the "
                            "folders that hold the .rtbw and .rtbz files",
                            tb->syzygy_paths);
    return lc_syzygy_load(tb->syzygy_paths, &tb->syzygy_max, err);
#else
    return lc_error_set(err, LC_ECONFIG,
                        "syzygy_paths: this lcmon was built without Syzygy support (%s); install "
                        "Debian's libfathom-dev and rebuild",
                        tb->syzygy_paths);
#endif
}

static int open_gaviota(lc_tablebases *tb, lc_error *err)
{
#if LC_HAVE_GAVIOTA
    unsigned gtb[5][MAX_PIECES] = {{0}};
    int rc = count_tables(tb->gaviota_paths, 'g', tb, gtb, err);
    if (rc)
        return rc;
    int scheme = 4;
    for (int s = 0; s <= 4 && !sum(gtb[4]); s++)
        if (sum(gtb[s]) > sum(gtb[scheme]))
            scheme = s;
    if (!sum(gtb[scheme]))
        return lc_error_set(err, LC_ECONFIG,
                            "gaviota_paths: no Gaviota table (*.gtb.cp4 or another scheme) in %s; "
                            "Debian's gaviotatb package has the 3-piece ones in "
                            "/usr/share/gaviotatb/gtb4",
                            tb->gaviota_paths);
    memcpy(tb->gaviota_tables, gtb[scheme], sizeof tb->gaviota_tables);
    tb->gaviota_scheme = scheme;
    tb->gaviota_max = most_pieces(tb->gaviota_tables);
    if (gaviota_loaded.paths && !strcmp(gaviota_loaded.paths, tb->gaviota_paths) &&
        gaviota_loaded.scheme == scheme)
        return 0; /* loaded by an earlier open of these folders */
    if (gaviota_loaded.paths) {
        tbcache_done();
        tb_done();
        tbpaths_done(gaviota_loaded.list);
        free(gaviota_loaded.paths);
        gaviota_loaded.paths = NULL;
    }
    const char **list = tbpaths_init();
    char *copy = lc_xstrdup(tb->gaviota_paths), *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save))
        list = tbpaths_add(list, dir);
    free(copy);
    tb_init(0, scheme, list);
    tbcache_init(16u << 20, 96);
    gaviota_loaded.paths = lc_xstrdup(tb->gaviota_paths);
    gaviota_loaded.scheme = scheme;
    gaviota_loaded.list = list;
    if (!tb_is_initialized() || !tb_availability())
        return lc_error_set(err, LC_ECONFIG, "gaviota_paths: Gaviota loaded no table from %s",
                            tb->gaviota_paths);
    return 0;
#else
    return lc_error_set(err, LC_ECONFIG,
                        "gaviota_paths: this lcmon was built without Gaviota support (%s); install "
                        "Debian's libgaviotatb-dev and rebuild",
                        tb->gaviota_paths);
#endif
}

/* Fathom keeps its tables after the last close, as Gaviota does, until the
 * next open loads a set (tablebase_syzygy.h says why). */
static void unload(lc_tablebases *tb)
{
    free(tb->syzygy_paths);
    free(tb->gaviota_paths);
    free(tb);
}

static bool same(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) == 0 : a == b;
}

int lc_tablebases_open(const char *syzygy_paths, const char *gaviota_paths, lc_tablebases **out,
                       lc_error *err)
{
    *out = NULL;
    char *syz = join_folders(syzygy_paths), *gav = join_folders(gaviota_paths);
    if (!syz && !gav)
        return lc_error_set(err, LC_ECONFIG,
                            "tablebases: neither syzygy_paths nor gaviota_paths names a folder");
    pthread_mutex_lock(&open_lock);
    int rc = 0;
    if (open_set) {
        if (same(open_set->syzygy_paths, syz) && same(open_set->gaviota_paths, gav)) {
            open_set->refs++;
            *out = open_set;
        } else {
            rc = lc_error_set(err, LC_ECONFIG,
                              "tablebases: a process has one set of tables and this one has "
                              "syzygy_paths '%s', gaviota_paths '%s' open; give every rescorer "
                              "the same folders (asked for '%s', '%s')",
                              open_set->syzygy_paths ? open_set->syzygy_paths : "",
                              open_set->gaviota_paths ? open_set->gaviota_paths : "",
                              syz ? syz : "", gav ? gav : "");
        }
        pthread_mutex_unlock(&open_lock);
        free(syz);
        free(gav);
        return rc;
    }
    lc_tablebases *tb = lc_xcalloc(1, sizeof *tb);
    tb->syzygy_paths = syz;
    tb->gaviota_paths = gav;
    if (syz)
        rc = open_syzygy(tb, err);
    if (!rc && gav)
        rc = open_gaviota(tb, err);
    if (rc) {
        unload(tb);
    } else {
        tb->refs = 1;
        open_set = *out = tb;
    }
    pthread_mutex_unlock(&open_lock);
    return rc;
}

void lc_tablebases_close(lc_tablebases *tb)
{
    if (!tb)
        return;
    pthread_mutex_lock(&open_lock);
    if (--tb->refs == 0) {
        if (open_set == tb)
            open_set = NULL;
        unload(tb);
    }
    pthread_mutex_unlock(&open_lock);
}

unsigned lc_tablebases_max_pieces(const lc_tablebases *tb)
{
    if (!tb)
        return 0;
    return tb->syzygy_max > tb->gaviota_max ? tb->syzygy_max : tb->gaviota_max;
}

static size_t describe_counts(char *buf, size_t size, const unsigned *counts)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < MAX_PIECES && n < size; i++)
        if (counts[i])
            n += (size_t)snprintf(buf + n, size - n, "%s%u of %d pieces", n ? ", " : "", counts[i],
                                  i);
    return n < size ? n : size;
}

void lc_tablebases_describe(const lc_tablebases *tb, char *buf, size_t size)
{
    size_t n = 0;
    char a[160], b[160];
    if (!tb) {
        snprintf(buf, size, "no tablebases");
        return;
    }
    buf[0] = '\0';
    if (tb->syzygy_paths) {
        describe_counts(a, sizeof a, tb->syzygy_wdl);
        describe_counts(b, sizeof b, tb->syzygy_dtz);
        n += (size_t)snprintf(buf + n, size - n,
                              "syzygy (Fathom) in %s: %u WDL tables (%s), %u DTZ tables%s%s%s, up "
                              "to %u pieces",
                              tb->syzygy_paths, sum(tb->syzygy_wdl), a, sum(tb->syzygy_dtz),
                              *b ? " (" : "", b, *b ? ")" : "", tb->syzygy_max);
    }
    if (tb->gaviota_paths && n < size) {
        describe_counts(a, sizeof a, tb->gaviota_tables);
        snprintf(buf + n, size - n, "%sgaviota in %s: %u tables (%s), scheme cp%d, up to %u pieces",
                 n ? "; " : "", tb->gaviota_paths, sum(tb->gaviota_tables), a, tb->gaviota_scheme,
                 tb->gaviota_max);
    }
}

/* ---- probing ---- */

#if LC_HAVE_GAVIOTA
/* Gaviota's result for the side to move; with plies, its DTM probe and the
 * plies to mate, else the (cheaper, separately cached) WDL probe. */
static int gaviota_probe(const lc_position *p, unsigned *plies)
{
    static const unsigned char kind[6] = {tb_PAWN, tb_KNIGHT, tb_BISHOP,
                                          tb_ROOK, tb_QUEEN,  tb_KING};
    unsigned sq[2][17];
    unsigned char pc[2][17];
    for (int side = 0; side < 2; side++) {
        int k = 0;
        for (int piece = LC_KING; piece >= LC_PAWN; piece--)
            for (uint64_t b = p->bb[6 * side + piece]; b && k < 16; b &= b - 1) {
                sq[side][k] = (unsigned)__builtin_ctzll(b);
                pc[side][k++] = kind[piece];
            }
        sq[side][k] = tb_NOSQUARE;
        pc[side][k] = tb_NOPIECE;
    }
    int ep = lc_position_ep_square(p);
    unsigned info = tb_UNKNOWN, epsq = ep < 0 ? tb_NOSQUARE : (unsigned)ep;
    pthread_mutex_lock(&gaviota_probe_lock);
    int ok = plies ? tb_probe_hard(tb_WHITE_TO_MOVE, epsq, tb_NOCASTLE, sq[0], sq[1], pc[0], pc[1],
                                   &info, plies)
                   : tb_probe_WDL_hard(tb_WHITE_TO_MOVE, epsq, tb_NOCASTLE, sq[0], sq[1], pc[0],
                                       pc[1], &info);
    pthread_mutex_unlock(&gaviota_probe_lock);
    if (!ok)
        return LC_TB_UNKNOWN;
    return info == tb_DRAW    ? LC_TB_DRAW
           : info == tb_WMATE ? LC_TB_WIN
           : info == tb_BMATE ? LC_TB_LOSS
                              : LC_TB_UNKNOWN;
}
#endif

/* The tables' result for p as they hold it (no fifty-move check): Syzygy's
 * WDL first, then Gaviota's; with plies, Gaviota's DTM only. Two bare
 * kings are a draw without a table. */
static int raw_wdl(const lc_tablebases *tb, const lc_position *p, unsigned *plies)
{
    if (p->castling)
        return LC_TB_UNKNOWN;
    if (p->pieces == 2) {
        if (plies)
            *plies = 0;
        return LC_TB_DRAW;
    }
#if LC_HAVE_SYZYGY
    if (!plies && p->pieces <= tb->syzygy_max) {
        int r = lc_syzygy_wdl(p);
        if (r != LC_TB_UNKNOWN)
            return r;
    }
#endif
#if LC_HAVE_GAVIOTA
    if (p->pieces <= tb->gaviota_max)
        return gaviota_probe(p, plies);
#endif
    (void)tb;
    return LC_TB_UNKNOWN;
}

int lc_tablebases_wdl(const lc_tablebases *tb, const lc_position *p)
{
    if (!tb)
        return LC_TB_UNKNOWN;
    /* Gaviota counts plies to mate, not to the fifty-move counter's reset:
     * no mate of four pieces is 100 plies away (KRKN, the longest, is 80),
     * so the cheaper WDL probe answers there; from five pieces the DTM
     * probe tells the mates more than 100 plies away, which may be
     * fifty-move draws. Syzygy's cursed wins are draws already. */
    unsigned plies = 0;
#if LC_HAVE_SYZYGY
    bool syzygy = p->pieces <= tb->syzygy_max;
#else
    bool syzygy = false;
#endif
    if (p->pieces <= 4 || syzygy) {
        int r = raw_wdl(tb, p, NULL);
        if (r != LC_TB_UNKNOWN || p->pieces <= 4)
            return r;
    }
    int r = raw_wdl(tb, p, &plies);
    return r != LC_TB_DRAW && plies > 100 ? LC_TB_UNKNOWN : r;
}

/* ---- rating moves ---- */

/* The best of wdl[0..n), and best[i] for the moves that reach it and are
 * best by dist[] among them: smallest when winning, largest when losing,
 * all in a draw. */
static int mark_best(const signed char *wdl, const int *dist, unsigned n, bool *best)
{
    int top = LC_TB_LOSS;
    for (unsigned i = 0; i < n; i++)
        top = wdl[i] > top ? wdl[i] : top;
    int pick = top == LC_TB_WIN ? 1 << 30 : -1;
    for (unsigned i = 0; i < n; i++)
        if (wdl[i] == top)
            pick = top == LC_TB_WIN ? (dist[i] < pick ? dist[i] : pick)
                                    : (dist[i] > pick ? dist[i] : pick);
    for (unsigned i = 0; i < n; i++)
        best[i] = wdl[i] == top && (top == LC_TB_DRAW || dist[i] == pick);
    return top;
}

/* Every move by the child's own result, negated; with dtm, by Gaviota's
 * DTM probe and dist[] the child's plies to mate. False when a child is
 * unknown. */
static bool rate_children(const lc_tablebases *tb, const lc_position *p, const lc_move *moves,
                          unsigned n, bool dtm, signed char *wdl, int *dist)
{
    for (unsigned i = 0; i < n; i++) {
        lc_position child;
        lc_position_play(p, &moves[i], &child);
        unsigned plies = 0;
        int r = raw_wdl(tb, &child, dtm ? &plies : NULL);
        if (r == LC_TB_UNKNOWN)
            return false;
        wdl[i] = (signed char)-r;
        dist[i] = (int)plies;
    }
    return true;
}

int lc_tablebases_rate_moves(const lc_tablebases *tb, const lc_position *p, const lc_move *moves,
                             unsigned n, bool want_distance, signed char *wdl, bool *best,
                             bool *by_distance)
{
    int dist[LC_MAX_MOVES];
    *by_distance = false;
    if (!tb || p->castling || n == 0 || n > LC_MAX_MOVES)
        return LC_TB_UNKNOWN;
    bool rated = false;
#if LC_HAVE_SYZYGY
    if (want_distance && p->pieces <= tb->syzygy_max && lc_syzygy_root(p, moves, n, wdl, dist))
        rated = *by_distance = true;
#endif
    if (!rated && want_distance && p->pieces <= tb->gaviota_max &&
        rate_children(tb, p, moves, n, true, wdl, dist))
        rated = *by_distance = true;
    if (!rated && rate_children(tb, p, moves, n, false, wdl, dist))
        rated = true;
    if (!rated)
        return LC_TB_UNKNOWN;
    int top = mark_best(wdl, dist, n, best);
    if (!*by_distance)
        memset(best, 0, n * sizeof *best);
    return top;
}

/* ---- upstream's probes (tablebase.h, issue 33) ---- */

unsigned lc_tablebases_syzygy_max_pieces(const lc_tablebases *tb)
{
    return tb ? tb->syzygy_max : 0;
}

bool lc_tablebases_have_gaviota_tables(const lc_tablebases *tb)
{
    return tb && tb->gaviota_max > 0;
}

/* Whether Syzygy's tables may answer p: loaded, no castling right, few
 * enough pieces (the rescorer checks the count itself, as upstream does). */
static bool syzygy_answers(const lc_tablebases *tb, const lc_position *p)
{
    return tb && tb->syzygy_max && !p->castling && p->pieces <= tb->syzygy_max;
}

int lc_tablebases_syzygy_wdl(const lc_tablebases *tb, const lc_position *p)
{
#if LC_HAVE_SYZYGY
    if (syzygy_answers(tb, p))
        return lc_syzygy_wdl(p);
#endif
    (void)tb;
    (void)p;
    return LC_TB_UNKNOWN;
}

int lc_tablebases_syzygy_dtz(const lc_tablebases *tb, const lc_position *p, bool *ok)
{
    int dtz = 0;
    *ok = false;
#if LC_HAVE_SYZYGY
    if (syzygy_answers(tb, p))
        *ok = lc_syzygy_dtz(p, &dtz);
#endif
    (void)tb;
    (void)p;
    return dtz;
}

bool lc_tablebases_syzygy_root_probe(const lc_tablebases *tb, const lc_position *p,
                                     const lc_move *moves, unsigned n, bool has_repeated,
                                     bool win_only, bool *safe)
{
#if LC_HAVE_SYZYGY
    if (syzygy_answers(tb, p))
        return lc_syzygy_root_probe(p, moves, n, has_repeated, win_only, safe);
#endif
    (void)tb, (void)p, (void)moves, (void)n, (void)has_repeated, (void)win_only, (void)safe;
    return false;
}

int lc_tablebases_gaviota_dtm(const lc_tablebases *tb, const lc_position *p, unsigned *dtm)
{
#if LC_HAVE_GAVIOTA
    if (tb && !p->castling && p->pieces <= tb->gaviota_max)
        return gaviota_probe(p, dtm);
#endif
    (void)tb;
    (void)p;
    (void)dtm;
    return LC_TB_UNKNOWN;
}
