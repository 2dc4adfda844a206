/*
 * dirwalk: see dirwalk.h.
 */
#include "core/dirwalk.h"

#include "core/error.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void lc_walk_tree(const char *dir, const lc_walk_ops *ops, void *ctx)
{
    if (ops->dir)
        ops->dir(ctx, dir);
    DIR *d = opendir(dir);
    if (!d) {
        if (ops->error)
            ops->error(ctx, dir, errno, true);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL && !(ops->stop && ops->stop(ctx))) {
        if (e->d_name[0] == '.')
            continue;
        char *path = lc_xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0) {
            /* Vanished between readdir and stat: nothing to say. */
            if (errno != ENOENT && ops->error)
                ops->error(ctx, path, errno, false);
            free(path);
        } else if (S_ISDIR(st.st_mode)) {
            lc_walk_tree(path, ops, ctx);
            free(path);
        } else if (S_ISREG(st.st_mode)) {
            ops->file(ctx, path, strrchr(path, '/') + 1);
        } else {
            free(path);
        }
    }
    closedir(d);
}
