/*
 * upstream_map: pass 2 of the conversion: each upstream stage block
 * written as an lcmon stage's settings (YAML lines), the fields lcmon has
 * no equivalent for kept as comments saying why. See upstream_conv.h.
 */
#include "app/convert/upstream_conv.h"

#include "core/error.h"
#include "core/text.h"
#include "format/textproto.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* position_sampling { }: upstream's names and lcmon's (the defaults are
 * the same: upstream's). */
static const struct {
    const char *upstream, *lcmon;
} weight_keys[] = {
    {"diff_focus_alpha", "alpha"},         {"diff_focus_beta", "beta"},
    {"diff_focus_gamma", "gamma"},         {"diff_focus_tau", "tau"},
    {"default_weight", "default_weight"},  {"diff_focus_q_weight", "q_weight"},
    {"diff_focus_pol_scale", "pol_scale"},
};
#define N_WEIGHT_KEYS (sizeof weight_keys / sizeof weight_keys[0])

/* ---- pass 2: mapping ---- */

void up_set(lcmon_stage *s, const char *key, const char *fmt, ...)
{
    va_list ap;
    fprintf(s->bf, "      %s: ", key);
    va_start(ap, fmt);
    vfprintf(s->bf, fmt, ap);
    va_end(ap);
    fputc('\n', s->bf);
}

/* A scalar field converted under an lcmon key. */
static void set_field(lcmon_stage *s, const char *key, const lc_textproto_field *f, upstream_type t)
{
    char v[64];
    up_value_yaml(f, t, v, sizeof v);
    up_set(s, key, "%s", v);
}

/* A field kept as a comment: what was written, where, and why. */
static void note(conversion *c, lcmon_stage *s, const lc_textproto_field *f, const char *why, ...)
    __attribute__((format(printf, 4, 5)));
static void note(conversion *c, lcmon_stage *s, const lc_textproto_field *f, const char *why, ...)
{
    va_list ap;
    fprintf(s->bf, "      # %s: ", f->name);
    if (f->kind == LC_TEXTPROTO_BLOCK)
        fputs("{...}", s->bf);
    else if (f->kind == LC_TEXTPROTO_STRING)
        up_put_yaml_string(s->bf, f->value, f->value_len, 60);
    else
        fprintf(s->bf, "%.40s", f->value);
    fprintf(s->bf, " (line %u): ", f->line);
    va_start(ap, why);
    vfprintf(s->bf, why, ap);
    va_end(ap);
    fputc('\n', s->bf);
    c->n_unmapped++;
}

void up_map_queue(lcmon_stage *s, const lc_textproto_field *q)
{
    const lc_textproto_field *cap = up_get(q, "queue_capacity"),
                             *ov = up_get(q, "overflow_behavior");
    size_t o = 0;
    s->output[0] = '\0';
    if (!cap && !ov)
        return;
    o += (size_t)snprintf(s->output + o, sizeof s->output - o, "{");
    if (cap) {
        char v[32];
        up_value_yaml(cap, U_UINT, v, sizeof v);
        o += (size_t)snprintf(s->output + o, sizeof s->output - o, "capacity: %s", v);
    }
    if (ov) {
        unsigned k = 0;
        while (up_overflow_values[k] && strcmp(up_overflow_values[k], ov->value))
            k++;
        o +=
            (size_t)snprintf(s->output + o, sizeof s->output - o, "%soverflow: %s", cap ? ", " : "",
                             up_overflow_values[k] ? up_overflow_lcmon[k] : "block");
    }
    snprintf(s->output + o, sizeof s->output - o, "}");
}

/* position_sampling { } as lcmon's position_weights: the keys the block
 * gives, no others (lcmon's defaults are upstream's, and as upstream a
 * block without q_weight and pol_scale weighs every position alike). */
