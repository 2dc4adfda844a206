/*
 * parquet_game_source against the Parquet fixtures (tests/parquet): every
 * game of every file comes out exactly once, whole, sorted by ply, with the
 * values the writer was given (x.tsv.gz); in file order without shuffling;
 * exactly once across threads and distributed ranks, the ranks in balance;
 * once per epoch; games whose rows span several row groups, or are
 * scattered through the file, come out whole, each row group read once;
 * the shuffle is one permutation of the whole file; a damaged row group
 * costs only the games at its edges; a stop midway frees everything; the
 * config's mistakes are named. Bad input: test_parquet_game_source_bad.c.
 */
#include "game_source_harness.h"

#include "parquet_writer.h"

/* ---- the cases ------------------------------------------------------------ */

/* One file at a time, in file order: every game once, whole and exact. */
static void test_each_fixture(void)
{
    for (size_t f = 0; f < N_GOOD; f++) {
        want w = {0};
        want_add(&w, good[f]);
        char path[4200], yaml[4400];
        snprintf(path, sizeof path, "%s/%s.parquet", fixtures, good[f]);
        snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, shuffle: false}", path);
        run_result r;
        run(yaml, 0, 1, &r);
        CHECK_EQ_U64(r.n, w.n_games);
        size_t last_first = 0;
        bool in_order = true, exact = true;
        for (size_t i = 0; i < r.n; i++) {
            want_game *g = want_find(&w, lc_basename(path), r.games[i].id);
            if (!g) {
                fprintf(stderr, "%s: unexpected game %s\n", good[f], r.games[i].id);
                exact = false;
                continue;
            }
            g->seen++;
            exact = exact && game_matches(g, &r.games[i]);
            in_order = in_order && (i == 0 || g->first_line > last_first);
            last_first = g->first_line;
        }
        for (size_t k = 0; k < w.n_games; k++)
            exact = exact && w.games[k].seen == 1;
        if (!exact || !in_order)
            fprintf(stderr, "fixture %s\n", good[f]);
        CHECK(exact);
        CHECK(in_order);
        CHECK_EQ_U64(count(&r.m, "games"), w.n_games);
        CHECK_EQ_U64(count(&r.m, "bad_files"), 0);
        CHECK_EQ_U64(count(&r.m, "bad_row_groups"), 0);
        CHECK_EQ_U64(count(&r.m, "bad_games_near_damage"), 0);
        run_free(&r);
        want_free(&w);
    }
}

/* Every good fixture in one directory, 2 threads, shuffled, over `world`
 * ranks: together the ranks emit every game exactly once. */
static void test_threads_and_ranks(void)
{
    const char *dir = tu_path("all");
    tu_mkdirs(dir);
    want w = {0};
    for (size_t f = 0; f < N_GOOD; f++) {
        char name[200];
        snprintf(name, sizeof name, "%s.parquet", good[f]);
        link_into(dir, name);
        want_add(&w, good[f]);
    }
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: 2}", dir);
    for (uint32_t world = 1; world <= 3; world++) {
        for (size_t k = 0; k < w.n_games; k++)
            w.games[k].seen = 0;
        bool exact = true;
        uint64_t other = 0;
        for (uint32_t rank = 0; rank < world; rank++) {
            run_result r;
            run(yaml, rank, world, &r);
            CHECK(r.n > 0);
            for (size_t i = 0; i < r.n; i++) {
                want_game *g = want_find(&w, r.games[i].file, r.games[i].id);
                if (!g) {
                    exact = false;
                    continue;
                }
                g->seen++;
                exact = exact && game_matches(g, &r.games[i]);
            }
            other += count(&r.m, "other_rank_games");
            run_free(&r);
        }
        for (size_t k = 0; k < w.n_games; k++)
            if (w.games[k].seen != 1) {
                fprintf(stderr, "world %u: %s %s seen %d times\n", world, w.games[k].file,
                        w.games[k].id, w.games[k].seen);
                exact = false;
            }
        CHECK(exact);
        if (world > 1)
            CHECK(other > 0);
    }
    want_free(&w);
}

