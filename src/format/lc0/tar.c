/*
 * tar: see tar.h. One pass over the headers with pread(); member data is
 * never read except for 'L' and 'x' payloads, which name the next entry.
 *
 * "Extended" headers ('L', 'K', 'x', 'g') describe the next real entry, so
 * what they set (a long name, a pax path or size) is held as pending state
 * and consumed by the next header of any other type, whether or not that
 * entry is indexed; a GNU 'K' + 'L' + symlink sequence therefore cannot leak
 * its name onto the file after it. The index is built by the calling thread
 * alone; afterwards it is read-only.
 */
#include "format/lc0/tar.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

/* Header field offsets and sizes (POSIX ustar, with the GNU additions). */
#define H_NAME 0
#define H_NAME_LEN 100
#define H_SIZE 124
#define H_SIZE_LEN 12
#define H_CHKSUM 148
#define H_CHKSUM_LEN 8
#define H_TYPEFLAG 156
#define H_MAGIC 257
#define H_PREFIX 345
#define H_PREFIX_LEN 155
#define H_GNU_ISEXTENDED 482 /* old GNU sparse: more sparse headers follow */
#define H_SPARSE_EXT_ISEXTENDED 504

/* Sizes above this cannot be real and would overflow offset arithmetic. */
#define LC_TAR_SIZE_MAX ((uint64_t)1 << 62)

typedef struct tar_pending {
    char *long_name; /* from a GNU 'L' entry */
    char *pax_path;  /* from a pax 'x' path= record */
    bool has_pax_size;
    uint64_t pax_size;
    bool any; /* an extended header is waiting for its entry */
} tar_pending;

static void pending_clear(tar_pending *p)
{
    free(p->long_name);
    free(p->pax_path);
    memset(p, 0, sizeof *p);
}

static const char *name_or_default(const char *path)
{
    return path ? path : "(tar)";
}

/* pread until len bytes or EOF; returns bytes read or a negated errno. */
static ssize_t pread_full(int fd, void *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (uint8_t *)buf + got, len - got, (off_t)(off + got));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

static bool all_zero(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

/* Octal field: optional leading spaces, digits, then NUL/space to the end. */
static bool parse_octal(const uint8_t *f, size_t n, bool need_digit, uint64_t *out)
{
    size_t i = 0;
    uint64_t v = 0;
    while (i < n && f[i] == ' ')
        i++;
    size_t first = i;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
        if (v > (UINT64_MAX >> 3))
            return false;
        v = (v << 3) | (uint64_t)(f[i] - '0');
    }
    if (need_digit && i == first)
        return false;
    for (; i < n; i++)
        if (f[i] != ' ' && f[i] != '\0')
            return false;
    *out = v;
    return true;
}

/* A numeric field in octal or GNU base-256 (high bit of the first byte set;
 * the next bit is the sign, and negative sizes are rejected). */
static bool parse_number(const uint8_t *f, size_t n, uint64_t *out)
{
    if (!(f[0] & 0x80))
        return parse_octal(f, n, false, out);
    if (f[0] & 0x40)
        return false;
    uint64_t v = f[0] & 0x3f;
    for (size_t i = 1; i < n; i++) {
        if (v > (UINT64_MAX >> 8))
            return false;
        v = (v << 8) | f[i];
    }
    *out = v;
    return true;
}

/* The checksum is the sum of the header bytes with the checksum field read as
 * spaces. POSIX sums unsigned bytes; some old tars summed signed chars. */
static bool checksum_ok(const uint8_t *h)
{
    uint64_t stored;
    if (!parse_octal(h + H_CHKSUM, H_CHKSUM_LEN, true, &stored))
        return false;
    long usum = 0, ssum = 0;
    for (size_t i = 0; i < LC_TAR_BLOCK; i++) {
        uint8_t c = (i >= H_CHKSUM && i < H_CHKSUM + H_CHKSUM_LEN) ? ' ' : h[i];
        usum += c;
        ssum += (signed char)c;
    }
    return (long)stored == usum || (long)stored == ssum;
}

static bool is_posix_ustar(const uint8_t *h)
{
    return memcmp(h + H_MAGIC, "ustar\0", 6) == 0;
}

static bool is_gnu(const uint8_t *h)
{
    return memcmp(h + H_MAGIC, "ustar  \0", 8) == 0;
}