static void put_weights(FILE *f, const lc_textproto_field *ps)
{
    fputs("{", f);
    bool first = true;
    for (unsigned k = 0; k < N_WEIGHT_KEYS; k++) {
        const lc_textproto_field *w = up_get(ps, weight_keys[k].upstream);
        if (!w)
            continue;
        char v[64];
        up_value_yaml(w, U_DOUBLE, v, sizeof v);
        fprintf(f, "%s%s: %s", first ? "" : ", ", weight_keys[k].lcmon, v);
        first = false;
    }
    fputs("}", f);
}

static void map_provider(conversion *c, lcmon_stage *s)
{
    const lc_textproto_field *d = up_get(s->block, "directory");
    if (!d) {
        up_error_at(c, s->block->line, s->block->col,
                    "stage '%s': file_path_provider needs a directory (upstream's too)",
                    s->up_name);
        return;
    }
    fprintf(s->bf, "      directory: ");
    up_put_yaml_string(s->bf, d->value, d->value_len, (size_t)-1);
    fputc('\n', s->bf);
}

static void map_loader(conversion *c, lcmon_stage *s)
{
    const lc_textproto_field *f;
    if ((f = up_get(s->block, "threads")))
        set_field(s, "threads", f, U_UINT);
    if ((f = up_get(s->block, "frame_format")))
        note(c, s, f,
             "no equivalent: lcmon reads each record's version (V3 to V7) from the record");
}

static void map_pool(conversion *c, lcmon_stage *s)
{
    const lc_textproto_field *f, *threshold = up_get(s->block, "hanse_sampling_threshold");
    if ((f = up_get(s->block, "chunk_pool_size")))
        set_field(s, "chunk_pool_size", f, U_UINT);
    else
        up_set(s, "chunk_pool_size", "100000  # upstream's default");
    if ((f = up_get(s->block, "chunk_loading_threads")))
        set_field(s, "threads", f, U_UINT);
    else
        up_set(s, "threads", "4  # upstream's default chunk_loading_threads");
    if ((f = up_get(s->block, "source_ingestion_threads")))
        note(c, s, f, "no equivalent: lcmon indexes sources in chunk_source_loader (its threads)");
    const lc_textproto_field *gamma = up_get(s->block, "hanse_sampling_gamma");
    const lc_textproto_field *ps = up_get(s->block, "position_sampling");
    if (threshold) {
        char v[64];
        up_value_yaml(threshold, U_UINT, v, sizeof v);
        fprintf(s->bf, "      hanse:\n        threshold: %s\n", v);
        if (gamma) {
            up_value_yaml(gamma, U_DOUBLE, v, sizeof v);
            fprintf(s->bf, "        gamma: %s\n", v);
        }
        if (ps) {
            fputs("        position_weights: ", s->bf);
            put_weights(s->bf, ps);
            fputc('\n', s->bf);
        }
    } else {
        if (gamma)
            note(c, s, gamma, "not converted: upstream uses it only with hanse_sampling_threshold");
        if (ps)
            note(c, s, ps, "not converted: upstream uses it only with hanse_sampling_threshold");
    }
    const char *cache[] = {"cachehit_output", "position_cache_size", "caching_threads"};
    for (unsigned k = 0; k < 3; k++)
        if ((f = up_get(s->block, cache[k])))
            note(c, s, f, "no equivalent: lcmon has no position cache");
}

/* A string of folders as lcmon's setting; one with ',' is read otherwise
 * by lc0, which splits on ':' only. */
static void map_paths(conversion *c, lcmon_stage *s, const lc_textproto_field *f)
{
    fprintf(s->bf, "      %s: ", f->name);
    up_put_yaml_string(s->bf, f->value, f->value_len, (size_t)-1);
    fputc('\n', s->bf);
    if (memchr(f->value, ',', f->value_len))
        up_notice(c,
                  "chunk_rescorer '%s': %s holds ',': lc0 splits folders on ':' only, so upstream "
                  "reads the whole text as one folder, where lcmon splits on ',' too; write ':' "
                  "between folders",
                  s->up_name, f->name);
}

/* deblunder_threshold and deblunder_width: upstream deblunders only with
 * both (its stage sets the deblunder up when it has both). */
