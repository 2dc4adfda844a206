/*
 * chunk_source: see chunk_source.h. A tar source keeps its descriptor and the
 * list of its chunk members (gzip or raw records) from the index; a .gz source keeps only its path,
 * because a directory may hold hundreds of thousands of games and open
 * descriptors are a scarce resource. The reference count, the bad marks and
 * the memo words (all atomic) are the only fields that change after open.
 */
#include "format/lc0/chunk_source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/text.h"
#include "format/lc0/record.h"
#include "format/lc0/tar.h"

typedef _Atomic uint64_t memo_word;

/* A tar member that is not a chunk, and why. */
typedef struct lc_member_skip {
    char *name, *reason;
} lc_member_skip;

struct lc_chunk_source {
    atomic_size_t refs;
    char *path;
    const char *key; /* points into path */
    char *real;      /* .gz: where path led when opened, if through a link; else NULL */
    lc_source_kind kind;
    int fd;                /* tar only; -1 for a .gz */
    lc_tar_member *chunks; /* tar only: the gzip and raw members, names owned */
    bool *raw;             /* tar only: chunk i is raw records, not gzip */
    size_t n_chunks, n_raw;
    lc_member_skip *skipped; /* tar only: members that are no chunk, and why */
    size_t n_skipped;
    lc_tar_entry_counts entries; /* tar only: headers that are not members */
    char *damage;                /* tar only: what cut it short or damaged it (NULL: whole) */
    uint64_t content;            /* .gz: a hash of the file's bytes (lc_chunk_source_chunk_id) */
    atomic_uchar *bad;           /* per chunk: found bad downstream (lc_chunk_source_mark_bad) */
    _Atomic(memo_word *) memo;   /* per chunk: a stage's note (lc_chunk_source_memo); NULL
                                    until the first is set */
    /* A view (lc_chunk_source_view): chunk i is chunk map[i] of parent,
     * which is never a view itself; n_chunks counts the view's. */
    lc_chunk_source *parent;
    uint32_t *map;
    size_t max_output; /* 0: LC_GUNZIP_MAX_OUTPUT_DEFAULT; a view asks its parent */
};

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

static void source_free(lc_chunk_source *s)
{
    lc_chunk_source_unref(s->parent);
    free(s->map);
    if (s->fd >= 0)
        close(s->fd);
    for (size_t i = 0; s->chunks && i < s->n_chunks; i++)
        free(s->chunks[i].name);
    free(s->chunks);
    free(s->raw);
    for (size_t i = 0; i < s->n_skipped; i++) {
        free(s->skipped[i].name);
        free(s->skipped[i].reason);
    }
    free(s->skipped);
    free((void *)s->bad);
    free((void *)atomic_load(&s->memo));
    free(s->damage);
    free(s->path);
    free(s->real);
    free(s);
}

/* Why a tar member that is not gzip is not raw records either, into why;
 * "" when it is raw records: its first u32 is a record version and its size
 * a whole number of records of that version. Only the first record's
 * version is read here; the record checks downstream (lc_chunk_check) check
 * every record's, as they do for an inflated gzip member. */
static void raw_verdict(const uint8_t head[4], uint64_t size, char *why, size_t len)
{
    why[0] = '\0';
    uint32_t version;
    memcpy(&version, head, sizeof version);
    size_t rs = size >= 4 ? lc_record_size_for_version(version) : 0;
    if (size == 0)
        snprintf(why, len, "an empty member");
    else if (size < 4)
        snprintf(why, len, "%llu bytes: not gzip, and shorter than a record's version field",
                 (unsigned long long)size);
    else if (rs == 0)
        snprintf(why, len,
                 "neither gzip (it starts with %02x %02x, not 1f 8b) nor raw records (its first "
                 "u32, %u, is not a record version 3 to 7)",
                 head[0], head[1], version);
    else if (size % rs != 0)
        snprintf(why, len,
                 "not gzip, and its %llu bytes are not a whole number of %zu-byte V%u records "
                 "(%llu records and %llu bytes over)",
                 (unsigned long long)size, rs, version, (unsigned long long)(size / rs),
                 (unsigned long long)(size % rs));
}

