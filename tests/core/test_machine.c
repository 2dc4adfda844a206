/*
 * test_machine: the memory limit a process gets, read from a control-group
 * tree built in a temporary directory (cgroup v2, v1 on a hybrid machine,
 * limits of parent groups, "max" and v1's huge "no limit", a missing /proc
 * file), and lc_memory_limit on this machine: above zero and never above
 * the physical memory.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/machine.h"

static char root[256];

static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    /* make the directories on the way */
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        mkdir(path, 0700);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

static uint64_t limit(void)
{
    char proc[512], sys[512];
    snprintf(proc, sizeof proc, "%s/proc_cgroup", root);
    snprintf(sys, sizeof sys, "%s/sys", root);
    return lc_cgroup_memory_limit(proc, sys);
}

static void clean(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'/sys '%s'/proc_cgroup", root, root);
    CHECK(system(cmd) == 0);
}

static void test_v2(void)
{
    clean();
    put("proc_cgroup", "0::/user.slice/job\n");
    put("sys/memory.max", "max\n");
    put("sys/user.slice/memory.max", "8000000000\n");
    put("sys/user.slice/job/memory.max", "max\n");
    CHECK_EQ_U64(limit(), 8000000000u); /* the parent's limit binds */
    put("sys/user.slice/job/memory.max", "2000000000\n");
    CHECK_EQ_U64(limit(), 2000000000u); /* the lower of the two */
}

static void test_v1_hybrid(void)
{
    clean();
    /* v1 memory controller, v2 tree with no memory limit at all */
    put("proc_cgroup", "9:name=systemd:/\n4:memory:/api/abc\n1:cpu,cpuacct:/\n0::/\n");
    put("sys/memory/memory.limit_in_bytes", "9223372036854771712\n");
    put("sys/memory/api/memory.limit_in_bytes", "9223372036854771712\n");
    put("sys/memory/api/abc/memory.limit_in_bytes", "3000000000\n");
    CHECK_EQ_U64(limit(), 3000000000u);
    /* the controller named among others */
    put("proc_cgroup", "4:cpuacct,memory:/api/abc\n");
    CHECK_EQ_U64(limit(), 3000000000u);
}

static void test_no_limit(void)
{
    clean();
    put("proc_cgroup", "0::/\n");
    put("sys/memory.max", "max\n");
    CHECK_EQ_U64(limit(), 0);
    /* without the /proc file, the root of the tree still counts */
    clean();
    put("sys/memory.max", "5000000000\n");
    CHECK_EQ_U64(limit(), 5000000000u);
}

static void test_this_machine(void)
{
    uint64_t m = lc_memory_limit();
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    CHECK(m > 0);
    if (pages > 0 && page > 0)
        CHECK(m <= (uint64_t)pages * (uint64_t)page);
}

int main(void)
{
    snprintf(root, sizeof root, "%s/lcmon-machine-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    CHECK(mkdtemp(root) != NULL);
    test_v2();
    test_v1_hybrid();
    test_no_limit();
    test_this_machine();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);
    return check_finish();
}
