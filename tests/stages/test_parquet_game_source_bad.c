/*
 * parquet_game_source on bad input: malformed files are counted and
 * skipped while the good ones are read; rows with a null fen or move are
 * passed on with a NULL string and, through game_tokenizer, spoil only
 * their position in encoder mode but the whole game in decoder mode (a
 * table written with the Parquet writer of gen/, as no fixture has such
 * nulls); columns of the wrong kind skip their file; an endless run over
 * files that are all bad neither spins nor floods the log; a file that
 * opens but does not read is warned about once in a run, however many
 * epochs.
 */
#include "game_source_harness.h"

#include "format/parquet/parquet.h"
#include "parquet_writer.h"

/* Malformed files next to a good one: each is counted and skipped; the good
 * file's games all come out; the stage ends normally. */
static void test_bad_files(void)
{
    const char *dir = tu_path("mixed");
    tu_mkdirs(dir);
    char bad_dir[4200];
    snprintf(bad_dir, sizeof bad_dir, "%s/bad", fixtures);
    DIR *d = opendir(bad_dir);
    CHECK(d != NULL);
    size_t n_bad = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strstr(e->d_name, ".parquet") || strcmp(e->d_name, "good.parquet") == 0)
            continue;
        char name[400];
        snprintf(name, sizeof name, "bad/%s", e->d_name);
        link_into(dir, name);
        n_bad++;
    }
    if (d)
        closedir(d);
    link_into(dir, "duckdb_gzip_ply1.parquet");
    char junk[4400];
    snprintf(junk, sizeof junk, "%s/not_parquet.parquet", dir);
    tu_write_file(junk, "hello, not a table\n", 19);
    snprintf(junk, sizeof junk, "%s/empty.parquet", dir);
    tu_write_file(junk, "", 0);

    /* A game table whose middle (pages, not the footer) is overwritten:
     * some of its row groups fail to read. */
    char src[4200];
    snprintf(src, sizeof src, "%s/hyparquet_v2_snappy.parquet", fixtures);
    snprintf(junk, sizeof junk, "%s/corrupt_pages.parquet", dir);
    damage(src, junk, 6, 5, 1000);

    want w = {0};
    want_add(&w, "duckdb_gzip_ply1");
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: 2}", dir);
    run_result r;
    run(yaml, 0, 1, &r);
    size_t from_good = 0;
    bool exact = true;
    for (size_t i = 0; i < r.n; i++) {
        if (strcmp(r.games[i].file, "duckdb_gzip_ply1.parquet") != 0)
            continue; /* games of row groups of the bad files that do read */
        want_game *g = want_find(&w, r.games[i].file, r.games[i].id);
        if (!g) {
            exact = false;
            continue;
        }
        g->seen++;
        from_good++;
        exact = exact && game_matches(g, &r.games[i]);
    }
    for (size_t k = 0; k < w.n_games; k++)
        exact = exact && w.games[k].seen == 1;
    CHECK(exact);
    CHECK_EQ_U64(from_good, w.n_games);
    /* Files that do not open (magic, footer, schema), and row groups that do
     * not read: each bad file is one or the other or both. */
    uint64_t bad_files = count(&r.m, "bad_files"), bad_units = count(&r.m, "bad_row_groups");
    CHECK(bad_files >= 6);
    CHECK(bad_files + bad_units >= n_bad + 2);
    CHECK(n_bad >= 15);
    run_free(&r);
    want_free(&w);
}

/* ---- a tiny table with null values ------------------------------------- */

/* What no fixture has, written by the Parquet writer
 * (gen/parquet_writer.h): one row group; columns game_id, fen,
 * played_move, best_move (OPTIONAL BYTE_ARRAY, UTF8) and ply (OPTIONAL
 * INT64), no win, draw or loss; uncompressed v1 data pages of PLAIN values,
 * the definition levels in the RLE/bit-packed hybrid. */

typedef struct null_row {
    const char *id;
    int64_t ply;
    const char *fen, *played, *best; /* NULL: a null value */
} null_row;

