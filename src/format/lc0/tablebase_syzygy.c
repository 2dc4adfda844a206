/*
 * tablebase_syzygy: Fathom loaded at run time (see tablebase_syzygy.h for
 * why). tbprobe.h gives the constants and the types of the functions taken
 * from the library; its inline wrappers (tb_probe_wdl, tb_probe_root) are
 * not used, their checks are made here: no castling rights (the rescorer
 * never asks with them) and, for WDL, the counter passed as 0.
 */
#include "format/lc0/tablebase_syzygy.h"

#include "format/lc0/tablebase.h"
#include "lc_config.h"

#if LC_HAVE_SYZYGY

#include <dlfcn.h>
#include <pthread.h>
#include <tbprobe.h>

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

int lc_syzygy_load(const char *joined, unsigned *largest, lc_error *err)
{
    int rc = load_library(err);
    if (rc)
        return rc;
    if (!fathom.init(joined) || *fathom.largest == 0) {
        fathom.init("");
        return lc_error_set(err, LC_ECONFIG, "syzygy_paths: Fathom loaded no table from %s",
                            joined);
    }
    *largest = *fathom.largest;
    return 0;
}

void lc_syzygy_unload(void)
{
    if (fathom.lib)
        fathom.init("");
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

bool lc_syzygy_root(const lc_position *p, const lc_move *moves, unsigned n, signed char *wdl,
                    int *dist)
{
    static unsigned results[TB_MAX_MOVES]; /* under root_lock */
    if (!fathom.lib || p->castling)
        return false;
    int ep = lc_position_ep_square(p);
    for (unsigned i = 0; i < n; i++)
        wdl[i] = LC_TB_UNKNOWN;
    pthread_mutex_lock(&root_lock);
    unsigned r = fathom.root(p->ours, p->theirs, both(p, LC_KING), both(p, LC_QUEEN),
                             both(p, LC_ROOK), both(p, LC_BISHOP), both(p, LC_KNIGHT),
                             both(p, LC_PAWN), p->rule50, ep < 0 ? 0 : (unsigned)ep, true, results);
    bool ok = r != TB_RESULT_FAILED && r != TB_RESULT_CHECKMATE && r != TB_RESULT_STALEMATE;
    for (unsigned k = 0; ok && k < TB_MAX_MOVES && results[k] != TB_RESULT_FAILED; k++) {
        unsigned res = results[k], promo = TB_GET_PROMOTES(res);
        unsigned ours = promo ? 5 - promo : 0; /* Fathom: 1 Q, 2 R, 3 B, 4 N */
        for (unsigned i = 0; i < n; i++)
            if (moves[i].from == TB_GET_FROM(res) && moves[i].to == TB_GET_TO(res) &&
                moves[i].promotion == ours) {
                wdl[i] = (signed char)to_wdl(TB_GET_WDL(res));
                dist[i] = (int)TB_GET_DTZ(res);
            }
    }
    pthread_mutex_unlock(&root_lock);
    for (unsigned i = 0; ok && i < n; i++)
        ok = wdl[i] != LC_TB_UNKNOWN;
    return ok;
}

#endif
