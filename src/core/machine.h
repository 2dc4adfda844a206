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

#endif
