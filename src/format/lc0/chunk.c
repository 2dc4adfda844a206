/*
 * chunk: see chunk.h. The version is taken from the first record only: a
 * chunk is one game written by one lc0 binary, and the unpacker checks each
 * record it emits anyway. Pure functions, callable from any thread.
 */
#include "format/lc0/chunk.h"

#include <stdlib.h>
#include <string.h>

#include "format/lc0/frame.h"
#include "format/lc0/record.h"

static int accept(uint8_t *data, size_t size, bool pages, lc_chunk_data *out, lc_error *err)
{
    memset(out, 0, sizeof *out);
    int rc;
    if (size == 0) {
        rc = lc_error_set(err, LC_EEMPTY, "empty chunk (decompresses to 0 bytes)");
        goto fail;
    }
    uint32_t version;
    if (size < sizeof version) {
        rc = lc_error_set(err, LC_EFORMAT,
                          "chunk of %zu bytes is shorter than a record's version field", size);
        goto fail;
    }
    memcpy(&version, data, sizeof version);
    size_t record_size = lc_record_size_for_version(version);
    if (record_size == 0) {
        rc = lc_error_set(err, LC_EVERSION, "unknown record version %u (0x%08x) in chunk", version,
                          version);
        goto fail;
    }
    if (size % record_size != 0) {
        rc = lc_error_set(err, LC_EFORMAT,
                          "chunk size %zu is not a multiple of the V%u record size %zu "
                          "(%zu whole records and %zu bytes over)",
                          size, version, record_size, size / record_size, size % record_size);
        goto fail;
    }
    out->data = data;
    out->pages = pages;
    out->size = size;
    out->version = version;
    out->record_size = record_size;
    out->n_records = size / record_size;
    return 0;

fail:
    if (pages)
        lc_gunzip_pages_free(data, size);
    else
        free(data);
    return rc;
}

int lc_chunk_accept(uint8_t *data, size_t size, lc_chunk_data *out, lc_error *err)
{
    return accept(data, size, false, out, err);
}

int lc_chunk_decode_as(const uint8_t *gz, size_t gz_len, lc_inflate_backend b, size_t max_output,
                       bool pages, lc_chunk_data *out, lc_error *err)
{
    memset(out, 0, sizeof *out);
    uint8_t *data = NULL;
    size_t size = 0;
    int rc = pages ? lc_gunzip_pages(gz, gz_len, b, max_output, &data, &size, err)
                   : lc_gunzip(gz, gz_len, b, max_output, &data, &size, err);
    if (rc < 0)
        return rc;
    return accept(data, size, pages, out, err);
}

int lc_chunk_decode(const uint8_t *gz, size_t gz_len, lc_inflate_backend b, size_t max_output,
                    lc_chunk_data *out, lc_error *err)
{
    return lc_chunk_decode_as(gz, gz_len, b, max_output, false, out, err);
}

int lc_chunk_check(const lc_chunk_data *c, uint32_t *bad_at, const char **reason)
{
    *reason = NULL;
    *bad_at = 0;
    for (size_t i = 0; i < c->n_records; i++) {
        int rc = lc_record_check(c->data + i * c->record_size, c->version, reason);
        if (rc != 0) {
            *bad_at = (uint32_t)i;
            return rc;
        }
    }
    *reason = NULL;
    return 0;
}

void lc_chunk_data_fini(lc_chunk_data *c)
{
    if (!c)
        return;
    if (c->pages)
        lc_gunzip_pages_free(c->data, c->size);
    else
        free(c->data);
    memset(c, 0, sizeof *c);
}