enum { W_ID, W_PLY, W_FEN, W_PLAYED, W_BEST, W_COLS };

static void write_null_table(const char *path, const null_row *rows, size_t n)
{
    static const pqw_column_spec cols[W_COLS] = {
        {"game_id", PQW_STRING},     {"ply", PQW_INT64},        {"fen", PQW_STRING},
        {"played_move", PQW_STRING}, {"best_move", PQW_STRING},
    };
    pqw_options opt = pqw_default_options();
    opt.codec = LC_PARQUET_CODEC_UNCOMPRESSED;
    opt.dictionary = false;
    lc_error err;
    lc_error_clear(&err);
    pqw_writer *w = NULL;
    CHECK_OK(pqw_create(path, cols, W_COLS, &opt, &w, &err));
    if (!w)
        return;
    for (int c = 0; c < W_COLS; c++) {
        for (size_t i = 0; i < n; i++) {
            const char *v = c == W_ID       ? rows[i].id
                            : c == W_FEN    ? rows[i].fen
                            : c == W_PLAYED ? rows[i].played
                                            : rows[i].best;
            if (c == W_PLY)
                pqw_int64(w, rows[i].ply);
            else if (v)
                pqw_string(w, v, strlen(v));
            else
                pqw_null(w);
        }
        CHECK_OK(pqw_end_column(w, &err));
    }
    CHECK_OK(pqw_end_row_group(w, &err));
    CHECK_OK(pqw_close(w, &err));
}

#define FEN1 "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1"
#define FEN2 "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq e6 0 2"

/* Game a: the best move of its second position is null. Game b: whole.
 * Game c: the played move of its first position is null. Rows out of ply
 * order, to show the null stays with its row. */
static const null_row null_rows[] = {
    {"a", 2, FEN2, "g1f3", "g1f3"}, {"a", 0, FEN0, "e2e4", "d2d4"}, {"a", 1, FEN1, "e7e5", NULL},
    {"b", 0, FEN0, "d2d4", "e2e4"}, {"b", 1, FEN1, "c7c5", "c7c5"}, {"c", 0, FEN0, NULL, "e2e4"},
    {"c", 1, FEN1, "e7e5", "e7e5"},
};
#define N_NULL_ROWS (sizeof null_rows / sizeof null_rows[0])

static const char *null_table(void)
{
    static char path[4200];
    if (!path[0]) {
        snprintf(path, sizeof path, "%s", tu_path("nulls.parquet"));
        write_null_table(path, null_rows, N_NULL_ROWS);
    }
    return path;
}

/* The source passes every game on, nulls as NULL strings in their rows. */
static void test_null_values_passed_on(void)
{
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, shuffle: false}", null_table());
    run_result r;
    run(yaml, 0, 1, &r);
    CHECK_EQ_U64(r.n, 3);
    CHECK_EQ_U64(count(&r.m, "games"), 3);
    CHECK_EQ_U64(count(&r.m, "rows"), N_NULL_ROWS);
    CHECK_EQ_U64(count(&r.m, "bad_files") + count(&r.m, "bad_row_groups"), 0);
    if (r.n == 3) {
        const lc_game_item *a = &r.games[0], *c = &r.games[2];
        CHECK_EQ_STR(a->id, "a");
        CHECK_EQ_INT(a->n_rows, 3);
        if (a->n_rows == 3) {
            CHECK(same_text(a->rows[0].best, a->rows[0].best_len, "d2d4"));
            CHECK(a->rows[1].best == NULL && a->rows[1].best_len == 0);
            CHECK(same_text(a->rows[1].played, a->rows[1].played_len, "e7e5"));
            CHECK(same_text(a->rows[1].fen, a->rows[1].fen_len, FEN1));
            CHECK(same_text(a->rows[2].best, a->rows[2].best_len, "g1f3"));
        }
        CHECK_EQ_STR(c->id, "c");
        CHECK(c->n_rows == 2 && c->rows[0].played == NULL && c->rows[0].best != NULL);
    }
    run_free(&r);
}

/* The table through game_tokenizer: what a null value spoils depends on the
 * mode. Returns the targets (encoder) of the samples, in order. */
