/*
 * chunks_rescore: `lcmon chunks rescore`, one game rescored as the
 * chunk_rescorer stage rescores a chunk from the pool (upstream's
 * rescore_chunk tool): the stage's settings (--set, or a config's stage)
 * read by the stage's own table and checks, its tables opened, the game's
 * records put through the stage's own records path
 * (lc_rescorer_records: rescored, converted, given their targets), written
 * gzip'd as lc0 writes a chunk (the records one after the other), and what
 * changed said: the positions whose results, plies_left, policy or planes
 * differ (compared here, record against record) and the rescorer's counts;
 * a game upstream's Validate refuses is not written (exit status 1).
 */
#include "app/chunks/chunks_verbs.h"

#include "core/error.h"
#include "core/log.h"
#include "core/text.h"
#include "format/lc0/frame.h"
#include "format/lc0/rescore/tablebase.h"
#include "pipeline/config.h"
#include "stages/chunk_rescorer_settings.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static bool is_rescorer(const lc_stage_config *sc)
{
    return !strcmp(sc->cls->type_name, "chunk_rescorer");
}

/* The settings: a config's chunk_rescorer stage, or the --set keys. */
static int load_settings(const rescore_options *o, chunks_block *b)
{
    if (o->set.config)
        return chunks_block_from_config(&o->set, is_rescorer, "chunk_rescorer stage", b);
    char *yaml = chunks_settings_yaml(&o->set, "");
    int rc = chunks_block_from_yaml("chunk_rescorer", *yaml ? yaml : "{}", &o->set, b);
    free(yaml);
    return rc;
}

/* The game: the .gz's one chunk, or the .tar's --member (or its only
 * one). 0, or 1 said; *name the member's name (src's). */
static int load_game(const rescore_options *o, lc_chunk_source **src, lc_chunk_data *d,
                     const char **name)
{
    lc_error err;
    lc_error_clear(&err);
    if (lc_chunk_source_open(o->path, src, &err) != 0) {
        fprintf(stderr,
                "lcmon: chunks: %s (rescore reads a .gz game, or a member of a .tar: check the "
                "path)\n",
                err.msg);
        return 1;
    }
    size_t n = lc_chunk_source_count(*src);
    long k = 0;
    if (o->member)
        k = chunks_find_member(*src, o->member, o->path);
    else if (n != 1)
        fprintf(stderr, "lcmon: chunks: %s holds %zu games: pick one with --member N|NAME\n",
                o->path, n);
    if (k < 0 || (!o->member && n != 1))
        return 1;
    *name = lc_chunk_source_chunk_name(*src, (size_t)k);
    lc_error_clear(&err);
    if (lc_chunk_source_load(*src, (size_t)k, LC_INFLATE_AUTO, d, &err) != 0) {
        fprintf(stderr, "lcmon: chunks: %s (a bad chunk: nothing to rescore)\n", err.msg);
        return 1;
    }
    if (d->n_records == 0) {
        fprintf(stderr, "lcmon: chunks: %s: member '%s' holds no positions\n", o->path, *name);
        lc_chunk_data_fini(d);
        return 1;
    }
    return 0;
}

/* OUT, or NAME_rescored.gz beside FILE (NAME: the game's file or member
 * name without its .gz). malloc'd. */
static char *output_path(const rescore_options *o, const char *member)
{
    if (o->out)
        return lc_xstrdup(o->out);
    const char *slash = strrchr(o->path, '/');
    int dir_len = slash ? (int)(slash - o->path + 1) : 0;
    const char *base = strrchr(member, '/') ? strrchr(member, '/') + 1 : member;
    size_t len = strlen(base);
    if (len > 3 && !strcmp(base + len - 3, ".gz"))
        len -= 3;
    return lc_xasprintf("%.*s%.*s_rescored.gz", dir_len, o->path, (int)len, base);
}

