/*
 * machine: see machine.h. The control group limit is read from cgroup v2
 * (memory.max: a number or "max") or v1 (memory.limit_in_bytes, where "no
 * limit" is a huge number); the view a container gets of /sys/fs/cgroup is
 * its own group.
 */
#include "core/machine.h"

#include <stdio.h>
#include <stdlib.h>
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

uint64_t lc_memory_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t phys = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    static const char *const limits[] = {
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    };
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        uint64_t lim = read_number(limits[i]);
        if (lim > 0 && (phys == 0 || lim < phys))
            phys = lim;
    }
    return phys;
}
