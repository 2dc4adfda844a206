/*
 * tar: index the regular-file members of an uncompressed tar archive, and
 * read a member's bytes, over a file descriptor.
 *
 * Everything reads with pread(), so the descriptor's file offset is never
 * used: once an archive is indexed, any number of threads may read members of
 * it at the same time through the same fd without locks. The index is built
 * by one thread, is immutable afterwards and owns its member names.
 *
 * Formats: v7, ustar (name + prefix), GNU (long names 'L', long links 'K',
 * base-256 sizes, old sparse files) and pax ('x' path= and size= records; 'g'
 * skipped). Every header's data is skipped by its size whatever its type, so
 * an entry we do not index never desynchronises the ones after it; the one
 * exception follows GNU tar: a directory whose size field is set but which is
 * followed at once by a valid header has no data. A damaged
 * archive is not an error: the members before the damage are kept and the
 * index says where it stopped.
 */
#ifndef LC_FORMAT_LC0_TAR_H
#define LC_FORMAT_LC0_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define LC_TAR_BLOCK 512
/* Largest 'L' or 'x' payload we accept; real ones are a few hundred bytes. */
#define LC_TAR_META_MAX ((uint64_t)1 << 20)

typedef struct lc_tar_member {
    char *name;      /* full path inside the archive (after long-name/pax/prefix rules) */
    uint64_t offset; /* of the member's data in the file */
    uint64_t size;
} lc_tar_member;

typedef struct lc_tar_index {
    lc_tar_member *members; /* regular-file members only, in archive order */
    size_t n_members;
    /* Headers that were skipped, by kind. n_pax_headers counts 'x' and 'g';
     * n_other counts links, devices, fifos, sparse and unknown typeflags, and
     * regular members whose name is empty. */
    size_t n_directories, n_pax_headers, n_long_names, n_long_links, n_other;
    /* Indexing stopped early: EOF inside a header or member data, or a bad header. */
    bool truncated;
} lc_tar_index;

/*
 * Index the archive open on fd (path is only used in messages). Returns 0 and
 * a complete or partial index; a negative errno only for I/O errors (the index
 * is then empty). When the archive is truncated or has a bad header (bad
 * checksum, unparsable size, oversized extended header), indexing stops there,
 * idx->truncated is set, the members before it are kept, 0 is returned and err
 * (if not NULL) receives a message naming the file and offset (err->code is
 * LC_ETRUNC for a short file, LC_EFORMAT for a bad header). An empty file is a
 * valid archive with no members. fd must be a regular file.
 */
int lc_tar_index_fd(int fd, const char *path, lc_tar_index *idx, lc_error *err);

/* Read m->size bytes of m's data into buf. A short read (the file shrank or
 * vanished) is LC_ETRUNC naming path, member and offset; other failures are a
 * negated errno. Thread-safe. */
int lc_tar_pread_member(int fd, const char *path, const lc_tar_member *m, uint8_t *buf,
                        lc_error *err);

/* Free the members and zero the index; accepts NULL and a zeroed index. */
void lc_tar_index_fini(lc_tar_index *idx);

#endif