/* Two epochs: every game twice, in another order the second time. */
static void test_epochs(void)
{
    want w = {0};
    want_add(&w, "duckdb_snappy_rowgroups");
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s/duckdb_snappy_rowgroups.parquet', epochs: 2}",
             fixtures);
    run_result r;
    run(yaml, 0, 1, &r);
    CHECK_EQ_U64(r.n, 2 * w.n_games);
    bool twice = true;
    for (size_t i = 0; i < r.n; i++) {
        want_game *g = want_find(&w, r.games[i].file, r.games[i].id);
        if (g)
            g->seen++;
        else
            twice = false;
    }
    for (size_t k = 0; k < w.n_games; k++)
        twice = twice && w.games[k].seen == 2;
    CHECK(twice);
    size_t same = 0, n = w.n_games;
    for (size_t i = 0; i < n && r.n == 2 * n; i++)
        same += strcmp(r.games[i].id, r.games[n + i].id) == 0;
    CHECK(same < n / 2);
    /* Shuffled within the file: not the file's order. */
    size_t in_order = 0;
    for (size_t i = 1; i < n && r.n == 2 * n; i++)
        in_order += strcmp(r.games[i - 1].id, r.games[i].id) < 0;
    CHECK(in_order < n - 1);
    CHECK_EQ_U64(count(&r.m, "files"), 2);
    run_free(&r);
    want_free(&w);
}

/* Make OUT from the row-group fixture with the benchmark's generator
 * (LC_PARQUET_GEN): ROWS rows in row groups of RG rows. false (and a note)
 * when the generator is not given. */
static bool generate(const char *out, const char *rows, const char *rg, const char *codec)
{
    const char *gen = getenv("LC_PARQUET_GEN");
    if (!gen || !*gen) {
        fprintf(stderr, "LC_PARQUET_GEN not set: skipping a generated-table case\n");
        return false;
    }
    char src[4200];
    snprintf(src, sizeof src, "%s/duckdb_snappy_rowgroups.parquet", fixtures);
    char *argv[] = {(char *)gen, (char *)out,   (char *)rows, "--row-group", (char *)rg,
                    "--codec",   (char *)codec, "--from",     src,           NULL};
    int rc = tu_run(argv, NULL);
    CHECK_EQ_INT(rc, 0);
    return rc == 0;
}

/* The games of r are whole source games of w (the file's last game may be
 * cut short by the generator's row count), each id once; returns the rows. */
static uint64_t check_whole_games(const want *w, const run_result *r)
{
    uint64_t rows = 0;
    size_t unmatched = 0, cut = 0;
    for (size_t i = 0; i < r->n; i++) {
        rows += r->games[i].n_rows;
        const want_game *match = NULL;
        for (size_t k = 0; k < w->n_games && !match; k++)
            if (game_prefix_matches(&w->games[k], &r->games[i], true))
                match = &w->games[k];
        unmatched += !match;
        cut += match && match->n != r->games[i].n_rows;
    }
    /* A game split at a row-group boundary would give a piece that starts
     * mid-game and matches none, or one cut short. */
    CHECK_EQ_U64(unmatched, 0);
    CHECK(cut <= 1);
    bool unique = true;
    for (size_t i = 0; i < r->n && unique; i++)
        for (size_t j = i + 1; j < r->n; j++)
            if (strcmp(r->games[i].id, r->games[j].id) == 0) {
                unique = false;
                break;
            }
    CHECK(unique);
    return rows;
}

/* Games longer than a row group (row groups of 7 rows, so games span up to
 * dozens of them): whole, each row group read exactly once, and over 2 or 3
 * ranks every game exactly once with each rank reading only some of the
 * row groups. */