static void map_deblunder(conversion *c, lcmon_stage *s)
{
    const lc_textproto_field *t = up_get(s->block, "deblunder_threshold"),
                             *w = up_get(s->block, "deblunder_width");
    if (t && w) {
        set_field(s, "deblunder_threshold", t, U_DOUBLE);
        set_field(s, "deblunder_width", w, U_DOUBLE);
        up_notice(c, "deblunder by upstream's rules (its region, its starting values, the last "
                     "position's visits); `deblunder_rules: lcmon` on the chunk_rescorer uses "
                     "lcmon's (docs/pipelines.md)");
    } else if (t) {
        note(c, s, t, "not converted: upstream deblunders only with deblunder_width too");
        up_notice(c,
                  "chunk_rescorer '%s': deblunder_threshold without deblunder_width: upstream "
                  "does not deblunder then, so this configuration does not either; to deblunder, "
                  "give both (deblunder_width: 0 for a sharp threshold)",
                  s->up_name);
    } else if (w) {
        note(c, s, w, "not converted: upstream uses it only with deblunder_threshold");
    }
}

static void map_rescorer(conversion *c, lcmon_stage *s)
{
    const lc_textproto_field *f;
    if ((f = up_get(s->block, "threads")))
        set_field(s, "threads", f, U_UINT);
    bool tables = false, gaviota = false;
    const char *paths[] = {"syzygy_paths", "gaviota_paths"};
    for (unsigned k = 0; k < 2; k++) {
        if (!(f = up_get(s->block, paths[k])))
            continue;
        if (f->value_len == 0) { /* upstream's "no tables" */
            note(c, s, f, "not converted: no folders (lcmon's default)");
            continue;
        }
        map_paths(c, s, f);
        tables = true;
        gaviota |= k == 1;
    }
    const char *same[] = {"dist_temp", "dist_offset", "dtz_boost"};
    for (unsigned k = 0; k < 3; k++)
        if ((f = up_get(s->block, same[k])))
            set_field(s, same[k], f, U_DOUBLE);
    map_deblunder(c, s);
    if ((f = up_get(s->block, "new_input_format"))) {
        if (!strcmp(f->value, "-1"))
            note(c, s, f, "not converted: keeps the input format (lcmon's default)");
        else
            set_field(s, "new_input_format", f, U_INT);
    }
    /* Upstream's rescorer makes every V6 game V7, with the short-term
     * targets of st_q_theta (5/6 when absent, lcmon's default too). */
    up_set(s, "st_targets", "compute  # upstream's rescorer makes V6 games V7 with them");
    if ((f = up_get(s->block, "st_q_theta")))
        set_field(s, "st_theta", f, U_DOUBLE);
    up_notice(c, "short-term targets summed in float, as upstream's rescorer; `st_math: double` "
                 "on the chunk_rescorer sums them in double");
    up_notice(c, "games upstream's rescorer refuses (its Validate) are dropped, as upstream; "
                 "`invalid_games: keep` on the chunk_rescorer passes them on");
    if (tables)
        up_notice(c, "losing moves are not zeroed at tablebase positions, as upstream; "
                     "`zero_losing_moves: true` on the chunk_rescorer zeroes them");
    if (gaviota) {
        up_notice(c, "Gaviota tables give distances to mate only, as upstream; "
                     "`gaviota_results: true` on the chunk_rescorer rescores results with them "
                     "too");
        up_notice(c, "upstream's loader starts only when gaviota_paths holds every Gaviota table "
                     "of 3, 4 and 5 pieces (\"UNEXPECTED gaviota availability\"); lcmon takes "
                     "any set of tables");
    }
}

/* Whether two queue blocks have one name (absent: ""). */
static bool same_name(const lc_textproto_field *a, const lc_textproto_field *b)
{
    const lc_textproto_field *na = up_get(a, "name"), *nb = up_get(b, "name");
    return !strcmp(na ? na->value : "", nb ? nb->value : "");
}

/* Upstream's rules for its unpacker's sampling fields (its stage refuses
 * to start otherwise, with these words); false after an error. */
