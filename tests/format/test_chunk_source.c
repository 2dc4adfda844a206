/*
 * test_chunk_source: .gz and .tar sources over the real lc0 games in
 * tests/data (every game against its MANIFEST.tsv line), tars with members
 * that are not gzip (raw records of V6 and V5 read as chunks; raw records of
 * a bad size, a LICENSE, a 1-byte file skipped with the reason; an archive
 * of raw members only), and every failure a source must report with the file (and member)
 * named: unknown extension, missing, vanished, truncated and corrupt files;
 * and the store's way of loading (into pages of their own, dropped once
 * packed) leaving the heap that keeps the packed chunks without free
 * megabytes.
 */
#include <glob.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/log.h"
#include "testutil.h"
#include "format/lc0/chunk_source.h"
#include "format/lc0/packed_chunk.h"
#include "format/lc0/record.h"
#include "lc_config.h"

static const lc_inflate_backend backends[] = {
    LC_INFLATE_ZLIB,
#if LC_HAVE_LIBDEFLATE
    LC_INFLATE_LIBDEFLATE,
#endif
};
#define N_BACKENDS (sizeof backends / sizeof backends[0])

/* 0: load as lc_chunk_source_load does (what test_store_loading_heap
 * guards against). */
#ifndef STORE_PAGES
#define STORE_PAGES 1
#endif

static char *data_path(const char *rel)
{
    return lc_xasprintf("%s/%s", tu_test_data(), rel);
}

/* Every game listed in tests/data/MANIFEST.tsv loads with the listed number
 * of frames, version 6 and the listed input format, with every backend. */
static void test_manifest_games(void)
{
    char *manifest = data_path("MANIFEST.tsv");
    size_t len;
    char *text = (char *)tu_read_file(manifest, &len);
    CHECK(text != NULL);
    if (!text) {
        fprintf(stderr, "cannot read %s (set LC_TEST_DATA)\n", manifest);
        free(manifest);
        return;
    }
    text = realloc(text, len + 1);
    text[len] = '\0';
    size_t games = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "path\t", 5) == 0)
            continue;
        char *fields[9] = {0};
        size_t nf = 0;
        for (char *f = line; f && nf < 9; nf++) {
            fields[nf] = f;
            f = strchr(f, '\t');
            if (f)
                *f++ = '\0';
        }
        CHECK_EQ_U64(nf, 9);
        if (nf < 9)
            continue;
        char *path = data_path(fields[0]);
        unsigned long input_format = strtoul(fields[2], NULL, 10);
        unsigned long frames = strtoul(fields[3], NULL, 10);
        unsigned long gz_bytes = strtoul(fields[7], NULL, 10);
        lc_chunk_source *s;
        lc_error err;
        lc_error_clear(&err);
        int rc = lc_chunk_source_open(path, &s, &err);
        CHECK_OK(rc);
        if (rc == 0) {
            CHECK_EQ_INT(lc_chunk_source_kind(s), LC_SOURCE_GZ);
            CHECK_EQ_U64(lc_chunk_source_count(s), 1);
            CHECK_EQ_STR(lc_chunk_source_path(s), path);
            const char *base = strrchr(fields[0], '/') + 1;
            CHECK_EQ_STR(lc_chunk_source_key(s), base);
            CHECK_EQ_STR(lc_chunk_source_chunk_name(s, 0), base);
            CHECK(lc_chunk_source_chunk_name(s, 1) == NULL);
            uint8_t *buf;
            size_t blen;
            CHECK_OK(lc_chunk_source_read(s, 0, &buf, &blen, &err));
            CHECK_EQ_U64(blen, gz_bytes);
            free(buf);
            for (size_t b = 0; b < N_BACKENDS; b++) {
                lc_chunk_data c;
                rc = lc_chunk_source_load(s, 0, backends[b], &c, &err);
                CHECK_OK(rc);
                if (rc != 0) {
                    fprintf(stderr, "  %s\n", err.msg);
                    continue;
                }
                CHECK_EQ_INT(c.version, 6);
                CHECK_EQ_U64(c.n_records, frames);
                uint32_t fmt;
                LC_REC_GET(c.data, input_format, fmt);
                CHECK_EQ_U64(fmt, input_format);
                lc_chunk_data_fini(&c);
            }
            lc_chunk_source_unref(s);
        }
        free(path);
        games++;
    }
    printf("%zu games from the manifest loaded\n", games);
    CHECK(games >= 30);
    free(text);
    free(manifest);
}

