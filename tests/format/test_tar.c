/*
 * test_tar: the tar indexer against archives written by GNU tar in the gnu,
 * pax and ustar formats, and against a hand-built archive that holds every
 * kind of header we must skip (each with data that would desynchronise the
 * index if it were not skipped), plus truncated and damaged archives, byte
 * flips, and four threads reading members of one archive at once.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "testutil.h"
#include "format/lc0/tar.h"

/* ---- archives in memory ---- */

typedef struct tbuf {
    uint8_t *p;
    size_t len, cap;
} tbuf;

static void tb_put(tbuf *t, const void *d, size_t n)
{
    if (t->len + n > t->cap) {
        t->cap = (t->len + n) * 2 + 4096;
        t->p = realloc(t->p, t->cap);
    }
    if (n)
        memcpy(t->p + t->len, d, n);
    t->len += n;
}

static void tb_pad(tbuf *t)
{
    static const uint8_t zero[512];
    if (t->len % 512)
        tb_put(t, zero, 512 - t->len % 512);
}

enum { MAGIC_V7, MAGIC_POSIX, MAGIC_GNU };

typedef struct hdr_opts {
    int magic;
    const char *prefix;
    const char *linkname;
    bool base256;
    bool signed_sum;
    bool sparse_ext;
} hdr_opts;

static void make_header(uint8_t h[512], const char *name, char type, uint64_t size,
                        const hdr_opts *o)
{
    memset(h, 0, 512);
    size_t nlen = strlen(name);
    memcpy(h, name, nlen > 100 ? 100 : nlen);
    memcpy(h + 100, "0000644", 8);
    memcpy(h + 108, "0000000", 8);
    memcpy(h + 116, "0000000", 8);
    if (o->base256) {
        h[124] = 0x80;
        for (int i = 0; i < 8; i++)
            h[124 + 11 - i] = (uint8_t)(size >> (8 * i));
    } else {
        snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
    }
    snprintf((char *)h + 136, 12, "%011o", 1700000000);
    h[156] = (uint8_t)type;
    if (o->linkname)
        memcpy(h + 157, o->linkname, strlen(o->linkname) > 100 ? 100 : strlen(o->linkname));
    if (o->magic == MAGIC_POSIX)
        memcpy(h + 257, (const char[8]){'u', 's', 't', 'a', 'r', '\0', '0', '0'}, 8);
    else if (o->magic == MAGIC_GNU)
        memcpy(h + 257, "ustar  \0", 8);
    if (o->prefix)
        memcpy(h + 345, o->prefix, strlen(o->prefix));
    if (o->sparse_ext) {
        /* Old GNU sparse map at 386: four chunks of 100 bytes (the fifth is
         * in the extension block, see build_hand_archive), the flag saying
         * an extension block follows, and the real size at 483. */
        for (int i = 0; i < 4; i++) {
            snprintf((char *)h + 386 + 24 * i, 12, "%011o", 1000 * i);
            snprintf((char *)h + 398 + 24 * i, 12, "%011o", 100);
        }
        h[482] = 1;
        snprintf((char *)h + 483, 12, "%011o", 4112);
    }
    memset(h + 148, ' ', 8);
    long sum = 0;
    for (int i = 0; i < 512; i++)
        sum += o->signed_sum ? (long)(signed char)h[i] : (long)h[i];
    snprintf((char *)h + 148, 8, "%06lo", sum);
    h[155] = ' ';
}

static void tb_entry(tbuf *t, const char *name, char type, const void *data, size_t size,
                     const hdr_opts *o)
{
    static const hdr_opts plain = {.magic = MAGIC_GNU};
    uint8_t h[512];
    make_header(h, name, type, size, o ? o : &plain);
    tb_put(t, h, 512);
    tb_put(t, data, size);
    tb_pad(t);
}

/* "<len> key=value\n" with len counting itself. */
static void pax_record(tbuf *t, const char *key, const char *value)
{
    size_t body = 1 + strlen(key) + 1 + strlen(value) + 1;
    size_t len = body + 1;
    while (len != body + (size_t)snprintf(NULL, 0, "%zu", len))
        len = body + (size_t)snprintf(NULL, 0, "%zu", len);
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "%zu %s=%s\n", len, key, value);
    tb_put(t, buf, (size_t)n);
}

