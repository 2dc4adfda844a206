/*
 * chunks_tool: see chunks_tool.h. The command lines of `lcmon chunks`, the
 * JSON helpers and the walk over a folder that stats and check share.
 */
#include "app/chunks/chunks_tool.h"

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
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: lcmon chunks dump FILE [--json] [--member N|NAME] [--positions A-B] [--policy]\n"
    "       lcmon chunks stats DIR [--json]\n"
    "       lcmon chunks check DIR [--json]\n"
    "       lcmon chunks rescore FILE [--member N|NAME] [-o OUT] [--list] [SETTINGS]\n"
    "       lcmon chunks weights DIR [SETTINGS]\n"
    "SETTINGS: --set KEY=VALUE (repeated), or --config FILE [--stage NAME]\n"
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
    "         1 when one is bad, a tar is cut short or damaged, or a file cannot\n"
    "         be read.\n"
    "  rescore  one game (a .gz, or the --member of a .tar) rescored as the\n"
    "         chunk_rescorer stage does it, written gzip'd to OUT (default\n"
    "         NAME_rescored.gz beside FILE), with what changed; --list adds a line\n"
    "         a changed position. SETTINGS: the stage's keys (--set\n"
    "         syzygy_paths=/tb --set dist_temp=0.5 ...) or the chunk_rescorer\n"
    "         stage of a pipeline config. Exit status 1 when the game is dropped\n"
    "         (upstream's Validate refuses it) or a file cannot be read.\n"
    "  weights  the sampling weights a config gives every position under DIR:\n"
    "         count, mean, quantiles and a histogram. SETTINGS: --config FILE\n"
    "         [--stage NAME] (a chunk_unpacker's position_weights or diff_focus,\n"
    "         or a pool's hanse), or --set KEY=VALUE for a position_weights\n"
    "         block (alpha, beta, gamma, tau, default_weight, q_weight, pol_scale;\n"
    "         q_weight 6 and pol_scale 3.5 unless set, as upstream's tool).\n";

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

/* rescore: FILE, its options and the settings. */
static int rescore_main(int argc, char **argv)
{
    rescore_options o = {0};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int took = chunks_settings_option(&o.set, argc, argv, i);
        if (took < 0)
            return 2;
        if (took > 0) {
            i += took - 1;
        } else if (!strcmp(a, "--list")) {
            o.list = true;
        } else if (!strcmp(a, "--member") || !strcmp(a, "-o")) {
            if (i + 1 >= argc)
                return usage_error("rescore: %s needs a value", a);
            *(a[1] == 'o' ? &o.out : &o.member) = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return usage_error("rescore: unknown option '%s'", a);
        } else if (!o.path) {
            o.path = a;
        } else {
            return usage_error("rescore: one file at a time ('%s' is a second)", a);
        }
    }
    if (!o.path)
        return usage_error("%s", "rescore needs a FILE (a .gz game, or a .tar with --member)");
    return chunks_rescore(&o);
}

/* weights: DIR and the settings. */
static int weights_main(int argc, char **argv)
{
    weights_options o = {0};
    for (int i = 2; i < argc; i++) {
        int took = chunks_settings_option(&o.set, argc, argv, i);
        if (took < 0)
            return 2;
        if (took > 0)
            i += took - 1;
        else if (argv[i][0] == '-' && argv[i][1])
            return usage_error("weights: unknown option '%s'", argv[i]);
        else if (!o.dir)
            o.dir = argv[i];
        else
            return usage_error("weights: one folder at a time ('%s' is a second)", argv[i]);
    }
    if (!o.dir)
        return usage_error("%s", "weights needs a DIR (a folder of .gz and .tar files)");
    return chunks_weights(&o);
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
    if (!strcmp(argv[1], "rescore"))
        return rescore_main(argc, argv);
    if (!strcmp(argv[1], "weights"))
        return weights_main(argc, argv);
    return usage_error("'%s' is not a verb: dump, stats, check, rescore or weights", argv[1]);
}

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

int chunks_settings_option(chunks_settings *s, int argc, char **argv, int i)
{
    const char *a = argv[i];
    if (strcmp(a, "--set") && strcmp(a, "--config") && strcmp(a, "--stage"))
        return 0;
    if (i + 1 >= argc) {
        usage_error("%s needs a value", a);
        return -1;
    }
    const char *v = argv[i + 1];
    if (!strcmp(a, "--config")) {
        s->config = v;
    } else if (!strcmp(a, "--stage")) {
        s->stage = v;
    } else if (!strchr(v, '=') || v[0] == '=') {
        usage_error("--set '%s': give KEY=VALUE (e.g. --set dist_temp=0.5)", v);
        return -1;
    } else if (s->n == CHUNKS_MAX_SETS) {
        usage_error("--set: at most %d of them", CHUNKS_MAX_SETS);
        return -1;
    } else {
        s->sets[s->n++] = v;
    }
    return 2;
}

int chunks_settings_check(const chunks_settings *s, const char *verb)
{
    if (s->stage && !s->config)
        return usage_error("%s: --stage names a stage of --config FILE (add --config)", verb);
    if (s->config && s->n)
        return usage_error("%s: give --set KEY=VALUE or --config FILE, not both (to change a "
                           "config's stage, edit the file or copy its keys to --set)",
                           verb);
    return 0;
}

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
