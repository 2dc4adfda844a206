/*
 * chunks_stats: `lcmon chunks stats`, a folder summed up (see chunks_tool.h):
 * files by kind, chunks and positions, record versions and input formats of
 * the good chunks, the result at each game's first position (win, draw or
 * loss for the side to move there, from result_q: above 0.5 a win, below
 * -0.5 a loss, else a draw; NaN unknown), positions per game, and bad
 * chunks and files by reason. As histograms of █ scaled to the terminal's
 * width (60 columns when stdout is not a terminal), or JSON.
 */
#include "app/chunks/chunks_verbs.h"

#include "core/error.h"
#include "core/text.h"
#include "format/lc0/frame.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Counts by a short key, in the order keys first come. */
typedef struct tally {
    struct {
        char key[48];
        uint64_t n;
    } * rows;
    size_t n, cap;
} tally;

static void tally_add(tally *t, const char *key, uint64_t k)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].key, key)) {
            t->rows[i].n += k;
            return;
        }
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 8;
        t->rows = lc_xrealloc(t->rows, t->cap * sizeof *t->rows);
    }
    snprintf(t->rows[t->n].key, sizeof t->rows[t->n].key, "%s", key);
    t->rows[t->n++].n = k;
}

static uint64_t tally_total(const tally *t)
{
    uint64_t s = 0;
    for (size_t i = 0; i < t->n; i++)
        s += t->rows[i].n;
    return s;
}

/* Keys that are numbers ("V6", "132") in numeric order, others after. */
static int compare_keys(const void *a, const void *b)
{
    const char *x = a, *y = b; /* each row starts with its key */
    x += *x == 'V';
    y += *y == 'V';
    long u = strtol(x, NULL, 10), v = strtol(y, NULL, 10);
    return u != v ? (u < v ? -1 : 1) : strcmp(x, y);
}

static void tally_sort(tally *t)
{
    if (t->n > 1)
        qsort(t->rows, t->n, sizeof *t->rows, compare_keys);
}

enum { RESULT_WIN, RESULT_DRAW, RESULT_LOSS, RESULT_UNKNOWN, N_RESULTS };
static const char *const result_names[N_RESULTS] = {"win", "draw", "loss", "unknown"};

typedef struct stats {
    uint64_t files, gz_files, tar_files, other_files, chunks, good_chunks, positions, raw;
    tally versions, formats, bad_chunks, bad_files;
    uint64_t results[N_RESULTS];
    uint32_t *lengths; /* positions of each good game */
    size_t n_lengths, cap_lengths;
} stats;

static void stats_file(void *ctx, const char *path, const lc_chunk_source *src, const char *reason,
                       const char *why)
{
    stats *st = ctx;
    (void)why;
    if (!src && !reason) {
        st->other_files++;
        return;
    }
    st->files++;
    if (lc_has_suffix(path, ".tar"))
        st->tar_files++;
    else
        st->gz_files++;
    if (reason)
        tally_add(&st->bad_files, reason, 1);
    else if (lc_chunk_source_truncated(src))
        tally_add(&st->bad_files, "truncated_archive", 1);
    if (src)
        st->raw += lc_chunk_source_raw_members(src);
}

static int result_of(float q)
{
    return isnan(q)    ? RESULT_UNKNOWN
           : q > 0.5f  ? RESULT_WIN
           : q < -0.5f ? RESULT_LOSS
                       : RESULT_DRAW;
}

