/*
 * lc0_games: the endings, the start position and the openings of
 * lc0_games.h. The games themselves are played in lc0_games_play.c.
 */
#include "lc0_games.h"
#include "lc0_games_plies.h"

#include "core/dirwalk.h"
#include "format/lc0/chunk.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Piece counts (pawn, knight, bishop, rook, queen) of each side of an
 * ending, kings aside. */
static const struct {
    const char *name;
    uint8_t strong[5], weak[5];
} endings[LC_GEN_ENDINGS] = {
    [LC_GEN_KQK] = {"KQvK", {0, 0, 0, 0, 1}, {0}},
    [LC_GEN_KRK] = {"KRvK", {0, 0, 0, 1, 0}, {0}},
    [LC_GEN_KPK] = {"KPvK", {1, 0, 0, 0, 0}, {0}},
    [LC_GEN_KRKP] = {"KRvKP", {0, 0, 0, 1, 0}, {1, 0, 0, 0, 0}},
    [LC_GEN_KBNK] = {"KBNvK", {0, 1, 1, 0, 0}, {0}},
};

const char *lc_gen_ending_name(int ending)
{
    return ending >= 0 && ending < LC_GEN_ENDINGS ? endings[ending].name : "?";
}

static void counts(const lc_position *p, int base, unsigned c[5])
{
    for (int i = 0; i < 5; i++)
        c[i] = (unsigned)__builtin_popcountll(p->bb[base + i]);
}

static bool same_counts(const unsigned have[5], const uint8_t want[5])
{
    for (int i = 0; i < 5; i++)
        if (have[i] != want[i])
            return false;
    return true;
}

int lc_gen_ending_of(const lc_position *p)
{
    unsigned us[5], them[5];
    counts(p, LC_OURS, us);
    counts(p, LC_THEIRS, them);
    for (int e = 0; e < LC_GEN_ENDINGS; e++)
        if ((same_counts(us, endings[e].strong) && same_counts(them, endings[e].weak)) ||
            (same_counts(them, endings[e].strong) && same_counts(us, endings[e].weak)))
            return e;
    return -1;
}

/* Whether a side with `have` can still come down to `need`: pieces only
 * go (captured), except that a pawn may become any of them. */
static bool can_become(const unsigned have[5], const uint8_t need[5])
{
    if (have[0] < need[0])
        return false;
    unsigned missing = 0;
    for (int i = 1; i < 5; i++)
        missing += have[i] < need[i] ? need[i] - have[i] : 0;
    return missing <= have[0] - need[0];
}

bool gen_reachable(const lc_position *p, int ending)
{
    unsigned us[5], them[5];
    counts(p, LC_OURS, us);
    counts(p, LC_THEIRS, them);
    const uint8_t *s = endings[ending].strong, *w = endings[ending].weak;
    return (can_become(us, s) && can_become(them, w)) || (can_become(them, s) && can_become(us, w));
}

void lc_gen_start_position(lc_position *p)
{
    static const uint64_t first[6] = {0xFF00, 0x42, 0x24, 0x81, 0x08, 0x10};
    memset(p, 0, sizeof *p);
    for (int i = 0; i < 6; i++) {
        p->bb[LC_OURS + i] = first[i];
        p->bb[LC_THEIRS + i] = __builtin_bswap64(first[i]);
        p->ours |= p->bb[LC_OURS + i];
        p->theirs |= p->bb[LC_THEIRS + i];
    }
    p->pieces = 32;
    p->castling = true;
    const uint8_t rooks[4] = {0x01, 0x80, 0x01, 0x80}; /* a and h rooks, format 1's flags */
    memcpy(p->castle, rooks, sizeof rooks);
    p->ep_file = -1;
}

bool lc_gen_same_position(const lc_position *a, const lc_position *b)
{
    return memcmp(a->bb, b->bb, sizeof a->bb) == 0 &&
           memcmp(a->castle, b->castle, sizeof a->castle) == 0 && a->rule50 == b->rule50;
}

/* ---- openings ---- */

/* The opening of a decoded game, or false when it is not one to use. */
static bool opening_of(const lc_chunk_data *c, lc_gen_opening *op)
{
    uint32_t format;
    LC_REC_GET(c->data, input_format, format);
    lc_position cur, p;
    lc_gen_start_position(&cur);
    if (c->version != 6 || (format != 1 && format != 2) || c->n_records < 8 ||
        !lc_position_from_record(c->data, 6, &p) || !lc_gen_same_position(&p, &cur))
        return false;
    size_t limit = c->n_records - 2;
    if (limit > LC_GEN_OPENING_MAX)
        limit = LC_GEN_OPENING_MAX;
    op->n = 0;
    for (size_t i = 1; i <= limit; i++) {
        if (!lc_position_from_record(c->data + i * c->record_size, 6, &p))
            break;
        lc_move moves[LC_MAX_MOVES];
        unsigned n = lc_position_legal_moves(&cur, moves), j;
        lc_position child;
        for (j = 0; j < n; j++) {
            lc_position_play(&cur, &moves[j], &child);
            if (lc_gen_same_position(&child, &p))
                break;
        }
        if (j == n)
            break;
        op->moves[op->n++] = moves[j];
        cur = child;
    }
    return op->n >= 6;
}

int lc_gen_openings_load(const char *dir, lc_gen_openings *out, lc_error *err)
{
    memset(out, 0, sizeof *out);
    size_t n = 0;
    char **paths = lc_list_files(dir, ".gz", &n, NULL, NULL);
    for (size_t i = 0; i < n; i++) {
        const char *base = strrchr(paths[i], '/');
        base = base ? base + 1 : paths[i];
        lc_chunk_source *src = NULL;
        lc_chunk_data c;
        lc_gen_opening op;
        if (strncmp(base, "game_", 5) == 0 && lc_chunk_source_open(paths[i], &src, NULL) == 0 &&
            lc_chunk_source_load(src, 0, LC_INFLATE_ZLIB, &c, NULL) == 0) {
            if (opening_of(&c, &op)) {
                snprintf(op.source, sizeof op.source, "%s", paths[i]);
                out->games = lc_xrealloc(out->games, (out->n + 1) * sizeof *out->games);
                out->games[out->n++] = op;
            }
            lc_chunk_data_fini(&c);
        }
        lc_chunk_source_unref(src);
        free(paths[i]);
    }
    free(paths);
    if (out->n == 0)
        return lc_error_set(err, LC_EEMPTY,
                            "%s: no lc0 game (game_*.gz, V6, input format 1 or 2, from the start "
                            "position) to take openings from; name the folder of tests/data",
                            dir);
    return 0;
}

void lc_gen_openings_free(lc_gen_openings *o)
{
    free(o->games);
    memset(o, 0, sizeof *o);
}