static bool unpacker_rules(conversion *c, lcmon_stage *s)
{
    const lc_textproto_field *rate = up_get(s->block, "position_sampling_rate"),
                             *count = up_get(s->block, "position_count"),
                             *pcount = up_get(s->block, "prefetch_count"),
                             *pout = up_get(s->block, "prefetch_output");
    const lc_textproto_field *at = s->block;
    const char *why = NULL, *todo = NULL;
    unsigned long long n = 0;
    if (pcount || pout) {
        if (count)
            up_parse_uint(count->value, &n);
        if (!pcount || !pout)
            why = "prefetch_count and prefetch_output must both be set or both unset.",
            todo = "give both, or neither";
        else if (!count)
            why = "position_count must be set when using prefetch mode.",
            todo = "add position_count: 1";
        else if (rate)
            why = "position_sampling_rate cannot be used in prefetch mode.", at = rate,
            todo = "remove position_sampling_rate";
        else if (n != 1)
            why = "position_count must equal 1 in prefetch mode", at = count,
            todo = "give position_count: 1";
        else if (same_name(up_get(s->block, "output"), pout))
            why = "ChunkUnpacker output names must be different", at = pout,
            todo = "name the two outputs apart (output { name: \"main\" })";
    } else if (rate && count) {
        why = "Exactly one of position_sampling_rate or position_count must be set.";
        at = rate->line > count->line || (rate->line == count->line && rate->col > count->col)
                 ? rate
                 : count;
        todo = "keep one: position_count (positions a use of a chunk) or "
               "position_sampling_rate (the share of its positions)";
    } else if (!rate && !count) {
        why = "Exactly one of position_sampling_rate or position_count must be set.";
        todo = "give position_sampling_rate: 1.0 for every position, or position_count";
    }
    if (!why)
        return true;
    up_error_at(c, at->line, at->col,
                "stage '%s': chunk_unpacker: upstream refuses it (\"%s\"); %s", s->up_name, why,
                todo);
    return false;
}

static void map_unpacker(conversion *c, lcmon_stage *s)
{
    if (!unpacker_rules(c, s))
        return;
    const lc_textproto_field *f, *count = up_get(s->block, "position_count");
    if ((f = up_get(s->block, "threads")))
        set_field(s, "threads", f, U_UINT);
    if (count)
        set_field(s, "positions_per_chunk", count, U_UINT);
    if ((f = up_get(s->block, "position_sampling_rate")))
        set_field(s, "sampling_rate", f, U_DOUBLE);
    if ((f = up_get(s->block, "position_sampling"))) {
        if (count) {
            fputs("      position_weights: ", s->bf);
            put_weights(s->bf, f);
            fputc('\n', s->bf);
        } else {
            note(c, s, f,
                 "not converted: lcmon draws by weight with positions_per_chunk (upstream's "
                 "position_count); with a rate, see diff_focus in the README");
        }
    }
    if ((f = up_get(s->block, "prefetch_count")))
        note(c, s, f, "no equivalent: lcmon has no prefetch output");
    if ((f = up_get(s->block, "prefetch_output")))
        note(c, s, f, "no equivalent: lcmon has no prefetch output");
    /* Upstream's unpacker computes nothing: V7 records (a rescorer's, or
     * the data's) bring their targets, V6 ones their own bytes. */
    up_set(s, "st_targets", "keep  # as upstream's unpacker: the records' own targets");
}

/* Whether stage i reads, directly or not, a chunk_rescorer. */
static bool after_rescorer(const conversion *c, unsigned i, unsigned depth)
{
    const lcmon_stage *s = &c->st[i];
    if (depth > c->n_st)
        return false;
    for (unsigned k = 0; k < s->n_inputs; k++) {
        int j = s->in_stage[k];
        if (j < 0)
            continue;
        const lcmon_stage *in = &c->st[j];
        if ((in->type && !strcmp(in->type->name, "chunk_rescorer")) ||
            after_rescorer(c, (unsigned)j, depth + 1))
            return true;
    }
    return false;
}

