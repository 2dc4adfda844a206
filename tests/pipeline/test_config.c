/*
 * The pipeline configuration: one test per validation rule, each checking
 * that loading fails with LC_ECONFIG, hands back no config, and explains the
 * problem in a message that names the origin ("test.yaml"), the stage
 * ("stage 'loader'", or "stage #N (type)" when the name itself is the
 * problem) and the field ("input", "output.capacity",
 * "chunk_source_loader.threads", ...). Errors found while reading the YAML
 * (bad enum value, unknown key, YAML syntax) must name the offending key or value and
 * the origin. Positive tests cover the embedded default, the resolved wiring
 * and queue settings, ${VAR:-default} expansion, loading from a file, and
 * several problems reported together. Every config that loads is freed, so
 * that an ASan build also proves the success and failure paths leak nothing.
 */
#include "check.h"

#include "pipeline/config.h"
#include "stages/registry.h"
#include "stages/stage.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A valid first stage that later stages can read from. */
#define FILES_STAGE                                                                                \
    "  - name: files\n"                                                                            \
    "    file_path_provider: {directory: data, watch: false}\n"

/* The first member of file_path_provider's private config block (see
 * src/stages/file_path_provider.c): the directory after ${VAR} expansion. */
typedef struct fpp_config_head {
    char *directory;
} fpp_config_head;

static int count_lines(const char *s)
{
    int n = *s ? 1 : 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Loads yaml expecting failure: LC_ECONFIG, no config, and a message holding
 * every needle of the NULL-terminated list. Reports the caller's line. */
static void expect_error_at(int line, const char *yaml, ...)
{
    lc_config *cfg = (lc_config *)&cfg; /* must be reset to NULL */
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_config_load_string(yaml, strlen(yaml), "test.yaml", &cfg, &err);
    if (!check_result_(rc == LC_ECONFIG, __FILE__, line))
        fprintf(stderr, "rc %d (%s), expected LC_ECONFIG; message: %s\n", rc, lc_strerror(rc),
                err.msg);
    if (!check_result_(cfg == NULL, __FILE__, line))
        fprintf(stderr, "cfg is not NULL after a failed load\n");
    if (rc == 0 && cfg != (lc_config *)&cfg)
        lc_config_free(cfg);
    if (!check_result_(err.code == LC_ECONFIG, __FILE__, line))
        fprintf(stderr, "err.code %d, expected LC_ECONFIG\n", err.code);

    va_list ap;
    va_start(ap, yaml);
    for (const char *needle; (needle = va_arg(ap, const char *)) != NULL;) {
        if (!check_result_(strstr(err.msg, needle) != NULL, __FILE__, line))
            fprintf(stderr, "message lacks \"%s\":\n%s\n", needle, err.msg);
    }
    va_end(ap);
}

#define EXPECT_ERROR(yaml, ...) expect_error_at(__LINE__, yaml, __VA_ARGS__, (const char *)NULL)

/* Loads yaml expecting success; NULL (and a failed check) otherwise. */
static lc_config *load_ok_at(int line, const char *yaml)
{
    lc_config *cfg = NULL;
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_config_load_string(yaml, strlen(yaml), "test.yaml", &cfg, &err);
    if (!check_result_(rc == 0 && cfg != NULL, __FILE__, line))
        fprintf(stderr, "load failed: rc %d: %s\n", rc, err.msg);
    return rc == 0 ? cfg : NULL;
}

#define LOAD_OK(yaml) load_ok_at(__LINE__, yaml)

/* --- one test per rule ------------------------------------------------ */

static void test_empty_stages(void)
{
    EXPECT_ERROR("stages: []\n", "test.yaml", "stages: empty");
}

static void test_missing_name(void)
{
    /* Without a name the stage is named by position and type. */
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - input: files\n"
                 "    chunk_source_loader: {threads: 1}\n",
                 "test.yaml", "stage #2 (chunk_source_loader)", "name: missing");
}