/* The records gzip'd into path (through path.tmp, renamed when whole). */
static int write_gz(const char *path, const uint8_t *data, size_t len)
{
    char *tmp = lc_xasprintf("%s.tmp", path);
    gzFile f = gzopen(tmp, "wb");
    bool ok = f != NULL;
    for (size_t done = 0; ok && done < len;) {
        unsigned chunk = len - done > (1u << 30) ? 1u << 30 : (unsigned)(len - done);
        int w = gzwrite(f, data + done, chunk);
        ok = w > 0;
        done += ok ? (size_t)w : 0;
    }
    if (f && gzclose(f) != Z_OK)
        ok = false;
    if (ok && rename(tmp, path) != 0)
        ok = false;
    if (!ok) {
        fprintf(stderr,
                "lcmon: chunks: cannot write %s: %s (give -o OUT in a folder you can "
                "write)\n",
                path, errno ? strerror(errno) : "gzip error");
        unlink(tmp);
    }
    free(tmp);
    return ok ? 0 : 1;
}

/* What differs between two readings of a position. */
typedef struct change {
    bool result, plies, policy, planes;
    unsigned entries; /* of the 1858 policy entries, those whose value differs */
} change;

static bool same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static change compare(const lc_frame *a, const lc_frame *b, float *pa, float *pb)
{
    change c = {0};
    c.result = !same_bits(a->result_q, b->result_q) || !same_bits(a->result_d, b->result_d) ||
               a->result != b->result;
    c.plies = !same_bits(a->plies_left, b->plies_left);
    lc_frame_policy(a, pa);
    lc_frame_policy(b, pb);
    for (unsigned k = 0; k < LC_POLICY_SIZE; k++)
        c.entries += !same_bits(pa[k], pb[k]);
    c.policy = c.entries > 0;
    c.planes =
        memcmp(a->planes, b->planes, sizeof a->planes) != 0 || a->input_format != b->input_format;
    return c;
}

static void list_change(uint32_t i, const lc_frame *a, const lc_frame *b, const change *c)
{
    printf("  %4u:", i);
    if (c->result)
        printf(" result_q %g -> %g, result_d %g -> %g;", a->result_q, b->result_q, a->result_d,
               b->result_d);
    if (c->plies)
        printf(" plies_left %g -> %g;", a->plies_left, b->plies_left);
    if (c->policy)
        printf(" policy: %u of the %d entries;", c->entries, LC_POLICY_SIZE);
    if (c->planes)
        printf(" planes: input format %u -> %u;", a->input_format, b->input_format);
    printf("\n");
}

/* The positions that changed, counted (and listed). */
static void say_changes(const rescore_options *o, const lc_chunk_data *before, const uint8_t *after,
                        uint32_t version, uint32_t size)
{
    unsigned n_result = 0, n_plies = 0, n_policy = 0, n_planes = 0;
    float *pa = lc_xmalloc(2 * LC_POLICY_SIZE * sizeof *pa), *pb = pa + LC_POLICY_SIZE;
    for (uint32_t i = 0; i < before->n_records; i++) {
        lc_frame a, b;
        if (lc_frame_from_record(before->data + (size_t)i * before->record_size, before->version,
                                 &a, NULL) != 0)
            continue;
        if (lc_frame_from_record(after + (size_t)i * size, version, &b, NULL) == 0) {
            change c = compare(&a, &b, pa, pb);
            n_result += c.result;
            n_plies += c.plies;
            n_policy += c.policy;
            n_planes += c.planes;
            if (o->list && (c.result || c.plies || c.policy || c.planes))
                list_change(i, &a, &b, &c);
            lc_frame_fini(&b);
        }
        lc_frame_fini(&a);
    }
    free(pa);
    printf("changed: results (result_q, result_d) of %u positions, plies_left of %u, the policy "
           "of %u, the planes of %u\n",
           n_result, n_plies, n_policy, n_planes);
}

