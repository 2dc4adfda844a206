/*
 * chunks_weights: `lcmon chunks weights`, the distribution of the sampling
 * weights a config gives every position under a folder (upstream's
 * position_weight_stats tool), so that sampling settings are checked on
 * real data before a run.
 *
 * The weighting is a stage's, read by its own settings table: a
 * chunk_unpacker's position_weights (the weight a use draws a position
 * by) or diff_focus (the legacy keep probability), or a
 * shuffling_chunk_pool's hanse (the position weights whose sum is the
 * chunk's weight; the chunks' weights and their acceptance,
 * (weight / heaviest)^gamma, are given too). Each position's weight is
 * computed as the stage computes it, from the same fields and by the same
 * functions (format/lc0/diff_focus.h), and rounded to a float as the
 * unpacker keeps it. Without --config, --set KEY=VALUE fills a
 * position_weights block (q_weight 6 and pol_scale 3.5 unless set, as
 * upstream's tool).
 *
 * Printed: the positions, the mean, how many weigh 0 (never drawn) and how
 * many weigh default_weight because a field is unknown, the quantiles
 * (index (n - 1) * p / 100 of the sorted weights, as upstream's tool), the
 * heaviest position, and a histogram of 20 bins from the least to the
 * greatest weight.
 */
#include "app/chunks/chunks_verbs.h"

#include "core/error.h"
#include "core/settings.h"
#include "format/lc0/diff_focus.h"
#include "pipeline/config.h"
#include "stages/pool/hanse.h"
#include "stages/weights.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BINS 20

typedef struct weighting {
    const lc_weights_config *weights;       /* position_weights (the unpacker's or hanse's) */
    const lc_diff_focus_config *diff_focus; /* or the legacy keep probability */
    const lc_hanse_config *hanse;           /* hanse: chunk weights too */
} weighting;

/* A block of sc's settings by its key (NULL when the stage has none). */
static void *block_of(const lc_stage_config *sc, const char *key)
{
    const lc_setting *row = lc_setting_find(&sc->cls->settings, key);
    if (!row || row->type != LC_SETTING_BLOCK)
        return NULL;
    return *(void **)((char *)sc->block + row->offset);
}

static weighting weighting_of(const lc_stage_config *sc)
{
    weighting w = {0};
    if (!strcmp(sc->cls->type_name, "chunk_unpacker")) {
        w.weights = block_of(sc, "position_weights");
        w.diff_focus = block_of(sc, "diff_focus");
    } else if (!strcmp(sc->cls->type_name, "shuffling_chunk_pool")) {
        w.hanse = block_of(sc, "hanse");
        if (w.hanse && w.hanse->threshold == 0) /* off */
            w.hanse = NULL;
        w.weights = w.hanse ? w.hanse->weights : NULL;
    }
    return w;
}

static bool weighs(const lc_stage_config *sc)
{
    weighting w = weighting_of(sc);
    return w.weights || w.diff_focus;
}

/* The --set keys in a position_weights block of a chunk_unpacker. */
static char *set_yaml(const chunks_settings *s)
{
    bool q = false, pol = false;
    for (unsigned k = 0; k < s->n; k++) {
        q |= !strncmp(s->sets[k], "q_weight=", 9);
        pol |= !strncmp(s->sets[k], "pol_scale=", 10);
    }
    char *sets = chunks_settings_yaml(s, "  ");
    char *yaml = lc_xasprintf("positions_per_chunk: 1\nposition_weights:\n%s%s%s", sets,
                              q ? "" : "  q_weight: 6\n", pol ? "" : "  pol_scale: 3.5\n");
    free(sets);
    return yaml;
}

/* What is weighed, said in a line. */
static void say_weighting(const weighting *w, const char *origin)
{
    if (w->diff_focus) {
        const lc_diff_focus_config *d = w->diff_focus;
        printf("weights: diff_focus keep probabilities {min %g, slope %g, q_weight %g, pol_scale "
               "%g} (%s)\n",
               d->min, d->slope, d->q_weight, d->pol_scale, origin);
        return;
    }
    const lc_weight_params *p = &w->weights->p;
    printf("weights: %sposition_weights {alpha %g, beta %g, gamma %g, tau %g, default_weight %g, "
           "q_weight %g, pol_scale %g}%s (%s)\n",
           w->hanse ? "hanse " : "", p->alpha, p->beta, p->gamma, p->tau, p->default_weight,
           p->q_weight, p->pol_scale,
           p->uniform ? ": neither q_weight nor pol_scale given, every position weighs "
                        "default_weight"
                      : "",
           origin);
}

