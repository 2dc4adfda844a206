/*
 * tablebase_syzygy: Fathom loaded at run time (see tablebase_syzygy.h for
 * why). tbprobe.h gives the constants and the types of the functions taken
 * from the library; its inline wrappers (tb_probe_wdl, tb_probe_root) are
 * not used, their checks are made here: no castling rights (the rescorer
 * never asks with them) and, for WDL, the counter passed as 0.
 */
#include "format/lc0/rescore/tablebase_syzygy.h"

#include "core/error.h"
#include "core/rng.h"
#include "format/lc0/rescore/tablebase.h"
#include "lc_config.h"

#if LC_HAVE_SYZYGY

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <tbprobe.h>
#include <unistd.h>

static struct {
    void *lib;
    __typeof__(tb_init) *init;
    __typeof__(tb_probe_wdl_impl) *wdl;
    __typeof__(tb_probe_root_impl) *root;
    unsigned *largest;
} fathom;

static pthread_mutex_t root_lock = PTHREAD_MUTEX_INITIALIZER;

static int load_library(lc_error *err)
{
    if (fathom.lib)
        return 0;
    static const char *const names[] = {"libfathom.so.1", "libfathom.so"};
    for (size_t i = 0; i < 2 && !fathom.lib; i++)
        fathom.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!fathom.lib)
        return lc_error_set(err, LC_ECONFIG,
                            "syzygy_paths: cannot load Fathom (%s); install Debian's libfathom1",
                            dlerror());
    *(void **)&fathom.init = dlsym(fathom.lib, "tb_init");
    *(void **)&fathom.wdl = dlsym(fathom.lib, "tb_probe_wdl_impl");
    *(void **)&fathom.root = dlsym(fathom.lib, "tb_probe_root_impl");
    fathom.largest = dlsym(fathom.lib, "TB_LARGEST");
    if (!fathom.init || !fathom.wdl || !fathom.root || !fathom.largest) {
        dlclose(fathom.lib);
        fathom.lib = NULL;
        return lc_error_set(err, LC_ECONFIG,
                            "syzygy_paths: the Fathom library found lacks tb_init, "
                            "tb_probe_wdl_impl, tb_probe_root_impl or TB_LARGEST");
    }
    return 0;
}

/* Fathom's tb_init with its false "munmap: " lines dropped (see
 * tablebase_syzygy.h): stderr goes to a temporary file for the call, and
 * the file's other lines are written back. Without a temporary file the
 * call is made as it is. */
static bool init_quietly(const char *paths)
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved = tmp ? dup(STDERR_FILENO) : -1;
    if (saved < 0 || dup2(fileno(tmp), STDERR_FILENO) < 0) {
        if (saved >= 0)
            close(saved);
        if (tmp)
            fclose(tmp);
        return fathom.init(paths);
    }
    bool ok = fathom.init(paths);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    char line[512];
    while (fgets(line, sizeof line, tmp))
        if (strncmp(line, "munmap: ", 8) != 0)
            fputs(line, stderr);
    fclose(tmp);
    return ok;
}

/*
 * The DTZ answers kept (lc_syzygy_dtz): Fathom has no probe of one
 * position's DTZ, so each is a root probe, which rates every move (tens of
 * microseconds), and the rescorer asks it of most decided positions of an
 * ending, again at every use of a game from the pool's records. A
 * direct-mapped table of DTZ_SLOTS answers, each with everything the probe
 * is given (the pieces, the counter, the en-passant square): an answer
 * comes from the table only for exactly the same question, so it is the
 * probe's. About 2.3 MB, allocated at the first DTZ probe, emptied when
 * other tables are loaded; under root_lock.
 */
#define DTZ_SLOTS 32768u

typedef struct dtz_entry {
    uint64_t bb[8]; /* ours, theirs, then both sides' K Q R B N P */
    uint8_t rule50, used, ok;
    int8_t ep;
    int32_t dtz;
} dtz_entry;

static dtz_entry *dtz_cache;