static void say_counts(const lc_rescorer_game *g, uint32_t want)
{
    const lc_rescore_counts *k = &g->counts;
    printf("rescorer: %llu probed, %llu answered; %llu results changed by the tables, %llu by "
           "the second pass (%llu DTZ proofs); %llu plies_left set; %llu policies sharpened, "
           "%llu boosted; %llu blunders, %llu positions deblundered\n",
           (unsigned long long)k->probed, (unsigned long long)k->hits,
           (unsigned long long)k->results_changed, (unsigned long long)k->second_pass,
           (unsigned long long)k->dtz_proofs, (unsigned long long)k->plies_left_changed,
           (unsigned long long)k->policies_sharpened, (unsigned long long)k->policies_boosted,
           (unsigned long long)k->blunders, (unsigned long long)k->deblundered);
    static const char *const conv[] = {"", "converted", "not converted (V3 and V4 have no format)",
                                       "not converted (lcmon cannot convert that pair)",
                                       "conversion failed: "};
    if (g->convert != LC_CONVERT_NONE)
        printf("new_input_format: from %u to %u: %s%s\n", g->from, want, conv[g->convert],
               g->convert_error);
    if (g->st)
        printf("short-term targets: %u positions (V6 written as V7)\n", g->st);
}

/* Rescore the loaded game d with the settings c and write it. */
static int rescore_game(const rescore_options *o, const lc_rescorer_config *c,
                        const lc_tablebases *tb, const lc_chunk_data *d, const char *member)
{
    uint32_t version = d->version, size = (uint32_t)d->record_size, n = (uint32_t)d->n_records;
    uint8_t *data = lc_xmalloc((size_t)n * size);
    memcpy(data, d->data, (size_t)n * size);
    lc_rescore_config rc;
    lc_rescorer_rescore_config(c, tb, &rc);
    lc_st_scratch st = {0};
    lc_rescorer_game g;
    int result = lc_rescorer_records(c, &rc, &data, &version, &size, n, false, &st, &g);
    lc_st_scratch_fini(&st);
    int status = 0;
    if (result == LC_RESCORE_DROPPED) {
        printf("dropped: %s (upstream's Validate refuses the game; nothing written; "
               "--set invalid_games=keep rescores it anyway)\n",
               g.why);
        status = 1;
    } else {
        say_changes(o, d, data, version, size);
        say_counts(&g, c->new_input_format);
        char *out = output_path(o, member);
        struct stat in_st, out_st;
        if (stat(o->path, &in_st) == 0 && stat(out, &out_st) == 0 &&
            in_st.st_ino == out_st.st_ino && in_st.st_dev == out_st.st_dev) {
            fprintf(stderr, "lcmon: chunks: %s is the input: give -o OUT another file\n", out);
            status = 1;
        } else {
            status = write_gz(out, data, (size_t)n * size);
            if (status == 0)
                printf("written: %s (V%u, %u positions)\n", out, version, n);
        }
        free(out);
    }
    free(data);
    return status;
}

int chunks_rescore(const rescore_options *o)
{
    lc_log_set_stderr(false); /* the tables' lines: what is said here says it */
    chunks_block b;
    int status = load_settings(o, &b);
    const lc_rescorer_config *c = b.block;
    lc_tablebases *tb = NULL;
    lc_error err;
    lc_error_clear(&err);
    if (status == 0 && (c->syzygy_paths || c->gaviota_paths)) {
        lc_problems ps = LC_PROBLEMS_INIT;
        lc_rescorer_preflight(c, &ps);
        if (lc_problems_to_error(&ps, &err) != 0 ||
            lc_tablebases_open(c->syzygy_paths, c->gaviota_paths, &tb, &err) != 0) {
            fprintf(stderr, "lcmon: chunks: %s: %s\n", b.origin, err.msg);
            status = 1;
        }
        lc_problems_fini(&ps);
    }
    lc_chunk_source *src = NULL;
    lc_chunk_data d;
    const char *member = NULL;
    if (status == 0 && (status = load_game(o, &src, &d, &member)) == 0) {
        char line[512] = "none";
        if (tb)
            lc_tablebases_describe(tb, line, sizeof line);
        printf("%s: member '%s': V%u, %zu positions; settings: %s; tablebases: %s\n", o->path,
               member, d.version, d.n_records, b.origin, line);
        status = rescore_game(o, c, tb, &d, member);
        lc_chunk_data_fini(&d);
    }
    if (src)
        lc_chunk_source_unref(src);
    lc_tablebases_close(tb);
    if (b.block)
        chunks_block_fini(&b);
    lc_log_set_stderr(true);
    return status;
}