static void test_mini_tar(void)
{
    char *path = data_path("training-run-mini.tar");
    lc_chunk_source *s;
    lc_error err;
    CHECK_OK(lc_chunk_source_open(path, &s, &err));
    CHECK_EQ_INT(lc_chunk_source_kind(s), LC_SOURCE_TAR);
    CHECK_EQ_STR(lc_chunk_source_key(s), "training-run-mini.tar");
    CHECK_EQ_U64(lc_chunk_source_count(s), 8);
    CHECK_EQ_U64(lc_chunk_source_skipped_members(s), 0);
    CHECK_EQ_U64(lc_chunk_source_raw_members(s), 0);
    CHECK(!lc_chunk_source_truncated(s));
    /* Plain members only: no directories, extended headers or links. */
    lc_tar_entry_counts e = lc_chunk_source_tar_entries(s);
    CHECK(!e.directories && !e.pax_headers && !e.long_names && !e.long_links && !e.other);
    CHECK_EQ_STR(lc_chunk_source_chunk_name(s, 0), "training.100014.gz");
    CHECK_EQ_STR(lc_chunk_source_chunk_name(s, 7), "training.100056.gz");
    CHECK(lc_chunk_source_chunk_name(s, 8) == NULL);
    size_t frames = 0;
    for (size_t i = 0; i < lc_chunk_source_count(s); i++) {
        lc_chunk_data c;
        CHECK_OK(lc_chunk_source_load(s, i, LC_INFLATE_AUTO, &c, &err));
        CHECK_EQ_INT(c.version, 6);
        frames += c.n_records;
        lc_chunk_data_fini(&c);
    }
    CHECK(frames > 0);
    uint8_t *buf;
    size_t len;
    CHECK_EQ_INT(lc_chunk_source_read(s, 8, &buf, &len, &err), -EINVAL);

    /* References: the source lives until the last unref. */
    lc_chunk_source *s2 = lc_chunk_source_ref(s);
    CHECK(s2 == s);
    lc_chunk_source_unref(s);
    CHECK_EQ_U64(lc_chunk_source_count(s2), 8);
    lc_chunk_source_unref(s2);
    lc_chunk_source_unref(NULL);

    /* A cut copy keeps the whole members before the cut, with a warning. */
    size_t tlen;
    uint8_t *tar = tu_read_file(path, &tlen);
    const char *cut = tu_path("cut.tar");
    tu_write_file(cut, tar, tlen / 2);
    CHECK_OK(lc_chunk_source_open(cut, &s, &err));
    CHECK(lc_chunk_source_truncated(s));
    CHECK(lc_chunk_source_count(s) > 0 && lc_chunk_source_count(s) < 8);
    for (size_t i = 0; i < lc_chunk_source_count(s); i++) {
        lc_chunk_data c;
        CHECK_OK(lc_chunk_source_load(s, i, LC_INFLATE_AUTO, &c, &err));
        lc_chunk_data_fini(&c);
    }
    lc_chunk_source_unref(s);
    free(tar);
    free(path);
}

/* True when a log line after `after` contains both words. */
static bool logged(uint64_t after, const char *w1, const char *w2)
{
    lc_log_entry e[64];
    size_t n = lc_log_read(after, e, 64, NULL);
    for (size_t i = 0; i < n; i++)
        if (tu_contains(e[i].text, w1) && tu_contains(e[i].text, w2))
            return true;
    return false;
}

