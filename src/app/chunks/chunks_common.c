/*
 * chunks_common: see chunks_common.h. What the verbs of `lcmon chunks`
 * share: the JSON helpers, the progress line and histogram rows, the walk
 * over a folder, and a stage's settings read from --set or --config.
 */
#include "app/chunks/chunks_common.h"

#include "core/clock.h"
#include "core/dirwalk.h"
#include "core/error.h"
#include "core/log.h"
#include "core/text.h"
#include "pipeline/config.h"
#include "stages/registry.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- JSON ---- */

static void put_run(void *ctx, const char *p, size_t n)
{
    fwrite(p, 1, n, ctx);
}

void chunks_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    lc_text_json(s, put_run, f);
    fputc('"', f);
}

void chunks_json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

const char *chunks_load_reason(int code)
{
    switch (code) {
    case LC_EGZIP:
        return "corrupt_gzip";
    case LC_EEMPTY:
        return "empty";
    case LC_EVERSION:
        return "unknown_version";
    case LC_EFORMAT:
        return "malformed";
    case LC_ETRUNC:
        return "truncated";
    default:
        return "unreadable";
    }
}

/* ---- progress ---- */

static double progress_at;
static bool progress_shown;

void chunks_progress(size_t done, size_t total, uint64_t chunks)
{
    if (!isatty(STDERR_FILENO))
        return;
    double now = lc_now_seconds();
    if (done < total && now - progress_at < 0.1)
        return;
    progress_at = now;
    progress_shown = true;
    fprintf(stderr, "\r\033[K%zu of %zu files, %llu chunks", done, total,
            (unsigned long long)chunks);
    fflush(stderr);
}

void chunks_progress_done(void)
{
    if (progress_shown)
        fprintf(stderr, "\r\033[K");
    progress_shown = false;
}

/* ---- a stage's settings ---- */

char *chunks_settings_yaml(const chunks_settings *s, const char *indent)
{
    char *yaml = lc_xstrdup("");
    for (unsigned k = 0; k < s->n; k++) {
        const char *eq = strchr(s->sets[k], '=');
        char *more = lc_xasprintf("%s%s%.*s: %s\n", yaml, indent, (int)(eq - s->sets[k]),
                                  s->sets[k], eq + 1);
        free(yaml);
        yaml = more;
    }
    return yaml;
}

/* err's lines on stderr, each after "lcmon: chunks: " and `what`. */
static void say_errors(const char *what, const char *msg)
{
    for (const char *p = msg; *p;) {
        size_t n = strcspn(p, "\n");
        fprintf(stderr, "lcmon: chunks: %s%.*s\n", what, (int)n, p);
        p += n + (p[n] ? 1 : 0);
    }
}

int chunks_block_from_config(const chunks_settings *s, bool (*fits)(const lc_stage_config *sc),
                             const char *what, chunks_block *b)
{
    memset(b, 0, sizeof *b);
    lc_error err;
    lc_error_clear(&err);
    if (lc_config_load_file(s->config, &b->cfg, &err) != 0) {
        say_errors("", err.msg);
        return 1;
    }
    const lc_stage_config *sc = s->stage ? lc_config_stage(b->cfg, s->stage) : NULL;
    for (unsigned i = 0; !s->stage && !sc && i < b->cfg->n_stages; i++)
        if (fits(&b->cfg->stages[i]))
            sc = &b->cfg->stages[i];
    if (!sc || !fits(sc)) {
        if (!sc && s->stage)
            fprintf(stderr,
                    "lcmon: chunks: %s has no stage '%s' (give --stage with the name of a %s)\n",
                    s->config, s->stage, what);
        else if (!sc)
            fprintf(stderr, "lcmon: chunks: %s has no %s (add one, or give --set KEY=VALUE)\n",
                    s->config, what);
        else
            fprintf(stderr,
                    "lcmon: chunks: %s: stage '%s' is a %s, not a %s (give --stage with the "
                    "name of one)\n",
                    s->config, s->stage, sc->cls->type_name, what);
        chunks_block_fini(b);
        return 1;
    }
    b->cls = sc->cls;
    b->block = sc->block;
    snprintf(b->origin, sizeof b->origin, "stage '%s' of %s", sc->name, s->config);
    return 0;
}

int chunks_block_from_yaml(const char *type, const char *yaml, const chunks_settings *s,
                           chunks_block *b)
{
    memset(b, 0, sizeof *b);
    b->cls = lc_stage_class_find(type);
    lc_error err;
    lc_error_clear(&err);
    if (lc_config_parse_block(b->cls, yaml, &b->block, &err) != 0) {
        say_errors("--set: ", err.msg);
        b->block = NULL;
        return 1;
    }
    size_t at = (size_t)snprintf(b->origin, sizeof b->origin, "%s", s->n ? "--set" : "defaults");
    for (unsigned k = 0; k < s->n && at < sizeof b->origin; k++)
        at += (size_t)snprintf(b->origin + at, sizeof b->origin - at, " %s", s->sets[k]);
    return 0;
}

void chunks_block_fini(chunks_block *b)
{
    if (b->cfg)
        lc_config_free(b->cfg);
    else if (b->block)
        lc_config_free_block(b->cls, b->block);
    memset(b, 0, sizeof *b);
}

/* ---- histograms ---- */

