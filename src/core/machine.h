/*
 * machine: what the machine offers the process, for defaults that should
 * fit it.
 */
#ifndef LC_CORE_MACHINE_H
#define LC_CORE_MACHINE_H

#include <stdint.h>

/* The memory this process may use: the machine's physical memory, or the
 * memory limit of its control group when that is lower (a container or a
 * systemd slice with MemoryMax). 0 when neither can be read. */
uint64_t lc_memory_limit(void);

/* The lowest memory limit of the process's control group and the groups
 * above it, read from a /proc/self/cgroup at `proc_cgroup` and a hierarchy
 * mounted at `root` (v2 at root, v1 at root/memory); 0 when there is none.
 * lc_memory_limit reads the real ones; tests give a tree of their own. */
uint64_t lc_cgroup_memory_limit(const char *proc_cgroup, const char *root);

#endif