typedef struct expected {
    char *name;
    uint8_t *data;
    size_t size;
} expected;

static uint8_t *filled(size_t n, uint32_t seed)
{
    uint8_t *p = malloc(n ? n : 1);
    tu_fill(p, n, seed);
    return p;
}

static char *repeat(const char *head, char c, size_t n, const char *tail)
{
    size_t h = strlen(head), tl = strlen(tail);
    char *s = malloc(h + n + tl + 1);
    memcpy(s, head, h);
    memset(s + h, c, n);
    memcpy(s + h + n, tail, tl + 1);
    return s;
}

/* ---- indexing helpers ---- */

static int index_file(const char *path, lc_tar_index *idx, lc_error *err, int *fd_out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    if (fd < 0)
        return -errno;
    lc_error_clear(err);
    int rc = lc_tar_index_fd(fd, path, idx, err);
    if (fd_out)
        *fd_out = fd;
    else
        close(fd);
    return rc;
}

static int index_bytes(const uint8_t *p, size_t len, lc_tar_index *idx, lc_error *err)
{
    const char *path = tu_path("bytes.tar");
    tu_write_file(path, p, len);
    return index_file(path, idx, err, NULL);
}

static void check_member_data(int fd, const char *path, const lc_tar_member *m, const uint8_t *want,
                              size_t want_len)
{
    CHECK_EQ_U64(m->size, want_len);
    CHECK_EQ_U64(m->offset % 512, 0);
    uint8_t *buf = malloc(m->size ? m->size : 1);
    lc_error err;
    CHECK_OK(lc_tar_pread_member(fd, path, m, buf, &err));
    CHECK(m->size == want_len && memcmp(buf, want, want_len) == 0);
    free(buf);
}

/* ---- the hand-built archive ---- */