static void test_invalid_name(void)
{
    EXPECT_ERROR("stages:\n"
                 "  - name: 'bad name!'\n"
                 "    file_path_provider: {directory: data}\n",
                 "test.yaml", "stage #1 (file_path_provider)", "name: 'bad name!'",
                 "is not a valid name");
    /* 41 characters: one too many. */
    EXPECT_ERROR("stages:\n"
                 "  - name: abcdefghijabcdefghijabcdefghijabcdefghijX\n"
                 "    file_path_provider: {directory: data}\n",
                 "test.yaml", "stage #1 (file_path_provider)", "name:", "is not a valid name");
    EXPECT_ERROR("stages:\n"
                 "  - name: ''\n"
                 "    file_path_provider: {directory: data}\n",
                 "test.yaml", "stage #1 (file_path_provider)", "name:", "is not a valid name");
}

static void test_duplicate_name(void)
{
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: files\n"
                 "    input: files\n"
                 "    chunk_source_loader: {}\n",
                 "test.yaml", "stage 'files': name: duplicate", "stage #1 has the same name");
}

static void test_no_type_block(void)
{
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: loader\n"
                 "    input: files\n",
                 "test.yaml", "stage 'loader': stage type: missing", "file_path_provider",
                 "chunk_source_loader");
}

static void test_two_type_blocks(void)
{
    EXPECT_ERROR("stages:\n"
                 "  - name: files\n"
                 "    file_path_provider: {directory: data}\n"
                 "    chunk_source_loader: {threads: 1}\n",
                 "test.yaml", "stage 'files': stage type: 2 given",
                 "file_path_provider, chunk_source_loader");
}

static void test_threads_out_of_range(void)
{
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: loader\n"
                 "    input: files\n"
                 "    chunk_source_loader: {threads: 0}\n",
                 "test.yaml", "stage 'loader': chunk_source_loader.threads: 0 is out of range");
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: loader\n"
                 "    input: files\n"
                 "    chunk_source_loader: {threads: 1000}\n",
                 "test.yaml", "stage 'loader': chunk_source_loader.threads: 1000 is out of range");
}

/* Every problem of one stage's block is reported, each on its own line with
 * the stage and the field: not only the first. */
static void test_every_stage_field_error(void)
{
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: loader\n"
                 "    input: files\n"
                 "    chunk_source_loader: {}\n"
                 "  - name: pool\n"
                 "    input: loader\n"
                 "    shuffling_chunk_pool: {chunk_pool_size: 0, threads: 999, inflate: foo}\n"
                 "  - name: unpacker\n"
                 "    input: pool\n"
                 "    chunk_unpacker: {sampling_rate: 0.5, positions_per_chunk: 0}\n"
                 "  - name: sampler\n"
                 "    input: unpacker\n"
                 "    shuffling_frame_sampler: {reservoir_size: 0}\n"
                 "  - name: tensors\n"
                 "    input: sampler\n"
                 "    tensor_generator: {batch_size: 0, threads: 65}\n",
                 "stage 'pool': shuffling_chunk_pool.chunk_pool_size: 0 is out of range",
                 "\ntest.yaml:9:48: stage 'pool': shuffling_chunk_pool.threads: 999 is out of "
                 "range",
                 "\ntest.yaml:9:62: stage 'pool': shuffling_chunk_pool.inflate: 'foo' is not "
                 "auto, zlib or libdeflate",
                 "stage 'unpacker': chunk_unpacker.sampling_rate: give either",
                 "stage 'unpacker': chunk_unpacker.positions_per_chunk: 0 is out of range",
                 "stage 'sampler': shuffling_frame_sampler.reservoir_size: 0 is out of range",
                 "stage 'tensors': tensor_generator.threads: 65 is out of range",
                 "stage 'tensors': tensor_generator.batch_size: 0 is out of range");
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: loader\n"
                 "    input: files\n"
                 "    chunk_source_loader: {}\n"
                 "  - name: pool\n"
                 "    input: loader\n"
                 "    shuffling_chunk_pool: {chunk_pool_size: 10, inflate: Zlib}\n",
                 "shuffling_chunk_pool.inflate: 'Zlib' is not auto, zlib or libdeflate");
    /* The chunk store's settings. */
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: loader\n"
                 "    input: files\n"
                 "    chunk_source_loader: {}\n"
                 "  - name: pool\n"
                 "    input: loader\n"
                 "    shuffling_chunk_pool: {chunk_pool_size: 10, store_bytes: 6 gigs, "
                 "store_block: 0}\n",
                 "shuffling_chunk_pool.store_bytes: '6 gigs' is not a size (use auto, 0 for no "
                 "store, or a number with an optional unit: 512M, 6G, 8GiB)",
                 "shuffling_chunk_pool.store_block: 0 is out of range (use 1 to 64)");
}