static void test_games_across_row_groups(void)
{
    const char *out = tu_path("spanning.parquet");
    if (!generate(out, "3000", "7", "uncompressed"))
        return;
    want w = {0};
    want_add(&w, "duckdb_snappy_rowgroups");
    const uint64_t n_rg = (3000 + 6) / 7;
    for (unsigned threads = 1; threads <= 2; threads++) {
        char yaml[4400];
        snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: %u}", out, threads);
        run_result r;
        run(yaml, 0, 1, &r);
        CHECK_EQ_U64(check_whole_games(&w, &r), 3000);
        CHECK_EQ_U64(count(&r.m, "games"), r.n);
        CHECK_EQ_U64(count(&r.m, "row_groups"), n_rg);
        run_free(&r);
    }
    for (uint32_t world = 2; world <= 3; world++) {
        char yaml[4400];
        snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: 2}", out);
        run_result all = {0};
        size_t cap = 0;
        for (uint32_t rank = 0; rank < world; rank++) {
            run_result r;
            run(yaml, rank, world, &r);
            CHECK(r.n > 0);
            uint64_t read = count(&r.m, "row_groups");
            CHECK(read > 0 && read < n_rg);
            CHECK(count(&r.m, "other_rank_games") > 0);
            for (size_t i = 0; i < r.n; i++) {
                if (all.n == cap) {
                    cap = cap ? 2 * cap : 256;
                    all.games = realloc(all.games, cap * sizeof *all.games);
                }
                all.games[all.n++] = r.games[i];
            }
            free(r.games); /* the items now belong to all */
        }
        CHECK_EQ_U64(check_whole_games(&w, &all), 3000);
        run_free(&all);
    }
    want_free(&w);
}

/* The shuffle is one permutation of the whole file, not row group after row
 * group: with two row groups, the first half of the games emitted holds
 * games of both. */
static void test_file_wide_shuffle(void)
{
    const char *out = tu_path("two_groups.parquet");
    if (!generate(out, "4000", "2000", "zstd"))
        return;
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: 2}", out);
    run_result r;
    run(yaml, 0, 1, &r);
    CHECK(r.n >= 40);
    /* Ids are g000000000, g000000001, ... in file order: the first half of
     * the file's games have the lower ids. */
    size_t low = 0, half = r.n / 2;
    for (size_t i = 0; i < half; i++) {
        char max_low[16];
        snprintf(max_low, sizeof max_low, "g%09zu", half);
        low += strcmp(r.games[i].id, max_low) < 0;
    }
    CHECK(low > half / 5 && low < half * 4 / 5);
    CHECK_EQ_U64(count(&r.m, "row_groups"), 2);
    run_free(&r);
}

/* A table with a damaged middle: the row groups that fail are counted, the
 * games at their edges (which may continue into them) are dropped and
 * counted, and every game emitted is whole. */
static void test_damaged_row_groups(void)
{
    const char *out = tu_path("damaged.parquet");
    if (!generate(out, "3000", "50", "zstd"))
        return;
    if (!damage(out, out, 10, 20, 10000))
        return;
    want w = {0};
    want_add(&w, "duckdb_snappy_rowgroups");
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: 2}", out);
    run_result r;
    run(yaml, 0, 1, &r);
    uint64_t rows = check_whole_games(&w, &r);
    CHECK(rows > 1000 && rows < 3000);
    CHECK(count(&r.m, "bad_row_groups") >= 1);
    CHECK(count(&r.m, "bad_games_near_damage") >= 1);
    CHECK_EQ_U64(count(&r.m, "bad_files"), 0);
    run_free(&r);
    want_free(&w);
}

/* A stop in the middle of an endless run, with files planned, row groups
 * queued and a file being emitted: the stage stops promptly and frees
 * everything (the sanitizer builds check the leaks). */
static void test_stop_midway(void)
{
    const char *out = tu_path("spanning.parquet"); /* made by the row-group case */
    if (access(out, R_OK) != 0)
        return;
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', threads: 2}", tu_path(""));
    lc_stage_env env = {.seed = 7, .rank = 0, .world_size = 1, .rank_source = "test"};
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_standalone_new(lc_stage_class_find("parquet_game_source"), "games", yaml, NULL, 4,
                               &env, &s, &err));
    if (!s)
        return;
    CHECK_OK(lc_standalone_start(s, &err));
    lc_game_item it;
    size_t got = 0;
    uint64_t deadline = lc_now_ns() + 30000000000ull;
    while (got < 20 && lc_queue_get_until(s->output, &it, NULL, deadline) == 0) {
        free(it.mem);
        got++;
    }
    CHECK_EQ_U64(got, 20);
    uint64_t t0 = lc_now_ns();
    lc_standalone_stop(s);
    CHECK(lc_now_ns() - t0 < 10000000000ull);
    lc_standalone_free(s);
}

/* ---- ranks in balance --------------------------------------------------- */

/* A table of `games` games of 5 + (g * 7) % 40 rows each, written in
 * `groups` row groups, rows in game order or shuffled across the file. */