static void test_tar_with_non_gzip(void)
{
    /* Two games, a LICENSE, raw (decompressed) records and a 1-byte file. */
    const char *dir = tu_path("mixed");
    tu_mkdirs(dir);
    const char *games[] = {"lc0-v0.31.2-fmt3/game_000049.gz", "lc0-v0.31.2-fmt5/game_000015.gz"};
    char *names[2] = {"game_a.gz", "game_b.gz"};
    uint8_t *gz[2];
    size_t gz_len[2];
    for (int i = 0; i < 2; i++) {
        char *p = data_path(games[i]);
        gz[i] = tu_read_file(p, &gz_len[i]);
        CHECK(gz[i] != NULL);
        char *q = lc_xasprintf("%s/%s", dir, names[i]);
        tu_write_file(q, gz[i], gz_len[i]);
        free(q);
        free(p);
    }
    char *lic = lc_xasprintf("%s/LICENSE", dir);
    tu_write_file(lic, "GPL-3.0\n", 8);
    free(lic);
    lc_chunk_data raw;
    CHECK_OK(lc_chunk_decode(gz[0], gz_len[0], LC_INFLATE_ZLIB, 0, &raw, NULL));
    char *rawp = lc_xasprintf("%s/game_raw.bin", dir);
    tu_write_file(rawp, raw.data, raw.size);
    free(rawp);
    lc_chunk_data_fini(&raw);
    char *one = lc_xasprintf("%s/one.gz", dir);
    tu_write_file(one, "\x1f", 1); /* named .gz, but not gzip */
    free(one);
    /* A game whose middle is corrupt: listed as a chunk, fails to load. */
    uint8_t *bad = malloc(gz_len[1]);
    memcpy(bad, gz[1], gz_len[1]);
    for (size_t i = gz_len[1] / 3; i < gz_len[1] / 3 + 64; i++)
        bad[i] ^= 0xa5;
    char *badp = lc_xasprintf("%s/game_bad.gz", dir);
    tu_write_file(badp, bad, gz_len[1]);
    free(badp);
    free(bad);

    const char *archive = tu_path("mixed.tar");
    char *argv[] = {"tar",           "--format=gnu", "-C",        (char *)dir,    "-cf",
                    (char *)archive, "LICENSE",      "game_a.gz", "game_raw.bin", "one.gz",
                    "game_bad.gz",   "game_b.gz",    NULL};
    CHECK_EQ_INT(tu_run(argv, NULL), 0);

    uint64_t seq = lc_log_last_seq();
    lc_chunk_source *s;
    lc_error err;
    CHECK_OK(lc_chunk_source_open(archive, &s, &err));
    /* The raw records are a chunk; the LICENSE and the 1-byte file are not. */
    CHECK_EQ_U64(lc_chunk_source_count(s), 4);
    CHECK_EQ_U64(lc_chunk_source_skipped_members(s), 2);
    CHECK_EQ_U64(lc_chunk_source_raw_members(s), 1);
    CHECK(!lc_chunk_source_truncated(s));
    CHECK(logged(seq, "mixed.tar", "'LICENSE' skipped: neither gzip"));
    CHECK(logged(seq, "mixed.tar", "'one.gz' skipped: 1 bytes: not gzip"));
    CHECK(!logged(seq, "mixed.tar", "'game_raw.bin'"));
    const char *why = NULL;
    CHECK_EQ_STR(lc_chunk_source_skipped_member(s, 0, &why), "LICENSE");
    CHECK(why && tu_contains(why, "is not a record version 3 to 7"));
    CHECK_EQ_STR(lc_chunk_source_skipped_member(s, 1, &why), "one.gz");
    CHECK(lc_chunk_source_skipped_member(s, 2, &why) == NULL);
    CHECK_EQ_STR(lc_chunk_source_chunk_name(s, 0), "game_a.gz");
    CHECK_EQ_STR(lc_chunk_source_chunk_name(s, 1), "game_raw.bin");
    CHECK_EQ_STR(lc_chunk_source_chunk_name(s, 2), "game_bad.gz");
    CHECK_EQ_STR(lc_chunk_source_chunk_name(s, 3), "game_b.gz");
    CHECK(!lc_chunk_source_chunk_raw(s, 0) && lc_chunk_source_chunk_raw(s, 1));
    for (int i = 0; i < 2; i++) {
        uint8_t *buf;
        size_t len;
        CHECK_OK(lc_chunk_source_read(s, i == 0 ? 0 : 3, &buf, &len, &err));
        CHECK(len == gz_len[i] && memcmp(buf, gz[i], len) == 0);
        free(buf);
    }
    /* The raw member loads as the gzip member it came from inflates. */
    for (size_t b = 0; b < N_BACKENDS; b++) {
        lc_chunk_data from_gz, from_raw;
        CHECK_OK(lc_chunk_source_load(s, 0, backends[b], &from_gz, &err));
        CHECK_OK(lc_chunk_source_load(s, 1, backends[b], &from_raw, &err));
        CHECK_EQ_U64(from_raw.version, 6);
        CHECK_EQ_U64(from_raw.n_records, from_gz.n_records);
        CHECK(from_raw.size == from_gz.size &&
              memcmp(from_raw.data, from_gz.data, from_gz.size) == 0);
        lc_chunk_data_fini(&from_gz);
        lc_chunk_data_fini(&from_raw);
    }
    for (size_t b = 0; b < N_BACKENDS; b++) {
        lc_chunk_data c;
        lc_error_clear(&err);
        int rc = lc_chunk_source_load(s, 2, backends[b], &c, &err);
        CHECK(rc == LC_EGZIP);
        CHECK(c.data == NULL);
        CHECK(tu_contains(err.msg, archive));
        CHECK(tu_contains(err.msg, "member 'game_bad.gz'"));
        printf("  %s: %s\n", lc_inflate_backend_name(backends[b]), err.msg);
    }

    /* The archive shrinks after open: the read fails, naming the member. */
    CHECK(truncate(archive, 3000) == 0);
    lc_chunk_data c;
    lc_error_clear(&err);
    CHECK_EQ_INT(lc_chunk_source_load(s, 3, LC_INFLATE_AUTO, &c, &err), LC_ETRUNC);
    CHECK(tu_contains(err.msg, archive));
    CHECK(tu_contains(err.msg, "'game_b.gz'"));
    printf("  %s\n", err.msg);
    lc_chunk_source_unref(s);
    free(gz[0]);
    free(gz[1]);
}