static void test_settle_seconds_out_of_range(void)
{
    EXPECT_ERROR("stages:\n"
                 "  - name: files\n"
                 "    file_path_provider: {directory: data, settle_seconds: -1}\n",
                 "test.yaml", "stage 'files': file_path_provider.settle_seconds: -1",
                 "out of range");
}

static void test_directory_env_unset(void)
{
    unsetenv("LC_TEST_CONFIG_UNSET");
    EXPECT_ERROR("stages:\n"
                 "  - name: files\n"
                 "    file_path_provider: {directory: '${LC_TEST_CONFIG_UNSET}/games'}\n",
                 "test.yaml", "stage 'files': file_path_provider.directory",
                 "LC_TEST_CONFIG_UNSET is not set");
}

static void test_input_missing(void)
{
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: loader\n"
                 "    chunk_source_loader: {}\n",
                 "test.yaml", "stage 'loader': input: missing", "'path' items");
}

static void test_input_on_producer(void)
{
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: more\n"
                 "    input: files\n"
                 "    file_path_provider: {directory: data}\n",
                 "test.yaml", "stage 'more': input: file_path_provider reads no input",
                 "input: files");
}

static void test_input_unknown(void)
{
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: loader\n"
                 "    input: nope\n"
                 "    chunk_source_loader: {}\n",
                 "test.yaml", "stage 'loader': input: no stage is named 'nope'");
}

static void test_input_self(void)
{
    EXPECT_ERROR("stages:\n"
                 "  - name: loader\n"
                 "    input: loader\n"
                 "    chunk_source_loader: {}\n",
                 "test.yaml", "stage 'loader': input: a stage cannot read its own output");
}

static void test_input_later(void)
{
    EXPECT_ERROR("stages:\n"
                 "  - name: loader\n"
                 "    input: files\n"
                 "    chunk_source_loader: {}\n" FILES_STAGE,
                 "test.yaml", "stage 'loader': input: stage 'files' comes later");
}

static void test_item_type_mismatch(void)
{
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: l1\n"
                 "    input: files\n"
                 "    chunk_source_loader: {}\n"
                 "  - name: l2\n"
                 "    input: l1\n"
                 "    chunk_source_loader: {}\n",
                 "test.yaml", "stage 'l2': input: stage 'l1' (chunk_source_loader)",
                 "produces 'chunk_source' items", "reads 'path' items");
}

static void test_output_feeds_two(void)
{
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: l1\n"
                 "    input: files\n"
                 "    chunk_source_loader: {}\n"
                 "  - name: l2\n"
                 "    input: files\n"
                 "    chunk_source_loader: {}\n",
                 "test.yaml", "stage 'l2': input: stage 'files' already feeds another stage");
}

static void test_output_unread(void)
{
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: more\n"
                 "    file_path_provider: {directory: data}\n",
                 "test.yaml", "stage 'files': output: no stage reads it");
}

static void test_capacity_out_of_range(void)
{
    EXPECT_ERROR("stages:\n"
                 "  - name: files\n"
                 "    file_path_provider: {directory: data}\n"
                 "    output: {capacity: 0}\n",
                 "test.yaml", "stage 'files': output.capacity: 0 is out of range");
    EXPECT_ERROR("stages:\n"
                 "  - name: files\n"
                 "    file_path_provider: {directory: data}\n"
                 "    output: {capacity: 10000001}\n",
                 "test.yaml", "stage 'files': output.capacity: 10000001 is out of range");
}

static void test_bad_overflow(void)
{
    /* The reader's message names the value and the key. */
    EXPECT_ERROR("stages:\n"
                 "  - name: files\n"
                 "    file_path_provider: {directory: data}\n"
                 "    output: {overflow: sideways}\n",
                 "test.yaml", "sideways", "overflow");
}

