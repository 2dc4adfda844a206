/*
 * chunks_dump: `lcmon chunks dump`, the records of one file as text or JSON
 * (see chunks_tool.h). Every version 3..7 is read through the frame
 * (format/lc0/frame.h), which knows where each version keeps its fields;
 * the two fields the frame does not keep (V6 and V7's visits, V7's reserved
 * floats) are read from the record at their record.h offsets. A field a
 * version does not have is left out, not shown as NaN.
 *
 * The board is drawn from the 12 piece planes of the current position as
 * stored: ours uppercase (PNBRQK), theirs lowercase, rank 8 at the top, in
 * the planes' frame (lc0 flips the board for black, and the canonical
 * formats transform it; bits 0-2 of invariance_info say how). Move names are
 * the vocabulary's (format/chess/chess_vocab.h): its ids 0..1857 are lc0's
 * policy indices, in the side to move's frame too.
 */
#include "app/chunks/chunks_verbs.h"

#include "core/error.h"
#include "format/chess/chess_vocab.h"
#include "format/lc0/frame.h"
#include "format/lc0/record.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *format_name(uint32_t input_format)
{
    switch (input_format) {
    case 1:
        return "classical";
    case 2:
        return "castling planes";
    case 3:
        return "canonical";
    case 4:
        return "canonical, hectoplies";
    case 5:
        return "canonical, hectoplies, armageddon";
    case 132:
        return "canonical v2";
    case 133:
        return "canonical v2, armageddon";
    default:
        return "unknown";
    }
}

static const char *move_name(unsigned idx)
{
    const char *n = idx < LC_POLICY_SIZE ? lc_chess_token_name((int)idx) : NULL;
    return n ? n : "-";
}

/* The policy entries that are not -1, in index order: how many. */
static unsigned policy_of(const lc_frame *fr, uint16_t *idx, float *val)
{
    return lc_frame_policy_sparse(fr, idx, val, LC_POLICY_SIZE);
}

/* ---- text ---- */

static void print_board(const lc_frame *fr)
{
    static const char pieces[] = "PNBRQKpnbrqk";
    for (int rank = 7; rank >= 0; rank--) {
        printf("  %d ", rank + 1);
        for (int file = 0; file < 8; file++) {
            unsigned sq = (unsigned)(rank * 8 + file);
            char c = '.';
            int seen = 0;
            for (int p = 0; p < 12; p++)
                if ((fr->planes[p] >> (sq ^ 7)) & 1)
                    c = seen++ ? '?' : pieces[p]; /* '?': two pieces on a square */
            printf(" %c", c);
        }
        putchar('\n');
    }
    printf("     a b c d e f g h\n");
}

/* The invariance_info bits by name (V5 on). */
static void print_invariance(uint8_t b)
{
    printf("  invariance_info 0x%02x:", b);
    static const char *const names[] = {
        NULL,         NULL,          NULL,           "best_q_proven",
        "max_length", "adjudicated", "for_deletion", "black_to_move"};
    for (int bit = 7; bit >= 3; bit--)
        if (b & (1u << bit))
            printf(" %s", names[bit]);
    printf(" transform %u\n", b & 7u);
}

/* A byte of file bits (bit f: file f, a = 0) as its files, or "-". */
static void print_files(uint8_t mask)
{
    if (!mask)
        printf("-");
    for (int f = 0; f < 8; f++)
        if (mask & (1u << f))
            printf("%c", 'a' + f);
}

/* Castling, side to move, en passant, rule50 and the bytes that say them.
 * Format 1's castling bytes are flags; the other formats' are rook-file
 * masks (docs/lc0-training-data.md). */
static void print_state(const lc_frame *fr, uint32_t version)
{
    const uint8_t c[4] = {fr->castling_us_ooo, fr->castling_us_oo, fr->castling_them_ooo,
                          fr->castling_them_oo};
    if (fr->input_format == 1) {
        printf("  castling: us O-O-O %u O-O %u, them O-O-O %u O-O %u\n", c[0], c[1], c[2], c[3]);
    } else {
        printf("  castling (rook files): us O-O-O ");
        for (int i = 0; i < 4; i++) {
            static const char *const between[4] = {"", " O-O ", ", them O-O-O ", " O-O "};
            printf("%s", between[i]);
            print_files(c[i]);
        }
        printf("\n");
    }
    uint8_t b = fr->side_to_move_or_enpassant;
    if (fr->input_format <= 2) {
        printf("  side to move: %s (side_to_move_or_enpassant %u)\n", b ? "black" : "white", b);
    } else {
        printf("  en passant file: ");
        print_files(b);
        printf(" (mask 0x%02x); side to move: %s (invariance bit 7)\n", b,
               fr->invariance_info & 0x80 ? "black" : "white");
    }
    printf("  rule50 %u\n", fr->rule50_count);
    if (version >= 5)
        print_invariance(fr->invariance_info);
    else
        printf("  move_count %u\n", fr->invariance_info);
    if (version <= 5)
        printf("  result (int8) %d\n", fr->result);
}