static tbuf build_hand_archive(expected *exp, size_t *n_exp)
{
    tbuf t = {0};
    size_t n = 0;
    const hdr_opts gnu = {.magic = MAGIC_GNU};
    const hdr_opts posix = {.magic = MAGIC_POSIX};
    uint8_t decoy[512];
    make_header(decoy, "decoy-never-indexed.bin", '0', 0, &posix);

    /* E1: GNU long name, then the member with the name cut at 100. */
    char *ln1 = repeat("hand/long-name-", 'a', 140, ".bin");
    tb_entry(&t, "././@LongLink", 'L', ln1, strlen(ln1) + 1, &gnu);
    exp[n] = (expected){ln1, filled(700, 1), 700};
    tb_entry(&t, ln1, '0', exp[n].data, exp[n].size, &gnu);
    n++;

    /* E2: long link ('K', with a decoy in its data), long name, symlink. */
    tbuf k = {0};
    char *target = repeat("hand/target-", 't', 300, "");
    tb_put(&k, target, strlen(target) + 1);
    tb_pad(&k);
    tb_put(&k, decoy, 512);
    tb_entry(&t, "././@LongLink", 'K', k.p, k.len, &gnu);
    free(k.p);
    free(target);
    char *lsym = repeat("hand/symlink-", 's', 120, "");
    tb_entry(&t, "././@LongLink", 'L', lsym, strlen(lsym) + 1, &gnu);
    tb_entry(&t, lsym, '2', NULL, 0, &(hdr_opts){.magic = MAGIC_GNU, .linkname = "x"});
    free(lsym);

    /* E3: a plain member right after: must not inherit the symlink's name. */
    exp[n] = (expected){strdup("hand/after-symlink.bin"), filled(512, 3), 512};
    tb_entry(&t, exp[n].name, '0', exp[n].data, exp[n].size, &gnu);
    n++;

    /* E4: pax 'x' with path= (and another record before it). */
    char *paxlong = repeat("hand/pax/", 'p', 180, ".bin");
    tbuf x = {0};
    pax_record(&x, "mtime", "1700000000.123456789");
    pax_record(&x, "path", paxlong);
    tb_entry(&t, "hand/PaxHeaders/pax-short", 'x', x.p, x.len, &posix);
    free(x.p);
    exp[n] = (expected){paxlong, filled(1, 4), 1};
    tb_entry(&t, "hand/pax-short", '0', exp[n].data, exp[n].size, &posix);
    n++;

    /* E5: pax 'g' (its path= must not apply), decoy in its second block. */
    tbuf g = {0};
    pax_record(&g, "path", "global/should-not-apply");
    pax_record(&g, "comment", "global header");
    tb_pad(&g);
    tb_put(&g, decoy, 512);
    tb_entry(&t, "pax_global_header", 'g', g.p, g.len, &posix);
    free(g.p);
    exp[n] = (expected){strdup("hand/after-global.bin"), filled(0, 5), 0};
    tb_entry(&t, exp[n].name, '0', exp[n].data, exp[n].size, &posix);
    n++;

    /* E6, E7: directories, links, devices, fifo. A directory's size field
     * is skipped when it has data, ignored when a header follows at once. */
    tb_entry(&t, "hand/dir/", '5', NULL, 0, &posix);
    uint8_t dirdata[600];
    memset(dirdata, 'D', sizeof dirdata);
    tb_entry(&t, "hand/dir-with-data/", '5', dirdata, sizeof dirdata, &posix);
    {
        uint8_t h[512];
        make_header(h, "hand/dir-size-no-data/", '5', 4096, &posix);
        tb_put(&t, h, 512);
    }
    tb_entry(&t, "hand/hardlink", '1', NULL, 0,
             &(hdr_opts){.magic = MAGIC_POSIX, .linkname = "hand/after-global.bin"});
    tb_entry(&t, "hand/chardev", '3', NULL, 0, &posix);
    tb_entry(&t, "hand/blockdev", '4', NULL, 0, &posix);
    tb_entry(&t, "hand/fifo", '6', NULL, 0, &posix);

    /* E8: unknown typeflag with 700 bytes of data starting with a decoy. */
    uint8_t unk[700];
    memcpy(unk, decoy, 512);
    memset(unk + 512, 'u', sizeof unk - 512);
    tb_entry(&t, "hand/unknown", 'Q', unk, sizeof unk, &posix);

    /* E9: contiguous file ('7') is a regular file. */
    exp[n] = (expected){strdup("hand/contiguous.bin"), filled(1000, 9), 1000};
    tb_entry(&t, exp[n].name, '7', exp[n].data, exp[n].size, &posix);
    n++;

    /* E10: GNU base-256 size field. */
    exp[n] = (expected){strdup("hand/base256.bin"), filled(1536, 10), 1536};
    tb_entry(&t, exp[n].name, '0', exp[n].data, exp[n].size,
             &(hdr_opts){.magic = MAGIC_GNU, .base256 = true});
    n++;

    /* E11: pax size= overrides the header's size field (0 here). */
    x = (tbuf){0};
    pax_record(&x, "size", "777");
    tb_entry(&t, "hand/PaxHeaders/paxsize", 'x', x.p, x.len, &posix);
    free(x.p);
    exp[n] = (expected){strdup("hand/paxsize.bin"), filled(777, 11), 777};
    {
        uint8_t h[512];
        make_header(h, exp[n].name, '0', 0, &posix);
        tb_put(&t, h, 512);
        tb_put(&t, exp[n].data, exp[n].size);
        tb_pad(&t);
    }
    n++;

    /* E12: ustar prefix + name. */
    char *prefix = repeat("hand/prefix/", 'q', 100, "");
    exp[n] = (expected){lc_xasprintf("%s/file.bin", prefix), filled(100, 12), 100};
    tb_entry(&t, "file.bin", '0', exp[n].data, exp[n].size,
             &(hdr_opts){.magic = MAGIC_POSIX, .prefix = prefix});
    free(prefix);
    n++;

    /* E13: high bytes in the name and a checksum summed as signed chars. */
    exp[n] = (expected){strdup("hand/caf\xc3\xa9-\xff\xfe.bin"), filled(50, 13), 50};
    tb_entry(&t, exp[n].name, '0', exp[n].data, exp[n].size,
             &(hdr_opts){.magic = MAGIC_POSIX, .signed_sum = true});
    n++;

    /* E14: a v7 header (no magic, NUL typeflag). */
    exp[n] = (expected){strdup("hand/v7.bin"), filled(300, 14), 300};
    tb_entry(&t, exp[n].name, '\0', exp[n].data, exp[n].size, &(hdr_opts){.magic = MAGIC_V7});
    n++;

    /* E15: pre-POSIX directory: a "file" whose name ends in '/'. */
    tb_entry(&t, "hand/olddir/", '0', NULL, 0, &(hdr_opts){.magic = MAGIC_V7});

    /* E16: old GNU sparse file with one extension header, data a decoy. */
    {
        uint8_t h[512], ext[512] = {0};
        make_header(h, "hand/sparse", 'S', 512,
                    &(hdr_opts){.magic = MAGIC_GNU, .sparse_ext = true});
        snprintf((char *)ext, 12, "%011o", 4000);
        snprintf((char *)ext + 12, 12, "%011o", 112);
        tb_put(&t, h, 512);
        tb_put(&t, ext, 512);
        tb_put(&t, decoy, 512);
    }

    /* E17: malformed pax records are ignored, the entry keeps its name. */
    tb_entry(&t, "hand/PaxHeaders/bad", 'x', "xyz garbage\n", 12, &posix);
    exp[n] = (expected){strdup("hand/after-bad-pax.bin"), filled(20, 17), 20};
    tb_entry(&t, exp[n].name, '0', exp[n].data, exp[n].size, &posix);
    n++;

    /* E18: last member, then the end marker. */
    exp[n] = (expected){strdup("hand/last.bin"), filled(3, 18), 3};
    tb_entry(&t, exp[n].name, '0', exp[n].data, exp[n].size, &gnu);
    n++;
    static const uint8_t zero[1024];
    tb_put(&t, zero, sizeof zero);
    *n_exp = n;
    return t;
}

