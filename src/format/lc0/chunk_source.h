/*
 * chunk_source: one file on disk that holds chunks: a .gz (one chunk) or an
 * uncompressed .tar (one chunk per member that is gzip or raw records).
 *
 * Ownership and threads: a source is reference counted; lc_chunk_source_open
 * returns it with one reference, the last unref frees it (and closes the tar
 * descriptor). After open it is immutable but for its per-chunk bad marks
 * and memo words (atomic), so every accessor and the read and load
 * functions may be called from any number of threads at once: tar
 * members are read with pread() on the shared descriptor, a .gz is opened,
 * read and closed on each read. A file that vanished or shrank after open is
 * an error of that read, never a crash.
 */
#ifndef LC_FORMAT_LC0_CHUNK_SOURCE_H
#define LC_FORMAT_LC0_CHUNK_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "format/lc0/chunk.h"
#include "format/gzip.h"

typedef enum { LC_SOURCE_GZ, LC_SOURCE_TAR } lc_source_kind;

typedef struct lc_chunk_source lc_chunk_source; /* opaque */

/*
 * Open path. The kind comes from the extension (".gz" or ".tar", case
 * sensitive); any other name returns -ENOTSUP (the caller counts it as
 * skipped). A missing or unreadable file returns its negated errno with a
 * message naming the path. A .tar is indexed now and its fd kept open
 * (O_CLOEXEC); its chunks are the regular members that start with the gzip
 * magic, and the raw members: those whose first u32 is a record version (3
 * to 7) and whose size is a whole number of records of that version (only
 * the first record's version is read at open; lc_chunk_check checks every
 * record's, as for an inflated gzip member). Other members are skipped,
 * counted with their reason (lc_chunk_source_skipped_member) and each logged
 * once as a warning naming the archive, the member and why; a truncated or damaged tar logs a
 * warning and keeps the complete members before the damage. Headers that are not regular members
 * (directories, pax and GNU extended headers, links) are counted by kind
 * (lc_chunk_source_tar_entries) and left to the caller to report. A .gz is only stat()ed here and
 * has one chunk.
 */
int lc_chunk_source_open(const char *path, lc_chunk_source **out, lc_error *err);
/* As lc_chunk_source_open, with the key path + key_at (the path relative to
 * the data folder, as the file_path_provider found it; 0, or an offset
 * that is not inside path: the basename). */
int lc_chunk_source_open_keyed(const char *path, size_t key_at, lc_chunk_source **out,
                               lc_error *err);

lc_chunk_source *lc_chunk_source_ref(lc_chunk_source *s);
/* Drop a reference; NULL is allowed; frees at zero. */
void lc_chunk_source_unref(lc_chunk_source *s);

const char *lc_chunk_source_path(const lc_chunk_source *s);
/* The key: the file's path relative to the data folder ("run2/game_7.gz";
 * a file directly in it, or a source opened without a folder: the
 * basename). What a source is known by: the pool's order and anchor, the
 * rank shards, the splitter's sides. Ordered by lc_source_key_compare. */
const char *lc_chunk_source_key(const lc_chunk_source *s);
lc_source_kind lc_chunk_source_kind(const lc_chunk_source *s);
/* Number of chunks (1 for a .gz). */
size_t lc_chunk_source_count(const lc_chunk_source *s);
/* Tar member name, or the basename for a .gz; NULL when i is out of range. */
const char *lc_chunk_source_chunk_name(const lc_chunk_source *s, size_t i);
/* Regular tar members skipped: neither gzip nor raw records. */
size_t lc_chunk_source_skipped_members(const lc_chunk_source *s);
/* Skipped member k (0 .. skipped_members - 1): its name, and why in *reason
 * (a phrase such as "an empty member"); NULL when k is out of range. */
const char *lc_chunk_source_skipped_member(const lc_chunk_source *s, size_t k, const char **reason);
/* Tar members read as raw records (not gzip). */
size_t lc_chunk_source_raw_members(const lc_chunk_source *s);
/* Chunk i is a raw tar member: its bytes are the records themselves. */
bool lc_chunk_source_chunk_raw(const lc_chunk_source *s, size_t i);
/* The tar was cut short or damaged; the chunks before the damage are kept. */
bool lc_chunk_source_truncated(const lc_chunk_source *s);
/* What cut it short or damaged it ("archive truncated at offset N: ..."),
 * or NULL when it is whole. */
const char *lc_chunk_source_damage(const lc_chunk_source *s);

