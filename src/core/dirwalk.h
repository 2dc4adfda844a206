/*
 * dirwalk: the depth-first walk of a directory tree that the stages which
 * find data files share (file_path_provider's scan, parquet_game_source's
 * epoch listing). Names starting with '.' are skipped (editors' and
 * writers' temporary files). Symbolic links are followed (stat), unless
 * the ops say `nofollow`, and may lead anywhere; each directory is listed
 * once a walk, known by device and inode, so a link back up the tree (a
 * loop) or a second way into a directory is reported (`again`) and not
 * walked twice. Entries that are neither a directory nor a regular file
 * (named pipes, sockets, devices; symbolic links with nofollow) go to
 * `other`.
 */
#ifndef LC_CORE_DIRWALK_H
#define LC_CORE_DIRWALK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct stat;

typedef struct lc_walk_ops {
    /* A directory, before it is listed (to watch it). May be NULL. */
    void (*dir)(void *ctx, const char *path);
    /* A regular file: path is malloc'd and the callee's. */
    void (*file)(void *ctx, char *path, const char *name);
    /* A directory that cannot be listed (listing true), or an entry that
     * cannot be stat'ed for another reason than having just vanished:
     * errno in err. May be NULL. */
    void (*error)(void *ctx, const char *path, int err, bool listing);
    /* Checked between entries: true ends the walk early. May be NULL. */
    bool (*stop)(void *ctx);
    /* A directory this walk has listed already, reached again at path
     * (first: where it was listed). May be NULL. */
    void (*again)(void *ctx, const char *path, const char *first);
    /* An entry that is neither a directory nor a regular file (its st_mode
     * in mode). May be NULL. */
    void (*other)(void *ctx, const char *path, mode_t mode);
    /* Do not follow symbolic links: a link is `other`. */
    bool nofollow;
    /* A directory known before this walk began (st: its device and inode;
     * one watched already, core/dirwatch.h): where it is, else NULL. A
     * known directory, the walk's own included, goes to `again` and is not
     * listed: a subfolder with a link back up the tree does not list the
     * tree a second time. May be NULL. */
    const char *(*known)(void *ctx, const struct stat *st);
} lc_walk_ops;

void lc_walk_tree(const char *dir, const lc_walk_ops *ops, void *ctx);

/* The files named *suffix under `path` (a tree, walked as above), or path
 * itself when it is a file; sorted by base name, the full path breaking
 * ties (the sort key of data files). A directory that cannot be listed is
 * logged; an entry named *suffix that is not a regular file (a FIFO, a
 * socket, a device) goes to `other` when it is not NULL. A malloc'd array
 * of *n malloc'd paths (NULL when none). */
char **lc_list_files(const char *path, const char *suffix, size_t *n,
                     void (*other)(void *ctx, const char *path, mode_t mode), void *ctx);

#endif