void up_map_wired(conversion *c)
{
    for (unsigned i = 0; i < c->n_st; i++) {
        const lcmon_stage *s = &c->st[i];
        if (s->type && !strcmp(s->type->name, "chunk_unpacker") && !after_rescorer(c, i, 0))
            up_notice(c, "V6 records' short-term targets kept as stored (q_st as read, d_st 0), "
                         "as upstream's loader without a chunk_rescorer; `st_targets: compute` "
                         "on the chunk_unpacker computes them over the game");
    }
}

static void map_sampler(conversion *c, lcmon_stage *s)
{
    (void)c;
    const lc_textproto_field *t = up_get(s->block, "threads"),
                             *per = up_get(s->block, "reservoir_size_per_thread");
    unsigned long long threads = 1, size = 1000000;
    if (t)
        up_parse_uint(t->value, &threads);
    if (per)
        up_parse_uint(per->value, &size);
    unsigned long long total = threads ? size * threads : size;
    if (threads && total / threads != size)
        total = size;
    up_set(s, "reservoir_size", "%llu  # %llu a thread (%s) x %llu thread%s", total, size,
           per ? "reservoir_size_per_thread" : "upstream's default", threads,
           threads == 1 ? "" : "s");
    if (t)
        set_field(s, "threads", t, U_UINT);
}

static void map_tensors(conversion *c, lcmon_stage *s)
{
    const lc_textproto_field *f;
    if ((f = up_get(s->block, "batch_size")))
        set_field(s, "batch_size", f, U_UINT);
    else
        up_set(s, "batch_size", "1024  # upstream's default");
    up_set(s, "layout", "current  # upstream's tensors");
    up_set(s, "planes", "upstream  # planes 104-111 as upstream's loader writes them");
    up_notice(c, "planes 104-111 as upstream's loader writes them, whatever the input format "
                 "(right for format 1 only); `planes: input_format` on the tensor_generator "
                 "writes them as each record's format defines them");
    if ((f = up_get(s->block, "threads")))
        set_field(s, "threads", f, U_UINT);
}

/* training.schedule's fields, as comments: lcmon has no trainer, and
 * lcmon.lczero.rl_cycles runs the daemon's loop with them. */
void up_print_schedule(conversion *c, FILE *out)
{
    static const char *const why[] = {
        "steps_per_network",
        "the batches trained a network: `steps` of lcmon.lczero.rl_cycles(control, batches, "
        "new_games, steps)",
        "chunks_per_network",
        "the games upstream's daemon waits for before each network: `new_games` of "
        "lcmon.lczero.rl_cycles(control, batches, new_games, steps)",
    };
    for (unsigned k = 0; k < 4 && c->schedule; k += 2) {
        const lc_textproto_field *f = up_get(c->schedule, why[k]);
        if (!f)
            continue;
        fprintf(out,
                "# %s: %.40s (line %u): training.schedule's, read by the trainer, not the "
                "loader: %s\n",
                f->name, f->value, f->line, why[k + 1]);
        c->n_unmapped++;
    }
}

/* A name lcmon accepts: letters, digits, '_' and '-', at most max. */
void up_clean_name(const char *in, char *out, size_t max)
{
    size_t o = 0;
    for (const char *p = in; *p && o < max; p++) {
        char ch = *p;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
        out[o++] = ok ? ch : '_';
    }
    if (!o)
        out[o++] = 'x';
    out[o] = '\0';
}

