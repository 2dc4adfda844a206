/*
 * position: reading the board of a record or frame (see position.h). The
 * legal moves are in movegen.c.
 *
 * Where the fields are: from V5 on the planes start at 7440 (record.h); V3
 * and V4 have no input_format field, so they start 4 bytes lower, at 7436.
 * In every version the 104 plane words are followed by the four castling
 * bytes, side_to_move_or_enpassant and rule50_count, in that order.
 */
#include "format/lc0/rescore/position.h"

#include "format/lc0/record.h"

#include <string.h>

#define RANK(r) (0xFFull << (8 * (r)))

/* Where a version's plane words start, 0 for an unknown version. */
static size_t planes_offset(uint32_t version)
{
    if (version >= 5 && version <= 7)
        return offsetof(lc_v6_record, planes);
    if (version == 3 || version == 4)
        return offsetof(lc_v6_record, planes) - 4;
    return 0;
}

static bool canonical_format(uint32_t input_format)
{
    return input_format == 3 || input_format == 4 || input_format == 5 || input_format == 132 ||
           input_format == 133;
}

/* Formats 1 and 2: the file of their pawn that moved from rank 7 to rank 5
 * between history step 1 and step 0, or -1. */
static int8_t ep_from_history(const uint64_t *planes, const lc_position *p)
{
    uint64_t before = lc_plane_squares(planes[13 + LC_THEIRS + LC_PAWN]);
    uint64_t now = p->bb[LC_THEIRS + LC_PAWN];
    uint64_t occupied = p->ours | p->theirs;
    for (int f = 0; f < 8; f++) {
        uint64_t from = 1ull << (48 + f), mid = 1ull << (40 + f), to = 1ull << (32 + f);
        if ((before & from) && !(before & to) && !(now & from) && (now & to) && !(occupied & mid))
            return (int8_t)f;
    }
    return -1;
}

static bool board_ok(const lc_position *p)
{
    uint64_t seen = 0;
    for (int i = 0; i < 12; i++) {
        if (seen & p->bb[i])
            return false;
        seen |= p->bb[i];
    }
    if (__builtin_popcountll(p->bb[LC_OURS + LC_KING]) != 1 ||
        __builtin_popcountll(p->bb[LC_THEIRS + LC_KING]) != 1)
        return false;
    /* A pawn on the first or last rank is not chess; a transposed canonical
     * frame has no pawns at all, so this holds in every frame. */
    uint64_t pawns = p->bb[LC_OURS + LC_PAWN] | p->bb[LC_THEIRS + LC_PAWN];
    return (pawns & (RANK(0) | RANK(7))) == 0;
}

bool lc_position_from_planes(const uint64_t *planes, const uint8_t castling[4], uint8_t ep_byte,
                             uint8_t rule50, uint32_t input_format, lc_position *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < 12; i++) {
        out->bb[i] = lc_plane_squares(planes[i]);
        if (i < 6)
            out->ours |= out->bb[i];
        else
            out->theirs |= out->bb[i];
    }
    out->pieces = (uint8_t)__builtin_popcountll(out->ours | out->theirs);
    if (!board_ok(out))
        return false;
    for (int i = 0; i < 4; i++) {
        out->castle[i] = castling[i];
        if (input_format == 1 && castling[i])
            out->castle[i] = (i & 1) ? 0x80 : 0x01; /* oo: the h rook, ooo: the a rook */
        out->castling |= castling[i] != 0;
    }
    out->rule50 = rule50;
    out->ep_file = -1;
    if (canonical_format(input_format)) {
        if (ep_byte)
            out->ep_file = (int8_t)__builtin_ctz(ep_byte);
    } else {
        out->ep_file = ep_from_history(planes, out);
    }
    return true;
}

bool lc_position_from_record(const uint8_t *rec, uint32_t version, lc_position *out)
{
    size_t off = planes_offset(version);
    if (!off)
        return false;
    uint64_t planes[26];
    memcpy(planes, rec + off, sizeof planes);
    const uint8_t *tail = rec + off + 8 * LC_RECORD_PLANES;
    uint32_t input_format = 1;
    if (version >= 5)
        memcpy(&input_format, rec + offsetof(lc_v6_record, input_format), 4);
    return lc_position_from_planes(planes, tail, tail[4], tail[5], input_format, out);
}

bool lc_position_from_frame(const lc_frame *f, lc_position *out)
{
    const uint8_t castling[4] = {f->castling_us_ooo, f->castling_us_oo, f->castling_them_ooo,
                                 f->castling_them_oo};
    return lc_position_from_planes(f->planes, castling, f->side_to_move_or_enpassant,
                                   f->rule50_count, f->input_format, out);
}

bool lc_record_board_summary(const uint8_t *rec, uint32_t version, unsigned *pieces, bool *castling)
{
    size_t off = planes_offset(version);
    if (!off)
        return false;
    uint64_t planes[12];
    memcpy(planes, rec + off, sizeof planes);
    unsigned n = 0;
    for (int i = 0; i < 12; i++)
        n += (unsigned)__builtin_popcountll(planes[i]);
    uint32_t c;
    memcpy(&c, rec + off + 8 * LC_RECORD_PLANES, 4);
    *pieces = n;
    *castling = c != 0;
    return true;
}

int lc_position_ep_square(const lc_position *p)
{
    if (p->ep_file < 0)
        return -1;
    int f = p->ep_file;
    uint64_t takers = (f > 0 ? 1ull << (32 + f - 1) : 0) | (f < 7 ? 1ull << (32 + f + 1) : 0);
    return (p->bb[LC_OURS + LC_PAWN] & takers) ? 40 + f : -1;
}