static uint64_t write_rank_table(const char *path, int games, int groups, bool shuffled)
{
    static const pqw_column_spec cols[5] = {
        {"game_id", PQW_STRING},     {"ply", PQW_INT64},        {"fen", PQW_STRING},
        {"played_move", PQW_STRING}, {"best_move", PQW_STRING},
    };
    size_t n = 0;
    for (int g = 0; g < games; g++)
        n += 5 + (size_t)(g * 7) % 40;
    uint32_t *game = malloc(n * sizeof *game), *ply = malloc(n * sizeof *ply);
    size_t k = 0;
    for (int g = 0; g < games; g++)
        for (int p = 0; p < 5 + (g * 7) % 40; p++, k++) {
            game[k] = (uint32_t)g;
            ply[k] = (uint32_t)p;
        }
    if (shuffled) {
        uint32_t x = 99;
        for (size_t i = n; i > 1; i--) {
            x = x * 1664525u + 1013904223u;
            size_t j = x % i;
            uint32_t t = game[i - 1];
            game[i - 1] = game[j];
            game[j] = t;
            t = ply[i - 1];
            ply[i - 1] = ply[j];
            ply[j] = t;
        }
    }
    pqw_options opt = pqw_default_options();
    lc_error err;
    lc_error_clear(&err);
    pqw_writer *w = NULL;
    CHECK_OK(pqw_create(path, cols, 5, &opt, &w, &err));
    size_t per = (n + (size_t)groups - 1) / (size_t)groups;
    for (size_t lo = 0; w && lo < n; lo += per) {
        size_t hi = lo + per < n ? lo + per : n;
        for (int c = 0; c < 5; c++) {
            for (size_t i = lo; i < hi; i++) {
                char id[16];
                snprintf(id, sizeof id, "g%04u", game[i]);
                if (c == 0)
                    pqw_string(w, id, strlen(id));
                else if (c == 1)
                    pqw_int64(w, ply[i]);
                else if (c == 2)
                    pqw_string(w, FEN0, strlen(FEN0));
                else
                    pqw_string(w, "e2e4", 4);
            }
            CHECK_OK(pqw_end_column(w, &err));
        }
        CHECK_OK(pqw_end_row_group(w, &err));
    }
    if (w)
        CHECK_OK(pqw_close(w, &err));
    free(game);
    free(ply);
    return n;
}

/* Every layout splits evenly: games in order or shuffled across the file,
 * many row groups or one. Each game goes to exactly one rank, each rank
 * within 5% of its share of the rows, and the ranks report it. */
static void test_ranks_in_balance(void)
{
    static const struct {
        const char *name;
        int groups;
        bool shuffled;
    } layouts[] = {{"ordered", 8, false},
                   {"shuffled", 8, true},
                   {"one_group", 1, false},
                   {"one_group_shuffled", 1, true}};
    enum { GAMES = 300, WORLD = 3 };
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
        char dir[4400], path[4600], yaml[4800];
        snprintf(dir, sizeof dir, "%s-%s", tu_path("ranks"), layouts[l].name);
        tu_mkdirs(dir);
        snprintf(path, sizeof path, "%s/t.parquet", dir);
        uint64_t rows = write_rank_table(path, GAMES, layouts[l].groups, layouts[l].shuffled);
        snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: 1}", dir);
        int seen[GAMES] = {0};
        uint64_t got[WORLD] = {0};
        for (uint32_t rank = 0; rank < WORLD; rank++) {
            run_result r;
            run(yaml, rank, WORLD, &r);
            for (size_t i = 0; i < r.n; i++) {
                int g = atoi(r.games[i].id + 1);
                if (g >= 0 && g < GAMES)
                    seen[g]++;
                got[rank] += r.games[i].n_rows;
            }
            CHECK_EQ_U64(count(&r.m, "rank_rows"), got[rank]);
            CHECK_EQ_U64(count(&r.m, "all_ranks_rows"), rows);
            run_free(&r);
        }
        int once = 0;
        for (int g = 0; g < GAMES; g++)
            once += seen[g] == 1;
        CHECK_EQ_INT(once, GAMES);
        printf("ranks, %s: rows %llu/%llu/%llu of %llu\n", layouts[l].name,
               (unsigned long long)got[0], (unsigned long long)got[1], (unsigned long long)got[2],
               (unsigned long long)rows);
        for (int r = 0; r < WORLD; r++) {
            double share = (double)got[r] / (double)rows;
            CHECK(share > 1.0 / WORLD - 0.05 && share < 1.0 / WORLD + 0.05);
        }
    }
}

