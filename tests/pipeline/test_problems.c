/*
 * Problems as records (core/problem.h): for every kind of setting (a bool,
 * a whole number by type and by range, a signed one, a real, a text, an
 * enum, a size, a block, a list by its length, a list's item, a list of
 * blocks' item, threads against another setting, a path with ${VAR}), a
 * configuration with a bad value of that kind gives a record with the
 * stage, the key path and the text, placed on the line and column of the
 * node it is about: the value that does not read, or the key whose value
 * is refused. Validation's and the stages' checks are placed by their key
 * paths alone: their texts do not start with the key (none does: messages
 * show it from the path), a key left to its default is placed on the
 * nearest key above it, and a name given twice on the second. The records'
 * bound holds: a config of 300 unknown keys keeps 100 and counts the rest.
 */
#include "check.h"

#include "pipeline/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A valid first stage that later stages can read from. */
#define FILES_STAGE                                                                                \
    "  - name: files\n"                                                                            \
    "    file_path_provider: {directory: data, watch: false}\n"

typedef struct bad_value {
    const char *kind;
    const char *yaml;
    const char *path;  /* the record's key path */
    const char *at;    /* where it is placed: the first place this text is in yaml */
    const char *text;  /* in the record's text */
    const char *stage; /* the label the message names the stage by ("" for none) */
    const char *field; /* the key as the message shows it */
} bad_value;

/* Line and column (1-based) of the first `at` in yaml. */
static void place_of(const char *yaml, const char *at, int *line, int *col)
{
    const char *p = strstr(yaml, at);
    *line = *col = 0;
    if (!p)
        return;
    *line = 1;
    const char *bol = yaml;
    for (const char *q = yaml; q < p; q++)
        if (*q == '\n') {
            (*line)++;
            bol = q + 1;
        }
    *col = (int)(p - bol) + 1;
}

static const lc_problem *find_record(const lc_problems *ps, const char *path)
{
    for (size_t i = 0; i < ps->n; i++)
        if (!strcmp(ps->v[i].path, path))
            return &ps->v[i];
    return NULL;
}

/* The last key of a path: "threads" of "stages[2].pool.threads". */
static const char *last_key(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot ? dot + 1 : path;
}

static void check_bad_value(const bad_value *b)
{
    lc_config *cfg = NULL;
    lc_problems ps;
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_config_load_records(b->yaml, strlen(b->yaml), "test.yaml", &cfg, &ps, &err);
    CHECK_EQ_INT(rc, LC_ECONFIG);
    CHECK(cfg == NULL);
    const lc_problem *p = find_record(&ps, b->path);
    if (!check_result_(p != NULL, __FILE__, __LINE__)) {
        fprintf(stderr, "%s: no record with path %s; the records:\n", b->kind, b->path);
        for (size_t i = 0; i < ps.n; i++)
            fprintf(stderr, "  %s %d:%d %s\n", ps.v[i].path, ps.v[i].line, ps.v[i].col,
                    ps.v[i].text);
        lc_problems_fini(&ps);
        return;
    }
    int line, col;
    place_of(b->yaml, b->at, &line, &col);
    if (!check_result_(line > 0 && p->line == line && p->col == col, __FILE__, __LINE__))
        fprintf(stderr, "%s: %s placed at %d:%d, expected %d:%d ('%s')\n", b->kind, b->path,
                p->line, p->col, line, col, b->at);
    if (!check_result_(strstr(p->text, b->text) != NULL, __FILE__, __LINE__))
        fprintf(stderr, "%s: text \"%s\" lacks \"%s\"\n", b->kind, p->text, b->text);
    /* The message shows the key from the path, and the stage by its name. */
    char line_text[512];
    snprintf(line_text, sizeof line_text, "test.yaml:%d:%d: %s%s%s%s%s", line, col, b->stage,
             b->stage[0] ? ": " : "", b->field, b->field[0] ? ": " : "", p->text);
    if (!check_result_(strstr(err.msg, line_text) != NULL, __FILE__, __LINE__))
        fprintf(stderr, "%s: the message lacks \"%s\":\n%s\n", b->kind, line_text, err.msg);
    /* Every record is placed, and none starts with its key: the text is
     * not where the place comes from. */
    for (size_t i = 0; i < ps.n; i++) {
        const lc_problem *q = &ps.v[i];
        const char *key = last_key(q->path);
        size_t n = strlen(key);
        bool starts = n && !strncmp(q->text, key, n) && q->text[n] == ':';
        if (!check_result_(q->line > 0 && !starts, __FILE__, __LINE__))
            fprintf(stderr, "%s: record %s at %d:%d: \"%s\"\n", b->kind, q->path, q->line, q->col,
                    q->text);
    }
    lc_problems_fini(&ps);
}