static void test_unknown_key(void)
{
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: loader\n"
                 "    input: files\n"
                 "    chunk_source_loader: {thread: 2}\n",
                 "test.yaml", "thread", "chunk_source_loader");
    /* A misspelt stage type is an unknown key of the stage mapping. */
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: loader\n"
                 "    input: files\n"
                 "    chunk_loader: {}\n",
                 "test.yaml", "chunk_loader");
}

/* Every mistake of a file in one report, each with its line and column, in
 * line order: unknown keys (top level, stage, block, output) with the
 * nearest valid key, a negative number in an unsigned field shown as
 * itself, and validation's range errors. */
static void test_every_mistake_with_its_line(void)
{
    EXPECT_ERROR("seed: 1\n"
                 "sed: 2\n"
                 "stages:\n" FILES_STAGE "  - name: loader\n"
                 "    input: files\n"
                 "    chunk_source_loader: {thredas: 2}\n"
                 "  - name: pool\n"
                 "    input: loader\n"
                 "    shuffling_chunk_pool: {chunk_pool_size: -5, threads: 0}\n"
                 "    output: {capacty: 4}\n"
                 "  - name: unpacker\n"
                 "    input: pool\n"
                 "    chunk_unpackr: {}\n",
                 "test.yaml:2:1: sed: unknown key (did you mean 'seed'?)",
                 "\ntest.yaml:8:27: stage 'loader': chunk_source_loader.thredas: unknown key "
                 "(did you mean 'threads'?)",
                 "\ntest.yaml:11:45: stage 'pool': shuffling_chunk_pool.chunk_pool_size: -5 is "
                 "negative",
                 "\ntest.yaml:11:49: stage 'pool': shuffling_chunk_pool.threads: 0 is out of "
                 "range",
                 "\ntest.yaml:12:14: stage 'pool': output.capacty: unknown key (did you mean "
                 "'capacity'?)",
                 "\ntest.yaml:15:5: stage 'unpacker': chunk_unpackr: unknown key (did you mean "
                 "'chunk_unpacker'?)");
    /* The wrapped number is not said again as out of range. */
    lc_config *cfg = NULL;
    lc_error err;
    lc_error_clear(&err);
    const char *yaml = "stages:\n" FILES_STAGE "  - name: pool\n"
                       "    input: files\n"
                       "    shuffling_chunk_pool: {chunk_pool_size: -5}\n";
    CHECK_EQ_INT(lc_config_load_string(yaml, strlen(yaml), "t.yaml", &cfg, &err), LC_ECONFIG);
    CHECK(strstr(err.msg, "18446744073709551611") == NULL);
    CHECK(strstr(err.msg, "-5 is negative") != NULL);
    /* A key far from every valid one lists them, where the list is short. */
    EXPECT_ERROR("stages:\n"
                 "  - name: files\n"
                 "    file_path_provider: {directory: data}\n"
                 "    output: {zzzzzz: 4}\n",
                 "test.yaml:4:14: stage 'files': output.zzzzzz: unknown key (the keys are "
                 "capacity, overflow)");
}

static void test_metrics_interval_out_of_range(void)
{
    EXPECT_ERROR("metrics_interval_ms: 5\n"
                 "stages:\n" FILES_STAGE,
                 "test.yaml", "metrics_interval_ms: 5 is out of range");
    EXPECT_ERROR("metrics_interval_ms: 10001\n"
                 "stages:\n" FILES_STAGE,
                 "test.yaml", "metrics_interval_ms: 10001 is out of range");
}

static void test_rank_not_below_world_size(void)
{
    EXPECT_ERROR("rank: 2\n"
                 "world_size: 2\n"
                 "stages:\n" FILES_STAGE,
                 "test.yaml", "rank: 2 must be below world_size 2");
}

static void test_rank_negative(void)
{
    EXPECT_ERROR("rank: -1\n"
                 "stages:\n" FILES_STAGE,
                 "test.yaml", "rank: -1 is negative");
}

static void test_world_size_out_of_range(void)
{
    EXPECT_ERROR("world_size: 0\n"
                 "stages:\n" FILES_STAGE,
                 "test.yaml", "world_size: 0 is out of range");
    EXPECT_ERROR("world_size: 65537\n"
                 "stages:\n" FILES_STAGE,
                 "test.yaml", "world_size: 65537 is out of range");
}