static void stats_chunk(void *ctx, const chunk_visit *v)
{
    stats *st = ctx;
    if (v->reason) {
        tally_add(&st->bad_chunks, v->reason, 1);
        if (strcmp(v->reason, "skipped_member") != 0)
            st->chunks++;
        return;
    }
    st->chunks++;
    st->good_chunks++;
    const lc_chunk_data *c = v->data;
    st->positions += c->n_records;
    char key[48];
    snprintf(key, sizeof key, "V%u", c->version);
    tally_add(&st->versions, key, 1);
    lc_frame fr;
    if (c->n_records && lc_frame_from_record(c->data, c->version, &fr, NULL) == 0) {
        snprintf(key, sizeof key, "%u", fr.input_format);
        tally_add(&st->formats, key, 1);
        st->results[result_of(fr.result_q)]++;
        lc_frame_fini(&fr);
    }
    if (st->n_lengths == st->cap_lengths) {
        st->cap_lengths = st->cap_lengths ? 2 * st->cap_lengths : 256;
        st->lengths = lc_xrealloc(st->lengths, st->cap_lengths * sizeof *st->lengths);
    }
    st->lengths[st->n_lengths++] = (uint32_t)c->n_records;
}

static void stats_file_done(void *ctx, const char *path, const lc_chunk_source *src)
{
    (void)ctx, (void)path, (void)src;
}

/* ---- game lengths in bins ---- */

typedef struct length_bins {
    uint32_t width, n, min, max;
    uint64_t counts[64];
    double mean;
} length_bins;

/* At most 12 bins of a round width (1, 2, 5, 10, 20, 25, 50, 100, ...). */
static length_bins bin_lengths(const stats *st)
{
    length_bins b = {.width = 1, .min = UINT32_MAX};
    double sum = 0;
    for (size_t i = 0; i < st->n_lengths; i++) {
        b.min = st->lengths[i] < b.min ? st->lengths[i] : b.min;
        b.max = st->lengths[i] > b.max ? st->lengths[i] : b.max;
        sum += st->lengths[i];
    }
    if (!st->n_lengths)
        return (length_bins){.width = 1};
    b.mean = sum / (double)st->n_lengths;
    static const uint32_t steps[] = {1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000};
    for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
        b.width = steps[k];
        if (b.max / b.width - b.min / b.width < 12)
            break;
    }
    b.n = b.max / b.width - b.min / b.width + 1;
    if (b.n > 64)
        b.n = 64, b.width = b.max / 63 + 1;
    for (size_t i = 0; i < st->n_lengths; i++) {
        uint32_t k = st->lengths[i] / b.width - b.min / b.width;
        b.counts[k < b.n ? k : b.n - 1]++;
    }
    return b;
}

/* ---- drawing ---- */

static void draw_tally(const char *title, const tally *t)
{
    uint64_t total = tally_total(t), max = 0;
    int w = 4;
    for (size_t i = 0; i < t->n; i++) {
        max = t->rows[i].n > max ? t->rows[i].n : max;
        w = (int)strlen(t->rows[i].key) > w ? (int)strlen(t->rows[i].key) : w;
    }
    printf("\n%s:%s\n", title, t->n ? "" : " none");
    for (size_t i = 0; i < t->n; i++)
        chunks_bar_row(t->rows[i].key, w, t->rows[i].n, max, total);
}

static void draw_results(const stats *st)
{
    uint64_t max = 0, total = 0;
    for (int r = 0; r < N_RESULTS; r++) {
        max = st->results[r] > max ? st->results[r] : max;
        total += st->results[r];
    }
    printf("\nresult for the side to move at the first position:%s\n", total ? "" : " none");
    for (int r = 0; r < N_RESULTS; r++)
        if (st->results[r] || r != RESULT_UNKNOWN)
            chunks_bar_row(result_names[r], 7, st->results[r], max, total);
}

static void draw_lengths(const stats *st)
{
    length_bins b = bin_lengths(st);
    if (!st->n_lengths) {
        printf("\npositions per game: none\n");
        return;
    }
    printf("\npositions per game: min %u, mean %.1f, max %u\n", b.min, b.mean, b.max);
    uint64_t max = 0;
    for (uint32_t k = 0; k < b.n; k++)
        max = b.counts[k] > max ? b.counts[k] : max;
    for (uint32_t k = 0; k < b.n; k++) {
        uint32_t lo = (b.min / b.width + k) * b.width;
        char label[32];
        snprintf(label, sizeof label, b.width == 1 ? "%u" : "%u-%u", lo, lo + b.width - 1);
        chunks_bar_row(label, 11, b.counts[k], max, st->n_lengths);
    }
}