static void test_hand_archive(void)
{
    printf("hand-built archive\n");
    expected exp[32];
    size_t n_exp;
    tbuf t = build_hand_archive(exp, &n_exp);
    const char *path = tu_path("hand.tar");
    tu_write_file(path, t.p, t.len);

    lc_tar_index idx;
    lc_error err;
    int fd;
    CHECK_OK(index_file(path, &idx, &err, &fd));
    CHECK(!idx.truncated);
    CHECK_EQ_U64(idx.n_members, n_exp);
    CHECK_EQ_U64(idx.n_long_names, 2);
    CHECK_EQ_U64(idx.n_long_links, 1);
    CHECK_EQ_U64(idx.n_pax_headers, 4);
    CHECK_EQ_U64(idx.n_directories, 4);
    CHECK_EQ_U64(idx.n_other, 7);
    for (size_t i = 0; i < idx.n_members && i < n_exp; i++) {
        CHECK_EQ_STR(idx.members[i].name, exp[i].name);
        check_member_data(fd, path, &idx.members[i], exp[i].data, exp[i].size);
    }
    lc_tar_index_fini(&idx);
    close(fd);

    /* Without the end marker the archive is still whole. */
    CHECK_OK(index_bytes(t.p, t.len - 1024, &idx, &err));
    CHECK(!idx.truncated);
    CHECK_EQ_U64(idx.n_members, n_exp);
    lc_tar_index_fini(&idx);

    /* Cut after a lone extended header: truncated. */
    size_t cut = 512 + 512; /* the first 'L' header and its data */
    CHECK_OK(index_bytes(t.p, cut, &idx, &err));
    CHECK(idx.truncated);
    CHECK_EQ_U64(idx.n_members, 0);
    lc_tar_index_fini(&idx);

    /* Every cut and many byte flips: never a crash, never more members. */
    for (size_t c = 0; c < t.len; c += 61) {
        CHECK_OK(index_bytes(t.p, c, &idx, &err));
        CHECK(idx.n_members <= n_exp);
        lc_tar_index_fini(&idx);
    }
    uint8_t *copy = malloc(t.len);
    uint32_t x = 12345;
    for (int i = 0; i < 300; i++) {
        memcpy(copy, t.p, t.len);
        for (int j = 0; j < 4; j++) {
            x = x * 1103515245u + 12345u;
            size_t pos = (x >> 8) % t.len;
            x = x * 1103515245u + 12345u;
            copy[pos] ^= (uint8_t)(1u << ((x >> 16) % 8));
        }
        int rc = index_bytes(copy, t.len, &idx, &err);
        CHECK_EQ_INT(rc, 0);
        lc_tar_index_fini(&idx);
    }
    free(copy);

    for (size_t i = 0; i < n_exp; i++) {
        free(exp[i].name);
        free(exp[i].data);
    }
    free(t.p);
}

