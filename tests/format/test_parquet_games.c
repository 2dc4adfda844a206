/*
 * The games of a Parquet games table (format/parquet/games.h): rows of a
 * game scattered across row groups and out of ply order come back as one
 * game in ply order; the two orders (shuffled by seed, or by first row)
 * hold every game once; a damaged row group leaves out exactly the games
 * that reach it; the ranks' shares cover every game exactly once and are in
 * balance; the column checks say what is wrong.
 */
#include "check.h"
#include "parquet_writer.h"
#include "testutil.h"

#include "format/parquet/games.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GAMES 40
#define PLIES 6
#define GROUPS 4

static const pqw_column_spec columns[] = {
    {"game_id", PQW_INT64},      {"ply", PQW_INT64},        {"fen", PQW_STRING},
    {"played_move", PQW_STRING}, {"best_move", PQW_STRING},
};

/* Game g's ply p as its FEN ("g7 p3") so that a row says where it belongs.
 * Rows are laid out so that every game spans row groups, plies reversed in
 * odd games: row r holds game r % GAMES, ply r / GAMES (or its reverse). */
static void write_table(const char *path)
{
    pqw_options opt = pqw_default_options();
    pqw_writer *w = NULL;
    lc_error err;
    CHECK_OK(pqw_create(path, columns, 5, &opt, &w, &err));
    size_t rows = GAMES * PLIES, per = rows / GROUPS;
    for (size_t rg = 0; rg < GROUPS; rg++) {
        for (int c = 0; c < 5; c++) {
            for (size_t r = rg * per; r < (rg + 1) * per; r++) {
                int64_t g = (int64_t)(r % GAMES), p = (int64_t)(r / GAMES);
                if (g % 2)
                    p = PLIES - 1 - p;
                char fen[32];
                snprintf(fen, sizeof fen, "g%lld p%lld", (long long)g, (long long)p);
                if (c == 0)
                    pqw_int64(w, g);
                else if (c == 1)
                    pqw_int64(w, p);
                else
                    pqw_string(w, c == 2 ? fen : "e2e4", c == 2 ? strlen(fen) : 4);
            }
            CHECK_OK(pqw_end_column(w, &err));
        }
        CHECK_OK(pqw_end_row_group(w, &err));
    }
    CHECK_OK(pqw_close(w, &err));
}

typedef struct table {
    lc_parquet_file *pf;
    int col[LC_GAME_COLS];
    size_t n_rg;
    uint64_t rg_first[GROUPS + 1];
} table;

static void open_table(const char *path, table *t)
{
    lc_error err;
    CHECK_OK(lc_parquet_open(path, &t->pf, &err));
    CHECK_OK(lc_game_columns(t->pf, path, t->col, &err));
    CHECK(t->col[LC_GCOL_WIN] < 0); /* optional, absent */
    t->n_rg = lc_parquet_num_row_groups(t->pf);
    CHECK_EQ_INT(t->n_rg, GROUPS);
    uint64_t rows = 0;
    for (size_t rg = 0; rg < t->n_rg; rg++) {
        t->rg_first[rg] = rows;
        rows += (uint64_t)lc_parquet_row_group_rows(t->pf, rg);
    }
    t->rg_first[t->n_rg] = rows;
}

/* Read the row groups flagged in need (NULL: all; damaged ones are not
 * read), keeping mine's games (NULL: all), into a list of chunks. */
static lc_game_chunk *read_all(table *t, const uint8_t *need, const uint8_t *damaged,
                               const lc_hash_set *mine)
{
    lc_game_chunk *list = NULL;
    for (size_t rg = 0; rg < t->n_rg; rg++) {
        if ((need && !need[rg]) || (damaged && damaged[rg]))
            continue;
        lc_game_chunk *ch = calloc(1, sizeof *ch);
        uint64_t no_id;
        lc_error err;
        CHECK_OK(
            lc_game_read_row_group(t->pf, t->col, rg, t->rg_first[rg], mine, ch, &no_id, &err));
        CHECK_EQ_U64(no_id, 0);
        ch->next = list;
        list = ch;
    }
    return list;
}

