/*
 * chunks_tool: see chunks_tool.h. The command lines of `lcmon chunks`, the
 * JSON helpers and the walk over a folder that stats and check share.
 */
#include "chunks_tool.h"

#include "core/clock.h"
#include "core/dirwalk.h"
#include "core/error.h"
#include "core/log.h"
#include "core/text.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: lcmon chunks dump FILE [--json] [--member N|NAME] [--positions A-B] [--policy]\n"
    "       lcmon chunks stats DIR [--json]\n"
    "       lcmon chunks check DIR [--json]\n"
    "\n"
    "Looks at lc0 training data without running a pipeline.\n"
    "  dump   the records of a .gz game, or of the members of a .tar (all, or the\n"
    "         one --member names by number from 0 or by name), one block a\n"
    "         position: the board, castling, side to move, rule50, the value\n"
    "         fields, the moves; --policy adds the legal moves' policy shares;\n"
    "         --positions A-B (from 0; A, A- and -B too) picks positions;\n"
    "         --json writes one JSON object a record instead.\n"
    "  stats  every .gz and .tar under DIR: record versions, input formats,\n"
    "         results, game lengths and bad chunks as histograms; --json for\n"
    "         scripts.\n"
    "  check  the chunk validator's verdict on every .gz and .tar under DIR, one\n"
    "         line a file and a summary; exit status 0 when every chunk is good,\n"
    "         1 when one is bad or a file cannot be read.\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "lcmon: chunks: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n%s", usage_text);
    return 2;
}

/* "A-B", "A", "A-", "-B" (0-based, inclusive) into o->first and o->last. */
static bool parse_positions(const char *s, dump_options *o)
{
    char *end;
    const char *dash = strchr(s, '-');
    o->first = 0;
    o->last = -1;
    if (dash != s) {
        errno = 0;
        o->first = strtol(s, &end, 10);
        if (errno || end == s || o->first < 0 || (dash ? end != dash : *end != '\0'))
            return false;
        if (!dash)
            o->last = o->first;
    }
    if (dash && dash[1]) {
        errno = 0;
        o->last = strtol(dash + 1, &end, 10);
        if (errno || *end || end == dash + 1 || o->last < o->first)
            return false;
    }
    return true;
}

/* The options of dump after its FILE. */
static int dump_main(int argc, char **argv)
{
    dump_options o = {.first = 0, .last = -1};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            o.json = true;
        } else if (!strcmp(a, "--policy")) {
            o.policy = true;
        } else if (!strcmp(a, "--member") || !strcmp(a, "--positions")) {
            if (i + 1 >= argc)
                return usage_error("%s needs a value", a);
            if (a[2] == 'm')
                o.member = argv[++i];
            else if (!parse_positions(argv[++i], &o))
                return usage_error("--positions '%s': give A-B, A, A- or -B (from 0)", argv[i]);
        } else if (a[0] == '-' && a[1]) {
            return usage_error("dump: unknown option '%s'", a);
        } else if (!o.path) {
            o.path = a;
        } else {
            return usage_error("dump: one file at a time ('%s' is a second)", a);
        }
    }
    if (!o.path)
        return usage_error("%s", "dump needs a FILE (a .gz game or a .tar of them)");
    return chunks_dump(&o);
}

/* stats and check: DIR and --json. */
static int folder_main(int argc, char **argv, int (*verb)(const char *, bool))
{
    const char *dir = NULL;
    bool json = false;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = true;
        else if (argv[i][0] == '-' && argv[i][1])
            return usage_error("unknown option '%s'", argv[i]);
        else if (!dir)
            dir = argv[i];
        else
            return usage_error("one folder at a time ('%s' is a second)", argv[i]);
    }
    if (!dir)
        return usage_error("%s needs a DIR (a folder of .gz and .tar files)", argv[1]);
    return verb(dir, json);
}

int chunks_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        fputs(usage_text, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_text, stdout);
            return 0;
        }
    if (!strcmp(argv[1], "dump"))
        return dump_main(argc, argv);
    if (!strcmp(argv[1], "stats"))
        return folder_main(argc, argv, chunks_stats);
    if (!strcmp(argv[1], "check"))
        return folder_main(argc, argv, chunks_check);
    return usage_error("'%s' is not a verb: dump, stats or check", argv[1]);
}

/* ---- JSON ---- */

void chunks_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
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