/* ---- archives written by GNU tar ---- */

typedef struct tree {
    char *names[16]; /* regular files, relative to src/ */
    size_t n;
} tree;

static void put_src_file(tree *tr, const char *rel, const void *data, size_t len)
{
    char *full = lc_xasprintf("%s/src/%s", tu_tmpdir(), rel);
    char *slash = strrchr(full, '/');
    *slash = '\0';
    tu_mkdirs(full);
    *slash = '/';
    tu_write_file(full, data, len);
    free(full);
    if (tr)
        tr->names[tr->n++] = strdup(rel);
}

static char *long_dir;  /* directory part of the long ustar-splittable path */
static char *long_file; /* > 100 chars, splittable */
static char *huge_base; /* basename > 100 chars: gnu and pax only */

static void make_source_tree(void)
{
    const char *license = "Permission is hereby granted, free of charge, to any person...\n";
    put_src_file(NULL, "LICENSE", license, strlen(license));
    uint8_t *raw = filled(200000, 21);
    size_t len;
    uint8_t *gz = tu_gzip(raw, 5000, 6, &len);
    put_src_file(NULL, "a.gz", gz, len);
    free(gz);
    gz = tu_gzip(raw, 200000, 1, &len);
    put_src_file(NULL, "b.gz", gz, len);
    free(gz);
    put_src_file(NULL, "block.bin", raw, 1024);
    put_src_file(NULL, "empty.bin", "", 0);
    free(raw);

    char *d1 = repeat("run-2026-11-22-", 'd', 50, "");
    long_dir = repeat(d1, 'e', 0, "/sub-eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee");
    free(d1);
    char *base = repeat("training.000001-", 'f', 40, ".gz");
    long_file = lc_xasprintf("%s/%s", long_dir, base);
    free(base);
    raw = filled(3000, 22);
    gz = tu_gzip(raw, 3000, 6, &len);
    put_src_file(NULL, long_file, gz, len);
    free(gz);
    huge_base = repeat("verylong/", 'g', 120, ".gz");
    put_src_file(NULL, huge_base, raw, 3000);
    free(raw);
}

/* Make an archive with GNU tar; returns its path. */
static const char *make_gnu_tar_archive(const char *format)
{
    char *out = lc_xasprintf("%s/%s.tar", tu_tmpdir(), format);
    char *fmt = lc_xasprintf("--format=%s", format);
    char *src = lc_xasprintf("%s/src", tu_tmpdir());
    char *top = strdup(long_dir);
    *strchr(top, '/') = '\0';
    bool ustar = strcmp(format, "ustar") == 0;
    char *argv[] = {"tar",       fmt,         "--sort=name", "--owner=0",
                    "--group=0", "-C",        src,           "-cf",
                    out,         "LICENSE",   "a.gz",        "b.gz",
                    "block.bin", "empty.bin", top,           ustar ? NULL : "verylong",
                    NULL};
    int rc = tu_run(argv, NULL);
    CHECK_EQ_INT(rc, 0);
    free(fmt);
    free(src);
    free(top);
    static char keep[3][4096];
    static int next;
    char *p = keep[next++ % 3];
    snprintf(p, 4096, "%s", out);
    free(out);
    return p;
}