static void free_all(lc_game_chunk *list)
{
    while (list) {
        lc_game_chunk *next = list->next;
        lc_game_chunk_free(list);
        list = next;
    }
}

/* Every game of gg: whole, in ply order, its rows its own; seen[g] counts. */
static void check_games(lc_game_groups *gg, int *seen, int want_plies)
{
    for (size_t i = 0; i < gg->n_games; i++) {
        size_t n;
        const lc_game_ref *rows = lc_game_rows(gg, i, &n);
        CHECK_EQ_INT(n, want_plies);
        const lc_parquet_column *id = &rows[0].chunk->cols[LC_GCOL_ID];
        int64_t g = id->i64[rows[0].i];
        CHECK(g >= 0 && g < GAMES);
        if (g < 0 || g >= GAMES)
            continue;
        seen[g]++;
        for (size_t k = 0; k < n; k++) {
            char want[32];
            snprintf(want, sizeof want, "g%lld p%zu", (long long)g, k);
            size_t len;
            const char *fen = lc_parquet_string(&rows[k].chunk->cols[LC_GCOL_FEN], rows[k].i, &len);
            CHECK(len == strlen(want) && memcmp(fen, want, len) == 0);
            CHECK_EQ_INT(rows[k].ply, (int64_t)k);
        }
    }
}

static void test_grouping(table *t)
{
    lc_game_chunk *chunks = read_all(t, NULL, NULL, NULL);
    /* In the order of their first rows: game 0, 1, 2 ... */
    lc_game_groups gg;
    size_t left_out;
    lc_game_group(&gg, chunks, NULL, t->rg_first, t->n_rg, false, 0, &left_out);
    CHECK_EQ_INT(left_out, 0);
    CHECK_EQ_INT(gg.n_games, GAMES);
    int seen[GAMES] = {0};
    check_games(&gg, seen, PLIES);
    for (size_t i = 0; i < gg.n_games; i++) {
        size_t n;
        const lc_game_ref *rows = lc_game_rows(&gg, i, &n);
        CHECK_EQ_INT(rows[0].chunk->cols[LC_GCOL_ID].i64[rows[0].i], (int64_t)i);
    }
    for (int g = 0; g < GAMES; g++)
        CHECK_EQ_INT(seen[g], 1);
    lc_game_groups_fini(&gg);

    /* Shuffled: every game once, in an order the seed fixes. */
    int64_t order[2][GAMES];
    for (int run = 0; run < 2; run++) {
        lc_game_group(&gg, chunks, NULL, t->rg_first, t->n_rg, true, 99, &left_out);
        memset(seen, 0, sizeof seen);
        check_games(&gg, seen, PLIES);
        for (int g = 0; g < GAMES; g++)
            CHECK_EQ_INT(seen[g], 1);
        for (size_t i = 0; i < gg.n_games; i++) {
            size_t n;
            const lc_game_ref *rows = lc_game_rows(&gg, i, &n);
            order[run][i] = rows[0].chunk->cols[LC_GCOL_ID].i64[rows[0].i];
        }
        lc_game_groups_fini(&gg);
    }
    CHECK(memcmp(order[0], order[1], sizeof order[0]) == 0);
    bool moved = false;
    for (int i = 0; i < GAMES; i++)
        moved = moved || order[0][i] != i;
    CHECK(moved);
    free_all(chunks);
}

/* Row group 1 damaged: every game here has rows in every row group, so
 * every game reaches it and is left out, and counted. */
static void test_damage(table *t)
{
    uint8_t damaged[GROUPS] = {0, 1, 0, 0};
    lc_game_chunk *chunks = read_all(t, NULL, damaged, NULL);
    lc_game_groups gg;
    size_t left_out;
    lc_game_group(&gg, chunks, damaged, t->rg_first, t->n_rg, false, 0, &left_out);
    CHECK_EQ_INT(left_out, GAMES);
    CHECK_EQ_INT(gg.n_games, 0);
    lc_game_groups_fini(&gg);
    free_all(chunks);
}

/* Three ranks: every game read by exactly one, each whole, the rows in
 * balance within a game's size. */
