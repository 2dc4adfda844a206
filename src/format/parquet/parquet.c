/*
 * parquet: see parquet.h. Written from the Parquet format specification
 * (parquet.thrift and the encodings document).
 *
 * Layout of a file: "PAR1", column chunks, the FileMetaData (Thrift compact),
 * its length (4 bytes little-endian), "PAR1". Open reads the footer and keeps
 * only what reading needs: the leaf columns (name, physical type, definition
 * level) and, per row group, the rows and where each column chunk starts and
 * how long it is. The footer buffer itself is dropped.
 *
 * Reading a column chunk: pread the whole compressed chunk (its length is in
 * the metadata; it is bounded by the file), then walk the page headers from
 * its first byte. The first page is at the dictionary page offset when that
 * is set (nonzero), else at the data page offset; walking rather than
 * jumping copes with writers that leave the dictionary offset out. For each
 * data page: decompress, decode the definition levels into the validity
 * bytes, decode the non-null values densely at the row position, then spread
 * them over the rows from the back, which needs no second buffer.
 *
 * Everything mutable during a read lives in a pq_read on the caller's stack
 * or in the caller's lc_parquet_column, so reads of one file from several
 * threads do not interact.
 */
#include "format/parquet/parquet.h"

#include "format/gzip.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "format/parquet/parquet_decode.h"
#include "format/parquet/snappy.h"
#include "format/parquet/thrift.h"

/* ---- names -------------------------------------------------------------- */

const char *lc_parquet_encoding_name(int e)
{
    static const char *const names[] = {
        [0] = "PLAIN",
        [1] = "GROUP_VAR_INT",
        [2] = "PLAIN_DICTIONARY",
        [3] = "RLE",
        [4] = "BIT_PACKED",
        [5] = "DELTA_BINARY_PACKED",
        [6] = "DELTA_LENGTH_BYTE_ARRAY",
        [7] = "DELTA_BYTE_ARRAY",
        [8] = "RLE_DICTIONARY",
        [9] = "BYTE_STREAM_SPLIT",
    };
    return e >= 0 && e < (int)(sizeof names / sizeof *names) ? names[e] : "?";
}

const char *lc_parquet_codec_name(int c)
{
    static const char *const names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                        "BROTLI",       "LZ4",    "ZSTD", "LZ4_RAW"};
    return c >= 0 && c < (int)(sizeof names / sizeof *names) ? names[c] : "?";
}

const char *lc_parquet_type_name(int t)
{
    static const char *const names[] = {"BOOLEAN", "INT32",  "INT64",      "INT96",
                                        "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
    return t >= 0 && t < (int)(sizeof names / sizeof *names) ? names[t] : "?";
}

/* ---- the open file -------------------------------------------------------- */

typedef struct pq_leaf {
    lc_parquet_column_info info;
    char *name;  /* owned; info.name points here */
    char *top;   /* owned: name of the top-level field this leaf belongs to */
    int max_def; /* 0 required, 1 optional (flat leaves) */
    bool flat;   /* a direct child of the root, not repeated */
} pq_leaf;

typedef struct pq_chunk {
    bool has_meta; /* ColumnMetaData present */
    bool external; /* file_path set: the chunk lives in another file */
    int type;      /* physical type the chunk claims */
    int codec;
    int64_t num_values;
    int64_t total_compressed;
    int64_t data_off;
    int64_t dict_off; /* 0 when unset */
} pq_chunk;

typedef struct pq_row_group {
    int64_t rows;
    size_t n_chunks;
    pq_chunk *chunks;
} pq_row_group;

struct lc_parquet_file {
    char *path;
    int fd;
    uint64_t size;
    uint64_t meta_start; /* first byte of the footer metadata */
    int64_t num_rows;
    pq_leaf *leaves;
    size_t n_leaves;
    pq_row_group *rgs;
    size_t n_rgs;
};

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 4;
    while (c < need)
        c *= 2;
    p = lc_xrealloc(p, c * elem);
    *cap = c;
    return p;
}