typedef struct tokenized {
    uint64_t samples;
    int64_t targets[16];
    lc_stage_metrics m;
} tokenized;

static void tokenize_null_table(const char *tok_yaml, tokenized *o)
{
    memset(o, 0, sizeof *o);
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, shuffle: false}", null_table());
    lc_stage_env env = {.seed = 7, .rank = 0, .world_size = 1, .rank_source = "test"};
    lc_stage *src = NULL, *tok = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_standalone_new(lc_stage_class_find("parquet_game_source"), "games", yaml, NULL, 64,
                               &env, &src, &err));
    CHECK_OK(lc_standalone_new(lc_stage_class_find("game_tokenizer"), "tokens", tok_yaml,
                               src->output, 64, &env, &tok, &err));
    CHECK_OK(lc_standalone_start(tok, &err));
    CHECK_OK(lc_standalone_start(src, &err));
    lc_batch_item b;
    while (lc_queue_get_until(tok->output, &b, NULL, lc_now_ns() + 60000000000ull) == 0) {
        int t = lc_batch_layout_find(b.batch->layout, "target");
        for (uint64_t i = 0; t >= 0 && i < b.batch->rows; i++)
            if (o->samples + i < sizeof o->targets / sizeof o->targets[0])
                o->targets[o->samples + i] = ((int64_t *)lc_batch_tensor(b.batch, (unsigned)t))[i];
        o->samples += b.batch->rows;
        lc_batch_free(b.batch);
    }
    CHECK(lc_queue_closed(tok->output));
    lc_standalone_stop(src);
    lc_standalone_stop(tok);
    lc_standalone_flush(tok, &o->m);
    lc_standalone_free(tok);
    lc_standalone_free(src);
}

/* Encoder: only the position with the null best move is skipped and
 * counted; game a's other two positions are kept, and both of game c (its
 * null played move does not matter). Without the shuffle buffer, so that
 * the samples keep file order. */
static void test_null_values_encoder(void)
{
    tokenized o;
    tokenize_null_table("{mode: encoder, batch_size: 4, shuffle_buffer: 0}", &o);
    CHECK_EQ_U64(o.samples, N_NULL_ROWS - 1);
    CHECK_EQ_U64(count(&o.m, "bad_positions_missing_values"), 1);
    CHECK_EQ_U64(count(&o.m, "bad_positions_out_of_vocabulary"), 0);
    CHECK_EQ_U64(count(&o.m, "bad_positions_fen"), 0);
    CHECK_EQ_U64(count(&o.m, "positions"), N_NULL_ROWS - 1);
    /* File order, each game by ply: a (d2d4, [null], g1f3), b, c. */
    const char *const moves[] = {"d2d4", "g1f3", "e2e4", "c7c5", "e2e4", "e7e5"};
    for (size_t i = 0; i < sizeof moves / sizeof moves[0] && i < o.samples; i++)
        CHECK_EQ_INT((int)o.targets[i], lc_chess_move_id(moves[i], 4));
}

/* Decoder: a game with a null best or played move is skipped whole and
 * counted once; game b alone gives a sample. */
static void test_null_values_decoder(void)
{
    tokenized o;
    tokenize_null_table("{mode: decoder, batch_size: 4, max_seq_len: 160}", &o);
    CHECK_EQ_U64(o.samples, 1);
    CHECK_EQ_U64(count(&o.m, "bad_games_missing_values"), 2);
    CHECK_EQ_U64(count(&o.m, "bad_games_out_of_vocabulary"), 0);
    CHECK_EQ_U64(count(&o.m, "bad_games_fen"), 0);
    CHECK_EQ_U64(count(&o.m, "games"), 3);
    CHECK_EQ_U64(count(&o.m, "positions"), 2);
}

/* Columns of the wrong kind (a numeric fen, string outcomes): each file is
 * skipped and counted, named in the log, and nothing crashes. */
