/*
 * lcmon_gen_games: endgame-rich lc0 games for the rescorer's benchmark
 * (gen/lc0_games.h says how they are made).
 *
 *   lcmon_gen_games OUTDIR --count N [--seed S] [--first K]
 *                   --openings DIR --syzygy DIR [--quiet]
 *
 * Writes OUTDIR/game_NNNNNN.gz for N = K .. K+count-1 (K default 0, so that
 * a corpus of other games can be numbered before them), game i reaching the
 * ending i % 5 (KQvK, KRvK, KPvK, KRvKP, KBNvK). --openings names the folder
 * of real lc0 games whose openings are used (tests/data), --syzygy the
 * Syzygy tables of 3 and 4 pieces (tests/syzygy). One line a game
 * (unless --quiet), then a summary: games and positions a ending, how the
 * games ended, how many carry a result the tables contradict.
 */
#include "core/error.h"
#include "format/lc0/record.h"
#include "format/lc0/rescore/tablebase.h"
#include "lc0_games.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct options {
    const char *out, *openings, *syzygy;
    unsigned long long count, seed, first;
    bool quiet;
} options;

static int usage(void)
{
    fprintf(stderr, "usage: lcmon_gen_games OUTDIR --count N [--seed S] [--first K] "
                    "--openings DIR --syzygy DIR [--quiet]\n");
    return 2;
}

static bool parse(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(a, "--quiet") == 0) {
            o->quiet = true;
            continue;
        }
        if (a[0] != '-') {
            if (o->out)
                return false;
            o->out = a;
            continue;
        }
        if (!v)
            return false;
        i++;
        if (strcmp(a, "--openings") == 0)
            o->openings = v;
        else if (strcmp(a, "--syzygy") == 0)
            o->syzygy = v;
        else if (strcmp(a, "--count") == 0)
            o->count = strtoull(v, &end, 10);
        else if (strcmp(a, "--seed") == 0)
            o->seed = strtoull(v, &end, 10);
        else if (strcmp(a, "--first") == 0)
            o->first = strtoull(v, &end, 10);
        else
            return false;
        if (end && *end)
            return false;
    }
    return o->out && o->openings && o->syzygy && o->count > 0;
}

typedef struct summary {
    unsigned long long games[LC_GEN_ENDINGS], positions[LC_GEN_ENDINGS], ends[LC_GEN_ENDS];
    unsigned long long wrong, tries, mistakes, blunders, total;
} summary;

static void print_summary(const summary *s)
{
    unsigned long long games = 0;
    for (int e = 0; e < LC_GEN_ENDINGS; e++)
        games += s->games[e];
    printf("games: %llu, positions: %llu, playouts tried: %llu\n", games, s->total, s->tries);
    for (int e = 0; e < LC_GEN_ENDINGS; e++)
        printf("  %-6s %6llu games %9llu positions\n", lc_gen_ending_name(e), s->games[e],
               s->positions[e]);
    printf("ended by:");
    for (int e = 0; e < LC_GEN_ENDS; e++)
        if (s->ends[e])
            printf(" %s %llu;", lc_gen_end_name(e), s->ends[e]);
    printf("\nresult the tables contradict: %llu games; moves of the endings not best: %llu; "
           "blunders marked: %llu\n",
           s->wrong, s->mistakes, s->blunders);
}

static int make_one(const options *o, const lc_gen_openings *op, const lc_tablebases *tb,
                    unsigned long long i, summary *s, lc_error *err)
{
    lc_gen_game g;
    int ending = (int)(i % LC_GEN_ENDINGS);
    int rc = lc_gen_game_make(op, tb, o->seed, i, ending, &g, err);
    if (rc)
        return rc;
    char path[4096];
    snprintf(path, sizeof path, "%s/game_%06llu.gz", o->out, o->first + i);
    rc = lc_gen_write_gz(path, g.records, g.n, err);
    const lc_gen_info *in = &g.info;
    if (rc == 0 && !o->quiet)
        printf("%s %s: %zu records (opening %u, playout %u, ending %u), %s, result %+d%s, "
               "%u tries\n",
               path, lc_gen_ending_name(ending), g.n, in->opening, in->playout, in->tablebase,
               lc_gen_end_name(in->end), in->result_white,
               in->wrong_result ? " (the tables say otherwise)" : "", in->tries);
    s->games[ending]++;
    s->positions[ending] += g.n;
    s->ends[in->end]++;
    s->wrong += in->wrong_result;
    s->tries += in->tries;
    s->mistakes += in->mistakes;
    s->blunders += in->blunders;
    s->total += g.n;
    lc_gen_game_free(&g);
    return rc;
}

int main(int argc, char **argv)
{
    options o;
    if (!parse(argc, argv, &o))
        return usage();
    lc_error err = {0};
    if (mkdir(o.out, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "lcmon_gen_games: %s: cannot create: %s\n", o.out, strerror(errno));
        return 1;
    }
    lc_gen_openings op;
    lc_tablebases *tb = NULL;
    if (lc_gen_openings_load(o.openings, &op, &err) != 0 ||
        lc_tablebases_open(o.syzygy, NULL, &tb, &err) != 0) {
        fprintf(stderr, "lcmon_gen_games: %s\n", err.msg);
        return 1;
    }
    summary s;
    memset(&s, 0, sizeof s);
    int rc = 0;
    for (unsigned long long i = 0; i < o.count && rc == 0; i++)
        rc = make_one(&o, &op, tb, i, &s, &err);
    if (rc)
        fprintf(stderr, "lcmon_gen_games: %s\n", err.msg);
    else
        print_summary(&s);
    lc_tablebases_close(tb);
    lc_gen_openings_free(&op);
    return rc ? 1 : 0;
}