static void print_values(const lc_frame *fr, const uint8_t *rec, uint32_t version)
{
    if (version >= 4)
        printf("  root    q %g  d %g%s", fr->root_q, fr->root_d, version >= 5 ? "" : "\n");
    if (version >= 5)
        printf("  m %g\n", fr->root_m);
    if (version >= 4)
        printf("  best    q %g  d %g%s", fr->best_q, fr->best_d, version >= 5 ? "" : "\n");
    if (version >= 5)
        printf("  m %g\n  plies_left %g\n", fr->best_m, fr->plies_left);
    if (version < 6)
        return;
    printf("  played  q %g  d %g  m %g\n", fr->played_q, fr->played_d, fr->played_m);
    printf("  orig    q %g  d %g  m %g\n", fr->orig_q, fr->orig_d, fr->orig_m);
    printf("  result  q %g  d %g\n", fr->result_q, fr->result_d);
    uint32_t visits;
    LC_REC_GET(rec, visits, visits);
    printf("  visits %u  policy_kld %g  q_st %g", visits, fr->policy_kld, fr->q_st);
    if (version >= 7)
        printf("  d_st %g", fr->d_st);
    printf("\n  played %u %s, best %u %s\n", fr->played_idx, move_name(fr->played_idx),
           fr->best_idx, move_name(fr->best_idx));
    if (version >= 7)
        printf("  opp_played %u %s, next_played %u %s\n", fr->opp_played_idx,
               move_name(fr->opp_played_idx), fr->next_played_idx, move_name(fr->next_played_idx));
}

static void print_policy(const lc_frame *fr)
{
    uint16_t idx[LC_POLICY_SIZE];
    float val[LC_POLICY_SIZE];
    unsigned n = policy_of(fr, idx, val);
    printf("  policy: %u legal moves\n", n);
    for (unsigned k = 0; k < n; k++)
        printf("    %-6s %4u  %.6f\n", move_name(idx[k]), idx[k], val[k]);
}

static void text_record(const lc_frame *fr, const uint8_t *rec, size_t pos, size_t n,
                        const char *check, bool policy)
{
    uint32_t own;
    memcpy(&own, rec, 4);
    printf("position %zu of %zu: version %u, input format %u (%s), check: %s\n", pos, n, own,
           fr->input_format, format_name(fr->input_format), check ? check : "ok");
    print_board(fr);
    print_state(fr, fr->version);
    print_values(fr, rec, fr->version);
    if (policy)
        print_policy(fr);
}

/* ---- JSON ---- */

static void jfloat(const char *name, float v)
{
    printf(",\"%s\":", name);
    chunks_json_number(stdout, v);
}

static void jint(const char *name, long long v)
{
    printf(",\"%s\":%lld", name, v);
}

/* The fields V6 and V7 have beyond V5's. */
static void json_v6(const lc_frame *fr, const uint8_t *rec)
{
    jint("dummy", (uint8_t)fr->result);
    jfloat("result_q", fr->result_q);
    jfloat("result_d", fr->result_d);
    jfloat("played_q", fr->played_q);
    jfloat("played_d", fr->played_d);
    jfloat("played_m", fr->played_m);
    jfloat("orig_q", fr->orig_q);
    jfloat("orig_d", fr->orig_d);
    jfloat("orig_m", fr->orig_m);
    uint32_t visits;
    LC_REC_GET(rec, visits, visits);
    jint("visits", visits);
    jint("played_idx", fr->played_idx);
    jint("best_idx", fr->best_idx);
    jfloat("policy_kld", fr->policy_kld);
    jfloat("q_st", fr->q_st);
    if (fr->version < 7)
        return;
    jfloat("d_st", fr->d_st);
    jint("opp_played_idx", fr->opp_played_idx);
    jint("next_played_idx", fr->next_played_idx);
    float reserved[8];
    LC_REC7_GET(rec, reserved, reserved);
    printf(",\"reserved\":[");
    for (int i = 0; i < 8; i++) {
        printf(i ? "," : "");
        chunks_json_number(stdout, reserved[i]);
    }
    printf("]");
}

