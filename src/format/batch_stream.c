#include "format/batch_stream.h"

#include "core/clock.h"

#include <stdbool.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static const uint8_t stream_magic[LC_STREAM_MAGIC_BYTES] = "LCMONBS";

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* The fixed fields after the prefix: n_tensors, batch_size, payload_bytes,
 * run_id, run_started_ms. */
#define FIXED_BYTES 36

size_t lc_stream_header_encode(const lc_batch_layout *l, const lc_stream_run *run, uint8_t *buf,
                               size_t cap)
{
    size_t need = LC_STREAM_HEADER_PREFIX_BYTES + FIXED_BYTES;
    for (uint32_t i = 0; i < l->n_tensors; i++)
        need += 2 + strnlen(l->tensors[i].name, LC_BATCH_NAME_MAX) + 1 + 1 +
                8 * (size_t)l->tensors[i].ndim + 8 + 8;
    size_t layout_len = strnlen(l->name, LC_LAYOUT_NAME_MAX);
    size_t expand_len = strnlen(l->expand, LC_LAYOUT_NAME_MAX);
    need += 2 + layout_len + 2 + expand_len + 8; /* + the seed */
    if (need > cap)
        return need;
    uint8_t *p = buf;
    memcpy(p, stream_magic, LC_STREAM_MAGIC_BYTES);
    p += LC_STREAM_MAGIC_BYTES;
    put_u32(p, LC_STREAM_VERSION);
    put_u32(p + 4, (uint32_t)(need - LC_STREAM_HEADER_PREFIX_BYTES));
    put_u32(p + 8, l->n_tensors);
    put_u64(p + 12, l->batch_size);
    put_u64(p + 20, l->total_bytes);
    put_u64(p + 28, run ? run->id : 0);
    put_u64(p + 36, run ? run->started_ms : 0);
    p += 8 + FIXED_BYTES;
    for (uint32_t i = 0; i < l->n_tensors; i++) {
        const lc_tensor_desc *t = &l->tensors[i];
        size_t name_len = strnlen(t->name, LC_BATCH_NAME_MAX);
        put_u16(p, (uint16_t)name_len);
        memcpy(p + 2, t->name, name_len);
        p += 2 + name_len;
        p[0] = (uint8_t)t->dtype;
        p[1] = (uint8_t)t->ndim;
        p += 2;
        for (uint32_t d = 0; d < t->ndim; d++, p += 8)
            put_u64(p, t->shape[d]);
        put_u64(p, t->offset);
        put_u64(p + 8, t->nbytes);
        p += 16;
    }
    put_u16(p, (uint16_t)layout_len);
    memcpy(p + 2, l->name, layout_len);
    p += 2 + layout_len;
    put_u16(p, (uint16_t)expand_len);
    memcpy(p + 2, l->expand, expand_len);
    p += 2 + expand_len;
    put_u64(p, run ? run->seed : 0);
    return need;
}

void lc_stream_batch_frame(uint8_t out[LC_STREAM_FRAME_BYTES], uint32_t flags, uint64_t seq,
                           uint64_t rows, uint64_t payload_bytes,
                           const lc_stream_progress *progress, const lc_stream_freshness *fresh)
{
    static const lc_stream_progress none;
    static const lc_stream_freshness unknown;
    const lc_stream_progress *p = progress ? progress : &none;
    const lc_stream_freshness *f = fresh ? fresh : &unknown;
    memcpy(out, "BTCH", 4);
    put_u32(out + 4, flags);
    put_u64(out + 8, seq);
    put_u64(out + 16, rows);
    put_u64(out + 24, payload_bytes);
    put_u32(out + 32, p->epoch);
    put_u32(out + 36, p->epochs);
    put_u64(out + 40, p->files_done);
    put_u64(out + 48, p->files_total);
    put_u64(out + 56, p->records);
    put_u64(out + 64, p->records_total);
    put_u64(out + 72, f->newest_seq);
    put_u32(out + 80, f->fresh_rows);
    put_u32(out + 84, f->age_min_ms);
    put_u32(out + 88, f->age_median_ms);
    put_u32(out + 92, f->age_max_ms);
}

