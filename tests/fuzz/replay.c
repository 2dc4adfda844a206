/*
 * replay: the plain-build driver of a fuzz target (see fuzz.h). Runs every
 * file named on the command line, and every file in every directory named
 * there (one level, sorted), through LLVMFuzzerTestOneInput once; a target
 * that finds a broken invariant aborts, which fails the test. A directory
 * with no inputs fails too, so that a corpus cannot silently go missing,
 * unless it follows -o (optional: the regression inputs of a target that
 * has none yet).
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
        exit(1);
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (n == cap)
            buf = realloc(buf, cap *= 2);
        size_t r = fread(buf + n, 1, cap - n, f);
        if (r == 0)
            break;
        n += r;
    }
    fclose(f);
    *len = n;
    return buf;
}

static void run_one(const char *path)
{
    size_t len;
    uint8_t *buf = slurp(path, &len);
    /* An exactly sized copy, so that ASan sees a read past the input. */
    uint8_t *exact = malloc(len ? len : 1);
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open %s: %s\n", dir, strerror(errno));
        exit(1);
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md"))
            continue;
        names = realloc(names, (n + 1) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    size_t ran = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            run_one(path);
            ran++;
        }
        free(names[i]);
    }
    free(names);
    return ran;
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    size_t total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        bool optional = !strcmp(argv[i], "-o") && i + 1 < argc;
        if (optional)
            i++;
        if (stat(argv[i], &st) != 0 && optional && errno == ENOENT)
            continue;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        if (S_ISDIR(st.st_mode)) {
            size_t n = run_dir(argv[i]);
            if (n == 0 && !optional) {
                fprintf(stderr, "replay: no inputs in %s\n", argv[i]);
                return 1;
            }
            printf("%s: %zu inputs\n", argv[i], n);
            total += n;
        } else {
            run_one(argv[i]);
            total++;
        }
    }
    printf("replayed %zu inputs, every invariant held\n", total);
    return total ? 0 : 1;
}