/* ---- watching for new files ------------------------------------------- */

/* With one epoch, a file moved in while the first is being read joins that
 * epoch (the stage is held at a full output queue until the file is seen,
 * so the epoch cannot end first); with watch: false it would not. */
static void test_watch_joins_epoch(void)
{
    char *dir = lc_xasprintf("%s/watched", tu_tmpdir());
    tu_mkdirs(dir);
    char *first = lc_xasprintf("%s/a.parquet", dir);
    uint64_t rows_a = write_rank_table(first, 40, 2, false);
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', threads: 1, epochs: 1, shuffle: false}", dir);
    lc_stage_env env = {.seed = 7, .rank = 0, .world_size = 1, .rank_source = "test"};
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_standalone_new(lc_stage_class_find("parquet_game_source"), "games", yaml, NULL, 2,
                               &env, &s, &err));
    if (!s)
        return;
    CHECK_OK(lc_standalone_start(s, &err));
    /* The epoch is listed once a's games come out. */
    uint64_t listed = lc_now_ns() + (uint64_t)(20e9 * tu_slow());
    while (lc_queue_size(s->output) == 0 && lc_now_ns() < listed)
        tu_sleep_ms(5);
    CHECK(lc_queue_size(s->output) > 0);
    /* Written under a hidden name, then renamed into place (IN_MOVED_TO). */
    char *tmp = lc_xasprintf("%s/.b.parquet.tmp", dir), *second = lc_xasprintf("%s/b.parquet", dir);
    uint64_t rows_b = write_rank_table(tmp, 30, 1, false);
    CHECK(rename(tmp, second) == 0);
    lc_stage_metrics m;
    uint64_t noticed = 0, deadline = lc_now_ns() + (uint64_t)(20e9 * tu_slow());
    while (noticed == 0 && lc_now_ns() < deadline) {
        lc_standalone_flush(s, &m);
        noticed += count(&m, "files_noticed");
        if (!noticed)
            tu_sleep_ms(20);
    }
    CHECK_EQ_U64(noticed, 1);
    lc_game_item it;
    uint64_t games = 0, rows = 0;
    while (lc_queue_get_until(s->output, &it, NULL, lc_now_ns() + 60000000000ull) == 0) {
        games++;
        rows += it.n_rows;
        free(it.mem);
    }
    CHECK(lc_queue_closed(s->output));
    CHECK_EQ_U64(games, 70);
    CHECK_EQ_U64(rows, rows_a + rows_b);
    lc_standalone_free(s);
    free(dir);
    free(first);
    free(tmp);
    free(second);
}

static void test_config_errors(void)
{
    const lc_stage_class *cls = lc_stage_class_find("parquet_game_source");
    void *block = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK(lc_config_parse_block(cls, "{path: x, threads: 0}", &block, &err) != 0);
    CHECK(strstr(err.msg, "threads") != NULL);
    lc_error_clear(&err);
    CHECK(lc_config_parse_block(cls, "{threads: 1}", &block, &err) != 0);
    CHECK(strstr(err.msg, "path") != NULL);
    /* A path that does not exist: refused at start, naming it. */
    lc_stage *s = NULL;
    lc_error_clear(&err);
    CHECK_OK(
        lc_standalone_new(cls, "games", "{path: /nonexistent/games}", NULL, 4, NULL, &s, &err));
    lc_error_clear(&err);
    CHECK(lc_standalone_start(s, &err) != 0);
    CHECK(strstr(err.msg, "/nonexistent/games") != NULL);
    lc_standalone_free(s);
}

int main(void)
{
    if (find_fixtures() != 0)
        return 1;
    test_each_fixture();
    test_threads_and_ranks();
    test_epochs();
    test_games_across_row_groups();
    test_file_wide_shuffle();
    test_damaged_row_groups();
    test_stop_midway();
    test_ranks_in_balance();
    test_watch_joins_epoch();
    test_config_errors();
    return check_finish();
}