static void print_text(const char *dir, stats *st)
{
    tally_sort(&st->versions);
    tally_sort(&st->formats);
    printf("%s: %llu files (%llu .gz, %llu .tar; %llu other files not read), %llu chunks "
           "(%llu good, %llu raw tar members), %llu positions\n",
           dir, (unsigned long long)st->files, (unsigned long long)st->gz_files,
           (unsigned long long)st->tar_files, (unsigned long long)st->other_files,
           (unsigned long long)st->chunks, (unsigned long long)st->good_chunks,
           (unsigned long long)st->raw, (unsigned long long)st->positions);
    draw_tally("record versions (good chunks)", &st->versions);
    draw_tally("input formats (good chunks)", &st->formats);
    draw_results(st);
    draw_lengths(st);
    draw_tally("bad chunks and skipped tar members, by reason", &st->bad_chunks);
    draw_tally("bad files, by reason", &st->bad_files);
}

/* ---- JSON ---- */

static void json_tally(const char *name, const tally *t)
{
    printf(",\"%s\":{", name);
    for (size_t i = 0; i < t->n; i++) {
        printf(i ? "," : "");
        chunks_json_string(stdout, t->rows[i].key);
        printf(":%llu", (unsigned long long)t->rows[i].n);
    }
    printf("}");
}

static void print_json(const char *dir, stats *st)
{
    tally_sort(&st->versions);
    tally_sort(&st->formats);
    printf("{\"directory\":");
    chunks_json_string(stdout, dir);
    printf(",\"files\":%llu,\"gz_files\":%llu,\"tar_files\":%llu,\"other_files\":%llu,"
           "\"chunks\":%llu,\"good_chunks\":%llu,\"raw_members\":%llu,\"positions\":%llu",
           (unsigned long long)st->files, (unsigned long long)st->gz_files,
           (unsigned long long)st->tar_files, (unsigned long long)st->other_files,
           (unsigned long long)st->chunks, (unsigned long long)st->good_chunks,
           (unsigned long long)st->raw, (unsigned long long)st->positions);
    json_tally("versions", &st->versions);
    json_tally("input_formats", &st->formats);
    printf(",\"results\":{");
    for (int r = 0; r < N_RESULTS; r++)
        printf("%s\"%s\":%llu", r ? "," : "", result_names[r], (unsigned long long)st->results[r]);
    length_bins b = bin_lengths(st);
    printf("},\"game_lengths\":{\"games\":%zu,\"min\":%u,\"max\":%u,\"mean\":", st->n_lengths,
           st->n_lengths ? b.min : 0, b.max);
    chunks_json_number(stdout, st->n_lengths ? b.mean : NAN);
    printf(",\"bin_width\":%u,\"bins\":[", b.width);
    for (uint32_t k = 0; k < b.n; k++)
        printf("%s{\"from\":%u,\"count\":%llu}", k ? "," : "", (b.min / b.width + k) * b.width,
               (unsigned long long)b.counts[k]);
    printf("]}");
    json_tally("bad_chunks", &st->bad_chunks);
    json_tally("bad_files", &st->bad_files);
    printf("}\n");
}

int chunks_stats(const char *dir, bool json)
{
    stats st = {0};
    static const chunk_walk_hooks hooks = {stats_file, stats_chunk, stats_file_done};
    long n = chunks_walk(dir, &hooks, &st);
    if (n >= 0) {
        if (json)
            print_json(dir, &st);
        else
            print_text(dir, &st);
    }
    free(st.versions.rows);
    free(st.formats.rows);
    free(st.bad_chunks.rows);
    free(st.bad_files.rows);
    free(st.lengths);
    return n < 0 ? 1 : 0;
}