/* The name stored in the header itself: prefix "/" name for POSIX ustar. */
static char *header_name(const uint8_t *h)
{
    size_t nlen = strnlen((const char *)h + H_NAME, H_NAME_LEN);
    size_t plen = is_posix_ustar(h) ? strnlen((const char *)h + H_PREFIX, H_PREFIX_LEN) : 0;
    if (plen == 0)
        return lc_xstrndup((const char *)h + H_NAME, nlen);
    char *s = lc_xmalloc(plen + 1 + nlen + 1);
    memcpy(s, h + H_PREFIX, plen);
    s[plen] = '/';
    memcpy(s + plen + 1, h + H_NAME, nlen);
    s[plen + 1 + nlen] = '\0';
    return s;
}

/*
 * Parse pax records "<len> <key>=<value>\n". A malformed record ends parsing
 * of this header (what came before it still applies): a damaged extended
 * header should cost at most the attributes it carries.
 */
static void parse_pax(const uint8_t *data, size_t size, tar_pending *p)
{
    size_t pos = 0;
    while (pos < size && data[pos] != '\0') {
        size_t len = 0, i = pos;
        while (i < size && data[i] >= '0' && data[i] <= '9') {
            if (len > size)
                return;
            len = len * 10 + (size_t)(data[i] - '0');
            i++;
        }
        if (i == pos || i >= size || data[i] != ' ' || len == 0 || len > size - pos)
            return;
        size_t end = pos + len; /* one past the '\n' */
        if (data[end - 1] != '\n')
            return;
        const uint8_t *kv = data + i + 1;
        size_t kvlen = end - 1 - (i + 1);
        const uint8_t *eq = memchr(kv, '=', kvlen);
        if (!eq)
            return;
        size_t klen = (size_t)(eq - kv);
        const char *val = (const char *)eq + 1;
        size_t vlen = kvlen - klen - 1;
        if (klen == 4 && memcmp(kv, "path", 4) == 0) {
            free(p->pax_path);
            p->pax_path = lc_xstrndup(val, vlen);
        } else if (klen == 4 && memcmp(kv, "size", 4) == 0) {
            uint64_t v = 0;
            size_t j = 0;
            for (; j < vlen && val[j] >= '0' && val[j] <= '9'; j++) {
                if (v > (UINT64_MAX - 9) / 10)
                    break;
                v = v * 10 + (uint64_t)(val[j] - '0');
            }
            if (j == vlen && vlen > 0) {
                p->has_pax_size = true;
                p->pax_size = v;
            }
        }
        pos = end;
    }
}

static void add_member(lc_tar_index *idx, size_t *cap, char *name, uint64_t offset, uint64_t size)
{
    if (idx->n_members == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        idx->members = lc_xrealloc(idx->members, *cap * sizeof *idx->members);
    }
    idx->members[idx->n_members++] = (lc_tar_member){.name = name, .offset = offset, .size = size};
}

/* One pass over an archive's headers (lc_tar_index_fd). Each step returns
 * WALK_NEXT to go on, WALK_END to stop with what is indexed (a truncation or
 * a damaged header, said in err), or a negative error. */
typedef struct tar_walk {
    int fd;
    const char *pname;
    uint64_t file_size;
    lc_tar_index *idx;
    size_t cap;
    tar_pending pend;
    lc_error *err;
} tar_walk;

enum { WALK_NEXT = 0, WALK_END = 1 };

static int walk_read_error(tar_walk *w, ssize_t n, uint64_t off)
{
    return lc_error_set(w->err, (int)n, "%s: read error at offset %llu: %s", w->pname,
                        (unsigned long long)off, strerror((int)-n));
}

