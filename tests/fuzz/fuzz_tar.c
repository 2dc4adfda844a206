/*
 * fuzz_tar: a tar archive as it comes from a training-run server.
 *
 * The bytes are written to a scratch file and opened the way the loader
 * opens a .tar: indexed (every typeflag, GNU long names, pax headers,
 * prefixes, truncation anywhere), then every chunk read and decoded.
 *
 * Invariants: every member lies inside the file; member names are
 * non-empty C strings; the index's counts add up; a source refused at open
 * leaves nothing; every member is a chunk or skipped with a reason; a member
 * that reads must read exactly its size; a read of an index past the end is
 * refused; a member that decodes is a whole number of records, and a raw
 * member loads as exactly its bytes.
 */
#include "fuzz.h"

#include "format/lc0/chunk.h"
#include "format/lc0/chunk_source.h"
#include "format/gzip.h"
#include "format/lc0/tar.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("archive.tar", data, size);

    /* The index on its own. */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    FUZZ_CHECK(fd >= 0);
    lc_tar_index idx;
    memset(&idx, 0xAB, sizeof idx);
    lc_error err = {0};
    int rc = lc_tar_index_fd(fd, path, &idx, &err);
    if (rc == 0) {
        FUZZ_CHECK(idx.n_members == 0 || idx.members != NULL);
        for (size_t i = 0; i < idx.n_members; i++) {
            const lc_tar_member *m = &idx.members[i];
            FUZZ_CHECK(m->name && m->name[0]);
            FUZZ_CHECK(m->offset % 512 == 0);
            FUZZ_CHECK(m->offset <= size && m->size <= size - m->offset);
            if (i > 0)
                FUZZ_CHECK(m->offset >= idx.members[i - 1].offset + idx.members[i - 1].size);
            uint8_t *buf = malloc(m->size ? m->size : 1);
            FUZZ_CHECK(lc_tar_pread_member(fd, path, m, buf, &err) == 0);
            FUZZ_CHECK(m->size == 0 || memcmp(buf, data + m->offset, m->size) == 0);
            free(buf);
        }
    } else {
        FUZZ_CHECK(err.msg[0] != '\0');
    }
    lc_tar_index_fini(&idx);
    close(fd);

    /* As the loader opens it. */
    lc_chunk_source *s = NULL;
    err = (lc_error){0};
    rc = lc_chunk_source_open(path, &s, &err);
    if (rc < 0) {
        FUZZ_CHECK(s == NULL && err.msg[0]);
        return 0;
    }
    lc_chunk_source_limit_output(s, FUZZ_MAX_OUTPUT);
    size_t n = lc_chunk_source_count(s);
    FUZZ_CHECK(lc_chunk_source_kind(s) == LC_SOURCE_TAR);
    /* Every member is a chunk or skipped with a reason. */
    size_t skipped = lc_chunk_source_skipped_members(s);
    FUZZ_CHECK(lc_chunk_source_raw_members(s) <= n);
    for (size_t k = 0; k < skipped; k++) {
        const char *why = NULL;
        const char *name = lc_chunk_source_skipped_member(s, k, &why);
        FUZZ_CHECK(name && name[0] && why && why[0]);
    }
    FUZZ_CHECK(lc_chunk_source_skipped_member(s, skipped, NULL) == NULL);
    for (size_t i = 0; i < n; i++) {
        const char *name = lc_chunk_source_chunk_name(s, i);
        FUZZ_CHECK(name && name[0]);
        uint8_t *buf = NULL;
        size_t len = 0;
        err = (lc_error){0};
        if (lc_chunk_source_read(s, i, &buf, &len, &err) == 0) {
            FUZZ_CHECK(buf != NULL && len <= size);
            free(buf);
        } else {
            FUZZ_CHECK(buf == NULL && strstr(err.msg, path));
        }
        lc_chunk_data c;
        err = (lc_error){0};
        if (lc_chunk_source_load(s, i, LC_INFLATE_AUTO, &c, &err) == 0) {
            FUZZ_CHECK(c.size == c.n_records * c.record_size);
            /* A raw member is its records, byte for byte. */
            FUZZ_CHECK(!lc_chunk_source_chunk_raw(s, i) || c.size == len);
            lc_chunk_data_fini(&c);
        } else {
            /* The message says which file and which member. */
            FUZZ_CHECK(c.data == NULL && strstr(err.msg, path));
            if (i < n)
                FUZZ_CHECK(strstr(err.msg, name) != NULL);
            lc_chunk_source_mark_bad(s, i);
            FUZZ_CHECK(lc_chunk_source_is_bad(s, i));
        }
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    FUZZ_CHECK(lc_chunk_source_read(s, n, &buf, &len, &err) < 0 && buf == NULL);
    lc_chunk_source_unref(s);
    return 0;
}