/* What the one reading of the tree refuses, each with its place: an alias
 * (a short text must not expand without bound), a key given twice, a
 * second document, a document that is not a mapping, a list too short or
 * long, a list's item out of range. */
static void test_reader_refusals(void)
{
    EXPECT_ERROR("stages:\n"
                 "  - &files {name: files, file_path_provider: {directory: data}}\n"
                 "  - *files\n",
                 "test.yaml:3:5: an alias (*name): aliases are not read");
    EXPECT_ERROR("stages:\n"
                 "  - name: files\n"
                 "    file_path_provider: {directory: data, watch: false, watch: true}\n",
                 "test.yaml:3:57: stage 'files': file_path_provider.watch: given twice");
    EXPECT_ERROR("stages:\n" FILES_STAGE "---\nseed: 1\n", "test.yaml:5:1: a second document");
    EXPECT_ERROR("- files\n", "test.yaml:1:1: the document is a list");
    EXPECT_ERROR(
        "stages:\n" FILES_STAGE "  - name: split\n"
        "    input: files\n"
        "    chunk_source_splitter: {outputs: [{name: a}]}\n",
        "test.yaml:6:29: stage 'split': chunk_source_splitter.outputs: 1 given (list 2 to 8)");
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: loader\n"
                 "    input: files\n"
                 "    chunk_source_loader: {}\n"
                 "  - name: join\n"
                 "    inputs: [loader]\n"
                 "    join: {weights: [1, 0]}\n",
                 "test.yaml:9:25: stage 'join': join.weights[1]: 0 is out of range (use a value in "
                 "(0, 1e+09])");
}

/* A splitter whose outputs the reader refused in part is not wired: its
 * outputs are not known, and nothing is said about them but the reader's
 * problem. */
static void test_refused_outputs_not_wired(void)
{
    const char *yaml = "stages:\n" FILES_STAGE "  - name: loader\n"
                       "    input: files\n"
                       "    chunk_source_loader: {}\n"
                       "  - name: split\n"
                       "    input: loader\n"
                       "    chunk_source_splitter: {outputs: [{weight: 1}, {name: b}]}\n"
                       "  - name: r\n"
                       "    input: split.b\n"
                       "    chunk_reader: {}\n";
    EXPECT_ERROR(yaml, "stage 'split': chunk_source_splitter.outputs[0].name: missing");
    lc_config *cfg = NULL;
    lc_error err;
    lc_error_clear(&err);
    CHECK_EQ_INT(lc_config_load_string(yaml, strlen(yaml), "t.yaml", &cfg, &err), LC_ECONFIG);
    CHECK_EQ_INT(count_lines(err.msg), 1);
}

static void test_yaml_syntax_error(void)
{
    EXPECT_ERROR("stages: [ {name: files\n", "test.yaml:", "libyaml");
}

/* An empty file (or one holding only comments) has no document at all;
 * it must be reported like any other bad config, not crash. Run in a child
 * so that a crash is one failed check rather than the end of the test. */
static int empty_document_child(const char *yaml)
{
    lc_config *cfg = NULL;
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_config_load_string(yaml, strlen(yaml), "test.yaml", &cfg, &err);
    if (rc == 0)
        lc_config_free(cfg);
    bool ok = rc == LC_ECONFIG && cfg == NULL && strstr(err.msg, "test.yaml") != NULL;
    if (!ok)
        fprintf(stderr, "empty document: rc %d, message: %s\n", rc, err.msg);
    return ok ? 0 : 1;
}

static void test_empty_document(void)
{
    const char *docs[] = {"", "# nothing but a comment\n"};
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0)
            _exit(empty_document_child(docs[i]));
        int status = 0;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
        if (!check_result_(WIFEXITED(status) && WEXITSTATUS(status) == 0, __FILE__, __LINE__))
            fprintf(stderr, "loading \"%s\": child %s %d\n", docs[i],
                    WIFSIGNALED(status) ? "killed by signal" : "exited with",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
}

/* --- positive tests --------------------------------------------------- */