/* A member skipped: counted, kept with its reason, logged. */
static void skip_member(lc_chunk_source *s, char *name, const char *why)
{
    s->skipped = lc_xrealloc(s->skipped, (s->n_skipped + 1) * sizeof *s->skipped);
    s->skipped[s->n_skipped++] = (lc_member_skip){.name = name, .reason = lc_xstrdup(why)};
    LC_WARN("%s: tar member '%s' skipped: %s", s->path, name, why);
}

/* Keep the gzip and raw-record members of idx (taking their names), skip
 * and count the rest. */
static int collect_members(lc_chunk_source *s, lc_tar_index *idx, lc_error *err)
{
    size_t cap = idx->n_members ? idx->n_members : 1;
    s->chunks = lc_xcalloc(cap, sizeof *s->chunks);
    s->raw = lc_xcalloc(cap, sizeof *s->raw);
    for (size_t i = 0; i < idx->n_members; i++) {
        lc_tar_member *m = &idx->members[i];
        uint8_t head[4] = {0, 0, 0, 0};
        size_t want = m->size >= 4 ? 4 : (size_t)m->size;
        if (want > 0) {
            int rc = lc_tar_pread_member(
                s->fd, s->path,
                &(lc_tar_member){.name = m->name, .offset = m->offset, .size = want}, head, err);
            if (rc < 0)
                return rc;
        }
        char why[256];
        bool gzip = lc_is_gzip(head, want);
        if (!gzip)
            raw_verdict(head, m->size, why, sizeof why);
        if (gzip || !why[0]) {
            s->raw[s->n_chunks] = !gzip;
            s->n_raw += !gzip;
            s->chunks[s->n_chunks++] = *m;
        } else {
            skip_member(s, m->name, why);
        }
        m->name = NULL;
    }
    return 0;
}

static int open_tar(lc_chunk_source *s, lc_error *err)
{
    s->fd = lc_open_regular(s->path, NULL, err);
    if (s->fd < 0)
        return s->fd;
    lc_tar_index idx;
    lc_error ierr;
    lc_error_clear(&ierr);
    int rc = lc_tar_index_fd(s->fd, s->path, &idx, &ierr);
    if (rc < 0) {
        if (err)
            *err = ierr;
        return rc;
    }
    if (idx.truncated)
        s->damage = lc_xstrdup(ierr.msg);
    s->entries = (lc_tar_entry_counts){
        .directories = idx.n_directories,
        .pax_headers = idx.n_pax_headers,
        .long_names = idx.n_long_names,
        .long_links = idx.n_long_links,
        .other = idx.n_other,
    };
    if (idx.truncated)
        LC_WARN("%s (keeping the %zu complete members before it)", ierr.msg, idx.n_members);
    rc = collect_members(s, &idx, err);
    lc_tar_index_fini(&idx);
    return rc;
}

static int too_large(const lc_chunk_source *s, size_t i, uint64_t size, size_t max, lc_error *err)
{
    if (s->kind == LC_SOURCE_TAR)
        return lc_error_set(err, LC_EFORMAT,
                            "%s: member '%s': %llu compressed bytes is more than the %zu byte "
                            "limit for a chunk",
                            s->path, s->chunks[i].name, (unsigned long long)size, max);
    return lc_error_set(err, LC_EFORMAT,
                        "%s: %llu compressed bytes is more than the %zu byte limit for a chunk",
                        s->path, (unsigned long long)size, max);
}

/* The file path leads to when it is not path itself (a link on the way:
 * the data folder a symbolic link, a .gz a link), else NULL. A .gz is read
 * from there for its life in the window: a link re-pointed later (`ln -sfn
 * runB data`, switching runs) leaves it readable, not another file or none
 * at its old name. */
static char *real_path_if_other(const char *path)
{
    char *real = realpath(path, NULL);
    if (!real)
        return NULL;
    char cwd[4096];
    bool same;
    if (path[0] == '/') {
        same = !strcmp(real, path);
    } else if (getcwd(cwd, sizeof cwd)) {
        size_t n = strlen(cwd);
        same = !strncmp(real, cwd, n) && real[n] == '/' && !strcmp(real + n + 1, path);
    } else {
        same = false;
    }
    if (same) {
        free(real);
        return NULL;
    }
    return real;
}

/* Where a .gz source reads its bytes. */
static const char *read_path(const lc_chunk_source *s)
{
    return s->real ? s->real : s->path;
}