/* The regular-file names GNU tar itself lists, in order. */
static size_t gnu_tar_list(const char *archive, char **names, size_t max)
{
    const char *list = tu_path("list.txt");
    char *argv[] = {"tar", "-tf", (char *)archive, NULL};
    CHECK_EQ_INT(tu_run(argv, list), 0);
    size_t len;
    char *text = (char *)tu_read_file(list, &len);
    size_t n = 0;
    if (!text)
        return 0;
    text = realloc(text, len + 1);
    text[len] = '\0';
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        size_t l = strlen(line);
        if (l && line[l - 1] != '/' && n < max)
            names[n++] = strdup(line);
    }
    free(text);
    return n;
}

static void test_gnu_tar_format(const char *format)
{
    printf("GNU tar --format=%s\n", format);
    const char *path = make_gnu_tar_archive(format);
    char *want[32];
    size_t n_want = gnu_tar_list(path, want, 32);
    bool ustar = strcmp(format, "ustar") == 0;
    CHECK_EQ_U64(n_want, ustar ? 6 : 7);

    lc_tar_index idx;
    lc_error err;
    int fd;
    CHECK_OK(index_file(path, &idx, &err, &fd));
    CHECK(!idx.truncated);
    CHECK_EQ_U64(idx.n_members, n_want);
    CHECK(idx.n_directories >= 2);
    if (strcmp(format, "gnu") == 0)
        CHECK(idx.n_long_names >= 2);
    if (strcmp(format, "pax") == 0)
        CHECK(idx.n_pax_headers >= 1);
    bool saw_long = false, saw_huge = false;
    for (size_t i = 0; i < idx.n_members && i < n_want; i++) {
        const lc_tar_member *m = &idx.members[i];
        CHECK_EQ_STR(m->name, want[i]);
        saw_long |= strcmp(m->name, long_file) == 0;
        saw_huge |= strcmp(m->name, huge_base) == 0;
        char *full = lc_xasprintf("%s/src/%s", tu_tmpdir(), m->name);
        size_t len = 0;
        uint8_t *data = tu_read_file(full, &len);
        CHECK(data != NULL);
        if (data)
            check_member_data(fd, path, m, data, len);
        free(data);
        free(full);
    }
    CHECK(saw_long);
    CHECK(saw_huge == !ustar);
    lc_tar_index_fini(&idx);
    close(fd);
    for (size_t i = 0; i < n_want; i++)
        free(want[i]);
}

/* A file with ten data runs archived with --sparse: GNU tar writes an 'S'
 * header with extension blocks; the member after it must be found. */
static void test_gnu_sparse(void)
{
    printf("GNU tar --sparse\n");
    char *dir = lc_xasprintf("%s/sparse", tu_tmpdir());
    tu_mkdirs(dir);
    char *file = lc_xasprintf("%s/holes.bin", dir);
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    for (int i = 0; i < 10; i++)
        CHECK(pwrite(fd, "data", 4, (off_t)i << 20) == 4);
    CHECK(ftruncate(fd, (off_t)11 << 20) == 0);
    close(fd);
    char *after = lc_xasprintf("%s/after.txt", dir);
    tu_write_file(after, "after\n", 6);
    const char *archive = tu_path("sparse.tar");
    char *argv[] = {"tar", "--format=gnu",  "--sparse",  "-C",        dir,
                    "-cf", (char *)archive, "holes.bin", "after.txt", NULL};
    CHECK_EQ_INT(tu_run(argv, NULL), 0);
    lc_tar_index idx;
    lc_error err;
    CHECK_OK(index_file(archive, &idx, &err, &fd));
    CHECK(!idx.truncated);
    CHECK_EQ_U64(idx.n_other, 1);
    CHECK_EQ_U64(idx.n_members, 1);
    if (idx.n_members == 1) {
        CHECK_EQ_STR(idx.members[0].name, "after.txt");
        check_member_data(fd, archive, &idx.members[0], (const uint8_t *)"after\n", 6);
    }
    lc_tar_index_fini(&idx);
    close(fd);
    free(after);
    free(file);
    free(dir);
}