typedef struct walk {
    weighting w;
    float *v;      /* every position's weight */
    double *chunk; /* hanse: every chunk's */
    size_t n, cap, n_chunks, cap_chunks;
    uint64_t files, chunks, bad, unknown;
    char heaviest[512];
    float max;
} walk;

/* x (size bytes) at the end of the array *a of *n. */
static void *push(void *a, size_t *n, size_t *cap, size_t size, const void *x)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 4096;
        a = lc_xrealloc(a, *cap * size);
    }
    memcpy((char *)a + *n * size, x, size);
    (*n)++;
    return a;
}

/* A position's weight, in double as diff_focus.h gives it (the unpacker
 * keeps it as a float; the pool sums a chunk's in double). */
static double weigh(const weighting *w, const uint8_t *rec, uint32_t version, bool *unknown)
{
    float best_q, orig_q, kld;
    lc_record_focus_fields(rec, version, &best_q, &orig_q, &kld);
    if (w->diff_focus) {
        const lc_diff_focus_config *d = w->diff_focus;
        *unknown = isnan(lc_diff_total(best_q, orig_q, kld, d->q_weight, d->pol_scale));
        return lc_diff_keep_probability(best_q, orig_q, kld, d->min, d->slope, d->q_weight,
                                        d->pol_scale);
    }
    const lc_weight_params *p = &w->weights->p;
    *unknown = !p->uniform && isnan(lc_diff_total(best_q, orig_q, kld, p->q_weight, p->pol_scale));
    return lc_position_weight(best_q, orig_q, kld, p);
}

static void weights_file(void *ctx, const char *path, const lc_chunk_source *src,
                         const char *reason, const char *why)
{
    walk *k = ctx;
    (void)path, (void)why;
    k->files += src || reason;
}

static void weights_chunk(void *ctx, const chunk_visit *v)
{
    walk *k = ctx;
    if (v->reason) {
        k->bad += strcmp(v->reason, "skipped_member") != 0;
        return;
    }
    k->chunks++;
    const lc_chunk_data *c = v->data;
    double sum = 0;
    for (uint32_t i = 0; i < c->n_records; i++) {
        bool unknown;
        double w = weigh(&k->w, c->data + (size_t)i * c->record_size, c->version, &unknown);
        float x = (float)w;
        k->unknown += unknown;
        sum += w;
        k->v = push(k->v, &k->n, &k->cap, sizeof x, &x);
        if (x > k->max || k->n == 1) {
            k->max = x;
            snprintf(k->heaviest, sizeof k->heaviest, "%s member '%s' position %u", v->path,
                     v->member, i);
        }
    }
    if (k->w.hanse) /* the pool sums the positions' weights in double */
        k->chunk = push(k->chunk, &k->n_chunks, &k->cap_chunks, sizeof sum, &sum);
}

static void weights_file_done(void *ctx, const char *path, const lc_chunk_source *src)
{
    (void)ctx, (void)path, (void)src;
}