/*
 * The tar headers that are not chunks, by kind, as the index counted them
 * (see lc_tar_index): directories ('5', and old-style names ending in '/'),
 * pax headers ('x' and 'g'), GNU long names ('L': each one names the entry
 * after it, which is kept or skipped on its own merits), GNU long links
 * ('K'), and other entries (hard and symbolic links, devices, fifos, sparse
 * files, unknown typeflags). None of them is an error; the loader logs and
 * counts them. All zero for a .gz.
 */
typedef struct lc_tar_entry_counts {
    size_t directories, pax_headers, long_names, long_links, other;
} lc_tar_entry_counts;
lc_tar_entry_counts lc_chunk_source_tar_entries(const lc_chunk_source *s);

/* What chunk i is, as a 64-bit hash, to know a file written again: a .gz's
 * bytes (one chunk), a tar member's name, place and size (an archive that
 * grew keeps the ids of the members it had). Two chunks with one id are
 * taken to be the same game. */
uint64_t lc_chunk_source_chunk_id(const lc_chunk_source *s, size_t i);

/*
 * A view: the chunks of src at members[0 .. n-1] (indices into src, each
 * below its count), as a source of their own, with src's path, key and
 * kind; chunk i of the view reads chunk members[i] of src. It holds a
 * reference to the file's source (a view of a view views the file), and
 * has its own bad marks. The chunk_source_splitter stage makes them.
 */
lc_chunk_source *lc_chunk_source_view(lc_chunk_source *src, const uint32_t *members, size_t n);
/* Chunk i's index in its file: for a view, the member it views; else i. */
size_t lc_chunk_source_member(const lc_chunk_source *s, size_t i);

/*
 * Chunk i was found bad after it was read (a stage downstream of the pool,
 * such as chunk_validator, rejected its records): the pool that holds the
 * source drops it for good at its next draw instead of drawing it again.
 * Any thread; i out of range is ignored.
 */
void lc_chunk_source_mark_bad(lc_chunk_source *s, size_t i);
bool lc_chunk_source_is_bad(const lc_chunk_source *s, size_t i);

/*
 * A word a stage downstream keeps about chunk i for as long as the source
 * lives (0 until set; any thread): the chunk_rescorer keeps there what it
 * found of the game, with a fingerprint of the bytes it was read from
 * (stages/chunk_rescorer.c). Eight bytes a chunk, allocated at the first
 * set (a source nothing sets costs nothing); a view has its own. i out of
 * range: 0, ignored.
 */
uint64_t lc_chunk_source_memo(const lc_chunk_source *s, size_t i);
void lc_chunk_source_set_memo(lc_chunk_source *s, size_t i, uint64_t v);

/*
 * Read chunk i's bytes as stored (gzip, or the records of a raw member) into *buf (malloc'd, caller
 * frees). Errors name the path (and member): i out of range -EINVAL, a vanished file its errno, a
 * shrunken one LC_ETRUNC, a chunk larger than the source's bound (lc_chunk_source_limit_output)
 * LC_EFORMAT.
 */
int lc_chunk_source_read(const lc_chunk_source *s, size_t i, uint8_t **buf, size_t *len,
                         lc_error *err);

/* The most bytes one chunk may take, compressed or inflated, for this
 * source and its views (0, the default: LC_GUNZIP_MAX_OUTPUT_DEFAULT). Set
 * it before the source is shared; the fuzzers keep bombs small with it. */
void lc_chunk_source_limit_output(lc_chunk_source *s, size_t max);

/* Read chunk i and lc_chunk_decode it (a raw member: lc_chunk_accept it) (within the source's
 * bound); messages start with "path: " or "path: member 'name': ". out->content is the
 * fingerprint of the gzip bytes read (lc_hash64; 0 for a raw member). */
int lc_chunk_source_load(const lc_chunk_source *s, size_t i, lc_inflate_backend b,
                         lc_chunk_data *out, lc_error *err);
/* The same, a gzip member inflated into pages of its own when `pages`
 * (lc_chunk_decode_as; out->pages says where the records are). */
int lc_chunk_source_load_as(const lc_chunk_source *s, size_t i, lc_inflate_backend b, bool pages,
                            lc_chunk_data *out, lc_error *err);

/* The order of keys: their basenames compared as bytes (upstream's order,
 * which knows no folders), then, for one name in several folders, the keys
 * as bytes, a key without a folder (a bare name, such as an anchor a
 * checkpoint stored before keys had folders) after every other of its name:
 * <0, 0, >0. */
int lc_source_key_compare(const char *a, const char *b);
/* Whether `given` (an anchor) names the source of this key: the key itself,
 * or a bare name (no '/') that is the key's basename. */
bool lc_source_key_matches(const char *key, const char *given);

#endif