/* ---- truncated and damaged archives ---- */

static void test_damage(void)
{
    printf("truncation and damage\n");
    const char *path = make_gnu_tar_archive("gnu");
    size_t len;
    uint8_t *full = tu_read_file(path, &len);
    lc_tar_index whole, idx;
    lc_error err;
    CHECK_OK(index_file(path, &whole, &err, NULL));
    size_t k = 0;
    while (k < whole.n_members && strcmp(whole.members[k].name, "b.gz") != 0)
        k++;
    CHECK(k > 0 && k < whole.n_members);
    if (k == 0 || k >= whole.n_members) {
        free(full);
        lc_tar_index_fini(&whole);
        return;
    }
    const lc_tar_member *b = &whole.members[k];
    CHECK(b->size % 512 != 0);
    uint64_t header = b->offset - 512;

#define EXPECT_PREFIX(idx_, n_)                                                                    \
    do {                                                                                           \
        CHECK_EQ_U64((idx_).n_members, (n_));                                                      \
        for (size_t i_ = 0; i_ < (idx_).n_members && i_ < (n_); i_++) {                            \
            CHECK_EQ_STR((idx_).members[i_].name, whole.members[i_].name);                         \
            CHECK_EQ_U64((idx_).members[i_].offset, whole.members[i_].offset);                     \
            CHECK_EQ_U64((idx_).members[i_].size, whole.members[i_].size);                         \
        }                                                                                          \
    } while (0)

    /* Cut inside member data. */
    CHECK_OK(index_bytes(full, (size_t)(b->offset + b->size / 2), &idx, &err));
    CHECK(idx.truncated);
    EXPECT_PREFIX(idx, k);
    CHECK(tu_contains(err.msg, "bytes.tar"));
    CHECK(tu_contains(err.msg, "truncated"));
    CHECK(tu_contains(err.msg, "b.gz"));
    CHECK_EQ_INT(err.code, LC_ETRUNC);
    printf("  %s\n", err.msg);
    lc_tar_index_fini(&idx);

    /* Cut inside a header. */
    CHECK_OK(index_bytes(full, (size_t)header + 100, &idx, &err));
    CHECK(idx.truncated);
    EXPECT_PREFIX(idx, k);
    CHECK(tu_contains(err.msg, "offset"));
    printf("  %s\n", err.msg);
    lc_tar_index_fini(&idx);

    /* Cut on the header boundary: a whole archive without its end marker. */
    CHECK_OK(index_bytes(full, (size_t)header, &idx, &err));
    CHECK(!idx.truncated);
    EXPECT_PREFIX(idx, k);
    lc_tar_index_fini(&idx);

    /* Cut inside the padding after the data: the member is whole. */
    CHECK_OK(index_bytes(full, (size_t)(b->offset + b->size), &idx, &err));
    CHECK(idx.truncated);
    EXPECT_PREFIX(idx, k + 1);
    lc_tar_index_fini(&idx);

    /* Bad checksum in b.gz's header. */
    uint8_t *bad = malloc(len);
    memcpy(bad, full, len);
    bad[header + 10] ^= 0x01;
    CHECK_OK(index_bytes(bad, len, &idx, &err));
    CHECK(idx.truncated);
    EXPECT_PREFIX(idx, k);
    CHECK(tu_contains(err.msg, "checksum"));
    printf("  %s\n", err.msg);
    lc_tar_index_fini(&idx);

    /* Garbage in the size field. */
    memcpy(bad, full, len);
    memcpy(bad + header + 124, "12345678x00", 11);
    {
        long sum = 0;
        memset(bad + header + 148, ' ', 8);
        for (int i = 0; i < 512; i++)
            sum += bad[header + i];
        snprintf((char *)bad + header + 148, 8, "%06lo", sum);
    }
    CHECK_OK(index_bytes(bad, len, &idx, &err));
    CHECK(idx.truncated);
    EXPECT_PREFIX(idx, k);
    CHECK(tu_contains(err.msg, "size"));
    lc_tar_index_fini(&idx);
    free(bad);

    /* Empty file, only zeros, only garbage. */
    CHECK_OK(index_bytes((const uint8_t *)"", 0, &idx, &err));
    CHECK(!idx.truncated && idx.n_members == 0);
    lc_tar_index_fini(&idx);
    uint8_t *zeros = calloc(1, 10240);
    CHECK_OK(index_bytes(zeros, 10240, &idx, &err));
    CHECK(!idx.truncated && idx.n_members == 0);
    lc_tar_index_fini(&idx);
    free(zeros);
    uint8_t *junk = filled(2000, 77);
    CHECK_OK(index_bytes(junk, 2000, &idx, &err));
    CHECK(idx.truncated && idx.n_members == 0);
    lc_tar_index_fini(&idx);
    free(junk);

    /* The file shrinks after indexing: a short read naming the member. */
    const char *shrink = tu_path("shrink.tar");
    tu_write_file(shrink, full, len);
    int fd;
    CHECK_OK(index_file(shrink, &idx, &err, &fd));
    CHECK(truncate(shrink, (off_t)(b->offset + 10)) == 0);
    uint8_t *buf = malloc(b->size);
    lc_error_clear(&err);
    CHECK_EQ_INT(lc_tar_pread_member(fd, shrink, &idx.members[k], buf, &err), LC_ETRUNC);
    CHECK(tu_contains(err.msg, "shrink.tar"));
    CHECK(tu_contains(err.msg, "'b.gz'"));
    printf("  %s\n", err.msg);
    free(buf);
    close(fd);
    lc_tar_index_fini(&idx);

    lc_tar_index_fini(&whole);
    lc_tar_index_fini(NULL);
    free(full);
#undef EXPECT_PREFIX
}