/* Every field of the record's version, in record order. */
static void json_fields(const lc_frame *fr, const uint8_t *rec)
{
    uint32_t v = fr->version;
    if (v >= 5)
        jint("input_format", fr->input_format);
    printf(",\"planes\":[");
    for (int p = 0; p < LC_RECORD_PLANES; p++)
        printf("%s\"%llu\"", p ? "," : "", (unsigned long long)fr->planes[p]);
    printf("]");
    jint("castling_us_ooo", fr->castling_us_ooo);
    jint("castling_us_oo", fr->castling_us_oo);
    jint("castling_them_ooo", fr->castling_them_ooo);
    jint("castling_them_oo", fr->castling_them_oo);
    jint("side_to_move_or_enpassant", fr->side_to_move_or_enpassant);
    jint("rule50_count", fr->rule50_count);
    jint(v >= 5 ? "invariance_info" : "move_count", fr->invariance_info);
    if (v <= 5)
        jint("result", fr->result);
    if (v >= 4) {
        jfloat("root_q", fr->root_q);
        jfloat("best_q", fr->best_q);
        jfloat("root_d", fr->root_d);
        jfloat("best_d", fr->best_d);
    }
    if (v >= 5) {
        jfloat("root_m", fr->root_m);
        jfloat("best_m", fr->best_m);
        jfloat("plies_left", fr->plies_left);
    }
    if (v >= 6)
        json_v6(fr, rec);
}

static void json_record(const dump_options *o, const char *member, size_t chunk, const lc_frame *fr,
                        const uint8_t *rec, size_t pos, const char *check)
{
    uint32_t own;
    memcpy(&own, rec, 4);
    printf("{\"file\":");
    chunks_json_string(stdout, o->path);
    printf(",\"member\":");
    chunks_json_string(stdout, member);
    printf(",\"chunk\":%zu,\"position\":%zu,\"version\":%u,\"check\":", chunk, pos, own);
    chunks_json_string(stdout, check ? check : "ok");
    uint16_t idx[LC_POLICY_SIZE];
    float val[LC_POLICY_SIZE];
    unsigned n = policy_of(fr, idx, val);
    printf(",\"policy\":[");
    for (unsigned k = 0; k < n; k++) {
        printf("%s[%u,", k ? "," : "", idx[k]);
        chunks_json_number(stdout, val[k]);
        printf("]");
    }
    printf("]");
    json_fields(fr, rec);
    printf("}\n");
}

/* ---- the file ---- */

/* The positions of one chunk that o picks. */
static void dump_chunk(const dump_options *o, const lc_chunk_source *src, size_t i,
                       const lc_chunk_data *c)
{
    const char *member = lc_chunk_source_chunk_name(src, i);
    size_t last =
        o->last < 0 || (size_t)o->last >= c->n_records ? c->n_records - 1 : (size_t)o->last;
    if (!o->json)
        printf("== %s: member '%s' (chunk %zu%s): V%u, %zu positions\n", o->path, member, i,
               lc_chunk_source_chunk_raw(src, i) ? ", raw records" : "", c->version, c->n_records);
    for (size_t pos = (size_t)o->first; pos <= last && pos < c->n_records; pos++) {
        const uint8_t *rec = c->data + pos * c->record_size;
        lc_frame fr;
        if (lc_frame_from_record(rec, c->version, &fr, NULL) != 0)
            continue; /* not reached: the chunk's version is known */
        const char *check = NULL;
        lc_record_check(rec, c->version, &check);
        if (o->json)
            json_record(o, member, i, &fr, rec, pos, check);
        else
            text_record(&fr, rec, pos, c->n_records, check, o->policy);
        lc_frame_fini(&fr);
    }
}

int chunks_dump(const dump_options *o)
{
    lc_chunk_source *src = NULL;
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_chunk_source_open(o->path, &src, &err);
    if (rc != 0) {
        fprintf(stderr,
                "lcmon: chunks: %s (dump reads a .gz game or a .tar of them: check the path)\n",
                err.msg);
        return 1;
    }
    size_t n = lc_chunk_source_count(src), from = 0, to = n;
    if (o->member) {
        long k = chunks_find_member(src, o->member, o->path);
        if (k < 0) {
            lc_chunk_source_unref(src);
            return 1;
        }
        from = (size_t)k;
        to = from + 1;
    }
    int status = 0;
    for (size_t i = from; i < to; i++) {
        lc_chunk_data c;
        lc_error_clear(&err);
        if (lc_chunk_source_load(src, i, LC_INFLATE_AUTO, &c, &err) != 0) {
            fprintf(stderr, "lcmon: chunks: %s (a bad chunk: nothing to show)\n", err.msg);
            status = 1;
            continue;
        }
        dump_chunk(o, src, i, &c);
        lc_chunk_data_fini(&c);
    }
    if (n == 0)
        fprintf(stderr, "lcmon: chunks: %s holds no chunks\n", o->path);
    lc_chunk_source_unref(src);
    return n == 0 ? 1 : status;
}