static void map_splitter(conversion *c, lcmon_stage *s)
{
    const lc_textproto_field *weights[MAX_OUTPUTS * 4];
    unsigned n_w = 0;
    const lc_textproto_field *first_queue = NULL;
    s->n_out = 0;
    for (unsigned i = 0; i < s->block->n_fields; i++) {
        const lc_textproto_field *f = &s->block->fields[i];
        if (!strcmp(f->name, "weight")) {
            if (n_w < MAX_OUTPUTS * 4)
                weights[n_w++] = f;
            continue;
        }
        if (strcmp(f->name, "output") != 0 || f->kind != LC_TEXTPROTO_BLOCK)
            continue;
        const lc_textproto_field *name = up_get(f, "name");
        if (!name || name->kind != LC_TEXTPROTO_STRING) {
            up_error_at(
                c, f->line, f->col,
                "stage '%s': chunk_source_splitter: every output needs a name (output { name: "
                "\"train\" })",
                s->up_name);
            continue;
        }
        if (s->n_out == MAX_OUTPUTS) {
            up_error_at(c, f->line, f->col, "stage '%s': more than %d outputs", s->up_name,
                        MAX_OUTPUTS);
            continue;
        }
        s->out_up[s->n_out] = name->value;
        up_clean_name(name->value, s->out_lc[s->n_out], 20);
        for (unsigned k = 0; k < s->n_out; k++)
            if (!strcmp(s->out_lc[k], s->out_lc[s->n_out]))
                up_error_at(c, name->value_line, name->value_col,
                            "stage '%s': two outputs named '%s'", s->up_name, s->out_lc[k]);
        s->n_out++;
        if (!first_queue) {
            first_queue = f;
            up_map_queue(s, f);
        } else {
            char other[sizeof s->output];
            memcpy(other, s->output, sizeof other);
            up_map_queue(s, f);
            if (strcmp(other, s->output) != 0) {
                note(c, s, f,
                     "not converted: lcmon gives all of a stage's outputs one queue "
                     "setting (the first output's)");
                memcpy(s->output, other, sizeof other);
            }
        }
    }
    if (!s->n_out) {
        up_error_at(c, s->block->line, s->block->col,
                    "stage '%s': upstream refuses it (\"ChunkSourceSplitter requires at least 1 "
                    "output.\"); give its outputs (output { name: \"train\" } weight: 1)",
                    s->up_name);
        return;
    }
    /* Upstream's splitter refuses to start unless each output has its
     * weight and one weight is above 0. */
    unsigned long long total = 0, w;
    for (unsigned k = 0; k < n_w; k++)
        total += up_parse_uint(weights[k]->value, &w) ? w : 0;
    const lc_textproto_field *at = n_w ? weights[0] : s->block;
    if (n_w != s->n_out)
        up_error_at(c, at->line, at->col,
                    "stage '%s': upstream refuses it (\"ChunkSourceSplitter output and weight "
                    "arrays must have same size: %u vs %u\"); give one weight an output, in "
                    "the same order",
                    s->up_name, s->n_out, n_w);
    else if (!total)
        up_error_at(c, at->line, at->col,
                    "stage '%s': upstream refuses it (\"ChunkSourceSplitter requires at least "
                    "one output with positive weight.\"); give an output a weight above 0",
                    s->up_name);
    fputs("      outputs:\n", s->bf);
    for (unsigned k = 0; k < s->n_out; k++) {
        char v[64] = "1";
        if (k < n_w)
            up_value_yaml(weights[k], U_UINT, v, sizeof v);
        fprintf(s->bf, "        - {name: %s, weight: %s}\n", s->out_lc[k], v);
    }
}

static void map_nothing(conversion *c, lcmon_stage *s)
{
    (void)c;
    if (!strcmp(s->type->lcmon, "join"))
        up_set(s, "mode", "available  # takes whichever input has positions, as upstream's join");
}

void up_map(conversion *c, lcmon_stage *s)
{
    static void (*const maps[])(conversion *, lcmon_stage *) = {
        [UP_MAP_PROVIDER] = map_provider, [UP_MAP_LOADER] = map_loader,
        [UP_MAP_POOL] = map_pool,         [UP_MAP_RESCORER] = map_rescorer,
        [UP_MAP_UNPACKER] = map_unpacker, [UP_MAP_SAMPLER] = map_sampler,
        [UP_MAP_TENSORS] = map_tensors,   [UP_MAP_SPLITTER] = map_splitter,
        [UP_MAP_NOTHING] = map_nothing,
    };
    _Static_assert(sizeof maps / sizeof maps[0] == UP_MAP_KINDS, "a mapping for every kind");
    maps[s->type->map](c, s);
}