/* n records of `version` (its size), the version field set, the rest noise. */
static uint8_t *raw_records(uint32_t version, size_t n, uint32_t seed, size_t *len)
{
    size_t rs = lc_record_size_for_version(version);
    *len = rs * n;
    uint8_t *p = malloc(*len);
    tu_fill(p, *len, seed);
    for (size_t i = 0; i < n; i++)
        memcpy(p + i * rs, &version, 4);
    return p;
}

/* An archive of raw members only: V6 and V5 records read as chunks (and
 * counted, not called empty), one of a bad size skipped with its reason;
 * and an archive whose only member is raw records of a bad size. */
static void test_tar_raw_members(void)
{
    const char *dir = tu_path("raw");
    tu_mkdirs(dir);
    size_t len6, len5, lenbad;
    uint8_t *v6 = raw_records(6, 3, 11, &len6);
    uint8_t *v5 = raw_records(5, 2, 12, &len5);
    uint8_t *bad = raw_records(6, 2, 13, &lenbad);
    const struct {
        const char *name;
        const uint8_t *data;
        size_t len;
    } files[] = {{"a.v6", v6, len6}, {"b.v5", v5, len5}, {"c.bad", bad, lenbad - 100}};
    for (size_t i = 0; i < 3; i++) {
        char *p = lc_xasprintf("%s/%s", dir, files[i].name);
        tu_write_file(p, files[i].data, files[i].len);
        free(p);
    }
    const char *archive = tu_path("raw.tar"), *only_bad = tu_path("only-bad.tar");
    char *argv[] = {"tar",           "--format=gnu", "-C",   (char *)dir, "-cf",
                    (char *)archive, "a.v6",         "b.v5", "c.bad",     NULL};
    CHECK_EQ_INT(tu_run(argv, NULL), 0);
    char *argv2[] = {"tar", "--format=gnu",   "-C",    (char *)dir,
                     "-cf", (char *)only_bad, "c.bad", NULL};
    CHECK_EQ_INT(tu_run(argv2, NULL), 0);

    uint64_t seq = lc_log_last_seq();
    lc_chunk_source *s;
    lc_error err;
    CHECK_OK(lc_chunk_source_open(archive, &s, &err));
    CHECK_EQ_U64(lc_chunk_source_count(s), 2);
    CHECK_EQ_U64(lc_chunk_source_raw_members(s), 2);
    CHECK_EQ_U64(lc_chunk_source_skipped_members(s), 1);
    CHECK(logged(seq, "raw.tar",
                 "'c.bad' skipped: not gzip, and its 16612 bytes are not a whole "
                 "number of 8356-byte V6 records (1 records and 8256 bytes over)"));
    for (size_t i = 0; i < 2; i++) {
        lc_chunk_data c;
        CHECK_OK(lc_chunk_source_load(s, i, LC_INFLATE_AUTO, &c, &err));
        CHECK_EQ_U64(c.version, i == 0 ? 6 : 5);
        CHECK_EQ_U64(c.n_records, i == 0 ? 3 : 2);
        CHECK(c.size == files[i].len && memcmp(c.data, files[i].data, c.size) == 0);
        lc_chunk_data_fini(&c);
    }
    /* A view reads raw members through its file. */
    uint32_t second = 1;
    lc_chunk_source *v = lc_chunk_source_view(s, &second, 1);
    CHECK(lc_chunk_source_chunk_raw(v, 0));
    lc_chunk_data c;
    CHECK_OK(lc_chunk_source_load(v, 0, LC_INFLATE_AUTO, &c, &err));
    CHECK_EQ_U64(c.version, 5);
    lc_chunk_data_fini(&c);
    lc_chunk_source_unref(v);
    lc_chunk_source_unref(s);

    CHECK_OK(lc_chunk_source_open(only_bad, &s, &err));
    CHECK_EQ_U64(lc_chunk_source_count(s), 0);
    CHECK_EQ_U64(lc_chunk_source_skipped_members(s), 1);
    lc_chunk_source_unref(s);
    free(v6);
    free(v5);
    free(bad);
}

