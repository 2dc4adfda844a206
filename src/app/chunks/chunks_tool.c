/*
 * chunks_tool: see chunks_tool.h. The command lines of `lcmon chunks`: the
 * usage, each verb's options, and the table of verbs.
 */
#include "app/chunks/chunks_tool.h"

#include "app/chunks/chunks_verbs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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

/* --set KEY=VALUE, --config FILE and --stage NAME at argv[i]: the
 * arguments it took (2), 0 when it is none of them, -1 for a usage error
 * (said). */
static int settings_option(chunks_settings *s, int argc, char **argv, int i)
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

/* Whether s is usable: --stage only with --config, and --set or --config,
 * not both; else 2 with the usage error said. verb names the verb. */
static int settings_check(const chunks_settings *s, const char *verb)
{
    if (s->stage && !s->config)
        return usage_error("%s: --stage names a stage of --config FILE (add --config)", verb);
    if (s->config && s->n)
        return usage_error("%s: give --set KEY=VALUE or --config FILE, not both (to change a "
                           "config's stage, edit the file or copy its keys to --set)",
                           verb);
    return 0;
}

/* rescore: FILE, its options and the settings. */
static int rescore_main(int argc, char **argv)
{
    rescore_options o = {0};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int took = settings_option(&o.set, argc, argv, i);
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
    int usage = settings_check(&o.set, "rescore");
    return usage ? usage : chunks_rescore(&o);
}

/* weights: DIR and the settings. */
static int weights_main(int argc, char **argv)
{
    weights_options o = {0};
    for (int i = 2; i < argc; i++) {
        int took = settings_option(&o.set, argc, argv, i);
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
    int usage = settings_check(&o.set, "weights");
    return usage ? usage : chunks_weights(&o);
}

/* The verbs: a name, and its command line's reader. */
static int stats_main(int argc, char **argv)
{
    return folder_main(argc, argv, chunks_stats);
}

static int check_main(int argc, char **argv)
{
    return folder_main(argc, argv, chunks_check);
}

static const struct {
    const char *name;
    int (*main)(int argc, char **argv);
} verbs[] = {
    {"dump", dump_main},       {"stats", stats_main},     {"check", check_main},
    {"rescore", rescore_main}, {"weights", weights_main},
};

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
    for (size_t v = 0; v < sizeof verbs / sizeof verbs[0]; v++)
        if (!strcmp(argv[1], verbs[v].name))
            return verbs[v].main(argc, argv);
    return usage_error("'%s' is not a verb: dump, stats, check, rescore or weights", argv[1]);
}