static void write_kinds_table(const char *path, bool fen_numeric, bool outcome_strings)
{
    pqw_column_spec cols[8] = {
        {"game_id", PQW_STRING},
        {"ply", PQW_INT64},
        {"fen", fen_numeric ? PQW_INT64 : PQW_STRING},
        {"played_move", PQW_STRING},
        {"best_move", PQW_STRING},
        {"win", outcome_strings ? PQW_STRING : PQW_DOUBLE},
        {"draw", PQW_DOUBLE},
        {"loss", PQW_DOUBLE},
    };
    pqw_options opt = pqw_default_options();
    lc_error err;
    lc_error_clear(&err);
    pqw_writer *w = NULL;
    CHECK_OK(pqw_create(path, cols, 8, &opt, &w, &err));
    if (!w)
        return;
    for (int c = 0; c < 8; c++) {
        for (int i = 0; i < 3; i++) {
            if (cols[c].type == PQW_INT64)
                pqw_int64(w, i);
            else if (cols[c].type == PQW_DOUBLE)
                pqw_double(w, 0.5);
            else
                pqw_string(w,
                           c == 2   ? FEN0
                           : c == 0 ? "g"
                           : c == 5 ? "1"
                                    : "e2e4",
                           c == 2             ? strlen(FEN0)
                           : c == 0 || c == 5 ? 1
                                              : 4);
        }
        CHECK_OK(pqw_end_column(w, &err));
    }
    CHECK_OK(pqw_end_row_group(w, &err));
    CHECK_OK(pqw_close(w, &err));
}

static void test_wrong_column_kinds(void)
{
    const char *dir = tu_path("kinds");
    tu_mkdirs(dir);
    char path[4400];
    snprintf(path, sizeof path, "%s/numeric_fen.parquet", dir);
    write_kinds_table(path, true, false);
    snprintf(path, sizeof path, "%s/string_win.parquet", dir);
    write_kinds_table(path, false, true);
    snprintf(path, sizeof path, "%s/fine.parquet", dir);
    write_kinds_table(path, false, false);
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 1, threads: 1}", dir);
    run_result r;
    run(yaml, 0, 1, &r);
    CHECK_EQ_U64(count(&r.m, "bad_files"), 2);
    CHECK_EQ_U64(r.n, 1); /* the one game of fine.parquet */
    run_free(&r);
}

/* ---- endless epochs: no spin, no flood ---------------------------------- */

/* Run an endless (epochs: 0) source over dir for `seconds`, draining its
 * games; returns the epochs it started. */
static int64_t run_for(const char *dir, double seconds, size_t *games)
{
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 0, threads: 2}", dir);
    lc_stage_env env = {.seed = 7, .rank = 0, .world_size = 1, .rank_source = "test"};
    lc_stage *s = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK_OK(lc_standalone_new(lc_stage_class_find("parquet_game_source"), "games", yaml, NULL, 64,
                               &env, &s, &err));
    if (!s)
        return -1;
    CHECK_OK(lc_standalone_start(s, &err));
    *games = 0;
    uint64_t end = lc_now_ns() + (uint64_t)(seconds * 1e9);
    lc_game_item it;
    while (lc_now_ns() < end) {
        if (lc_queue_get_until(s->output, &it, NULL, lc_now_ns() + 20000000ull) == 0) {
            free(it.mem);
            (*games)++;
        }
    }
    lc_stage_metrics m;
    lc_standalone_flush(s, &m);
    const lc_metric_slot *g = lc_metrics_find(&m, "epoch");
    int64_t epochs = g ? g->value : -1;
    lc_standalone_stop(s);
    lc_standalone_free(s);
    return epochs;
}

/* dir holds only the n files named, none of which can be read: for 2.5 s
 * without end, each is warned about once, and so is that none could be
 * read; then the source waits longer and longer instead of spinning
 * through epochs. */
