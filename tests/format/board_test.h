/*
 * board_test: positions and records built by hand for the tablebase and
 * rescorer tests. A position is written as two piece lists in the usual
 * white/black coordinates ("Kc3 Pa6", "Kh1") and the side to move; the
 * builders turn it into the plane frame (the side to move is "us", moving
 * up: for Black the ranks are mirrored) and into V6 or V5 records whose
 * planes hold that board and whose policy is -1 except on the legal moves
 * (uniform over them).
 */
#ifndef LC_TEST_BOARD_TEST_H
#define LC_TEST_BOARD_TEST_H

#include "records.h"

#include "format/lc0/rescore/position.h"
#include "format/lc0/record.h"
#include "format/lc0/rescore/tablebase.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static inline int bt_piece(char c)
{
    const char *k = "PNBRQK", *at = strchr(k, c);
    if (!at || !c) {
        fprintf(stderr, "board_test: bad piece '%c'\n", c);
        exit(2);
    }
    return (int)(at - k);
}

/* Add the pieces of list (e.g. "Kc3 Pa6") to side base (LC_OURS or
 * LC_THEIRS), the ranks mirrored when mirror. */
static inline void bt_add(lc_position *p, const char *list, int base, bool mirror)
{
    for (const char *s = list; *s;) {
        if (*s == ' ') {
            s++;
            continue;
        }
        int sq = (s[2] - '1') * 8 + (s[1] - 'a');
        if (mirror)
            sq ^= 56;
        p->bb[base + bt_piece(s[0])] |= 1ull << sq;
        s += 3;
    }
}

static inline lc_position bt_position(const char *white, const char *black, bool black_to_move)
{
    lc_position p;
    memset(&p, 0, sizeof p);
    bt_add(&p, black_to_move ? black : white, LC_OURS, black_to_move);
    bt_add(&p, black_to_move ? white : black, LC_THEIRS, black_to_move);
    for (int i = 0; i < 6; i++) {
        p.ours |= p.bb[LC_OURS + i];
        p.theirs |= p.bb[LC_THEIRS + i];
    }
    p.pieces = (uint8_t)__builtin_popcountll(p.ours | p.theirs);
    p.ep_file = -1;
    return p;
}

/* Square s at bit s ^ 7, as the planes keep it. */
static inline uint64_t bt_plane_word(uint64_t bb)
{
    uint64_t w = 0;
    for (int s = 0; s < 64; s++)
        if (bb & (1ull << s))
            w |= 1ull << (s ^ 7);
    return w;
}

/* A record of version 6 (LC_V6_RECORD_SIZE bytes) or 5 (LC_V5_RECORD_SIZE)
 * holding position p with fifty-move counter rule50 and the result r for
 * the side to move (-1, 0, 1); the policy uniform over the legal moves. */
static inline void bt_record(uint8_t *rec, uint32_t version, const lc_position *p, bool black,
                             uint8_t rule50, int r)
{
    size_t size = version == 5 ? LC_V5_RECORD_SIZE : LC_V6_RECORD_SIZE;
    memset(rec, 0, size);
    rec_put_u32(rec, 0, version);
    rec_put_u32(rec, 4, 1); /* classical input format */
    for (unsigned i = 0; i < LC_POLICY_SIZE; i++)
        rec_put_prob(rec, i, -1.0f);
    lc_move moves[LC_MAX_MOVES];
    unsigned n = lc_position_legal_moves(p, moves);
    for (unsigned i = 0; i < n; i++)
        rec_put_prob(rec, moves[i].policy, 1.0f / (float)n);
    for (int i = 0; i < 12; i++)
        rec_put_u64(rec, offsetof(lc_v6_record, planes) + 8 * (size_t)i, bt_plane_word(p->bb[i]));
    rec_put_u8(rec, offsetof(lc_v6_record, side_to_move_or_enpassant), black);
    rec_put_u8(rec, offsetof(lc_v6_record, rule50_count), rule50);
    if (version == 5) {
        rec_put_u8(rec, offsetof(lc_v6_record, dummy), (uint8_t)(int8_t)r);
    } else {
        rec_put_f32(rec, offsetof(lc_v6_record, result_q), (float)r);
        rec_put_f32(rec, offsetof(lc_v6_record, result_d), r == 0 ? 1.0f : 0.0f);
    }
}

/* The folder of Debian's Gaviota 3-piece tables (or LCMON_GAVIOTA_PATH),
 * or NULL after printing why the test skips: a build without Gaviota, or
 * the tables not installed. */
static inline const char *bt_gaviota_dir(void)
{
    if (!lc_tablebases_have_gaviota()) {
        printf("SKIP: this lcmon was built without Gaviota (install libgaviotatb-dev)\n");
        return NULL;
    }
    const char *dir = getenv("LCMON_GAVIOTA_PATH");
    if (!dir || !*dir)
        dir = "/usr/share/gaviotatb/gtb4";
    struct stat st;
    if (stat(dir, &st) != 0) {
        printf("SKIP: no Gaviota tables in %s (install Debian's gaviotatb)\n", dir);
        return NULL;
    }
    return dir;
}

#endif