/* Columns for the longest bar: what the terminal leaves beside the label
 * and the numbers, or 60 when stdout is not a terminal. */
static int bar_columns(int label_width)
{
    struct winsize ws;
    if (!isatty(STDOUT_FILENO) || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0)
        return 60;
    int cols = (int)ws.ws_col - label_width - 24;
    return cols < 10 ? 10 : cols;
}

void chunks_bar_row(const char *label, int label_width, uint64_t n, uint64_t max, uint64_t total)
{
    int cols = bar_columns(label_width);
    int len = max ? (int)((double)n / (double)max * cols + 0.5) : 0;
    if (n && !len)
        len = 1;
    printf("  %-*s ", label_width, label);
    for (int i = 0; i < len; i++)
        fputs("\u2588", stdout);
    printf("%*s %llu (%.1f%%)\n", cols - len, "", (unsigned long long)n,
           total ? 100.0 * (double)n / (double)total : 0.0);
}

long chunks_find_member(const lc_chunk_source *src, const char *want, const char *path)
{
    size_t n = lc_chunk_source_count(src);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(lc_chunk_source_chunk_name(src, i), want))
            return (long)i;
    char *end;
    long k = strtol(want, &end, 10);
    if (*want && !*end && isdigit((unsigned char)want[0]) && k >= 0 && (size_t)k < n)
        return k;
    fprintf(stderr,
            "lcmon: chunks: %s: no member '%s' (it has %zu chunks; give a number from 0 or a "
            "name that `tar tf` lists)\n",
            path, want, n);
    return -1;
}

/* ---- the walk ---- */

/* The skipped members of src, then each chunk loaded and checked. */
static uint64_t walk_chunks(const char *path, lc_chunk_source *src, const chunk_walk_hooks *h,
                            void *ctx)
{
    for (size_t k = 0; k < lc_chunk_source_skipped_members(src); k++) {
        const char *why = NULL;
        const char *name = lc_chunk_source_skipped_member(src, k, &why);
        chunk_visit v = {.path = path,
                         .src = src,
                         .chunk = k,
                         .member = name,
                         .reason = "skipped_member",
                         .detail = why,
                         .record = -1};
        h->chunk(ctx, &v);
    }
    size_t n = lc_chunk_source_count(src);
    for (size_t i = 0; i < n; i++) {
        chunk_visit v = {.path = path,
                         .src = src,
                         .chunk = i,
                         .record = -1,
                         .member = lc_chunk_source_chunk_name(src, i)};
        lc_chunk_data data;
        lc_error err;
        lc_error_clear(&err);
        int rc = lc_chunk_source_load(src, i, LC_INFLATE_AUTO, &data, &err);
        if (rc != 0) {
            v.reason = chunks_load_reason(rc);
            v.detail = err.msg;
        } else {
            uint32_t bad_at;
            if (lc_chunk_check(&data, &bad_at, &v.reason) != 0)
                v.record = bad_at;
            else
                v.data = &data;
        }
        h->chunk(ctx, &v);
        lc_chunk_data_fini(&data);
    }
    return n;
}

long chunks_walk(const char *dir, const chunk_walk_hooks *h, void *ctx)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        fprintf(stderr, "lcmon: chunks: %s: %s; give a folder of .gz and .tar files\n", dir,
                strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
        /* nothing to walk: "0 files, 0 bad" would pass for a clean folder */
        fprintf(stderr,
                "lcmon: chunks: %s is %s, not a folder or a file; give a folder of .gz and "
                ".tar files (or one of them)\n",
                dir,
                S_ISFIFO(st.st_mode)   ? "a named pipe (FIFO)"
                : S_ISCHR(st.st_mode)  ? "a character device"
                : S_ISBLK(st.st_mode)  ? "a block device"
                : S_ISSOCK(st.st_mode) ? "a socket"
                                       : "a special file");
        return -1;
    }
    /* "data/" and "data" list the same paths. */
    char *root = lc_xstrdup(dir);
    for (size_t len = strlen(root); len > 1 && root[len - 1] == '/'; len--)
        root[len - 1] = '\0';
    size_t n = 0;
    char **files = lc_list_files(root, "", &n, NULL, NULL); /* says what it cannot list */
    free(root);
    /* The verbs report skipped members and bad files themselves. */
    lc_log_set_stderr(false);
    uint64_t chunks = 0;
    for (size_t i = 0; i < n; i++) {
        chunks_progress(i, n, chunks);
        const char *path = files[i];
        lc_chunk_source *src = NULL;
        lc_error err;
        lc_error_clear(&err);
        int rc = lc_chunk_source_open(path, &src, &err);
        if (rc == -ENOTSUP)
            h->file(ctx, path, NULL, NULL, NULL);
        else if (rc != 0)
            h->file(ctx, path, NULL,
                    rc == LC_EEMPTY    ? "empty_file"
                    : rc == LC_EFORMAT ? "not_gzip"
                                       : "unreadable_file",
                    err.msg);
        else
            h->file(ctx, path, src, NULL, NULL);
        if (src)
            chunks += walk_chunks(path, src, h, ctx);
        h->file_done(ctx, path, src);
        lc_chunk_source_unref(src);
        free(files[i]);
    }
    chunks_progress(n, n, chunks);
    chunks_progress_done();
    lc_log_set_stderr(true);
    free(files);
    return (long)n;
}