int lc_syzygy_load(const char *joined, unsigned *largest, lc_error *err)
{
    int rc = load_library(err);
    if (rc)
        return rc;
    if (dtz_cache) /* the answers of the tables held until now */
        memset(dtz_cache, 0, DTZ_SLOTS * sizeof *dtz_cache);
    if (!init_quietly(joined) || *fathom.largest == 0) {
        init_quietly("");
        return lc_error_set(err, LC_ECONFIG, "syzygy_paths: Fathom loaded no table from %s",
                            joined);
    }
    *largest = *fathom.largest;
    return 0;
}

static uint64_t both(const lc_position *p, int piece)
{
    return p->bb[LC_OURS + piece] | p->bb[LC_THEIRS + piece];
}

static int to_wdl(unsigned r)
{
    return r == TB_WIN ? LC_TB_WIN : r == TB_LOSS ? LC_TB_LOSS : LC_TB_DRAW;
}

int lc_syzygy_wdl(const lc_position *p)
{
    if (!fathom.lib || p->castling)
        return LC_TB_UNKNOWN;
    int ep = lc_position_ep_square(p);
    unsigned r = fathom.wdl(p->ours, p->theirs, both(p, LC_KING), both(p, LC_QUEEN),
                            both(p, LC_ROOK), both(p, LC_BISHOP), both(p, LC_KNIGHT),
                            both(p, LC_PAWN), ep < 0 ? 0 : (unsigned)ep, true);
    return r == TB_RESULT_FAILED ? LC_TB_UNKNOWN : to_wdl(r);
}

/* A result's DTZ with its sign: Fathom gives |DTZ| and a WDL whose side
 * (win or cursed win, loss or blessed loss, draw) is the sign. */
static int signed_dtz(unsigned res)
{
    int d = (int)TB_GET_DTZ(res);
    unsigned w = TB_GET_WDL(res);
    return w > TB_DRAW ? d : w < TB_DRAW ? -d : 0;
}

/*
 * Fathom's root probe of p: *root p's DTZ as lc0's probe_dtz gives it (a
 * mated side -1, a stalemate 0) and, for the n moves, v[i] move i's DTZ
 * counted from p as lc0's root_probe counts it: a zeroing move (capture,
 * pawn move) -1, -101, 0, 101 or 1 by the result it leads to, a mate 1,
 * any other the next position's DTZ negated and one ply further from 0.
 * Fathom's probe_root computes both the way lc0 does (the same code of
 * Ronald de Man's, down to the mate check). False when a probe fails.
 */
static bool root_probe(const lc_position *p, const lc_move *moves, unsigned n, int *v, int *root)
{
    static unsigned results[TB_MAX_MOVES]; /* under root_lock */
    if (!fathom.lib || p->castling || n > TB_MAX_MOVES)
        return false;
    int ep = lc_position_ep_square(p);
    bool found[LC_MAX_MOVES] = {false};
    pthread_mutex_lock(&root_lock);
    unsigned r = fathom.root(p->ours, p->theirs, both(p, LC_KING), both(p, LC_QUEEN),
                             both(p, LC_ROOK), both(p, LC_BISHOP), both(p, LC_KNIGHT),
                             both(p, LC_PAWN), p->rule50, ep < 0 ? 0 : (unsigned)ep, true, results);
    bool ok = r != TB_RESULT_FAILED;
    *root = r == TB_RESULT_CHECKMATE ? -1 : r == TB_RESULT_STALEMATE ? 0 : signed_dtz(r);
    for (unsigned k = 0; ok && r != TB_RESULT_CHECKMATE && r != TB_RESULT_STALEMATE &&
                         k < TB_MAX_MOVES && results[k] != TB_RESULT_FAILED;
         k++) {
        unsigned res = results[k], promo = TB_GET_PROMOTES(res);
        unsigned ours = promo ? 5 - promo : 0; /* Fathom: 1 Q, 2 R, 3 B, 4 N */
        for (unsigned i = 0; i < n; i++)
            if (moves[i].from == TB_GET_FROM(res) && moves[i].to == TB_GET_TO(res) &&
                moves[i].promotion == ours) {
                v[i] = signed_dtz(res);
                found[i] = true;
            }
    }
    pthread_mutex_unlock(&root_lock);
    for (unsigned i = 0; ok && i < n; i++)
        ok = found[i];
    return ok;
}