/* Stop indexing: the archive ends early or is damaged here. */
static int walk_stop(tar_walk *w, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int walk_stop(tar_walk *w, int code, const char *fmt, ...)
{
    char msg[LC_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    w->idx->truncated = true;
    lc_error_set(w->err, code, "%s: %s", w->pname, msg);
    return WALK_END;
}

/* The header at off into h, and its entry's data size. */
static int walk_header(tar_walk *w, uint64_t off, uint8_t *h, uint64_t *size)
{
    ssize_t n = pread_full(w->fd, h, LC_TAR_BLOCK, off);
    if (n < 0)
        return walk_read_error(w, n, off);
    if (n == 0) {
        /* EOF on a block boundary: a missing end marker is tolerated (tar
         * does too), an extended header with no entry is not. */
        if (w->pend.any)
            return walk_stop(w, LC_ETRUNC,
                             "archive truncated at offset %llu: extended header without its "
                             "entry",
                             (unsigned long long)off);
        return WALK_END;
    }
    if (n < LC_TAR_BLOCK)
        return walk_stop(w, LC_ETRUNC,
                         "archive truncated at offset %llu: file ends inside a header (%zd of "
                         "%d bytes)",
                         (unsigned long long)off, n, LC_TAR_BLOCK);
    /* The end marker is two zero blocks; like GNU tar, stop at the first. */
    if (all_zero(h, LC_TAR_BLOCK))
        return WALK_END;
    if (!checksum_ok(h))
        return walk_stop(w, LC_EFORMAT,
                         "bad header checksum at offset %llu; indexing stopped there",
                         (unsigned long long)off);
    if (!parse_number(h + H_SIZE, H_SIZE_LEN, size) || *size > LC_TAR_SIZE_MAX)
        return walk_stop(w, LC_EFORMAT,
                         "bad size field in the header at offset %llu; indexing stopped there",
                         (unsigned long long)off);
    const uint8_t type = h[H_TYPEFLAG];
    const bool extended = type == 'L' || type == 'K' || type == 'x' || type == 'g';
    if (!extended && w->pend.has_pax_size)
        *size = w->pend.pax_size > LC_TAR_SIZE_MAX ? LC_TAR_SIZE_MAX : w->pend.pax_size;
    return WALK_NEXT;
}

/* Old GNU sparse files put more sparse maps before the data: *data_off
 * moves past them. */
static int walk_sparse(tar_walk *w, uint64_t off, uint64_t *data_off)
{
    uint8_t ext[LC_TAR_BLOCK];
    bool more = true;
    while (more) {
        ssize_t n = pread_full(w->fd, ext, LC_TAR_BLOCK, *data_off);
        if (n < 0)
            return walk_read_error(w, n, *data_off);
        if (n < LC_TAR_BLOCK)
            break;
        more = ext[H_SPARSE_EXT_ISEXTENDED] != 0;
        *data_off += LC_TAR_BLOCK;
    }
    if (more)
        return walk_stop(w, LC_ETRUNC,
                         "archive truncated at offset %llu: file ends inside the sparse headers "
                         "of the entry at offset %llu",
                         (unsigned long long)*data_off, (unsigned long long)off);
    return WALK_NEXT;
}

/* The entry's name: a pax path, a GNU long name, or the header's own. */
static char *walk_entry_name(const tar_walk *w, const uint8_t *h)
{
    return w->pend.pax_path    ? lc_xstrdup(w->pend.pax_path)
           : w->pend.long_name ? lc_xstrdup(w->pend.long_name)
                               : header_name(h);
}

/* A GNU long name ('L') or a pax header ('x'): read, kept for the entry
 * that follows. */
static int walk_extended(tar_walk *w, uint8_t type, uint64_t off, uint64_t data_off, uint64_t size)
{
    if (size > LC_TAR_META_MAX)
        return walk_stop(w, LC_EFORMAT,
                         "extended header of %llu bytes at offset %llu is too large; indexing "
                         "stopped there",
                         (unsigned long long)size, (unsigned long long)off);
    uint8_t *meta = lc_xmalloc(size + 1);
    ssize_t n = pread_full(w->fd, meta, size, data_off);
    int rc = WALK_NEXT;
    if (n < 0) {
        rc = walk_read_error(w, n, data_off);
    } else if ((uint64_t)n < size) {
        rc = walk_stop(w, LC_ETRUNC, "archive truncated at offset %llu inside an extended header",
                       (unsigned long long)(data_off + (uint64_t)n));
    } else {
        meta[size] = '\0';
        if (type == 'L') {
            free(w->pend.long_name);
            w->pend.long_name = lc_xstrndup((const char *)meta, strnlen((char *)meta, size));
            w->idx->n_long_names++;
        } else {
            parse_pax(meta, size, &w->pend);
            w->idx->n_pax_headers++;
        }
        w->pend.any = true;
    }
    free(meta);
    return rc;
}

/* An entry that is not an extended header: a member, a directory, or
 * another kind, counted. */
static void walk_entry(tar_walk *w, const uint8_t *h, uint8_t type, uint64_t data_off,
                       uint64_t size)
{
    char *name = walk_entry_name(w, h);
    size_t len = strlen(name);
    bool regular = type == '0' || type == '\0' || type == '7';
    if (regular && type != '7' && len > 0 && name[len - 1] == '/') {
        /* Pre-POSIX archives mark directories as files ending in '/'. */
        w->idx->n_directories++;
        free(name);
    } else if (regular && len > 0) {
        add_member(w->idx, &w->cap, name, data_off, size);
    } else {
        /* A member without a name (an empty long name or pax path) cannot
         * be told apart from others or named in a message: it is counted
         * with the entries that are not chunks. */
        if (type == '5')
            w->idx->n_directories++;
        else
            w->idx->n_other++;
        free(name);
    }
    pending_clear(&w->pend);
}

/* The header at off and its data; *next is the header after it. */
static int walk_one(tar_walk *w, uint64_t off, uint64_t *next)
{
    uint8_t h[LC_TAR_BLOCK];
    uint64_t size = 0;
    int rc = walk_header(w, off, h, &size);
    if (rc != WALK_NEXT)
        return rc;
    const uint8_t type = h[H_TYPEFLAG];
    uint64_t data_off = off + LC_TAR_BLOCK;
    if (type == 'S' && is_gnu(h) && h[H_GNU_ISEXTENDED] &&
        (rc = walk_sparse(w, off, &data_off)) != WALK_NEXT)
        return rc;

    /* POSIX stores no data for directories and GNU tar reads none whatever
     * the size field says, yet some writers fill it in. When a valid header
     * follows at once, the size is taken to be 0; otherwise the data is
     * skipped by its size like any other entry's. */
    if (type == '5' && size > 0) {
        uint8_t after[LC_TAR_BLOCK];
        ssize_t n = pread_full(w->fd, after, LC_TAR_BLOCK, data_off);
        if (n == LC_TAR_BLOCK && !all_zero(after, sizeof after) && checksum_ok(after))
            size = 0;
    }

    const uint64_t padded = (size + LC_TAR_BLOCK - 1) / LC_TAR_BLOCK * LC_TAR_BLOCK;
    if (data_off > w->file_size || size > w->file_size - data_off) {
        char *nm = walk_entry_name(w, h);
        walk_stop(w, LC_ETRUNC,
                  "archive truncated at offset %llu: entry '%s' (header at offset %llu) needs "
                  "%llu data bytes from offset %llu",
                  (unsigned long long)w->file_size, nm, (unsigned long long)off,
                  (unsigned long long)size, (unsigned long long)data_off);
        free(nm);
        return WALK_END;
    }

    if (type == 'L' || type == 'x') {
        if ((rc = walk_extended(w, type, off, data_off, size)) != WALK_NEXT)
            return rc;
    } else if (type == 'K') {
        w->idx->n_long_links++;
        w->pend.any = true;
    } else if (type == 'g') {
        /* Global attributes describe no particular entry; none matter here. */
        w->idx->n_pax_headers++;
    } else {
        walk_entry(w, h, type, data_off, size);
    }

    if (padded > w->file_size - data_off) /* the data is whole, its padding cut off */
        return walk_stop(w, LC_ETRUNC,
                         "archive truncated at offset %llu inside the padding after the entry at "
                         "offset %llu",
                         (unsigned long long)w->file_size, (unsigned long long)off);
    *next = data_off + padded;
    return WALK_NEXT;
}

int lc_tar_index_fd(int fd, const char *path, lc_tar_index *idx, lc_error *err)
{
    memset(idx, 0, sizeof *idx);
    const char *pname = name_or_default(path);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return lc_error_set(err, -errno, "%s: %s", pname, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return lc_error_set(err, -EINVAL, "%s: not a regular file", pname);
    tar_walk w = {
        .fd = fd, .pname = pname, .file_size = (uint64_t)st.st_size, .idx = idx, .err = err};
    uint64_t off = 0;
    int rc;
    while ((rc = walk_one(&w, off, &off)) == WALK_NEXT)
        ;
    pending_clear(&w.pend);
    if (rc < 0) {
        lc_tar_index_fini(idx);
        return rc;
    }
    return 0;
}

int lc_tar_pread_member(int fd, const char *path, const lc_tar_member *m, uint8_t *buf,
                        lc_error *err)
{
    ssize_t n = pread_full(fd, buf, m->size, m->offset);
    if (n < 0)
        return lc_error_set(err, (int)n, "%s: member '%s': read error at offset %llu: %s",
                            name_or_default(path), m->name, (unsigned long long)m->offset,
                            strerror((int)-n));
    if ((uint64_t)n < m->size)
        return lc_error_set(err, LC_ETRUNC,
                            "%s: member '%s': short read at offset %llu (%zd of %llu bytes); "
                            "the file shrank or vanished",
                            name_or_default(path), m->name, (unsigned long long)m->offset, n,
                            (unsigned long long)m->size);
    return 0;
}

void lc_tar_index_fini(lc_tar_index *idx)
{
    if (!idx)
        return;
    for (size_t i = 0; i < idx->n_members; i++)
        free(idx->members[i].name);
    free(idx->members);
    memset(idx, 0, sizeof *idx);
}