static void check_quiet_when_all_bad(const char *dir, const char *const *names, size_t n)
{
    uint64_t mark = tu_log_mark();
    size_t games = 0;
    int64_t epochs = run_for(dir, 2.5, &games);
    CHECK_EQ_U64(games, 0);
    CHECK(epochs >= 1 && epochs <= 3); /* 1 s, then 2 s of waiting */
    for (size_t i = 0; i < n; i++)
        CHECK_EQ_U64(tu_log_count(mark, LC_LOG_INFO, names[i]), 1);
    char none[64];
    snprintf(none, sizeof none, "none of the %zu .parquet files", n);
    CHECK_EQ_U64(tu_log_count(mark, LC_LOG_INFO, none), 1);
    printf("only bad files (%s, ...), 2.5 s: %lld epochs\n", names[0], (long long)epochs);
}

static void test_endless_epochs_quiet(void)
{
    /* Only files that do not open. */
    const char *dir = tu_path("allbad");
    tu_mkdirs(dir);
    link_into(dir, "bad/schema_too_short.parquet");
    link_into(dir, "bad/bad_magic_tail.parquet");
    static const char *const names[] = {"schema_too_short", "bad_magic_tail"};
    check_quiet_when_all_bad(dir, names, 2);

    /* A good file read over and over: many epochs, one info line. */
    dir = tu_path("onegood");
    tu_mkdirs(dir);
    link_into(dir, "duckdb_gzip_ply1.parquet");
    size_t games = 0;
    uint64_t mark = tu_log_mark();
    int64_t epochs = run_for(dir, 1.5 * tu_slow(), &games);
    CHECK(games > 0);
    CHECK(epochs > 3);
    CHECK_EQ_U64(tu_log_count(mark, LC_LOG_INFO, ": epoch "), 1);
    printf("one good file, 1.5 s: %lld epochs, %zu games, one epoch line\n", (long long)epochs,
           games);
}

/* Issue 25: a file that opens but does not read was warned about every
 * epoch. Next to a good file over three epochs: one warning for it in the
 * run, and every failed row group counted each time. Alone and without
 * end: the source waits between epochs as it does for files that do not
 * open, and a new run warns once again. */
static void test_unreadable_file_warned_once(void)
{
    const char *dir = tu_path("unreadable");
    tu_mkdirs(dir);
    char src[4200], bad[4400], good_link[4400];
    snprintf(src, sizeof src, "%s/duckdb_snappy_rowgroups.parquet", fixtures);
    snprintf(bad, sizeof bad, "%s/unreadable.parquet", dir);
    size_t n_rg = tu_parquet_garble_pages(src, bad);
    CHECK(n_rg >= 2);
    link_into(dir, "duckdb_gzip_ply1.parquet");
    want w = {0};
    want_add(&w, "duckdb_gzip_ply1");
    char yaml[4400];
    snprintf(yaml, sizeof yaml, "{path: '%s', epochs: 3, threads: 2}", dir);
    uint64_t mark = tu_log_mark();
    run_result r;
    run(yaml, 0, 1, &r);
    CHECK_EQ_U64(r.n, 3 * w.n_games);
    CHECK_EQ_U64(count(&r.m, "bad_row_groups"), 3 * n_rg);
    CHECK_EQ_U64(count(&r.m, "bad_files"), 0);
    CHECK_EQ_U64(tu_log_count(mark, LC_LOG_WARN, "unreadable.parquet"), 1);
    CHECK_EQ_U64(tu_log_count(mark, LC_LOG_WARN, "malformed page header"), 1);
    printf("an unreadable file over 3 epochs: %llu bad row groups, one warning\n",
           (unsigned long long)count(&r.m, "bad_row_groups"));
    run_free(&r);
    want_free(&w);

    snprintf(good_link, sizeof good_link, "%s/duckdb_gzip_ply1.parquet", dir);
    CHECK_EQ_INT(unlink(good_link), 0);
    static const char *const names[] = {"unreadable.parquet"};
    check_quiet_when_all_bad(dir, names, 1);
}

int main(void)
{
    if (find_fixtures() != 0)
        return 1;
    test_bad_files();
    test_null_values_passed_on();
    test_null_values_encoder();
    test_null_values_decoder();
    test_wrong_column_kinds();
    test_endless_epochs_quiet();
    test_unreadable_file_warned_once();
    return check_finish();
}