/* A .gz must be a gzip file: found when it is opened, not when a pool first
 * draws it (a text file named x.gz, an empty file). Its first two bytes are
 * checked first, then its size against the limit a chunk is read under
 * (read_gz refuses more), and only then are its bytes hashed (*content), so
 * that a file written again with the same bytes is known as the same game
 * (a game is tens of kilobytes): a huge file named .gz (a disk image, a
 * sparse file of a terabyte) costs two bytes and a stat, never a read to
 * its end (nor past the limit, should it grow meanwhile). */
static int check_gzip_file(const lc_chunk_source *s, uint64_t *content, lc_error *err)
{
    struct stat st;
    int fd = lc_open_regular(read_path(s), &st, err);
    if (fd < 0)
        return fd;
    unsigned char magic[2] = {0, 0};
    ssize_t n = read(fd, magic, 2);
    int rc = 0;
    if (n == 0)
        rc = lc_error_set(err, LC_EEMPTY, "%s: an empty file, not a game", s->path);
    else if (n != 2 || magic[0] != 0x1f || magic[1] != 0x8b)
        rc = lc_error_set(err, LC_EFORMAT,
                          "%s: not a gzip file (it starts with %02x %02x, not 1f 8b: lc0 "
                          "writes each game as a gzip file)",
                          s->path, magic[0], n == 2 ? magic[1] : 0);
    else if ((uint64_t)st.st_size > LC_GUNZIP_MAX_OUTPUT_DEFAULT)
        rc = too_large(s, 0, (uint64_t)st.st_size, LC_GUNZIP_MAX_OUTPUT_DEFAULT, err);
    if (rc == 0) {
        uint64_t h = lc_fnv1a(magic, 2);
        unsigned char buf[65536];
        ssize_t got;
        for (size_t total = 2;
             total < LC_GUNZIP_MAX_OUTPUT_DEFAULT && (got = read(fd, buf, sizeof buf)) > 0;
             total += (size_t)got)
            h = lc_fnv1a_more(h, buf, (size_t)got);
        *content = h;
    }
    close(fd);
    return rc;
}

int lc_chunk_source_open(const char *path, lc_chunk_source **out, lc_error *err)
{
    return lc_chunk_source_open_keyed(path, 0, out, err);
}

int lc_chunk_source_open_keyed(const char *path, size_t key_at, lc_chunk_source **out,
                               lc_error *err)
{
    *out = NULL;
    lc_source_kind kind;
    if (has_suffix(path, ".gz"))
        kind = LC_SOURCE_GZ;
    else if (has_suffix(path, ".tar"))
        kind = LC_SOURCE_TAR;
    else
        return lc_error_set(err, -ENOTSUP, "%s: not a .gz or .tar file", path);

    lc_chunk_source *s = lc_xcalloc(1, sizeof *s);
    atomic_init(&s->refs, 1);
    s->path = lc_xstrdup(path);
    if (kind == LC_SOURCE_GZ)
        s->real = real_path_if_other(path);
    const char *slash = strrchr(s->path, '/');
    s->key = key_at > 0 && key_at < strlen(s->path) ? s->path + key_at
             : slash                                ? slash + 1
                                                    : s->path;
    s->kind = kind;
    s->fd = -1;

    int rc;
    if (kind == LC_SOURCE_TAR) {
        rc = open_tar(s, err);
    } else {
        rc = check_gzip_file(s, &s->content, err);
    }
    if (rc < 0) {
        source_free(s);
        return rc;
    }
    size_t n = lc_chunk_source_count(s);
    s->bad = lc_xcalloc(n ? n : 1, sizeof *s->bad);
    *out = s;
    return 0;
}

void lc_chunk_source_mark_bad(lc_chunk_source *s, size_t i)
{
    if (i < lc_chunk_source_count(s))
        atomic_store_explicit(&s->bad[i], 1, memory_order_relaxed);
}

bool lc_chunk_source_is_bad(const lc_chunk_source *s, size_t i)
{
    return i < lc_chunk_source_count(s) && atomic_load_explicit(&s->bad[i], memory_order_relaxed);
}

uint64_t lc_chunk_source_memo(const lc_chunk_source *s, size_t i)
{
    memo_word *m = atomic_load_explicit(&((lc_chunk_source *)s)->memo, memory_order_acquire);
    return m && i < lc_chunk_source_count(s) ? atomic_load_explicit(&m[i], memory_order_relaxed)
                                             : 0;
}