/* ---- concurrent reads ---- */

typedef struct reader_arg {
    int fd;
    const char *path;
    const lc_tar_index *idx;
    uint8_t **want;
    unsigned seed;
    size_t bad;
} reader_arg;

static void *reader(void *p)
{
    reader_arg *a = p;
    uint32_t x = a->seed;
    for (int round = 0; round < 200; round++) {
        x = x * 1103515245u + 12345u;
        size_t i = (x >> 8) % a->idx->n_members;
        const lc_tar_member *m = &a->idx->members[i];
        uint8_t *buf = malloc(m->size ? m->size : 1);
        if (lc_tar_pread_member(a->fd, a->path, m, buf, NULL) != 0 ||
            memcmp(buf, a->want[i], m->size) != 0)
            a->bad++;
        free(buf);
    }
    return NULL;
}

static void test_concurrent(void)
{
    printf("concurrent reads\n");
    const char *path = make_gnu_tar_archive("pax");
    lc_tar_index idx;
    lc_error err;
    int fd;
    CHECK_OK(index_file(path, &idx, &err, &fd));
    CHECK(idx.n_members > 0);
    if (idx.n_members == 0) {
        close(fd);
        return;
    }
    uint8_t **want = calloc(idx.n_members, sizeof *want);
    for (size_t i = 0; i < idx.n_members; i++) {
        char *full = lc_xasprintf("%s/src/%s", tu_tmpdir(), idx.members[i].name);
        size_t len;
        want[i] = tu_read_file(full, &len);
        CHECK(want[i] && len == idx.members[i].size);
        free(full);
    }
    pthread_t th[4];
    reader_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (reader_arg){.fd = fd, .path = path, .idx = &idx, .want = want, .seed = 7u + i};
        CHECK_EQ_INT(pthread_create(&th[i], NULL, reader, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_U64(args[i].bad, 0);
    }
    for (size_t i = 0; i < idx.n_members; i++)
        free(want[i]);
    free(want);
    lc_tar_index_fini(&idx);
    close(fd);
}

int main(void)
{
    test_hand_archive();
    make_source_tree();
    test_gnu_tar_format("gnu");
    test_gnu_tar_format("pax");
    test_gnu_tar_format("ustar");
    test_gnu_sparse();
    test_damage();
    test_concurrent();
    free(long_dir);
    free(long_file);
    free(huge_base);
    return check_finish();
}