static void test_gz_failures(void)
{
    lc_chunk_source *s;
    lc_error err;

    /* Unknown extensions are not sources. */
    const char *skipped[] = {"notes.txt", "game.GZ", "run.TAR", "archive.tar.zst", "gz", "tar"};
    for (size_t i = 0; i < sizeof skipped / sizeof skipped[0]; i++) {
        s = (lc_chunk_source *)1;
        CHECK_EQ_INT(lc_chunk_source_open(skipped[i], &s, &err), -ENOTSUP);
        CHECK(s == NULL);
    }

    /* Missing files. */
    const char *missing_gz = tu_path("no-such-game.gz");
    lc_error_clear(&err);
    CHECK_EQ_INT(lc_chunk_source_open(missing_gz, &s, &err), -ENOENT);
    CHECK(tu_contains(err.msg, missing_gz));
    const char *missing_tar = tu_path("no-such-run.tar");
    lc_error_clear(&err);
    CHECK_EQ_INT(lc_chunk_source_open(missing_tar, &s, &err), -ENOENT);
    CHECK(tu_contains(err.msg, missing_tar));
    printf("  %s\n", err.msg);

    /* A directory named like a source. */
    const char *dirgz = tu_path("dir.gz");
    tu_mkdirs(dirgz);
    CHECK(lc_chunk_source_open(dirgz, &s, &err) < 0);

    char *src = data_path("lc0-v0.31.2-fmt1/game_000015.gz");
    size_t len;
    uint8_t *gz = tu_read_file(src, &len);
    CHECK(gz != NULL && len > 100);
    free(src);
    if (!gz)
        return;

    /* Truncated and corrupt .gz files: errors naming the file. */
    struct {
        const char *name;
        size_t keep;
        bool corrupt;
        int code;
    } cases[] = {
        {"half.gz", len / 2, false, LC_EGZIP},
        {"no-trailer.gz", len - 4, false, LC_EGZIP},
        {"corrupt.gz", len, true, LC_EGZIP},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *copy = malloc(len);
        memcpy(copy, gz, len);
        if (cases[i].corrupt)
            for (size_t j = len / 2; j < len / 2 + 16; j++)
                copy[j] ^= 0x5a;
        const char *p = tu_path(cases[i].name);
        tu_write_file(p, copy, cases[i].keep);
        free(copy);
        CHECK_OK(lc_chunk_source_open(p, &s, &err));
        for (size_t b = 0; b < N_BACKENDS; b++) {
            lc_chunk_data c;
            lc_error_clear(&err);
            CHECK_EQ_INT(lc_chunk_source_load(s, 0, backends[b], &c, &err), cases[i].code);
            CHECK(tu_contains(err.msg, p));
            CHECK(c.data == NULL);
        }
        printf("  %s\n", err.msg);
        lc_chunk_source_unref(s);
    }

    /* An empty file and one that is not gzip at all are refused when they
     * are opened, not when a pool first reads them. */
    const char *empty = tu_path("empty.gz"), *text = tu_path("x.gz");
    tu_write_file(empty, "", 0);
    tu_write_file(text, "hello, not a game\n", 18);
    lc_error_clear(&err);
    CHECK_EQ_INT(lc_chunk_source_open(empty, &s, &err), LC_EEMPTY);
    CHECK(tu_contains(err.msg, empty));
    lc_error_clear(&err);
    CHECK_EQ_INT(lc_chunk_source_open(text, &s, &err), LC_EFORMAT);
    CHECK(tu_contains(err.msg, text) && tu_contains(err.msg, "not a gzip file"));

    /* A .gz that vanishes after open. */
    const char *gone = tu_path("gone.gz");
    tu_write_file(gone, gz, len);
    CHECK_OK(lc_chunk_source_open(gone, &s, &err));
    CHECK(unlink(gone) == 0);
    lc_chunk_data c;
    lc_error_clear(&err);
    CHECK_EQ_INT(lc_chunk_source_load(s, 0, LC_INFLATE_AUTO, &c, &err), -ENOENT);
    CHECK(tu_contains(err.msg, gone));
    lc_chunk_source_unref(s);
    free(gz);
}