static void test_default_config(void)
{
    unsetenv("LCMON_DATA");
    lc_config *cfg = NULL;
    lc_error err;
    lc_error_clear(&err);
    int rc = lc_config_load_default(&cfg, &err);
    CHECK_OK(rc);
    if (rc != 0) {
        fprintf(stderr, "default config: %s\n", err.msg);
        return;
    }
    /* The whole loader chain, ending in the named pipe. */
    CHECK_EQ_INT(cfg->n_stages, 8);
    CHECK_EQ_STR(cfg->stages[cfg->n_stages - 1].cls->type_name, "fifo_writer");
    for (unsigned i = 1; i < cfg->n_stages; i++)
        CHECK_EQ_INT(cfg->stages[i].input_index, (int)i - 1);
    CHECK_EQ_STR(cfg->origin, "<default config>");
    CHECK(!cfg->seed_pinned); /* each start draws its seed */
    CHECK_EQ_INT(cfg->metrics_interval_ms, 100);
    CHECK_EQ_INT(cfg->rank, -1);
    CHECK_EQ_INT(cfg->world_size, -1);

    const lc_stage_config *files = lc_config_stage(cfg, "files");
    const lc_stage_config *sources = lc_config_stage(cfg, "sources");
    CHECK(files == &cfg->stages[0]);
    CHECK(sources == &cfg->stages[1]);
    CHECK(lc_config_stage(cfg, "nope") == NULL);
    if (files && sources) {
        CHECK_EQ_STR(files->cls->type_name, "file_path_provider");
        CHECK_EQ_STR(sources->cls->type_name, "chunk_source_loader");
        CHECK_EQ_INT(files->input_index, -1);
        CHECK_EQ_INT(sources->input_index, 0);
        CHECK_EQ_INT(files->capacity, 256);
        CHECK_EQ_INT(sources->capacity, 64);
        CHECK_EQ_INT(files->overflow, LC_OVERFLOW_BLOCK);
        CHECK_EQ_INT(sources->overflow, LC_OVERFLOW_BLOCK);
        CHECK(files->block != NULL);
        if (files->block)
            CHECK_EQ_STR(((const fpp_config_head *)files->block)->directory, "tests/data");
    }
    lc_config_free(cfg);
}

static void test_wiring_and_queue_settings(void)
{
    lc_config *cfg = LOAD_OK("seed: 7\n"
                             "metrics_interval_ms: 10\n"
                             "rank: 1\n"
                             "world_size: 2\n"
                             "stages:\n"
                             "  - name: files\n"
                             "    file_path_provider: {directory: data}\n"
                             "    output: {overflow: drop_newest}\n"
                             "  - name: loader\n"
                             "    input: files\n"
                             "    chunk_source_loader: {threads: 256}\n"
                             "    output: {capacity: 10000000, overflow: keep_newest}\n"
                             "  - name: pool\n"
                             "    input: loader\n"
                             "    shuffling_chunk_pool: {chunk_pool_size: 100}\n"
                             "    output: {capacity: 1}\n");
    if (!cfg)
        return;
    CHECK_EQ_INT(cfg->n_stages, 3);
    CHECK_EQ_STR(cfg->origin, "test.yaml");
    CHECK_EQ_U64(cfg->seed, 7);
    CHECK_EQ_INT(cfg->metrics_interval_ms, 10);
    CHECK_EQ_INT(cfg->rank, 1);
    CHECK_EQ_INT(cfg->world_size, 2);
    CHECK_EQ_INT(cfg->stages[0].input_index, -1);
    CHECK_EQ_INT(cfg->stages[1].input_index, 0);
    CHECK_EQ_INT(cfg->stages[2].input_index, 1);
    /* Defaults where a field is absent, given values otherwise. */
    CHECK_EQ_INT(cfg->stages[0].capacity, 16);
    CHECK_EQ_INT(cfg->stages[0].overflow, LC_OVERFLOW_DROP_NEWEST);
    CHECK_EQ_INT(cfg->stages[1].capacity, 10000000);
    CHECK_EQ_INT(cfg->stages[1].overflow, LC_OVERFLOW_KEEP_NEWEST);
    CHECK_EQ_INT(cfg->stages[2].capacity, 1);
    CHECK_EQ_INT(cfg->stages[2].overflow, LC_OVERFLOW_BLOCK);
    lc_config_free(cfg);

    /* No output block at all: capacity 16, overflow block; metrics default. */
    cfg = LOAD_OK("stages:\n" FILES_STAGE);
    if (cfg) {
        CHECK_EQ_INT(cfg->stages[0].capacity, 16);
        CHECK_EQ_INT(cfg->stages[0].overflow, LC_OVERFLOW_BLOCK);
        CHECK_EQ_INT(cfg->metrics_interval_ms, 100);
        CHECK_EQ_U64(cfg->seed, 0);
        lc_config_free(cfg);
    }
    /* Boundaries that are accepted. */
    cfg = LOAD_OK("metrics_interval_ms: 10000\n"
                  "rank: 0\n"
                  "world_size: 65536\n"
                  "stages:\n"
                  "  - name: abcdefghijabcdefghijabcdefghijabcdefghij\n"
                  "    file_path_provider: {directory: data, settle_seconds: 0}\n");
    lc_config_free(cfg);
}