void lc_stream_run_draw(uint64_t *id, uint64_t *started_ms)
{
    struct timespec now;
    *started_ms = (uint64_t)time(NULL) * 1000u;
    if (clock_gettime(CLOCK_REALTIME, &now) == 0)
        *started_ms = (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
    if (getrandom(id, sizeof *id, GRND_NONBLOCK) != (ssize_t)sizeof *id)
        *id = lc_now_ns() ^ ((uint64_t)getpid() << 32) ^ *started_ms;
    if (*id == 0)
        *id = 1;
}

void lc_stream_done_frame(uint8_t out[16], uint32_t reason, uint64_t batches)
{
    memcpy(out, "DONE", 4);
    put_u32(out + 4, reason);
    put_u64(out + 8, batches);
}

/* A bounds-checked cursor over the header bytes after the prefix. */
typedef struct cursor {
    const uint8_t *p, *end;
} cursor;

static bool take(cursor *c, size_t n, const uint8_t **out)
{
    if ((size_t)(c->end - c->p) < n)
        return false;
    *out = c->p;
    c->p += n;
    return true;
}

static int decode_tensor(cursor *c, const lc_batch_layout *l, lc_tensor_desc *t, uint32_t index,
                         uint32_t version, lc_error *err)
{
    const uint8_t *f;
    if (!take(c, 2, &f))
        goto short_header;
    uint16_t name_len = get_u16(f);
    if (name_len == 0 || name_len >= LC_BATCH_NAME_MAX)
        return lc_error_set(err, LC_EFORMAT,
                            "stream header: tensor %u: name length %u is out of range (1 to %d)",
                            index, name_len, LC_BATCH_NAME_MAX - 1);
    if (!take(c, name_len, &f))
        goto short_header;
    memcpy(t->name, f, name_len);
    t->name[name_len] = '\0';
    if (memchr(t->name, '\0', name_len))
        return lc_error_set(err, LC_EFORMAT, "stream header: tensor %u: name contains a NUL",
                            index);
    if (!take(c, 2, &f))
        goto short_header;
    if (f[0] > (version >= 3 ? LC_DTYPE_LAST : LC_DTYPE_I32))
        return lc_error_set(err, LC_EFORMAT, "stream header: tensor '%s': unknown dtype %u",
                            t->name, f[0]);
    t->dtype = (lc_dtype)f[0];
    t->ndim = f[1];
    if (t->ndim < 1 || t->ndim > LC_BATCH_MAX_DIMS)
        return lc_error_set(err, LC_EFORMAT,
                            "stream header: tensor '%s': %u dimensions (1 to %d allowed)", t->name,
                            t->ndim, LC_BATCH_MAX_DIMS);
    uint64_t elems = 1;
    for (uint32_t d = 0; d < t->ndim; d++) {
        if (!take(c, 8, &f))
            goto short_header;
        t->shape[d] = get_u64(f);
        if (t->shape[d] && elems > UINT64_MAX / t->shape[d])
            return lc_error_set(err, LC_EFORMAT, "stream header: tensor '%s': shape overflows",
                                t->name);
        elems *= t->shape[d];
    }
    if (t->shape[0] != l->batch_size)
        return lc_error_set(err, LC_EFORMAT,
                            "stream header: tensor '%s': first dimension %llu is not the batch "
                            "size %llu",
                            t->name, (unsigned long long)t->shape[0],
                            (unsigned long long)l->batch_size);
    if (!take(c, 16, &f))
        goto short_header;
    t->offset = get_u64(f);
    t->nbytes = get_u64(f + 8);
    size_t esize = lc_dtype_size(t->dtype);
    if (elems > UINT64_MAX / esize || t->nbytes != elems * esize)
        return lc_error_set(err, LC_EFORMAT,
                            "stream header: tensor '%s': nbytes %llu does not match its shape",
                            t->name, (unsigned long long)t->nbytes);
    if (t->offset % LC_BATCH_ALIGN != 0 || t->offset > l->total_bytes ||
        t->nbytes > l->total_bytes - t->offset)
        return lc_error_set(err, LC_EFORMAT,
                            "stream header: tensor '%s': offset %llu + %llu bytes is not a "
                            "64-byte aligned range of the %llu-byte payload",
                            t->name, (unsigned long long)t->offset, (unsigned long long)t->nbytes,
                            (unsigned long long)l->total_bytes);
    return 0;

short_header:
    return lc_error_set(err, LC_EFORMAT,
                        "stream header: tensor %u runs past header_bytes (corrupt header)", index);
}

/* A u16-prefixed name of fewer than LC_LAYOUT_NAME_MAX bytes, without NUL. */
static int decode_name(cursor *c, char *out, const char *what, lc_error *err)
{
    const uint8_t *f;
    if (!take(c, 2, &f))
        return lc_error_set(err, LC_EFORMAT, "stream header: the %s runs past header_bytes", what);
    uint16_t n = get_u16(f);
    if (n >= LC_LAYOUT_NAME_MAX)
        return lc_error_set(err, LC_EFORMAT, "stream header: the %s is %u bytes long (at most %d)",
                            what, n, LC_LAYOUT_NAME_MAX - 1);
    if (!take(c, n, &f))
        return lc_error_set(err, LC_EFORMAT, "stream header: the %s runs past header_bytes", what);
    memcpy(out, f, n);
    out[n] = '\0';
    if (memchr(out, '\0', n))
        return lc_error_set(err, LC_EFORMAT, "stream header: the %s contains a NUL", what);
    return 0;
}

int lc_stream_header_decode(const uint8_t *buf, size_t len, lc_batch_layout *out,
                            lc_stream_run *run, size_t *consumed, lc_error *err)
{
    memset(out, 0, sizeof *out);
    if (run)
        memset(run, 0, sizeof *run);
    *consumed = 0;
    size_t have = len < LC_STREAM_MAGIC_BYTES ? len : LC_STREAM_MAGIC_BYTES;
    if (memcmp(buf, stream_magic, have) != 0)
        return lc_error_set(err, LC_EFORMAT,
                            "not an lcmon batch stream: the first bytes are not the magic "
                            "\"LCMONBS\\0\"");
    if (len < LC_STREAM_HEADER_PREFIX_BYTES)
        return lc_error_set(err, LC_ETRUNC,
                            "batch stream header: only %zu bytes (at least %d needed)", len,
                            LC_STREAM_HEADER_PREFIX_BYTES);
    uint32_t version = get_u32(buf + 8);
    if (version < LC_STREAM_MIN_VERSION || version > LC_STREAM_VERSION)
        return lc_error_set(err, LC_EVERSION,
                            "batch stream version %u is not supported (this reader knows "
                            "versions %u to %u)",
                            version, LC_STREAM_MIN_VERSION, LC_STREAM_VERSION);
    uint32_t rest = get_u32(buf + 12);
    if (rest < FIXED_BYTES || rest > LC_STREAM_HEADER_MAX_BYTES - LC_STREAM_HEADER_PREFIX_BYTES)
        return lc_error_set(
            err, LC_EFORMAT, "batch stream header: header_bytes %u is out of range (%d to %d)",
            rest, FIXED_BYTES, LC_STREAM_HEADER_MAX_BYTES - LC_STREAM_HEADER_PREFIX_BYTES);
    size_t total = LC_STREAM_HEADER_PREFIX_BYTES + (size_t)rest;
    if (len < total) {
        *consumed = total;
        return lc_error_set(err, LC_ETRUNC, "batch stream header: %zu of its %zu bytes are present",
                            len, total);
    }
    cursor c = {buf + LC_STREAM_HEADER_PREFIX_BYTES, buf + total};
    const uint8_t *f = c.p; /* rest >= FIXED_BYTES: the fixed fields are there */
    c.p += FIXED_BYTES;
    uint32_t n = get_u32(f);
    out->batch_size = get_u64(f + 4);
    out->total_bytes = get_u64(f + 12);
    if (run) {
        run->id = get_u64(f + 20);
        run->started_ms = get_u64(f + 28);
    }
    if (n > LC_BATCH_MAX_TENSORS) {
        memset(out, 0, sizeof *out);
        return lc_error_set(err, LC_EFORMAT, "batch stream header: %u tensors (at most %d)", n,
                            LC_BATCH_MAX_TENSORS);
    }
    for (uint32_t i = 0; i < n; i++) {
        int rc = decode_tensor(&c, out, &out->tensors[i], i, version, err);
        if (rc != 0) {
            memset(out, 0, sizeof *out);
            return rc;
        }
        out->n_tensors = i + 1;
    }
    if (version >= 3) {
        int rc = decode_name(&c, out->name, "layout name", err);
        if (rc == 0)
            rc = decode_name(&c, out->expand, "expansion", err);
        if (rc != 0) {
            memset(out, 0, sizeof *out);
            return rc;
        }
    }
    const uint8_t *seed;
    if (version >= 4 && run && take(&c, 8, &seed))
        run->seed = get_u64(seed);
    *consumed = total;
    return 0;
}

int lc_stream_frame_decode(const uint8_t *buf, size_t len, lc_stream_frame *out, lc_error *err)
{
    memset(out, 0, sizeof *out);
    if (len < 4)
        return lc_error_set(err, LC_ETRUNC, "batch stream: %zu bytes, too few for a magic", len);
    if (memcmp(buf, "BTCH", 4) == 0) {
        if (len < LC_STREAM_FRAME_BYTES)
            return lc_error_set(err, LC_ETRUNC, "batch frame: %zu of its %d bytes are present", len,
                                LC_STREAM_FRAME_BYTES);
        out->kind = LC_STREAM_BATCH;
        out->flags = get_u32(buf + 4);
        out->seq = get_u64(buf + 8);
        out->rows = get_u64(buf + 16);
        out->payload_bytes = get_u64(buf + 24);
        out->progress.epoch = get_u32(buf + 32);
        out->progress.epochs = get_u32(buf + 36);
        out->progress.files_done = get_u64(buf + 40);
        out->progress.files_total = get_u64(buf + 48);
        out->progress.records = get_u64(buf + 56);
        out->progress.records_total = get_u64(buf + 64);
        out->fresh.newest_seq = get_u64(buf + 72);
        out->fresh.fresh_rows = get_u32(buf + 80);
        out->fresh.age_min_ms = get_u32(buf + 84);
        out->fresh.age_median_ms = get_u32(buf + 88);
        out->fresh.age_max_ms = get_u32(buf + 92);
        return 0;
    }
    if (memcmp(buf, "DONE", 4) == 0) {
        if (len < LC_STREAM_DONE_BYTES)
            return lc_error_set(err, LC_ETRUNC,
                                "end-of-stream marker: %zu of its 16 bytes are present", len);
        if (get_u32(buf + 4) > LC_STREAM_END_STOPPED)
            return lc_error_set(err, LC_EFORMAT,
                                "end-of-stream marker: unknown reason %u (0 or 1 expected)",
                                get_u32(buf + 4));
        out->kind = LC_STREAM_DONE;
        out->reason = get_u32(buf + 4);
        out->batches = get_u64(buf + 8);
        return 0;
    }
    if (memcmp(buf, stream_magic, 4) == 0) {
        if (len < LC_STREAM_MAGIC_BYTES)
            return lc_error_set(err, LC_ETRUNC, "stream header: %zu of its magic bytes", len);
        if (memcmp(buf, stream_magic, LC_STREAM_MAGIC_BYTES) == 0) {
            out->kind = LC_STREAM_HEADER;
            return 0;
        }
    }
    return lc_error_set(err, LC_EFORMAT,
                        "batch stream: unknown record magic %02x %02x %02x %02x (expected "
                        "\"BTCH\", \"DONE\" or a stream header)",
                        buf[0], buf[1], buf[2], buf[3]);
}