void lc_chunk_source_set_memo(lc_chunk_source *s, size_t i, uint64_t v)
{
    size_t n = lc_chunk_source_count(s);
    if (i >= n)
        return;
    memo_word *m = atomic_load_explicit(&s->memo, memory_order_acquire);
    if (!m) { /* the first: the words of every chunk, 0 */
        memo_word *fresh = lc_xcalloc(n, sizeof *fresh);
        if (atomic_compare_exchange_strong(&s->memo, &m, fresh))
            m = fresh;
        else
            free((void *)fresh); /* another thread's came first: m is it */
    }
    atomic_store_explicit(&m[i], v, memory_order_relaxed);
}

lc_chunk_source *lc_chunk_source_ref(lc_chunk_source *s)
{
    if (s)
        atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

void lc_chunk_source_unref(lc_chunk_source *s)
{
    if (!s)
        return;
    size_t before = atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel);
    if (before == 0)
        lc_fatal("lc_chunk_source_unref: %s has no references left", s->path);
    if (before == 1)
        source_free(s);
}

const char *lc_chunk_source_path(const lc_chunk_source *s)
{
    return s->path;
}

const char *lc_chunk_source_key(const lc_chunk_source *s)
{
    return s->key;
}

lc_source_kind lc_chunk_source_kind(const lc_chunk_source *s)
{
    return s->kind;
}

size_t lc_chunk_source_count(const lc_chunk_source *s)
{
    return s->kind == LC_SOURCE_GZ && !s->parent ? 1 : s->n_chunks;
}

const char *lc_chunk_source_chunk_name(const lc_chunk_source *s, size_t i)
{
    if (i >= lc_chunk_source_count(s))
        return NULL;
    if (s->parent)
        return lc_chunk_source_chunk_name(s->parent, s->map[i]);
    return s->kind == LC_SOURCE_GZ ? lc_basename(s->key) : s->chunks[i].name;
}

uint64_t lc_chunk_source_chunk_id(const lc_chunk_source *s, size_t i)
{
    if (i >= lc_chunk_source_count(s))
        return 0;
    if (s->parent)
        return lc_chunk_source_chunk_id(s->parent, s->map[i]);
    if (s->kind == LC_SOURCE_GZ)
        return s->content;
    const lc_tar_member *m = &s->chunks[i];
    uint64_t h = lc_fnv1a(m->name, strlen(m->name));
    h = lc_fnv1a_more(h, &m->offset, sizeof m->offset);
    return lc_fnv1a_more(h, &m->size, sizeof m->size);
}

lc_chunk_source *lc_chunk_source_view(lc_chunk_source *src, const uint32_t *members, size_t n)
{
    lc_chunk_source *v = lc_xcalloc(1, sizeof *v);
    atomic_init(&v->refs, 1);
    v->parent = lc_chunk_source_ref(src->parent ? src->parent : src);
    v->map = lc_xmalloc((n ? n : 1) * sizeof *v->map);
    for (size_t i = 0; i < n; i++) /* a view of a view views the file */
        v->map[i] = src->parent ? src->map[members[i]] : members[i];
    v->n_chunks = n;
    v->path = lc_xstrdup(src->path);
    v->key = v->path + (src->key - src->path);
    v->kind = src->kind;
    v->fd = -1;
    v->bad = lc_xcalloc(n ? n : 1, sizeof *v->bad);
    return v;
}

size_t lc_chunk_source_member(const lc_chunk_source *s, size_t i)
{
    return s->parent && i < s->n_chunks ? s->map[i] : i;
}

size_t lc_chunk_source_skipped_members(const lc_chunk_source *s)
{
    return s->n_skipped;
}

const char *lc_chunk_source_skipped_member(const lc_chunk_source *s, size_t k, const char **reason)
{
    if (k >= s->n_skipped)
        return NULL;
    if (reason)
        *reason = s->skipped[k].reason;
    return s->skipped[k].name;
}

size_t lc_chunk_source_raw_members(const lc_chunk_source *s)
{
    return s->n_raw;
}

bool lc_chunk_source_chunk_raw(const lc_chunk_source *s, size_t i)
{
    if (i >= lc_chunk_source_count(s))
        return false;
    if (s->parent)
        return lc_chunk_source_chunk_raw(s->parent, s->map[i]);
    return s->kind == LC_SOURCE_TAR && s->raw[i];
}

bool lc_chunk_source_truncated(const lc_chunk_source *s)
{
    return lc_chunk_source_damage(s) != NULL;
}

