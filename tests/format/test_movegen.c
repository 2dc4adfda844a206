/*
 * movegen: the board reading (format/lc0/rescore/position.h), the legal move
 * generator and the policy index of every move, checked against lc0 itself:
 * in every position of the sample games (tests/data, all four input
 * formats; also the larger set LCMON_SAMPLES names, when set), the indices
 * whose probability is not -1 are exactly the generated legal moves'. lc0
 * wrote those probabilities from its own move generator, so this equality
 * over thousands of real positions (castling, en passant, promotions and
 * the canonical formats' transforms among them) is the proof. Also: the
 * moves come in policy order, every position reads as a board, and a
 * move played gives the next record's board.
 */
#include "check.h"
#include "sample_games.h"
#include "testutil.h"

#include "format/lc0/chunk_source.h"
#include "format/lc0/rescore/position.h"
#include "format/lc0/record.h"

#include <stdlib.h>

typedef struct totals {
    size_t games, positions, moves, castles, en_passant, promotions, checked_next;
} totals;

static bool same_board(const lc_position *a, const lc_position *b)
{
    return memcmp(a->bb, b->bb, sizeof a->bb) == 0;
}

static void check_position(const uint8_t *rec, const uint8_t *next, uint32_t version,
                           const char *where, size_t r, totals *t)
{
    lc_position p;
    bool ok = lc_position_from_record(rec, version, &p);
    CHECK(ok);
    if (!ok) {
        fprintf(stderr, "%s record %zu: not a board\n", where, r);
        return;
    }
    lc_move moves[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(&p, moves);
    bool gen[LC_POLICY_SIZE] = {false};
    for (unsigned i = 0; i < n; i++) {
        if (i > 0)
            CHECK(moves[i - 1].policy < moves[i].policy);
        gen[moves[i].policy] = true;
        t->castles += (moves[i].flags & LC_MOVE_CASTLE) != 0;
        t->en_passant += (moves[i].flags & LC_MOVE_EN_PASSANT) != 0;
        t->promotions += moves[i].promotion != 0;
    }
    size_t wrong = 0;
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++) {
        bool legal = lc_rec_probability(rec, i) != -1.0f;
        if (legal != gen[i]) {
            if (wrong++ < 4)
                fprintf(stderr, "%s record %zu: index %u is %s in the record, %s here\n", where, r,
                        i, legal ? "legal" : "illegal", gen[i] ? "generated" : "not generated");
        }
    }
    CHECK_EQ_U64(wrong, 0);
    t->positions++;
    t->moves += n;
    /* The next record's board is the result of one of these moves (lc0's
     * records are consecutive plies; the canonical formats may change the
     * transform between them, so only format 1 and 2 are compared). */
    uint32_t fmt = 1;
    if (version >= 5)
        memcpy(&fmt, rec + 4, 4);
    lc_position after;
    if (next && (fmt == 1 || fmt == 2) && lc_position_from_record(next, version, &after)) {
        bool found = false;
        for (unsigned i = 0; i < n && !found; i++) {
            lc_position child;
            lc_position_play(&p, &moves[i], &child);
            found = same_board(&child, &after) && child.ep_file == after.ep_file;
        }
        CHECK(found);
        if (!found)
            fprintf(stderr, "%s record %zu: no move gives the next board\n", where, r);
        t->checked_next++;
    }
}

static void check_game(const lc_chunk_data *c, const char *path, void *ctx)
{
    totals *t = ctx;
    for (size_t r = 0; r < c->n_records; r++) {
        const uint8_t *rec = c->data + r * c->record_size;
        const uint8_t *next = r + 1 < c->n_records ? rec + c->record_size : NULL;
        check_position(rec, next, c->version, path, r, t);
    }
    t->games++;
}

static void check_sets(const char *root)
{
    totals t = {0};
    sg_each_game(root, check_game, &t);
    printf("%s: %zu games, %zu positions, %zu legal moves (%zu castling, %zu en passant, %zu "
           "promotions), %zu next boards\n",
           root, t.games, t.positions, t.moves, t.castles, t.en_passant, t.promotions,
           t.checked_next);
    CHECK(t.games > 0);
    CHECK(t.castles > 0);
}

int main(void)
{
    check_sets(tu_test_data());
    const char *samples = getenv("LCMON_SAMPLES");
    if (samples && *samples)
        check_sets(samples);
    return check_finish();
}