static const char *loaded_directory(lc_config *cfg)
{
    if (!cfg || cfg->n_stages < 1 || !cfg->stages[0].block)
        return NULL;
    return ((const fpp_config_head *)cfg->stages[0].block)->directory;
}

static void test_env_expansion(void)
{
    static const char yaml[] = "stages:\n"
                               "  - name: files\n"
                               "    file_path_provider:\n"
                               "      directory: '${LC_TEST_CONFIG_DIR:-fallback}/games'\n";
    setenv("LC_TEST_CONFIG_DIR", "/srv/data", 1);
    lc_config *cfg = LOAD_OK(yaml);
    CHECK_EQ_STR(loaded_directory(cfg), "/srv/data/games");
    lc_config_free(cfg);

    unsetenv("LC_TEST_CONFIG_DIR");
    cfg = LOAD_OK(yaml);
    CHECK_EQ_STR(loaded_directory(cfg), "fallback/games");
    lc_config_free(cfg);

    /* As in the shell, ":-" also replaces a variable that is set but empty. */
    setenv("LC_TEST_CONFIG_DIR", "", 1);
    cfg = LOAD_OK(yaml);
    CHECK_EQ_STR(loaded_directory(cfg), "fallback/games");
    lc_config_free(cfg);
    unsetenv("LC_TEST_CONFIG_DIR");
}

static void test_load_file(void)
{
    lc_config *cfg = (lc_config *)&cfg;
    lc_error err;
    lc_error_clear(&err);
    const char *missing = "/nonexistent/lcmon-test/config.yaml";
    int rc = lc_config_load_file(missing, &cfg, &err);
    CHECK_EQ_INT(rc, -ENOENT);
    CHECK(cfg == NULL);
    CHECK(strstr(err.msg, missing) != NULL);
    CHECK(strstr(err.msg, "cannot open") != NULL);

    char path[] = "/tmp/lc-test-config-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "w");
    fputs("stages:\n" FILES_STAGE "  - name: loader\n"
          "    chunk_source_loader: {}\n",
          f);
    fclose(f);
    /* A config read from a file names the file in its messages. */
    rc = lc_config_load_file(path, &cfg, &err);
    CHECK_EQ_INT(rc, LC_ECONFIG);
    CHECK(cfg == NULL);
    CHECK(strncmp(err.msg, path, strlen(path)) == 0);
    CHECK(strstr(err.msg, "stage 'loader': input: missing") != NULL);

    f = fopen(path, "w");
    fputs("stages:\n" FILES_STAGE, f);
    fclose(f);
    rc = lc_config_load_file(path, &cfg, &err);
    CHECK_OK(rc);
    if (rc == 0) {
        CHECK_EQ_STR(cfg->origin, path);
        CHECK_EQ_INT(cfg->n_stages, 1);
        lc_config_free(cfg);
    }
    unlink(path);
}