static const bad_value bad_values[] = {
    {"bool", "stages:\n  - name: files\n    file_path_provider: {directory: data, watch: maybe}\n",
     "stages[0].file_path_provider.watch", "maybe", "'maybe' is not true or false", "stage 'files'",
     "file_path_provider.watch"},
    {"whole (its type)",
     "stages:\n" FILES_STAGE "  - name: loader\n    input: files\n"
     "    chunk_source_loader: {threads: many}\n",
     "stages[1].chunk_source_loader.threads", "many", "'many' is not a whole number",
     "stage 'loader'", "chunk_source_loader.threads"},
    {"whole (its range)",
     "stages:\n" FILES_STAGE "  - name: loader\n    input: files\n"
     "    chunk_source_loader: {threads: 0}\n",
     "stages[1].chunk_source_loader.threads", "threads: 0", "0 is out of range (use 1 to 256)",
     "stage 'loader'", "chunk_source_loader.threads"},
    {"signed", "rank: -3\nstages:\n" FILES_STAGE, "rank", "rank", "-3 is negative", "", "rank"},
    {"real",
     "stages:\n  - name: files\n    file_path_provider:\n      directory: data\n"
     "      settle_seconds: soon\n",
     "stages[0].file_path_provider.settle_seconds", "soon", "'soon' is not a number",
     "stage 'files'", "file_path_provider.settle_seconds"},
    {"text", "stages:\n  - name: files\n    file_path_provider: {directory: [a, b]}\n",
     "stages[0].file_path_provider.directory", "[a, b]", "a list, where a single value belongs",
     "stage 'files'", "file_path_provider.directory"},
    {"enum", "stages:\n" FILES_STAGE "    output: {overflow: sideways}\n",
     "stages[0].output.overflow", "sideways", "'sideways' is not known (use block, drop_newest",
     "stage 'files'", "output.overflow"},
    {"size",
     "stages:\n" FILES_STAGE "  - name: loader\n    input: files\n    chunk_source_loader: {}\n"
     "  - name: pool\n    input: loader\n"
     "    shuffling_chunk_pool: {chunk_pool_size: 10, store_bytes: 6 gigs}\n",
     "stages[2].shuffling_chunk_pool.store_bytes", "6 gigs", "'6 gigs' is not a size",
     "stage 'pool'", "shuffling_chunk_pool.store_bytes"},
    {"block", "stages:\n" FILES_STAGE "    output: five\n", "stages[0].output", "five",
     "'five' where a mapping belongs", "stage 'files'", "output"},
    {"list (its length)",
     "stages:\n" FILES_STAGE "  - name: split\n    input: files\n"
     "    chunk_source_splitter: {outputs: [{name: a}]}\n",
     "stages[1].chunk_source_splitter.outputs", "outputs", "1 given (list 2 to 8)", "stage 'split'",
     "chunk_source_splitter.outputs"},
    {"list (an item)",
     "stages:\n" FILES_STAGE "  - name: loader\n    input: files\n    chunk_source_loader: {}\n"
     "  - name: join\n    inputs: [loader]\n    join: {weights: [1, 0]}\n",
     "stages[2].join.weights[1]", "0]", "0 is out of range", "stage 'join'", "join.weights[1]"},
    {"list of blocks (an item's key)",
     "stages:\n" FILES_STAGE "  - name: split\n    input: files\n"
     "    chunk_source_splitter: {outputs: [{weight: 1}, {name: b}]}\n",
     "stages[1].chunk_source_splitter.outputs[0].name", "{weight: 1}", "missing (required",
     "stage 'split'", "chunk_source_splitter.outputs[0].name"},
    /* Validation's and the checks', placed by their key paths. */
    {"threads, against reservoir_size",
     "stages:\n  - name: sampler\n    shuffling_frame_sampler: {reservoir_size: 2, threads: 3}\n",
     "stages[0].shuffling_frame_sampler.threads", "threads: 3", "3 is more than reservoir_size 2",
     "stage 'sampler'", "shuffling_frame_sampler.threads"},
    {"path with ${VAR}",
     "stages:\n  - name: files\n    file_path_provider:\n"
     "      directory: '${LC_TEST_PROBLEMS_UNSET}/games'\n",
     "stages[0].file_path_provider.directory",
     "directory:", "environment variable LC_TEST_PROBLEMS_UNSET is not set", "stage 'files'",
     "file_path_provider.directory"},
    {"two settings joined", "rank: 3\nworld_size: 2\nstages:\n" FILES_STAGE, "rank", "rank",
     "3 must be below world_size 2", "", "rank"},
    {"a key left to its default: on the nearest key above it",
     "stages:\n  - name: unpacker\n    chunk_unpacker:\n      positions_per_chunk: 4\n"
     "      position_weights: {pol_scale: 0}\n",
     "stages[0].chunk_unpacker.position_weights.q_weight", "position_weights",
     "q_weight + pol_scale must be above 0", "stage 'unpacker'",
     "chunk_unpacker.position_weights.q_weight"},
    {"a name given twice: on the second",
     "stages:\n  - name: files\n    file_path_provider: {directory: a}\n"
     "  - name: files\n    input: files\n    chunk_source_loader: {}\n",
     "stages[1].name", "name: files\n    input", "duplicate, stage #1 has the same name",
     "stage 'files'", "name"},
    {"a stage without a type: on the stage",
     "stages:\n" FILES_STAGE "  - name: loader\n    input: files\n", "stages[1]", "name: loader",
     "stage type: missing", "stage 'loader'", ""},
};

