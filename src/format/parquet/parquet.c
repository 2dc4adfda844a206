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
 *
 * The reader is three files along those seams (their shared types are in
 * internal.h): this one opens a file (footer, metadata, schema);
 * parquet_read.c reads a column chunk (page headers, codecs, levels,
 * pages); parquet_values.c decodes a page's values.
 */
#include "format/parquet/internal.h"

#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/parquet/parquet_decode.h"
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

int pq_pread_full(int fd, void *buf, size_t n, uint64_t off)
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

typedef struct pq_schema_element {
    const uint8_t *name;
    size_t name_len;
    int type; /* -1 unset */
    int repetition;
    int32_t num_children; /* -1 unset */
} pq_schema_element;

/* Per column chunk, what open checks against the schema then forgets. */
typedef struct pq_column_chunk_path {
    const uint8_t *first; /* first element of path_in_schema */
    size_t first_len;
    size_t depth;
} pq_column_chunk_path;

typedef struct pq_meta {
    pq_schema_element *schema;
    size_t n_schema, cap_schema;
    pq_row_group *rgs;
    size_t n_rgs, cap_rgs;
    pq_column_chunk_path **paths; /* per row group */
    int64_t num_rows;
    bool have_schema, have_rgs, have_rows;
} pq_meta;

static bool parse_schema_element(lc_thrift *t, pq_schema_element *e)
{
    *e = (pq_schema_element){.type = -1, .repetition = -1, .num_children = -1};
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

static void parse_column_meta(lc_thrift *t, pq_column_chunk *c, pq_column_chunk_path *path)
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

static void parse_column_chunk(lc_thrift *t, pq_column_chunk *c, pq_column_chunk_path *path)
{
    *c = (pq_column_chunk){.type = -1, .codec = -1};
    *path = (pq_column_chunk_path){0};
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
static void parse_row_group(lc_thrift *t, pq_row_group *rg, pq_column_chunk_path **paths,
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
            rg->chunks = pq_grow(NULL, &cap, 1, sizeof *rg->chunks);
            for (size_t i = 0; i < n && lc_thrift_ok(t); i++) {
                rg->chunks = pq_grow(rg->chunks, &cap, i + 1, sizeof *rg->chunks);
                *paths = pq_grow(*paths, &pcap, i + 1, sizeof **paths);
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
                m->schema = pq_grow(m->schema, &m->cap_schema, m->n_schema + 1, sizeof *m->schema);
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
                m->rgs = pq_grow(m->rgs, &m->cap_rgs, m->n_rgs + 1, sizeof *m->rgs);
                m->paths = pq_grow(m->paths, &cap, m->n_rgs + 1, sizeof *m->paths);
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
    const pq_schema_element *el;
    size_t n, next;
    pq_leaf *leaves;
    size_t n_leaves, cap_leaves;
    const char *error;
} pq_schema_walk;

static bool is_group(const pq_schema_element *e)
{
    return e->num_children > 0 || (e->num_children == 0 && e->type < 0);
}

static void add_leaf(pq_schema_walk *w, const pq_schema_element *e, const char *path,
                     const char *top, int depth, int def, bool repeated)
{
    w->leaves = pq_grow(w->leaves, &w->cap_leaves, w->n_leaves + 1, sizeof *w->leaves);
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
        const pq_schema_element *e = &w->el[w->next++];
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
            const pq_column_chunk *ch = &rg->chunks[c];
            const pq_leaf *l = &f->leaves[c];
            const pq_column_chunk_path *p = &m->paths[r][c];
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
    struct stat st;
    f->fd = lc_open_regular(path, &st, err);
    int rc;
    uint8_t *footer = NULL;
    if (f->fd < 0) {
        rc = f->fd; /* err names the path and what is there */
        goto fail;
    }
    f->size = (uint64_t)st.st_size;
    if (f->size < 12) {
        rc = open_fail(f, err, LC_EFORMAT, "too short to be Parquet (%llu bytes)",
                       (unsigned long long)f->size);
        goto fail;
    }
    uint8_t head[4], tail[8];
    if ((rc = pq_pread_full(f->fd, head, 4, 0)) < 0 ||
        (rc = pq_pread_full(f->fd, tail, 8, f->size - 8)) < 0) {
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
    if ((rc = pq_pread_full(f->fd, footer, (size_t)meta_len, f->meta_start)) < 0) {
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