static void test_several_problems(void)
{
    /* Problems in stages' own settings and global settings come together,
     * one per line. */
    static const char yaml[] = "metrics_interval_ms: 5\n"
                               "world_size: 0\n"
                               "stages:\n"
                               "  - name: files\n"
                               "    file_path_provider: {directory: data}\n"
                               "    output: {capacity: 0}\n"
                               "  - name: loader\n"
                               "    input: files\n"
                               "    chunk_source_loader: {threads: 0}\n";
    EXPECT_ERROR(yaml, "test.yaml", "stage 'files': output.capacity: 0",
                 "stage 'loader': chunk_source_loader.threads: 0", "metrics_interval_ms: 5",
                 "world_size: 0");
    lc_config *cfg = NULL;
    lc_error err;
    lc_error_clear(&err);
    lc_config_load_string(yaml, strlen(yaml), "test.yaml", &cfg, &err);
    CHECK_EQ_INT(count_lines(err.msg), 4);

    /* Several wiring problems, too. */
    EXPECT_ERROR("stages:\n" FILES_STAGE "  - name: l1\n"
                 "    input: nope\n"
                 "    chunk_source_loader: {}\n"
                 "  - name: l2\n"
                 "    input: l2\n"
                 "    chunk_source_loader: {}\n",
                 "test.yaml", "stage 'l1': input: no stage is named 'nope'",
                 "stage 'l2': input: a stage cannot read its own output");
}

static void test_null_arguments(void)
{
    lc_config_free(NULL);
    /* Without an error record the failure is still reported by the code. */
    lc_config *cfg = (lc_config *)&cfg;
    static const char yaml[] = "stages: []\n";
    CHECK_EQ_INT(lc_config_load_string(yaml, strlen(yaml), "test.yaml", &cfg, NULL), LC_ECONFIG);
    CHECK(cfg == NULL);
    static const char bad[] = "stages: [\n";
    CHECK_EQ_INT(lc_config_load_string(bad, strlen(bad), "test.yaml", &cfg, NULL), LC_ECONFIG);
    CHECK(cfg == NULL);
}

/* --print-schema documents the YAML from the very schema loading uses:
 * every registered stage type with its summary, every key of its block,
 * the stage keys and the global settings. */
static void test_print_schema(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    lc_config_print_schema(f, NULL);
    fclose(f);
    char key[96];
    for (size_t i = 0; lc_stage_registry[i]; i++) {
        const lc_stage_class *cls = lc_stage_registry[i];
        snprintf(key, sizeof key, "\n    %s:  # stage type: %s", cls->type_name, cls->summary);
        if (!strstr(text, key))
            fprintf(stderr, "--print-schema lacks %s\n", cls->type_name);
        CHECK(strstr(text, key) != NULL);
        /* Its keys follow it, before the next stage type. */
        const char *at = strstr(text, key);
        const char *eol = at ? strchr(at + 1, '\n') : NULL;
        const char *next = eol ? strstr(eol, "  # stage type: ") : NULL;
        for (const lc_setting *k = cls->settings.rows; at && k && k->key; k++) {
            snprintf(key, sizeof key, "\n      %s: ", k->key);
            const char *found = strstr(at, key);
            CHECK(found != NULL && (!next || found < next));
        }
    }
    const char *keys[] = {"\nstages:",
                          "\n    name: ",
                          "\n    input: ",
                          "\n    output:",
                          "\n      overflow: one of block, drop_newest, keep_newest",
                          "\nseed: ",
                          "\nmetrics_interval_ms: ",
                          "\nrank: ",
                          "\nworld_size: "};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        CHECK(strstr(text, keys[i]) != NULL);
    free(text);
}

int main(void)
{
    test_print_schema();
    test_empty_stages();
    test_missing_name();
    test_invalid_name();
    test_duplicate_name();
    test_no_type_block();
    test_two_type_blocks();
    test_threads_out_of_range();
    test_every_stage_field_error();
    test_settle_seconds_out_of_range();
    test_directory_env_unset();
    test_input_missing();
    test_input_on_producer();
    test_input_unknown();
    test_input_self();
    test_input_later();
    test_item_type_mismatch();
    test_output_feeds_two();
    test_output_unread();
    test_capacity_out_of_range();
    test_bad_overflow();
    test_unknown_key();
    test_every_mistake_with_its_line();
    test_metrics_interval_out_of_range();
    test_rank_not_below_world_size();
    test_rank_negative();
    test_world_size_out_of_range();
    test_reader_refusals();
    test_refused_outputs_not_wired();
    test_yaml_syntax_error();
    test_empty_document();

    test_default_config();
    test_wiring_and_queue_settings();
    test_env_expansion();
    test_load_file();
    test_several_problems();
    test_null_arguments();
    return check_finish();
}