/* The bound of issue 35: a config of 300 unknown keys keeps 100 records,
 * counts the rest, and says so. */
static void test_bound(void)
{
    char *yaml = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&yaml, &len);
    fputs("stages:\n" FILES_STAGE "    output:\n", f);
    for (int i = 0; i < 300; i++)
        fprintf(f, "      k%d: %d\n", i, i);
    fclose(f);
    lc_config *cfg = NULL;
    lc_problems ps;
    lc_error err;
    CHECK_EQ_INT(lc_config_load_records(yaml, len, "test.yaml", &cfg, &ps, &err), LC_ECONFIG);
    CHECK_EQ_INT(ps.n, LC_PROBLEMS_MAX);
    CHECK_EQ_INT(ps.n + ps.more, 300);
    CHECK(ps.n && !strcmp(ps.v[0].path, "stages[0].output.k0") && ps.v[0].line == 5);
    CHECK(strstr(err.msg, "more problems (the first") != NULL);
    lc_problems_fini(&ps);
    free(yaml);
}

/* A config that loads has no records. */
static void test_none(void)
{
    static const char yaml[] = "stages:\n" FILES_STAGE;
    lc_config *cfg = NULL;
    lc_problems ps;
    lc_error err;
    CHECK_OK(lc_config_load_records(yaml, strlen(yaml), "test.yaml", &cfg, &ps, &err));
    CHECK_EQ_INT(lc_problems_count(&ps), 0);
    lc_problems_fini(&ps);
    lc_config_free(cfg);
}

int main(void)
{
    unsetenv("LC_TEST_PROBLEMS_UNSET");
    for (size_t i = 0; i < sizeof bad_values / sizeof *bad_values; i++)
        check_bad_value(&bad_values[i]);
    test_bound();
    test_none();
    return check_finish();
}