static void test_shares(table *t)
{
    const uint32_t world = 3;
    int seen[GAMES] = {0};
    uint64_t rows_of[3] = {0};
    for (uint32_t rank = 0; rank < world; rank++) {
        lc_hash_set mine = {0};
        uint8_t need[GROUPS] = {0};
        lc_game_shares sh;
        lc_parquet_column scratch = {0};
        lc_error err;
        CHECK_OK(lc_game_plan_shares(t->pf, t->col[LC_GCOL_ID], t->rg_first, t->n_rg, world, rank,
                                     &scratch, &mine, need, &sh, &err));
        lc_parquet_column_fini(&scratch);
        CHECK_EQ_INT(sh.n_games, GAMES);
        CHECK_EQ_U64(sh.with_id, GAMES * PLIES);
        CHECK_EQ_U64(sh.no_id, 0);
        CHECK_EQ_U64(sh.mine_rows, sh.per_rank[rank]);
        CHECK_EQ_U64(sh.other_games + sh.mine_rows / PLIES, GAMES);
        lc_game_chunk *chunks = read_all(t, need, NULL, &mine);
        lc_game_groups gg;
        size_t left_out;
        lc_game_group(&gg, chunks, NULL, t->rg_first, t->n_rg, true, 5, &left_out);
        check_games(&gg, seen, PLIES);
        rows_of[rank] = (uint64_t)gg.n_games * PLIES;
        CHECK_EQ_U64(rows_of[rank], sh.mine_rows);
        lc_game_groups_fini(&gg);
        free_all(chunks);
        lc_hash_set_fini(&mine);
    }
    for (int g = 0; g < GAMES; g++)
        CHECK_EQ_INT(seen[g], 1);
    for (uint32_t r = 0; r < world; r++) {
        uint64_t fair = GAMES * PLIES / world;
        CHECK(rows_of[r] + PLIES >= fair && rows_of[r] <= fair + PLIES);
    }
}

/* A table without a required column, or with one of the wrong kind. */
static void test_bad_columns(void)
{
    static const pqw_column_spec no_fen[] = {{"game_id", PQW_INT64},
                                             {"ply", PQW_INT64},
                                             {"played_move", PQW_STRING},
                                             {"best_move", PQW_STRING}};
    static const pqw_column_spec numeric_fen[] = {{"game_id", PQW_INT64},
                                                  {"ply", PQW_INT64},
                                                  {"fen", PQW_DOUBLE},
                                                  {"played_move", PQW_STRING},
                                                  {"best_move", PQW_STRING}};
    const struct {
        const pqw_column_spec *cols;
        size_t n;
        const char *says;
    } cases[] = {{no_fen, 4, "column 'fen' is missing"},
                 {numeric_fen, 5, "column 'fen' holds numbers, not strings"}};
    for (size_t k = 0; k < 2; k++) {
        const char *path = tu_path(k ? "numeric.parquet" : "nofen.parquet");
        pqw_options opt = pqw_default_options();
        pqw_writer *w = NULL;
        lc_error err;
        CHECK_OK(pqw_create(path, cases[k].cols, cases[k].n, &opt, &w, &err));
        for (size_t c = 0; c < cases[k].n; c++) {
            if (cases[k].cols[c].type == PQW_STRING)
                pqw_string(w, "x", 1);
            else if (cases[k].cols[c].type == PQW_INT64)
                pqw_int64(w, 1);
            else
                pqw_double(w, 1.0);
            CHECK_OK(pqw_end_column(w, &err));
        }
        CHECK_OK(pqw_end_row_group(w, &err));
        CHECK_OK(pqw_close(w, &err));
        lc_parquet_file *pf = NULL;
        CHECK_OK(lc_parquet_open(path, &pf, &err));
        int col[LC_GAME_COLS];
        lc_error_clear(&err);
        CHECK(lc_game_columns(pf, path, col, &err) < 0);
        CHECK(tu_contains(err.msg, cases[k].says));
        CHECK(tu_contains(err.msg, path));
        lc_parquet_close(pf);
    }
}

int main(void)
{
    const char *path = tu_path("games.parquet");
    write_table(path);
    table t;
    open_table(path, &t);
    test_grouping(&t);
    test_damage(&t);
    test_shares(&t);
    lc_parquet_close(t.pf);
    test_bad_columns();
    return check_finish();
}