bool lc_syzygy_root(const lc_position *p, const lc_move *moves, unsigned n, signed char *wdl,
                    int *dist)
{
    int v[LC_MAX_MOVES], root;
    if (n > LC_MAX_MOVES || !root_probe(p, moves, n, v, &root))
        return false;
    for (unsigned i = 0; i < n; i++) {
        /* Fathom's WDL with the counter: beyond 100 plies a draw. */
        int d = v[i] < 0 ? -v[i] : v[i];
        wdl[i] = (signed char)(v[i] == 0 || d + p->rule50 > 100 ? LC_TB_DRAW
                               : v[i] > 0                       ? LC_TB_WIN
                                                                : LC_TB_LOSS);
        dist[i] = d;
    }
    return true;
}

static void dtz_key(const lc_position *p, dtz_entry *e)
{
    static const int pieces[6] = {LC_KING, LC_QUEEN, LC_ROOK, LC_BISHOP, LC_KNIGHT, LC_PAWN};
    memset(e, 0, sizeof *e);
    e->bb[0] = p->ours;
    e->bb[1] = p->theirs;
    for (int k = 0; k < 6; k++)
        e->bb[2 + k] = both(p, pieces[k]);
    e->rule50 = p->rule50;
    e->ep = (int8_t)lc_position_ep_square(p);
    e->used = 1;
}

static dtz_entry *dtz_slot(const dtz_entry *key)
{
    uint64_t h = key->rule50 ^ (uint64_t)(uint8_t)key->ep << 8;
    for (int k = 0; k < 8; k++)
        h = lc_mix64(h ^ key->bb[k]);
    return &dtz_cache[h & (DTZ_SLOTS - 1)];
}

static bool same_question(const dtz_entry *a, const dtz_entry *b)
{
    return a->used && memcmp(a->bb, b->bb, sizeof a->bb) == 0 && a->rule50 == b->rule50 &&
           a->ep == b->ep;
}

bool lc_syzygy_dtz(const lc_position *p, int *dtz)
{
    if (!fathom.lib || p->castling)
        return false;
    dtz_entry key;
    dtz_key(p, &key);
    pthread_mutex_lock(&root_lock);
    if (!dtz_cache)
        dtz_cache = lc_xcalloc(DTZ_SLOTS, sizeof *dtz_cache);
    dtz_entry *slot = dtz_slot(&key);
    bool found = same_question(slot, &key), ok = found && slot->ok;
    int d = found ? slot->dtz : 0;
    pthread_mutex_unlock(&root_lock);
    if (!found) {
        ok = root_probe(p, NULL, 0, NULL, &d);
        key.ok = ok;
        key.dtz = d;
        pthread_mutex_lock(&root_lock);
        *slot = key;
        pthread_mutex_unlock(&root_lock);
    }
    *dtz = d;
    return ok;
}

/* lc0's rank of a move whose DTZ from the root is v (root_probe above),
 * with the root's fifty-move counter: a win that the counter allows and no
 * repetition spoils 1000, any other win the fewer plies the better, a draw
 * 0, a loss -1000 unless a fifty-move draw is in sight. */
static int rank(int v, int cnt50, bool has_repeated)
{
    if (v > 0)
        return v + cnt50 <= 99 && !has_repeated ? 1000 : 1000 - (v + cnt50);
    if (v < 0)
        return -v * 2 + cnt50 < 100 ? -1000 : -1000 + (-v + cnt50);
    return 0;
}

bool lc_syzygy_root_probe(const lc_position *p, const lc_move *moves, unsigned n, bool has_repeated,
                          bool win_only, bool *safe)
{
    int v[LC_MAX_MOVES], r[LC_MAX_MOVES], root, best = -1000;
    if (n > LC_MAX_MOVES || !root_probe(p, moves, n, v, &root))
        return false;
    for (unsigned i = 0; i < n; i++) {
        r[i] = rank(v[i], p->rule50, has_repeated);
        best = r[i] > best ? r[i] : best;
    }
    if (win_only && best <= 0)
        return false; /* no winning move */
    for (unsigned i = 0; i < n; i++)
        safe[i] = r[i] == best;
    return true;
}

#endif