const char *lc_chunk_source_damage(const lc_chunk_source *s)
{
    return s->damage;
}

lc_tar_entry_counts lc_chunk_source_tar_entries(const lc_chunk_source *s)
{
    return s->entries;
}

static int read_gz(const lc_chunk_source *s, uint8_t **buf, size_t *len, size_t max, lc_error *err)
{
    struct stat st;
    int fd = lc_open_regular(read_path(s), &st, err);
    if (fd < 0)
        return fd;
    int rc = 0;
    if ((uint64_t)st.st_size > max) {
        rc = too_large(s, 0, (uint64_t)st.st_size, max, err);
        goto out;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *b = lc_xmalloc(size ? size : 1);
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, b + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = lc_error_set(err, -errno, "%s: read error at offset %zu: %s", s->path, got,
                              strerror(errno));
            free(b);
            goto out;
        }
        if (n == 0)
            break; /* it shrank after fstat; the decoder will judge what is left */
        got += (size_t)n;
    }
    *buf = b;
    *len = got;
out:
    close(fd);
    return rc;
}

int lc_chunk_source_read(const lc_chunk_source *s, size_t i, uint8_t **buf, size_t *len,
                         lc_error *err)
{
    *buf = NULL;
    *len = 0;
    if (i >= lc_chunk_source_count(s))
        return lc_error_set(err, -EINVAL, "%s: chunk %zu out of range (%zu chunks)", s->path, i,
                            lc_chunk_source_count(s));
    if (s->parent)
        return lc_chunk_source_read(s->parent, s->map[i], buf, len, err);
    size_t max = s->max_output ? s->max_output : LC_GUNZIP_MAX_OUTPUT_DEFAULT;
    if (s->kind == LC_SOURCE_GZ)
        return read_gz(s, buf, len, max, err);

    const lc_tar_member *m = &s->chunks[i];
    if (m->size > max)
        return too_large(s, i, m->size, max, err);
    uint8_t *b = lc_xmalloc(m->size ? (size_t)m->size : 1);
    int rc = lc_tar_pread_member(s->fd, s->path, m, b, err);
    if (rc < 0) {
        free(b);
        return rc;
    }
    *buf = b;
    *len = (size_t)m->size;
    return 0;
}

void lc_chunk_source_limit_output(lc_chunk_source *s, size_t max)
{
    s->max_output = max;
}

static size_t source_max_output(const lc_chunk_source *s)
{
    return s->parent ? source_max_output(s->parent) : s->max_output;
}

int lc_chunk_source_load(const lc_chunk_source *s, size_t i, lc_inflate_backend b,
                         lc_chunk_data *out, lc_error *err)
{
    return lc_chunk_source_load_as(s, i, b, false, out, err);
}

int lc_chunk_source_load_as(const lc_chunk_source *s, size_t i, lc_inflate_backend b, bool pages,
                            lc_chunk_data *out, lc_error *err)
{
    memset(out, 0, sizeof *out);
    uint8_t *gz;
    size_t len;
    int rc = lc_chunk_source_read(s, i, &gz, &len, err);
    if (rc < 0)
        return rc;
    if (lc_chunk_source_chunk_raw(s, i)) {
        rc = lc_chunk_accept(gz, len, out, err); /* which owns gz now */
    } else {
        uint64_t content = lc_hash64(gz, len);
        rc = lc_chunk_decode_as(gz, len, b, source_max_output(s), pages, out, err);
        free(gz);
        if (rc >= 0)
            out->content = content;
    }
    if (rc < 0) {
        if (s->kind == LC_SOURCE_TAR)
            lc_error_prefix(err, "%s: member '%s': ", s->path, lc_chunk_source_chunk_name(s, i));
        else
            lc_error_prefix(err, "%s: ", s->path);
    }
    return rc;
}

int lc_source_key_compare(const char *a, const char *b)
{
    const char *ba = lc_basename(a), *bb = lc_basename(b);
    int c = strcmp(ba, bb);
    if (c || (ba == a) == (bb == b))
        return c ? c : strcmp(a, b);
    return ba == a ? 1 : -1; /* the bare name after the name in folders */
}

bool lc_source_key_matches(const char *key, const char *given)
{
    return !strcmp(key, given) || (!strchr(given, '/') && !strcmp(lc_basename(key), given));
}