static void test_keys(void)
{
    CHECK(lc_source_key_compare("game_000001.gz", "game_000002.gz") < 0);
    CHECK(lc_source_key_compare("b", "a") > 0);
    CHECK(lc_source_key_compare("same", "same") == 0);
    CHECK(lc_source_key_compare("Z", "a") < 0);        /* bytes, not locale */
    CHECK(lc_source_key_compare("\xc3\xa9", "z") > 0); /* unsigned bytes */
    CHECK(lc_source_key_compare("training.9", "training.10") > 0);

    lc_chunk_source *s;
    char *p = data_path("lc0-v0.31.2-fmt2/game_000016.gz");
    CHECK_OK(lc_chunk_source_open(p, &s, NULL));
    CHECK_EQ_STR(lc_chunk_source_key(s), "game_000016.gz");
    lc_tar_entry_counts e = lc_chunk_source_tar_entries(s); /* a .gz has none */
    CHECK(!e.directories && !e.pax_headers && !e.long_names && !e.long_links && !e.other);
    lc_chunk_source_unref(s);
    free(p);
}

/* The pool's store, in one loading thread: each chunk is loaded, packed and
 * its records dropped, the packed form kept. */
#define STORE_ROUNDS 300
typedef struct store_run {
    lc_chunk_source **src;
    size_t n_src;
    lc_packed_chunk *kept[STORE_ROUNDS];
    size_t largest; /* the largest chunk inflated, bytes */
    int failures;
} store_run;

