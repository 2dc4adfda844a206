/*
 * machine: see machine.h. The control group comes from /proc/self/cgroup:
 * for cgroup v2 the line "0::PATH" (the limit is memory.max under
 * /sys/fs/cgroup/PATH: a number or "max"), for v1 the line "N:...memory...:
 * PATH" (memory.limit_in_bytes under /sys/fs/cgroup/memory/PATH, where "no
 * limit" is a huge number). Limits of the groups above apply too, so the
 * lowest one from the process's group up to the root counts. In a container
 * the root of what it sees is its own group, and PATH is often "/".
 */
#include "core/machine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The number in a one-line file; 0 when absent or not a number. */
static uint64_t read_number(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char line[64] = "";
    char *ok = fgets(line, sizeof line, f);
    fclose(f);
    if (!ok)
        return 0;
    char *end;
    unsigned long long v = strtoull(line, &end, 10);
    return end == line ? 0 : (uint64_t)v;
}

/* The lowest limit in file `name` of the group at root/group and every group
 * above it; 0 when none reads as a number. */
static uint64_t lowest_up(const char *root, const char *group, const char *name)
{
    char dir[1024];
    int n = snprintf(dir, sizeof dir, "%s%s", root, group);
    if (n < 0 || (size_t)n >= sizeof dir)
        return 0;
    size_t root_len = strlen(root);
    uint64_t low = 0;
    for (;;) {
        size_t len = strlen(dir);
        while (len > root_len && dir[len - 1] == '/')
            dir[--len] = '\0';
        char path[1100];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        uint64_t v = read_number(path);
        if (v > 0 && (low == 0 || v < low))
            low = v;
        char *slash = strrchr(dir + root_len, '/');
        if (len <= root_len || !slash)
            break;
        *slash = '\0';
    }
    return low;
}

/* Does the comma-separated controller list hold "memory"? */
static int has_memory(const char *list, size_t len)
{
    const char *p = list, *end = list + len;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t n = comma ? (size_t)(comma - p) : (size_t)(end - p);
        if (n == 6 && memcmp(p, "memory", 6) == 0)
            return 1;
        p += n + 1;
    }
    return 0;
}

uint64_t lc_cgroup_memory_limit(const char *proc_cgroup, const char *root)
{
    char v1[512], any2[512], any1[512];
    snprintf(v1, sizeof v1, "%s/memory", root);
    snprintf(any2, sizeof any2, "%s/memory.max", root);
    snprintf(any1, sizeof any1, "%s/memory.limit_in_bytes", v1);
    uint64_t low = 0;
    FILE *f = fopen(proc_cgroup, "re");
    if (f) {
        char line[1024];
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (!c2)
                continue;
            uint64_t v = 0;
            if (strncmp(line, "0::", 3) == 0)
                v = lowest_up(root, c2 + 1, "memory.max");
            else if (has_memory(c1 + 1, (size_t)(c2 - c1 - 1)))
                v = lowest_up(v1, c2 + 1, "memory.limit_in_bytes");
            if (v > 0 && (low == 0 || v < low))
                low = v;
        }
        fclose(f);
    }
    /* Without /proc, the root of the hierarchy the process sees. */
    const char *const roots[] = {any2, any1};
    for (size_t i = 0; i < 2; i++) {
        uint64_t v = read_number(roots[i]);
        if (v > 0 && (low == 0 || v < low))
            low = v;
    }
    return low;
}

uint64_t lc_memory_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t phys = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    uint64_t lim = lc_cgroup_memory_limit("/proc/self/cgroup", "/sys/fs/cgroup");
    if (lim > 0 && (phys == 0 || lim < phys))
        phys = lim;
    return phys;
}