static int by_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The sorted weights' count, mean, zeros, quantiles and histogram. */
static void say_distribution(const char *what, const float *v, size_t n, bool floats,
                             const double *d)
{
#define AT(i) (floats ? (double)v[i] : d[i])
    double sum = 0;
    size_t zero = 0;
    for (size_t i = 0; i < n; i++) {
        sum += AT(i);
        zero += AT(i) == 0;
    }
    printf("\n%s: count %zu, mean %.6f, zero %zu (%.1f%%)\n", what, n, sum / (double)n, zero,
           100.0 * (double)zero / (double)n);
    static const int q[] = {0, 1, 5, 10, 25, 50, 75, 90, 95, 99, 100};
    printf("  quantiles:");
    for (size_t k = 0; k < sizeof q / sizeof *q; k++)
        printf(" %d%% %.6f", q[k], AT((n - 1) * (size_t)q[k] / 100));
    printf("\n");
    double lo = AT(0), hi = AT(n - 1), width = (hi - lo) / BINS;
    if (hi == lo) {
        printf("  histogram: every one weighs %.6f\n", lo);
        return;
    }
    uint64_t counts[BINS] = {0}, max = 0;
    for (size_t i = 0; i < n; i++) {
        int b = (int)((AT(i) - lo) / width);
        counts[b < BINS ? b : BINS - 1]++;
    }
    for (int b = 0; b < BINS; b++)
        max = counts[b] > max ? counts[b] : max;
    for (int b = 0; b < BINS; b++) {
        char label[64];
        snprintf(label, sizeof label, "%.4f-%.4f", lo + b * width, lo + (b + 1) * width);
        chunks_bar_row(label, 21, counts[b], max, n);
    }
#undef AT
}

static void say_hanse(walk *k)
{
    qsort(k->chunk, k->n_chunks, sizeof *k->chunk, by_double);
    say_distribution("chunk weights (hanse: the sum of a chunk's positions')", NULL, k->n_chunks,
                     false, k->chunk);
    double heaviest = k->chunk[k->n_chunks - 1], accept = 0;
    for (size_t i = 0; i < k->n_chunks; i++)
        accept += heaviest > 0 ? pow(k->chunk[i] / heaviest, k->w.hanse->gamma) : 1.0;
    printf("  acceptance (weight / heaviest)^%g: mean %.6f (the share of a pass's draws taken, "
           "when the heaviest chunk is in the window)\n",
           k->w.hanse->gamma, accept / (double)k->n_chunks);
}

int chunks_weights(const weights_options *o)
{
    chunks_block b;
    int rc;
    if (o->set.config) {
        rc = chunks_block_from_config(&o->set, weighs,
                                      "stage that weighs positions (a chunk_unpacker with "
                                      "position_weights or diff_focus, a pool with hanse)",
                                      &b);
    } else {
        char *yaml = set_yaml(&o->set);
        rc = chunks_block_from_yaml("chunk_unpacker", yaml, &o->set, &b);
        free(yaml);
    }
    if (rc != 0)
        return 1;
    lc_stage_config sc = {.cls = b.cls, .block = b.block};
    walk k = {.w = weighting_of(&sc)};
    say_weighting(&k.w, b.origin);
    for (unsigned i = 0; b.cfg && i < b.cfg->n_stages; i++) {
        const lc_stage_config *other = &b.cfg->stages[i];
        if (other->block != b.block && weighs(other))
            printf("(stage '%s' weighs too: --stage %s)\n", other->name, other->name);
    }
    static const chunk_walk_hooks hooks = {weights_file, weights_chunk, weights_file_done};
    long files = chunks_walk(o->dir, &hooks, &k);
    int status = files < 0 ? 1 : 0;
    if (files >= 0) {
        printf("%s: %llu files, %llu chunks (%llu bad, skipped), %zu positions\n", o->dir,
               (unsigned long long)k.files, (unsigned long long)k.chunks, (unsigned long long)k.bad,
               k.n);
        if (k.n == 0) {
            fprintf(stderr,
                    "lcmon: chunks: %s: no positions to weigh (give a folder of .gz and "
                    ".tar games)\n",
                    o->dir);
            status = 1;
        } else {
            qsort(k.v, k.n, sizeof *k.v, by_float);
            say_distribution(k.w.diff_focus ? "keep probabilities" : "position weights", k.v, k.n,
                             true, NULL);
            printf("  unknown (orig_q or policy_kld not known: %s): %llu\n",
                   k.w.diff_focus ? "always kept" : "default_weight",
                   (unsigned long long)k.unknown);
            printf("  heaviest: %s, %.6f\n", k.heaviest, k.max);
            if (k.w.hanse)
                say_hanse(&k);
        }
    }
    free(k.v);
    free(k.chunk);
    chunks_block_fini(&b);
    return status;
}