static void *store_thread(void *arg)
{
    store_run *r = arg;
    lc_pack_ctx *ctx = lc_pack_ctx_new(LC_PACK_LEVEL_DEFAULT, LC_PACK_BLOCK_DEFAULT);
    for (size_t i = 0; i < STORE_ROUNDS; i++) {
        lc_chunk_data c;
        lc_error err;
        lc_error_clear(&err);
        const char *reason = NULL;
        uint32_t bad_at = 0;
        bool pages = STORE_PAGES;
        if (lc_chunk_source_load_as(r->src[i % r->n_src], 0, LC_INFLATE_AUTO, pages, &c, &err) !=
                0 ||
            c.pages != pages ||
            lc_packed_chunk_build(ctx, c.data, c.record_size, (uint32_t)c.n_records, c.version,
                                  &r->kept[i], &reason, &bad_at) != 0)
            r->failures++;
        if (c.size > r->largest)
            r->largest = c.size;
        lc_chunk_data_fini(&c);
    }
    lc_pack_ctx_free(ctx);
    return NULL;
}

/* A thread that loads chunks as the store does (lc_chunk_source_load_as
 * into pages) and keeps their packed forms leaves less free memory in the
 * heaps than one chunk's records: each inflated chunk's pages go back to
 * the system when it is packed. Loaded into the heap instead (malloc, as
 * lc_chunk_source_load does; STORE_PAGES 0 shows it), the freed records
 * stay there between the packed chunks: about as much as the largest chunk
 * here, about 3 MB resident over a 2000-game window (docs/performance.md,
 * issue 38). */
static void test_store_loading_heap(void)
{
    char *pattern = data_path("*/game_*.gz");
    glob_t g;
    CHECK_EQ_INT(glob(pattern, 0, NULL, &g), 0);
    free(pattern);
    store_run *r = calloc(1, sizeof *r);
    r->src = calloc(g.gl_pathc ? g.gl_pathc : 1, sizeof *r->src);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        lc_error err;
        lc_error_clear(&err);
        if (lc_chunk_source_open(g.gl_pathv[i], &r->src[r->n_src], &err) == 0)
            r->n_src++;
    }
    CHECK(r->n_src >= 30);
    if (r->n_src > 0) {
        struct mallinfo2 before = mallinfo2();
        pthread_t t;
        CHECK_EQ_INT(pthread_create(&t, NULL, store_thread, r), 0);
        pthread_join(t, NULL);
        struct mallinfo2 after = mallinfo2();
        CHECK_EQ_INT(r->failures, 0);
        size_t freed = after.fordblks > before.fordblks ? after.fordblks - before.fordblks : 0;
        printf("store loading: %d chunks packed and kept, largest %zu bytes inflated, %zu bytes "
               "free in the heaps after\n",
               STORE_ROUNDS, r->largest, freed);
        CHECK(freed < r->largest / 2);
    }
    for (size_t i = 0; i < STORE_ROUNDS; i++)
        lc_packed_chunk_unref(r->kept[i]);
    for (size_t i = 0; i < r->n_src; i++)
        lc_chunk_source_unref(r->src[i]);
    free(r->src);
    free(r);
    globfree(&g);
}

int main(void)
{
    test_manifest_games();
    test_store_loading_heap();
    test_mini_tar();
    test_tar_with_non_gzip();
    test_tar_raw_members();
    test_gz_failures();
    test_keys();
    return check_finish();
}