static int pread_full(int fd, void *buf, size_t n, uint64_t off)
{
    uint8_t *b = buf;
    while (n > 0) {
        ssize_t r = pread(fd, b, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            return LC_ETRUNC;
        b += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

/* ---- footer metadata ---------------------------------------------------- */

typedef struct pq_selem {
    const uint8_t *name;
    size_t name_len;
    int type; /* -1 unset */
    int repetition;
    int32_t num_children; /* -1 unset */
} pq_selem;

/* Per column chunk, what open checks against the schema then forgets. */
typedef struct pq_chunk_path {
    const uint8_t *first; /* first element of path_in_schema */
    size_t first_len;
    size_t depth;
} pq_chunk_path;

typedef struct pq_meta {
    pq_selem *schema;
    size_t n_schema, cap_schema;
    pq_row_group *rgs;
    size_t n_rgs, cap_rgs;
    pq_chunk_path **paths; /* per row group */
    int64_t num_rows;
    bool have_schema, have_rgs, have_rows;
} pq_meta;

static bool parse_schema_element(lc_thrift *t, pq_selem *e)
{
    *e = (pq_selem){.type = -1, .repetition = -1, .num_children = -1};
    if (!lc_thrift_begin(t))
        return false;
    int16_t last = 0, id;
    int ty;
    bool named = false;
    while (lc_thrift_field(t, &last, &id, &ty)) {
        switch (id) {
        case 1:
            e->type = lc_thrift_i32(t, ty);
            break;
        case 3:
            e->repetition = lc_thrift_i32(t, ty);
            break;
        case 4:
            named = lc_thrift_binary(t, ty, &e->name, &e->name_len);
            break;
        case 5:
            e->num_children = lc_thrift_i32(t, ty);
            break;
        default:
            lc_thrift_skip(t, ty);
        }
    }
    lc_thrift_end(t);
    if (lc_thrift_ok(t) && !named)
        return lc_thrift_fail(t, "schema element without a name");
    return lc_thrift_ok(t);
}

static void parse_column_meta(lc_thrift *t, pq_chunk *c, pq_chunk_path *path)
{
    if (!lc_thrift_begin(t))
        return;
    int16_t last = 0, id;
    int ty;
    unsigned seen = 0;
    while (lc_thrift_field(t, &last, &id, &ty)) {
        if (id > 0 && id < 32)
            seen |= 1u << id;
        switch (id) {
        case 1:
            c->type = lc_thrift_i32(t, ty);
            break;
        case 3: {
            int et;
            size_t n;
            if (!lc_thrift_list(t, ty, &et, &n))
                break;
            path->depth = n;
            for (size_t i = 0; i < n && lc_thrift_ok(t); i++) {
                const uint8_t *p;
                size_t len;
                lc_thrift_binary(t, et, &p, &len);
                if (i == 0) {
                    path->first = p;
                    path->first_len = len;
                }
            }
            break;
        }
        case 4:
            c->codec = lc_thrift_i32(t, ty);
            break;
        case 5:
            c->num_values = lc_thrift_int(t, ty);
            break;
        case 7:
            c->total_compressed = lc_thrift_int(t, ty);
            break;
        case 9:
            c->data_off = lc_thrift_int(t, ty);
            break;
        case 11:
            c->dict_off = lc_thrift_int(t, ty);
            break;
        default:
            lc_thrift_skip(t, ty);
        }
    }
    lc_thrift_end(t);
    const unsigned required = 1u << 1 | 1u << 4 | 1u << 5 | 1u << 7 | 1u << 9;
    if (lc_thrift_ok(t) && (seen & required) != required)
        lc_thrift_fail(t, "column metadata lacks a required field");
    c->has_meta = true;
}

static void parse_column_chunk(lc_thrift *t, pq_chunk *c, pq_chunk_path *path)
{
    *c = (pq_chunk){.type = -1, .codec = -1};
    *path = (pq_chunk_path){0};
    if (!lc_thrift_begin(t))
        return;
    int16_t last = 0, id;
    int ty;
    while (lc_thrift_field(t, &last, &id, &ty)) {
        switch (id) {
        case 1: {
            const uint8_t *p;
            size_t n;
            if (lc_thrift_binary(t, ty, &p, &n) && n > 0)
                c->external = true;
            break;
        }
        case 3:
            if (ty != LC_THRIFT_STRUCT) {
                lc_thrift_fail(t, "column metadata is not a struct");
                break;
            }
            parse_column_meta(t, c, path);
            break;
        default:
            lc_thrift_skip(t, ty);
        }
    }
    lc_thrift_end(t);
}

/* The header of a list of structs that its struct holds at most once
 * (*seen says whether it came before): the count in *n, else false with t
 * failed, saying `twice` or `not_structs`. */
static bool struct_list_once(lc_thrift *t, int ty, bool *seen, const char *twice,
                             const char *not_structs, size_t *n)
{
    int et;
    if (*seen)
        return lc_thrift_fail(t, twice);
    if (!lc_thrift_list(t, ty, &et, n))
        return false;
    if (et != LC_THRIFT_STRUCT)
        return lc_thrift_fail(t, not_structs);
    *seen = true;
    return true;
}

/* max_chunks: the number of schema elements when already known, else -1. */
static void parse_row_group(lc_thrift *t, pq_row_group *rg, pq_chunk_path **paths,
                            int64_t max_chunks)
{
    *rg = (pq_row_group){.rows = -1};
    *paths = NULL;
    if (!lc_thrift_begin(t))
        return;
    int16_t last = 0, id;
    int ty;
    while (lc_thrift_field(t, &last, &id, &ty)) {
        switch (id) {
        case 1: {
            size_t n;
            bool seen = rg->chunks != NULL;
            if (!struct_list_once(t, ty, &seen, "row group lists its columns twice",
                                  "row group columns are not structs", &n))
                break;
            if (max_chunks >= 0 && n > (size_t)max_chunks) {
                lc_thrift_fail(t, "row group has more columns than the schema has elements");
                break;
            }
            /* Grown as chunks are parsed, so that memory follows the bytes
             * actually there rather than the count the list claims. */
            size_t cap = 0, pcap = 0;
            rg->chunks = grow(NULL, &cap, 1, sizeof *rg->chunks);
            for (size_t i = 0; i < n && lc_thrift_ok(t); i++) {
                rg->chunks = grow(rg->chunks, &cap, i + 1, sizeof *rg->chunks);
                *paths = grow(*paths, &pcap, i + 1, sizeof **paths);
                parse_column_chunk(t, &rg->chunks[i], &(*paths)[i]);
                rg->n_chunks = i + 1;
            }
            break;
        }
        case 3:
            rg->rows = lc_thrift_int(t, ty);
            break;
        default:
            lc_thrift_skip(t, ty);
        }
    }
    lc_thrift_end(t);
    if (lc_thrift_ok(t) && (!rg->chunks || rg->rows < 0))
        lc_thrift_fail(t, "row group lacks its columns or its row count");
}

static void parse_file_meta(lc_thrift *t, pq_meta *m)
{
    if (!lc_thrift_begin(t))
        return;
    int16_t last = 0, id;
    int ty;
    while (lc_thrift_field(t, &last, &id, &ty)) {
        switch (id) {
        case 2: {
            size_t n;
            if (!struct_list_once(t, ty, &m->have_schema, "metadata holds two schemas",
                                  "schema elements are not structs", &n))
                break;
            for (size_t i = 0; i < n && lc_thrift_ok(t); i++) {
                m->schema = grow(m->schema, &m->cap_schema, m->n_schema + 1, sizeof *m->schema);
                if (parse_schema_element(t, &m->schema[m->n_schema]))
                    m->n_schema++;
            }
            break;
        }
        case 3:
            m->num_rows = lc_thrift_int(t, ty);
            m->have_rows = true;
            break;
        case 4: {
            size_t n;
            if (!struct_list_once(t, ty, &m->have_rgs, "metadata lists row groups twice",
                                  "row groups are not structs", &n))
                break;
            for (size_t i = 0; i < n && lc_thrift_ok(t); i++) {
                size_t cap = m->cap_rgs;
                m->rgs = grow(m->rgs, &m->cap_rgs, m->n_rgs + 1, sizeof *m->rgs);
                m->paths = grow(m->paths, &cap, m->n_rgs + 1, sizeof *m->paths);
                parse_row_group(t, &m->rgs[m->n_rgs], &m->paths[m->n_rgs],
                                m->have_schema ? (int64_t)m->n_schema : -1);
                m->n_rgs++;
            }
            break;
        }
        default:
            lc_thrift_skip(t, ty);
        }
    }
    lc_thrift_end(t);
    if (lc_thrift_ok(t) && (!m->have_schema || !m->have_rgs || !m->have_rows))
        lc_thrift_fail(t, "file metadata lacks its schema, row groups or row count");
}

static void meta_fini(pq_meta *m)
{
    for (size_t i = 0; i < m->n_rgs; i++) {
        free(m->rgs[i].chunks);
        free(m->paths[i]);
    }
    free(m->rgs);
    free(m->paths);
    free(m->schema);
}

/* ---- schema --------------------------------------------------------------- */

enum { REP_REQUIRED = 0, REP_OPTIONAL = 1, REP_REPEATED = 2 };

typedef struct pq_schema_walk {
    const pq_selem *el;
    size_t n, next;
    pq_leaf *leaves;
    size_t n_leaves, cap_leaves;
    const char *error;
} pq_schema_walk;

static bool is_group(const pq_selem *e)
{
    return e->num_children > 0 || (e->num_children == 0 && e->type < 0);
}

static void add_leaf(pq_schema_walk *w, const pq_selem *e, const char *path, const char *top,
                     int depth, int def, bool repeated)
{
    w->leaves = grow(w->leaves, &w->cap_leaves, w->n_leaves + 1, sizeof *w->leaves);
    pq_leaf *l = &w->leaves[w->n_leaves++];
    *l = (pq_leaf){0};
    l->name = lc_xstrdup(path);
    l->top = lc_xstrdup(top);
    l->flat = depth == 1 && !repeated;
    l->max_def = def;
    l->info.name = l->name;
    l->info.type = (lc_parquet_type)e->type;
    l->info.optional = def > 0;
    l->info.kind = LC_PARQUET_KIND_NONE;
    if (l->flat) {
        switch (e->type) {
        case LC_PARQUET_INT32:
        case LC_PARQUET_INT64:
            l->info.kind = LC_PARQUET_KIND_INT64;
            break;
        case LC_PARQUET_FLOAT:
        case LC_PARQUET_DOUBLE:
            l->info.kind = LC_PARQUET_KIND_DOUBLE;
            break;
        case LC_PARQUET_BYTE_ARRAY:
            l->info.kind = LC_PARQUET_KIND_STRING;
            break;
        default:
            break;
        }
    }
}

/* Walk the children of a group (the depth-first flattened list). */
static void walk_group(pq_schema_walk *w, int32_t children, const char *prefix, const char *top,
                       int depth, int def, bool repeated)
{
    if (depth > LC_THRIFT_MAX_DEPTH) {
        w->error = "schema nested too deeply";
        return;
    }
    for (int32_t i = 0; i < children && !w->error; i++) {
        if (w->next >= w->n) {
            w->error = "schema has fewer elements than its groups claim";
            return;
        }
        const pq_selem *e = &w->el[w->next++];
        int rep = e->repetition < 0 ? REP_REQUIRED : e->repetition;
        if (rep > REP_REPEATED) {
            w->error = "schema element with an unknown repetition";
            return;
        }
        int d = def + (rep != REP_REQUIRED);
        bool r = repeated || rep == REP_REPEATED;
        char *path = prefix
                         ? lc_xasprintf("%s.%.*s", prefix, (int)e->name_len, (const char *)e->name)
                         : lc_xstrndup((const char *)e->name, e->name_len);
        const char *t = top ? top : path;
        if (is_group(e)) {
            walk_group(w, e->num_children, path, t, depth + 1, d, r);
        } else if (e->type < 0 || e->type > LC_PARQUET_FIXED_LEN_BYTE_ARRAY) {
            w->error = "schema leaf without a known physical type";
        } else {
            add_leaf(w, e, path, t, depth, d, r);
        }
        free(path);
    }
}

/* ---- open ----------------------------------------------------------------- */

static int open_fail(lc_parquet_file *f, lc_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int open_fail(lc_parquet_file *f, lc_error *err, int code, const char *fmt, ...)
{
    char msg[LC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return lc_error_set(err, code, "%s: %s", f->path, msg);
}

/* Check the row groups against the schema and take them over from m. */
static int adopt_row_groups(lc_parquet_file *f, pq_meta *m, lc_error *err)
{
    for (size_t r = 0; r < m->n_rgs; r++) {
        pq_row_group *rg = &m->rgs[r];
        if (rg->n_chunks != f->n_leaves)
            return open_fail(f, err, LC_EFORMAT,
                             "row group %zu has %zu column chunks but the schema %zu columns", r,
                             rg->n_chunks, f->n_leaves);
        for (size_t c = 0; c < rg->n_chunks; c++) {
            const pq_chunk *ch = &rg->chunks[c];
            const pq_leaf *l = &f->leaves[c];
            const pq_chunk_path *p = &m->paths[r][c];
            if (!ch->has_meta)
                continue; /* refused when read, so the other columns stay usable */
            if (ch->type != (int)l->info.type)
                return open_fail(f, err, LC_EFORMAT,
                                 "column '%s', row group %zu: chunk of type %s in a column of "
                                 "type %s",
                                 l->name, r, lc_parquet_type_name(ch->type),
                                 lc_parquet_type_name(l->info.type));
            if (l->flat && (p->depth != 1 || p->first_len != strlen(l->name) ||
                            memcmp(p->first, l->name, p->first_len) != 0))
                return open_fail(f, err, LC_EFORMAT,
                                 "column '%s', row group %zu: chunk belongs to another column "
                                 "(path_in_schema '%.*s')",
                                 l->name, r, (int)p->first_len,
                                 p->first ? (const char *)p->first : "");
        }
    }
    for (size_t r = 0; r < m->n_rgs; r++)
        free(m->paths[r]);
    f->rgs = m->rgs;
    f->n_rgs = m->n_rgs;
    m->rgs = NULL;
    m->n_rgs = 0;
    return 0;
}

static int parse_footer(lc_parquet_file *f, const uint8_t *buf, size_t len, lc_error *err)
{
    pq_meta m = {0};
    lc_thrift t;
    lc_thrift_init(&t, buf, len);
    parse_file_meta(&t, &m);
    int rc = 0;
    if (!lc_thrift_ok(&t)) {
        rc = open_fail(
            f, err, LC_EFORMAT, "malformed file metadata at byte %zu of %zu (file offset %llu): %s",
            t.error_at, len, (unsigned long long)(f->meta_start + t.error_at), lc_thrift_error(&t));
        goto out;
    }
    f->num_rows = m.num_rows;
    if (m.n_schema == 0 || !is_group(&m.schema[0])) {
        rc = open_fail(f, err, LC_EFORMAT, "schema has no root group");
        goto out;
    }
    pq_schema_walk w = {.el = m.schema, .n = m.n_schema, .next = 1};
    walk_group(&w, m.schema[0].num_children, NULL, NULL, 1, 0, false);
    if (!w.error && w.next != w.n)
        w.error = "schema has elements outside its tree";
    f->leaves = w.leaves;
    f->n_leaves = w.n_leaves;
    if (w.error) {
        rc = open_fail(f, err, LC_EFORMAT, "%s", w.error);
        goto out;
    }
    rc = adopt_row_groups(f, &m, err);
out:
    meta_fini(&m);
    return rc;
}

int lc_parquet_open(const char *path, lc_parquet_file **out, lc_error *err)
{
    *out = NULL;
    lc_parquet_file *f = lc_xcalloc(1, sizeof *f);
    f->path = lc_xstrdup(path);
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    int rc;
    uint8_t *footer = NULL;
    if (f->fd < 0) {
        rc = open_fail(f, err, -errno, "cannot open: %s", strerror(errno));
        goto fail;
    }
    struct stat st;
    if (fstat(f->fd, &st) != 0) {
        rc = open_fail(f, err, -errno, "cannot stat: %s", strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = open_fail(f, err, -EINVAL, "not a regular file");
        goto fail;
    }
    f->size = (uint64_t)st.st_size;
    if (f->size < 12) {
        rc = open_fail(f, err, LC_EFORMAT, "too short to be Parquet (%llu bytes)",
                       (unsigned long long)f->size);
        goto fail;
    }
    uint8_t head[4], tail[8];
    if ((rc = pread_full(f->fd, head, 4, 0)) < 0 ||
        (rc = pread_full(f->fd, tail, 8, f->size - 8)) < 0) {
        rc = open_fail(f, err, rc, "cannot read: %s", lc_strerror(rc));
        goto fail;
    }
    if (memcmp(head, "PAR1", 4) != 0) {
        rc = open_fail(f, err, LC_EFORMAT, "not Parquet: no PAR1 magic at the start");
        goto fail;
    }
    if (memcmp(tail + 4, "PARE", 4) == 0) {
        rc = open_fail(f, err, -ENOTSUP, "encrypted footer (PARE): not supported");
        goto fail;
    }
    if (memcmp(tail + 4, "PAR1", 4) != 0) {
        rc = open_fail(f, err, LC_EFORMAT,
                       "no PAR1 magic at the end: truncated or not Parquet (%llu bytes)",
                       (unsigned long long)f->size);
        goto fail;
    }
    uint64_t meta_len = lc_pq_le32(tail);
    if (meta_len > f->size - 12) {
        rc = open_fail(f, err, LC_ETRUNC,
                       "footer length %llu runs past the start of the file (%llu bytes)",
                       (unsigned long long)meta_len, (unsigned long long)f->size);
        goto fail;
    }
    if (meta_len == 0) {
        rc = open_fail(f, err, LC_EFORMAT, "empty file metadata");
        goto fail;
    }
    f->meta_start = f->size - 8 - meta_len;
    footer = lc_xmalloc((size_t)meta_len);
    if ((rc = pread_full(f->fd, footer, (size_t)meta_len, f->meta_start)) < 0) {
        rc = open_fail(f, err, rc, "cannot read the footer: %s", lc_strerror(rc));
        goto fail;
    }
    if ((rc = parse_footer(f, footer, (size_t)meta_len, err)) < 0)
        goto fail;
    free(footer);
    *out = f;
    return 0;
fail:
    free(footer);
    lc_parquet_close(f);
    return rc;
}

void lc_parquet_close(lc_parquet_file *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    for (size_t i = 0; i < f->n_leaves; i++) {
        free(f->leaves[i].name);
        free(f->leaves[i].top);
    }
    free(f->leaves);
    for (size_t i = 0; i < f->n_rgs; i++)
        free(f->rgs[i].chunks);
    free(f->rgs);
    free(f->path);
    free(f);
}

int64_t lc_parquet_num_rows(const lc_parquet_file *f)
{
    return f->num_rows;
}

size_t lc_parquet_num_row_groups(const lc_parquet_file *f)
{
    return f->n_rgs;
}

int64_t lc_parquet_row_group_rows(const lc_parquet_file *f, size_t rg)
{
    return rg < f->n_rgs ? f->rgs[rg].rows : 0;
}

size_t lc_parquet_num_columns(const lc_parquet_file *f)
{
    return f->n_leaves;
}

const lc_parquet_column_info *lc_parquet_column_at(const lc_parquet_file *f, size_t col)
{
    return col < f->n_leaves ? &f->leaves[col].info : NULL;
}

int lc_parquet_find_column(const lc_parquet_file *f, const char *name)
{
    int rc = -ENOENT;
    for (size_t i = 0; i < f->n_leaves; i++) {
        const pq_leaf *l = &f->leaves[i];
        if (strcmp(l->top, name) != 0)
            continue;
        if (l->info.kind != LC_PARQUET_KIND_NONE && i <= (size_t)0x7fffffff)
            return (int)i;
        rc = -ENOTSUP;
    }
    return rc;
}

/* ---- reading a column chunk ----------------------------------------------- */

#define PQ_BATCH 1024

typedef struct pq_page_header {
    int type;
    int32_t uncompressed, compressed;
    /* v1 data page */
    bool has_v1;
    int32_t v1_values;
    int v1_encoding, v1_def_encoding;
    /* dictionary page */
    bool has_dict;
    int32_t dict_values;
    int dict_encoding;
    /* v2 data page */
    bool has_v2;
    int32_t v2_values, v2_nulls, v2_rows;
    int v2_encoding;
    int32_t v2_def_len, v2_rep_len;
    bool v2_compressed;
} pq_page_header;

typedef struct pq_read {
    const lc_parquet_file *f;
    size_t rg, col;
    const pq_leaf *leaf;
    const pq_chunk *chunk;
    lc_parquet_column *out;
    lc_error *err;
    uint64_t page_off; /* file offset of the page being read; 0 before the first */
    int width;         /* bytes of a fixed-width physical value */
    /* Decompression output, reused page to page. */
    uint8_t *page;
    size_t page_cap;
    ZSTD_DCtx *zstd;
    /* Integers decoded by the delta encodings. */
    int64_t *scratch;
    size_t scratch_cap;
    uint32_t idx[PQ_BATCH];
    /* The dictionary, in the output's representation. */
    bool have_dict;
    size_t dict_n;
    int64_t *dict_i64;
    double *dict_f64;
    uint64_t *dict_off;
    char *dict_bytes;
} pq_read;

static int read_fail(pq_read *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int read_fail(pq_read *r, int code, const char *fmt, ...)
{
    char msg[LC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (r->page_off)
        return lc_error_set(r->err, code, "%s: column '%s', row group %zu, page at offset %llu: %s",
                            r->f->path, r->leaf->name, r->rg, (unsigned long long)r->page_off, msg);
    return lc_error_set(r->err, code, "%s: column '%s', row group %zu: %s", r->f->path,
                        r->leaf->name, r->rg, msg);
}

static int decode_fail(pq_read *r, int encoding, const char *why)
{
    return read_fail(r, LC_EFORMAT, "%s values: %s", lc_parquet_encoding_name(encoding), why);
}

static void read_fini(pq_read *r)
{
    free(r->page);
    free(r->scratch);
    free(r->dict_i64);
    free(r->dict_f64);
    free(r->dict_off);
    free(r->dict_bytes);
    if (r->zstd)
        ZSTD_freeDCtx(r->zstd);
}

static int parse_page_header(pq_read *r, const uint8_t *p, size_t n, pq_page_header *h,
                             size_t *used)
{
    *h = (pq_page_header){.type = -1, .uncompressed = -1, .compressed = -1, .v2_compressed = true};
    lc_thrift t;
    lc_thrift_init(&t, p, n);
    int16_t last = 0, id;
    int ty;
    lc_thrift_begin(&t);
    while (lc_thrift_field(&t, &last, &id, &ty)) {
        switch (id) {
        case 1:
            h->type = lc_thrift_i32(&t, ty);
            break;
        case 2:
            h->uncompressed = lc_thrift_i32(&t, ty);
            break;
        case 3:
            h->compressed = lc_thrift_i32(&t, ty);
            break;
        case 5:
        case 7:
        case 8: {
            if (ty != LC_THRIFT_STRUCT) {
                lc_thrift_fail(&t, "page sub-header is not a struct");
                break;
            }
            lc_thrift_begin(&t);
            int16_t l2 = 0, id2;
            int ty2;
            unsigned seen = 0;
            while (lc_thrift_field(&t, &l2, &id2, &ty2)) {
                if (id2 > 0 && id2 < 32)
                    seen |= 1u << id2;
                if (id == 5 && id2 == 1)
                    h->v1_values = lc_thrift_i32(&t, ty2);
                else if (id == 5 && id2 == 2)
                    h->v1_encoding = lc_thrift_i32(&t, ty2);
                else if (id == 5 && id2 == 3)
                    h->v1_def_encoding = lc_thrift_i32(&t, ty2);
                else if (id == 7 && id2 == 1)
                    h->dict_values = lc_thrift_i32(&t, ty2);
                else if (id == 7 && id2 == 2)
                    h->dict_encoding = lc_thrift_i32(&t, ty2);
                else if (id == 8 && id2 == 1)
                    h->v2_values = lc_thrift_i32(&t, ty2);
                else if (id == 8 && id2 == 2)
                    h->v2_nulls = lc_thrift_i32(&t, ty2);
                else if (id == 8 && id2 == 3)
                    h->v2_rows = lc_thrift_i32(&t, ty2);
                else if (id == 8 && id2 == 4)
                    h->v2_encoding = lc_thrift_i32(&t, ty2);
                else if (id == 8 && id2 == 5)
                    h->v2_def_len = lc_thrift_i32(&t, ty2);
                else if (id == 8 && id2 == 6)
                    h->v2_rep_len = lc_thrift_i32(&t, ty2);
                else if (id == 8 && id2 == 7)
                    h->v2_compressed = lc_thrift_bool(&t, ty2);
                else
                    lc_thrift_skip(&t, ty2);
            }
            lc_thrift_end(&t);
            unsigned need = id == 5 ? 0xe : id == 7 ? 0x6 : 0x7e;
            if (lc_thrift_ok(&t) && (seen & need) != need)
                lc_thrift_fail(&t, "page sub-header lacks a required field");
            if (id == 5)
                h->has_v1 = true;
            else if (id == 7)
                h->has_dict = true;
            else
                h->has_v2 = true;
            break;
        }
        default:
            lc_thrift_skip(&t, ty);
        }
    }
    lc_thrift_end(&t);
    if (lc_thrift_ok(&t) && (h->type < 0 || h->uncompressed < 0 || h->compressed < 0))
        lc_thrift_fail(&t, "page header lacks its type or sizes");
    if (!lc_thrift_ok(&t))
        return read_fail(r, LC_EFORMAT, "malformed page header at byte %zu: %s", t.error_at,
                         lc_thrift_error(&t));
    *used = lc_thrift_pos(&t);
    return 0;
}

/* Decompress in[0..in_len) into exactly out_len bytes at *outp (r->page,
 * grown as needed; or in itself when there is nothing to do). */
static int decompress(pq_read *r, const uint8_t *in, size_t in_len, size_t out_len,
                      const uint8_t **outp)
{
    int codec = r->chunk->codec;
    if (codec == LC_PARQUET_CODEC_UNCOMPRESSED || (in_len == 0 && out_len == 0)) {
        if (in_len != out_len)
            return read_fail(r, LC_EFORMAT,
                             "uncompressed page of %zu bytes claims to hold %zu bytes", in_len,
                             out_len);
        *outp = in;
        return 0;
    }
    if (out_len > LC_PARQUET_MAX_PAGE_BYTES)
        return read_fail(r, LC_EFORMAT, "page decompresses to %zu bytes, above the %zu limit",
                         out_len, LC_PARQUET_MAX_PAGE_BYTES);
    /* Where the compressed data states its own size, check it before
     * allocating for the size the page header claims. */
    if (codec == LC_PARQUET_CODEC_SNAPPY) {
        size_t announced;
        lc_error e;
        if (lc_snappy_uncompressed_length(in, in_len, &announced, &e) < 0)
            return read_fail(r, LC_EFORMAT, "%s", e.msg);
        if (announced != out_len)
            return read_fail(r, LC_EFORMAT,
                             "SNAPPY page decompresses to %zu bytes, the header says %zu",
                             announced, out_len);
    } else if (codec == LC_PARQUET_CODEC_ZSTD) {
        /* The first frame's size; a page of several frames is rare, and the
         * exact total is checked after decompression anyway. */
        unsigned long long z = ZSTD_getFrameContentSize(in, in_len);
        if (z == ZSTD_CONTENTSIZE_ERROR)
            return read_fail(r, LC_EFORMAT, "corrupt ZSTD page (not a zstd frame)");
        if (z != ZSTD_CONTENTSIZE_UNKNOWN && z > out_len)
            return read_fail(r, LC_EFORMAT,
                             "ZSTD page decompresses to %llu bytes, the header says %zu", z,
                             out_len);
    }
    r->page = grow(r->page, &r->page_cap, out_len ? out_len : 1, 1);
    *outp = r->page;
    switch (codec) {
    case LC_PARQUET_CODEC_SNAPPY: {
        lc_error e;
        lc_error_clear(&e);
        if (lc_snappy_decompress(in, in_len, r->page, out_len, &e) < 0)
            return read_fail(r, LC_EFORMAT, "%s", e.msg);
        return 0;
    }
    case LC_PARQUET_CODEC_GZIP: {
        lc_error e;
        lc_error_clear(&e);
        if (lc_inflate_exact(in, in_len, r->page, out_len, &e) < 0)
            return read_fail(r, LC_EFORMAT, "GZIP page %s", e.msg);
        return 0;
    }
    case LC_PARQUET_CODEC_ZSTD: {
        if (!r->zstd && !(r->zstd = ZSTD_createDCtx()))
            lc_fatal("out of memory creating a zstd context");
        size_t z = ZSTD_decompressDCtx(r->zstd, r->page, out_len, in, in_len);
        if (ZSTD_isError(z))
            return read_fail(r, LC_EFORMAT, "corrupt ZSTD page (%s; the header says %zu bytes)",
                             ZSTD_getErrorName(z), out_len);
        if (z != out_len)
            return read_fail(r, LC_EFORMAT,
                             "ZSTD page decompresses to %zu bytes, the header says %zu", z,
                             out_len);
        return 0;
    }
    default:
        return read_fail(r, -ENOTSUP, "codec %s (%d) is not supported",
                         lc_parquet_codec_name(codec), codec);
    }
}

/* ---- output vectors ------------------------------------------------------- */

/* Room for rows more rows. */
static void reserve_rows(pq_read *r, size_t rows)
{
    lc_parquet_column *o = r->out;
    size_t need = o->n + rows;
    if (need == 0)
        need = 1; /* so that the buffers exist even for an empty row group */
    if (need <= o->cap_rows)
        return;
    size_t cap = o->cap_rows ? o->cap_rows : 1024;
    while (cap < need)
        cap *= 2;
    o->valid = lc_xrealloc(o->valid, cap);
    if (o->kind == LC_PARQUET_KIND_INT64)
        o->i64 = lc_xrealloc(o->i64, cap * sizeof *o->i64);
    else if (o->kind == LC_PARQUET_KIND_DOUBLE)
        o->f64 = lc_xrealloc(o->f64, cap * sizeof *o->f64);
    else
        o->offsets = lc_xrealloc(o->offsets, (cap + 1) * sizeof *o->offsets);
    o->cap_rows = cap;
}

static int reserve_bytes(pq_read *r, uint64_t more)
{
    lc_parquet_column *o = r->out;
    if (more > LC_PARQUET_MAX_STRING_BYTES - o->n_bytes)
        return read_fail(r, LC_EFORMAT, "strings of the column chunk exceed %zu bytes",
                         LC_PARQUET_MAX_STRING_BYTES);
    size_t need = o->n_bytes + (size_t)more;
    if (need > o->cap_bytes) {
        size_t cap = o->cap_bytes ? o->cap_bytes : 4096;
        while (cap < need)
            cap *= 2;
        o->bytes = lc_xrealloc(o->bytes, cap);
        o->cap_bytes = cap;
    }
    return 0;
}

/* Append one string as dense value k of the page (base is the page's first row). */
static int put_string(pq_read *r, size_t base, size_t k, const void *s, size_t len)
{
    int rc = reserve_bytes(r, len);
    if (rc < 0)
        return rc;
    lc_parquet_column *o = r->out;
    if (len)
        memcpy(o->bytes + o->n_bytes, s, len);
    o->n_bytes += len;
    o->offsets[base + 1 + k] = o->n_bytes;
    return 0;
}

static int64_t *scratch(pq_read *r, size_t n)
{
    r->scratch = grow(r->scratch, &r->scratch_cap, n ? n : 1, sizeof *r->scratch);
    return r->scratch;
}

/* ---- plain values --------------------------------------------------------- */

static int64_t plain_int(const pq_read *r, const uint8_t *p)
{
    return r->leaf->info.type == LC_PARQUET_INT32 ? (int64_t)(int32_t)lc_pq_le32(p)
                                                  : (int64_t)lc_pq_le64(p);
}

static double plain_double(const pq_read *r, const uint8_t *p)
{
    if (r->leaf->info.type == LC_PARQUET_FLOAT) {
        uint32_t bits = lc_pq_le32(p);
        float v;
        memcpy(&v, &bits, sizeof v);
        return v;
    }
    uint64_t bits = lc_pq_le64(p);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* nn PLAIN values of the fixed-width type at p into the dense slots. */
static int plain_fixed(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base, size_t nn)
{
    size_t w = (size_t)r->width;
    if (nn > n / w)
        return decode_fail(r, encoding, "fewer values than the page announces");
    lc_parquet_column *o = r->out;
    for (size_t k = 0; k < nn; k++) {
        if (o->kind == LC_PARQUET_KIND_INT64)
            o->i64[base + k] = plain_int(r, p + k * w);
        else
            o->f64[base + k] = plain_double(r, p + k * w);
    }
    return 0;
}

static int plain_strings(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base,
                         size_t nn)
{
    size_t pos = 0;
    for (size_t k = 0; k < nn; k++) {
        if (n - pos < 4)
            return decode_fail(r, encoding, "a string length runs past the end of the page");
        size_t len = lc_pq_le32(p + pos);
        pos += 4;
        if (len > n - pos)
            return decode_fail(r, encoding, "a string runs past the end of the page");
        int rc = put_string(r, base, k, p + pos, len);
        if (rc < 0)
            return rc;
        pos += len;
    }
    return 0;
}

/* ---- dictionary --------------------------------------------------------- */

static int read_dictionary(pq_read *r, const pq_page_header *h, const uint8_t *p, size_t n)
{
    if (r->have_dict)
        return read_fail(r, LC_EFORMAT, "a second dictionary page");
    if (h->dict_encoding != LC_PARQUET_ENC_PLAIN &&
        h->dict_encoding != LC_PARQUET_ENC_PLAIN_DICTIONARY)
        return read_fail(r, LC_EFORMAT, "dictionary page in encoding %s (%d)",
                         lc_parquet_encoding_name(h->dict_encoding), h->dict_encoding);
    if (h->dict_values < 0)
        return read_fail(r, LC_EFORMAT, "dictionary page with %d values", (int)h->dict_values);
    size_t dn = (size_t)h->dict_values;
    size_t w = r->out->kind == LC_PARQUET_KIND_STRING ? 4 : (size_t)r->width;
    if (dn > n / w)
        return read_fail(r, LC_EFORMAT, "dictionary page of %zu bytes cannot hold %zu values", n,
                         dn);
    r->have_dict = true;
    r->dict_n = dn;
    switch (r->out->kind) {
    case LC_PARQUET_KIND_INT64:
        r->dict_i64 = lc_xmalloc((dn ? dn : 1) * sizeof *r->dict_i64);
        for (size_t i = 0; i < dn; i++)
            r->dict_i64[i] = plain_int(r, p + i * w);
        break;
    case LC_PARQUET_KIND_DOUBLE:
        r->dict_f64 = lc_xmalloc((dn ? dn : 1) * sizeof *r->dict_f64);
        for (size_t i = 0; i < dn; i++)
            r->dict_f64[i] = plain_double(r, p + i * w);
        break;
    default: {
        r->dict_off = lc_xmalloc((dn + 1) * sizeof *r->dict_off);
        r->dict_bytes = lc_xmalloc(n ? n : 1);
        size_t pos = 0, used = 0;
        r->dict_off[0] = 0;
        for (size_t i = 0; i < dn; i++) {
            if (n - pos < 4)
                return read_fail(r, LC_EFORMAT, "dictionary string %zu: length past the page end",
                                 i);
            size_t len = lc_pq_le32(p + pos);
            pos += 4;
            if (len > n - pos)
                return read_fail(r, LC_EFORMAT, "dictionary string %zu runs past the page end", i);
            memcpy(r->dict_bytes + used, p + pos, len);
            pos += len;
            used += len;
            r->dict_off[i + 1] = used;
        }
        break;
    }
    }
    return 0;
}

static int dict_values(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base, size_t nn)
{
    if (!r->have_dict)
        return decode_fail(r, encoding, "dictionary-encoded page without a dictionary page");
    if (n < 1)
        return decode_fail(r, encoding, "no bit width before the indices");
    int bw = p[0];
    if (bw > 32)
        return read_fail(r, LC_EFORMAT, "%s values: impossible bit width %d",
                         lc_parquet_encoding_name(encoding), bw);
    lc_pq_hybrid h;
    lc_pq_hybrid_init(&h, p + 1, n - 1, bw);
    lc_parquet_column *o = r->out;
    for (size_t done = 0; done < nn;) {
        size_t m = nn - done < PQ_BATCH ? nn - done : PQ_BATCH;
        const char *why;
        if (lc_pq_hybrid_get(&h, r->idx, m, &why) < 0)
            return decode_fail(r, encoding, why);
        for (size_t k = 0; k < m; k++) {
            uint32_t ix = r->idx[k];
            if (ix >= r->dict_n)
                return read_fail(r, LC_EFORMAT,
                                 "dictionary index %u out of range (the dictionary has %zu "
                                 "values)",
                                 ix, r->dict_n);
            size_t at = done + k;
            if (o->kind == LC_PARQUET_KIND_INT64) {
                o->i64[base + at] = r->dict_i64[ix];
            } else if (o->kind == LC_PARQUET_KIND_DOUBLE) {
                o->f64[base + at] = r->dict_f64[ix];
            } else {
                int rc = put_string(r, base, at, r->dict_bytes + r->dict_off[ix],
                                    (size_t)(r->dict_off[ix + 1] - r->dict_off[ix]));
                if (rc < 0)
                    return rc;
            }
        }
        done += m;
    }
    return 0;
}

/* ---- delta and byte-stream-split ---------------------------------------- */

static int delta_ints(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base, size_t nn)
{
    size_t count, used;
    const char *why;
    bool is32 = r->leaf->info.type == LC_PARQUET_INT32;
    if (lc_pq_delta_binary(p, n, is32, r->out->i64 + base, nn, &count, &used, &why) < 0)
        return decode_fail(r, encoding, why);
    if (count != nn)
        return read_fail(r, LC_EFORMAT, "%s values: %zu values where the page has %zu",
                         lc_parquet_encoding_name(encoding), count, nn);
    return 0;
}

/* Decode nn lengths (a DELTA_BINARY_PACKED run) at p into out; *used bytes. */
static int delta_lengths(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t nn,
                         int64_t *out, size_t *used)
{
    size_t count;
    const char *why;
    if (lc_pq_delta_binary(p, n, true, out, nn, &count, used, &why) < 0)
        return decode_fail(r, encoding, why);
    if (count != nn)
        return read_fail(r, LC_EFORMAT, "%s values: %zu lengths where the page has %zu values",
                         lc_parquet_encoding_name(encoding), count, nn);
    for (size_t k = 0; k < nn; k++)
        if (out[k] < 0)
            return decode_fail(r, encoding, "negative length");
    return 0;
}

static int delta_length_strings(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base,
                                size_t nn)
{
    int64_t *lens = scratch(r, nn);
    size_t used;
    int rc = delta_lengths(r, encoding, p, n, nn, lens, &used);
    if (rc < 0)
        return rc;
    size_t pos = used;
    for (size_t k = 0; k < nn; k++) {
        if ((uint64_t)lens[k] > n - pos)
            return decode_fail(r, encoding, "string data runs past the end of the page");
        if ((rc = put_string(r, base, k, p + pos, (size_t)lens[k])) < 0)
            return rc;
        pos += (size_t)lens[k];
    }
    return 0;
}

static int delta_strings(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base,
                         size_t nn)
{
    int64_t *s = scratch(r, 2 * nn);
    int64_t *prefix = s, *suffix = s + nn;
    size_t used1, used2;
    int rc = delta_lengths(r, encoding, p, n, nn, prefix, &used1);
    if (rc < 0)
        return rc;
    if ((rc = delta_lengths(r, encoding, p + used1, n - used1, nn, suffix, &used2)) < 0)
        return rc;
    size_t pos = used1 + used2;
    lc_parquet_column *o = r->out;
    uint64_t prev_off = o->n_bytes, prev_len = 0;
    for (size_t k = 0; k < nn; k++) {
        uint64_t pl = (uint64_t)prefix[k], sl = (uint64_t)suffix[k];
        if (pl > prev_len)
            return decode_fail(r, encoding, "prefix longer than the previous value");
        if (sl > n - pos)
            return decode_fail(r, encoding, "suffix data runs past the end of the page");
        if ((rc = reserve_bytes(r, pl + sl)) < 0)
            return rc;
        uint64_t start = o->n_bytes;
        memcpy(o->bytes + start, o->bytes + prev_off, (size_t)pl);
        memcpy(o->bytes + start + pl, p + pos, (size_t)sl);
        pos += (size_t)sl;
        o->n_bytes += (size_t)(pl + sl);
        o->offsets[base + 1 + k] = o->n_bytes;
        prev_off = start;
        prev_len = pl + sl;
    }
    return 0;
}

static int byte_stream_split(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base,
                             size_t nn)
{
    size_t w = (size_t)r->width;
    if (n % w != 0 || n / w != nn)
        return read_fail(r, LC_EFORMAT, "%s values: %zu bytes are not %zu values of %zu bytes",
                         lc_parquet_encoding_name(encoding), n, nn, w);
    uint8_t v[8];
    lc_parquet_column *o = r->out;
    for (size_t k = 0; k < nn; k++) {
        for (size_t b = 0; b < w; b++)
            v[b] = p[b * nn + k];
        if (o->kind == LC_PARQUET_KIND_INT64)
            o->i64[base + k] = plain_int(r, v);
        else
            o->f64[base + k] = plain_double(r, v);
    }
    return 0;
}

/* Decode nn non-null values of a page into the dense slots base..base+nn. */
static int decode_values(pq_read *r, int encoding, const uint8_t *p, size_t n, size_t base,
                         size_t nn)
{
    if (encoding < 0 || encoding > LC_PARQUET_ENC_BYTE_STREAM_SPLIT || encoding == 1)
        return read_fail(r, LC_EFORMAT, "unknown value encoding %d", encoding);
    r->out->data_encodings |= 1u << encoding;
    if (nn == 0)
        return 0;
    lc_parquet_kind kind = r->out->kind;
    switch (encoding) {
    case LC_PARQUET_ENC_PLAIN:
        return kind == LC_PARQUET_KIND_STRING ? plain_strings(r, encoding, p, n, base, nn)
                                              : plain_fixed(r, encoding, p, n, base, nn);
    case LC_PARQUET_ENC_PLAIN_DICTIONARY:
    case LC_PARQUET_ENC_RLE_DICTIONARY:
        return dict_values(r, encoding, p, n, base, nn);
    case LC_PARQUET_ENC_DELTA_BINARY_PACKED:
        if (kind == LC_PARQUET_KIND_INT64)
            return delta_ints(r, encoding, p, n, base, nn);
        break;
    case LC_PARQUET_ENC_DELTA_LENGTH_BYTE_ARRAY:
        if (kind == LC_PARQUET_KIND_STRING)
            return delta_length_strings(r, encoding, p, n, base, nn);
        break;
    case LC_PARQUET_ENC_DELTA_BYTE_ARRAY:
        if (kind == LC_PARQUET_KIND_STRING)
            return delta_strings(r, encoding, p, n, base, nn);
        break;
    case LC_PARQUET_ENC_BYTE_STREAM_SPLIT:
        if (kind != LC_PARQUET_KIND_STRING)
            return byte_stream_split(r, encoding, p, n, base, nn);
        break;
    default:
        break;
    }
    return read_fail(r, LC_EFORMAT, "value encoding %s is not valid for type %s",
                     lc_parquet_encoding_name(encoding), lc_parquet_type_name(r->leaf->info.type));
}

/* Spread the nn dense values at base over the page's n rows (valid[] set),
 * from the back so that every value moves to a slot at or after its own. */
static void spread(pq_read *r, size_t base, size_t n, size_t nn)
{
    lc_parquet_column *o = r->out;
    if (nn == n)
        return;
    size_t j = nn; /* dense values not yet placed: 0..j-1 */
    for (size_t i = n; i-- > 0;) {
        bool v = o->valid[base + i];
        switch (o->kind) {
        case LC_PARQUET_KIND_INT64:
            o->i64[base + i] = v ? o->i64[base + --j] : 0;
            break;
        case LC_PARQUET_KIND_DOUBLE:
            o->f64[base + i] = v ? o->f64[base + --j] : 0.0;
            break;
        default:
            /* A null row ends where the last value before it ends. */
            if (v)
                o->offsets[base + 1 + i] = o->offsets[base + 1 + --j];
            else
                o->offsets[base + 1 + i] = o->offsets[base + j];
            break;
        }
    }
}

/* ---- levels --------------------------------------------------------------- */

/* Turn n decoded definition levels into validity bytes; count the values. */
static int levels_to_valid(pq_read *r, const uint32_t *lv, size_t m, uint8_t *valid, size_t *nn)
{
    uint32_t max = (uint32_t)r->leaf->max_def;
    for (size_t k = 0; k < m; k++) {
        if (lv[k] > max)
            return read_fail(r, LC_EFORMAT, "definition level %u above the column's maximum %u",
                             lv[k], max);
        valid[k] = lv[k] == max;
        *nn += valid[k];
    }
    return 0;
}

static int hybrid_levels(pq_read *r, const uint8_t *p, size_t len, size_t base, size_t n,
                         size_t *nn)
{
    lc_pq_hybrid h;
    lc_pq_hybrid_init(&h, p, len, 1);
    for (size_t done = 0; done < n;) {
        size_t m = n - done < PQ_BATCH ? n - done : PQ_BATCH;
        const char *why;
        if (lc_pq_hybrid_get(&h, r->idx, m, &why) < 0)
            return read_fail(r, LC_EFORMAT, "definition levels: %s", why);
        int rc = levels_to_valid(r, r->idx, m, r->out->valid + base + done, nn);
        if (rc < 0)
            return rc;
        done += m;
    }
    return 0;
}

/* ---- pages ---------------------------------------------------------------- */

static int check_page_rows(pq_read *r, int64_t values, int64_t rows_left)
{
    if (values < 0)
        return read_fail(r, LC_EFORMAT, "data page with %lld values", (long long)values);
    if (values > rows_left)
        return read_fail(r, LC_EFORMAT,
                         "data pages hold more values than the row group's %lld rows",
                         (long long)r->f->rgs[r->rg].rows);
    return 0;
}

static int data_page_v1(pq_read *r, const pq_page_header *h, const uint8_t *raw, size_t rows_left)
{
    int rc = check_page_rows(r, h->v1_values, (int64_t)rows_left);
    if (rc < 0)
        return rc;
    const uint8_t *p;
    if ((rc = decompress(r, raw, (size_t)h->compressed, (size_t)h->uncompressed, &p)) < 0)
        return rc;
    size_t n = (size_t)h->uncompressed, pos = 0;
    size_t rows = (size_t)h->v1_values, base = r->out->n, nn = 0;
    reserve_rows(r, rows);
    if (r->leaf->max_def == 0) {
        memset(r->out->valid + base, 1, rows);
        nn = rows;
    } else if (h->v1_def_encoding == LC_PARQUET_ENC_RLE) {
        if (n < 4)
            return read_fail(r, LC_EFORMAT, "definition levels: length past the page end");
        size_t len = lc_pq_le32(p);
        if (len > n - 4)
            return read_fail(r, LC_EFORMAT,
                             "definition levels of %zu bytes run past the page end (%zu bytes)",
                             len, n);
        if ((rc = hybrid_levels(r, p + 4, len, base, rows, &nn)) < 0)
            return rc;
        pos = 4 + len;
    } else if (h->v1_def_encoding == LC_PARQUET_ENC_BIT_PACKED) {
        pos = (rows + 7) / 8;
        if (pos > n)
            return read_fail(r, LC_EFORMAT, "bit-packed definition levels run past the page end");
        for (size_t done = 0; done < rows;) {
            size_t m = rows - done < PQ_BATCH ? rows - done : PQ_BATCH;
            lc_pq_bit_packed_msb(p, n, 1, done, r->idx, m);
            if ((rc = levels_to_valid(r, r->idx, m, r->out->valid + base + done, &nn)) < 0)
                return rc;
            done += m;
        }
    } else {
        return read_fail(r, LC_EFORMAT, "definition levels in encoding %s (%d)",
                         lc_parquet_encoding_name(h->v1_def_encoding), h->v1_def_encoding);
    }
    if ((rc = decode_values(r, h->v1_encoding, p + pos, n - pos, base, nn)) < 0)
        return rc;
    spread(r, base, rows, nn);
    r->out->n += rows;
    return 0;
}

static int data_page_v2(pq_read *r, const pq_page_header *h, const uint8_t *raw, size_t rows_left)
{
    int rc = check_page_rows(r, h->v2_values, (int64_t)rows_left);
    if (rc < 0)
        return rc;
    if (h->v2_rows != h->v2_values)
        return read_fail(r, LC_EFORMAT, "data page v2 of a flat column with %d rows but %d values",
                         (int)h->v2_rows, (int)h->v2_values);
    if (h->v2_def_len < 0 || h->v2_rep_len < 0 ||
        (int64_t)h->v2_def_len + h->v2_rep_len > h->compressed ||
        (int64_t)h->v2_def_len + h->v2_rep_len > h->uncompressed)
        return read_fail(r, LC_EFORMAT,
                         "data page v2 levels (%d + %d bytes) do not fit in the page (%d bytes)",
                         (int)h->v2_rep_len, (int)h->v2_def_len, (int)h->compressed);
    size_t lv_len = (size_t)h->v2_rep_len + (size_t)h->v2_def_len;
    size_t rows = (size_t)h->v2_values, base = r->out->n, nn = 0;
    reserve_rows(r, rows);
    /* Levels come first and are never compressed; repetition levels of a
     * flat column are meaningless and skipped. */
    if (r->leaf->max_def == 0) {
        memset(r->out->valid + base, 1, rows);
        nn = rows;
    } else if ((rc = hybrid_levels(r, raw + h->v2_rep_len, (size_t)h->v2_def_len, base, rows,
                                   &nn)) < 0) {
        return rc;
    }
    if (h->v2_nulls < 0 || (size_t)h->v2_nulls != rows - nn)
        return read_fail(r, LC_EFORMAT, "data page v2 says %d nulls, its levels %zu",
                         (int)h->v2_nulls, rows - nn);
    const uint8_t *vals = raw + lv_len;
    size_t in_len = (size_t)h->compressed - lv_len, out_len = (size_t)h->uncompressed - lv_len;
    const uint8_t *p = vals;
    if (h->v2_compressed) {
        if ((rc = decompress(r, vals, in_len, out_len, &p)) < 0)
            return rc;
    } else if (in_len != out_len) {
        return read_fail(r, LC_EFORMAT, "uncompressed values of %zu bytes claim %zu bytes", in_len,
                         out_len);
    }
    if ((rc = decode_values(r, h->v2_encoding, p, out_len, base, nn)) < 0)
        return rc;
    spread(r, base, rows, nn);
    r->out->n += rows;
    return 0;
}

static int read_pages(pq_read *r, const uint8_t *buf, size_t len, uint64_t file_off, size_t rows)
{
    size_t pos = 0;
    while (r->out->n < rows) {
        r->page_off = file_off + pos;
        if (pos >= len)
            return read_fail(r, LC_EFORMAT, "column chunk ends after %zu of %zu rows", r->out->n,
                             rows);
        pq_page_header h;
        size_t hl = 0;
        int rc = parse_page_header(r, buf + pos, len - pos, &h, &hl);
        if (rc < 0)
            return rc;
        if ((size_t)h.compressed > len - pos - hl)
            return read_fail(r, LC_ETRUNC,
                             "page of %d bytes runs past the end of the column chunk (%zu bytes "
                             "left)",
                             (int)h.compressed, len - pos - hl);
        const uint8_t *raw = buf + pos + hl;
        r->out->page_types |= h.type >= 0 && h.type < 32 ? 1u << h.type : 0;
        switch (h.type) {
        case LC_PARQUET_PAGE_DICTIONARY: {
            if (!h.has_dict)
                return read_fail(r, LC_EFORMAT, "dictionary page without its header");
            if (r->out->n > 0)
                return read_fail(r, LC_EFORMAT, "dictionary page after data pages");
            const uint8_t *p;
            if ((rc = decompress(r, raw, (size_t)h.compressed, (size_t)h.uncompressed, &p)) < 0 ||
                (rc = read_dictionary(r, &h, p, (size_t)h.uncompressed)) < 0)
                return rc;
            break;
        }
        case LC_PARQUET_PAGE_DATA:
            if (!h.has_v1)
                return read_fail(r, LC_EFORMAT, "data page without its header");
            if ((rc = data_page_v1(r, &h, raw, rows - r->out->n)) < 0)
                return rc;
            break;
        case LC_PARQUET_PAGE_DATA_V2:
            if (!h.has_v2)
                return read_fail(r, LC_EFORMAT, "data page v2 without its header");
            if ((rc = data_page_v2(r, &h, raw, rows - r->out->n)) < 0)
                return rc;
            break;
        case LC_PARQUET_PAGE_INDEX:
            break;
        default:
            return read_fail(r, LC_EFORMAT, "unknown page type %d", h.type);
        }
        pos += hl + (size_t)h.compressed;
    }
    return 0;
}

static int check_chunk(pq_read *r, uint64_t *start, uint64_t *len)
{
    const pq_chunk *c = r->chunk;
    const lc_parquet_file *f = r->f;
    int64_t rows = f->rgs[r->rg].rows;
    if (c->external)
        return read_fail(r, -ENOTSUP, "column chunk stored in another file");
    if (!c->has_meta)
        return read_fail(r, LC_EFORMAT, "column chunk without metadata (encrypted?)");
    if (rows > LC_PARQUET_MAX_ROWS)
        return read_fail(r, LC_EFORMAT, "row group of %lld rows, above the limit of %lld",
                         (long long)rows, (long long)LC_PARQUET_MAX_ROWS);
    if (c->num_values != rows)
        return read_fail(r, LC_EFORMAT, "column chunk holds %lld values for %lld rows",
                         (long long)c->num_values, (long long)rows);
    switch (c->codec) {
    case LC_PARQUET_CODEC_UNCOMPRESSED:
    case LC_PARQUET_CODEC_SNAPPY:
    case LC_PARQUET_CODEC_GZIP:
    case LC_PARQUET_CODEC_ZSTD:
        break;
    case LC_PARQUET_CODEC_LZO:
    case LC_PARQUET_CODEC_BROTLI:
    case LC_PARQUET_CODEC_LZ4:
    case LC_PARQUET_CODEC_LZ4_RAW:
        return read_fail(r, -ENOTSUP, "codec %s is not supported", lc_parquet_codec_name(c->codec));
    default:
        return read_fail(r, LC_EFORMAT, "unknown codec %d", c->codec);
    }
    /* The chunk starts at its dictionary page when the offset is set, else at
     * its first data page; some writers leave the dictionary offset 0 and
     * start with the dictionary page at the data page offset. */
    int64_t s = c->data_off;
    if (c->dict_off > 0 && c->dict_off < s)
        s = c->dict_off;
    if (s < 4 || c->total_compressed <= 0 || (uint64_t)s >= f->meta_start ||
        (uint64_t)c->total_compressed > f->meta_start - (uint64_t)s)
        return read_fail(r, LC_ETRUNC,
                         "column chunk at offset %lld, %lld bytes long, runs outside the data "
                         "(which ends at %llu)",
                         (long long)s, (long long)c->total_compressed,
                         (unsigned long long)f->meta_start);
    *start = (uint64_t)s;
    *len = (uint64_t)c->total_compressed;
    return 0;
}

int lc_parquet_read_column(const lc_parquet_file *f, size_t rg, size_t col, lc_parquet_column *out,
                           lc_error *err)
{
    out->n = 0;
    out->n_bytes = 0;
    out->data_encodings = 0;
    out->page_types = 0;
    out->codec = -1;
    if (rg >= f->n_rgs || col >= f->n_leaves)
        return lc_error_set(err, -EINVAL,
                            "%s: no column %zu in row group %zu (%zu columns, %zu row groups)",
                            f->path, col, rg, f->n_leaves, f->n_rgs);
    pq_read r = {.f = f,
                 .rg = rg,
                 .col = col,
                 .leaf = &f->leaves[col],
                 .chunk = &f->rgs[rg].chunks[col],
                 .out = out,
                 .err = err};
    const pq_leaf *l = r.leaf;
    if (l->info.kind == LC_PARQUET_KIND_NONE)
        return read_fail(&r, -ENOTSUP, "%s column of type %s cannot be read",
                         l->flat ? "a" : "a nested or repeated",
                         lc_parquet_type_name(l->info.type));
    /* Switching kinds drops the buffers of the old kind. */
    if (out->kind != l->info.kind) {
        lc_parquet_column_fini(out);
        out->kind = l->info.kind;
    }
    out->codec = r.chunk->codec;
    r.width = l->info.type == LC_PARQUET_INT32 || l->info.type == LC_PARQUET_FLOAT ? 4 : 8;
    uint64_t start = 0, len = 0;
    int rc = check_chunk(&r, &start, &len);
    if (rc < 0)
        return rc;
    size_t rows = (size_t)f->rgs[rg].rows;
    reserve_rows(&r, 0);
    if (out->kind == LC_PARQUET_KIND_STRING)
        out->offsets[0] = 0;
    uint8_t *buf = lc_xmalloc((size_t)len);
    if ((rc = pread_full(f->fd, buf, (size_t)len, start)) < 0) {
        rc = read_fail(&r, rc, "cannot read %llu bytes at offset %llu: %s", (unsigned long long)len,
                       (unsigned long long)start, lc_strerror(rc));
    } else {
        rc = read_pages(&r, buf, (size_t)len, start, rows);
    }
    free(buf);
    read_fini(&r);
    if (rc < 0) {
        out->n = 0;
        out->n_bytes = 0;
    }
    return rc;
}

void lc_parquet_column_fini(lc_parquet_column *c)
{
    if (!c)
        return;
    free(c->valid);
    free(c->i64);
    free(c->f64);
    free(c->offsets);
    free(c->bytes);
    *c = (lc_parquet_column){0};
}
