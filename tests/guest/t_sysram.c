/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Group sysram (only with --only sysram: it changes the guest for good):
 * the region's dax device is handed to the kmem driver and its memory
 * onlined as System RAM, as `daxctl reconfigure-device --mode=system-ram`
 * does; then a low-bit window over that memory (whose contents the device
 * would replace by aggregation results under the kernel's feet) must be
 * refused by the library with a clear error, and an FP32 window (identity)
 * is still allowed.  Then programs run with their memory bound to the
 * region's NUMA node (nfabric-membind, as numactl --membind): nfabric-bench
 * (its pages must all be on that node; figures sysram_* against node0_*,
 * the guest's own RAM) and busybox gzip over a tmpfs file (the node's
 * Shmem must grow by the file, the round trip must be exact).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt.h"
#include "sysram_online.h"

#define NUMA_MNT "/tmp/nfabric-numa"
#define NUMA_MIB 8

/* The region's NUMA node: the first dax device's target_node. */
static int sysram_node(void)
{
    FILE *f = popen("cat /sys/bus/dax/devices/*/target_node 2>/dev/null | head -n 1",
                    "r");
    int node = -1;

    if (f) {
        if (fscanf(f, "%d", &node) != 1) {
            node = -1;
        }
        pclose(f);
    }
    return node;
}

/* Shmem (tmpfs pages) of node n, in KiB (-1 if unknown). */
static long node_used_kib(int n)
{
    char path[96], line[160];
    long kib = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", n);
    f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f)) {
        char *p = strstr(line, " Shmem:");

        if (p) {
            kib = strtol(p + 7, NULL, 10);
        }
    }
    if (f) {
        fclose(f);
    }
    return kib;
}

/* Run nfabric-bench's ram figures bound to node n; its pages' node. */
static bool bench_on_node(int n, const char *label, int *pages_node, char *on,
                          size_t on_len)
{
    char cmd[256], line[160];
    FILE *f;
    bool ok = false;

    snprintf(cmd, sizeof(cmd), "nfabric-membind %d nfabric-bench --label %s "
             "--bytes %u --reps 2 ram", n, label, NUMA_MIB << 20);
    f = popen(cmd, "r");
    *pages_node = -2;
    on[0] = 0;
    while (f && fgets(line, sizeof(line), f)) {
        size_t l = strlen(label);

        fputs(line, stdout);        /* the figures, for bench guest */
        if (!strncmp(line, label, l) && !strncmp(line + l, "_pages_node=", 12)) {
            *pages_node = atoi(line + l + 12);
        } else if (!strncmp(line, label, l) &&
                   !strncmp(line + l, "_pages_on_node=", 15)) {
            snprintf(on, on_len, "%s", line + l + 15);
            on[strcspn(on, "\n")] = 0;
        }
    }
    if (f) {
        ok = pclose(f) == 0;
    }
    fflush(stdout);
    return ok;
}

/* busybox gzip round trip of a tmpfs file, bound to node n; MB/s or -1. */
static double gzip_on_node(int n, long *used_delta_kib)
{
    char cmd[512];
    long before = node_used_kib(n), after;
    double t0, t;
    int rc;

    snprintf(cmd, sizeof(cmd), "nfabric-membind %d sh -c 'dd if=/dev/urandom "
             "of=" NUMA_MNT "/a bs=1M count=%d 2>/dev/null'", n, NUMA_MIB);
    if (system(cmd) != 0) {
        return -1;
    }
    after = node_used_kib(n);
    *used_delta_kib = before >= 0 && after >= 0 ? after - before : -1;
    t0 = gt_now();
    snprintf(cmd, sizeof(cmd), "nfabric-membind %d sh -c 'gzip -c " NUMA_MNT "/a > "
             NUMA_MNT "/a.gz && gzip -dc " NUMA_MNT "/a.gz | cmp - " NUMA_MNT "/a'", n);
    rc = system(cmd);
    t = gt_now() - t0;
    system("rm -f " NUMA_MNT "/a " NUMA_MNT "/a.gz");
    return rc == 0 ? NUMA_MIB / t : -1;
}

/* Programs with their memory on the region's node, beside node 0. */
static void sysram_programs(void)
{
    int node = sysram_node(), pn = -2, p0 = -2;
    char on[64], on0[64];
    long delta = -1, delta0 = -1;
    unsigned long n_on = 0, n_all = 0;
    double mbps, mbps0;
    bool ok;

    CHECK(node > 0, "sysram: the region's memory is NUMA node %d (dax target_node)",
          node);
    if (node <= 0) {
        return;
    }
    ok = bench_on_node(node, "sysram", &pn, on, sizeof(on));
    ok = ok && sscanf(on, "%lu/%lu", &n_on, &n_all) == 2;
    CHECK(ok && pn == node && n_all > 0 && n_on == n_all,
          "sysram: nfabric-bench bound to node %d: all its pages are on node %d (%s)",
          node, pn, on);
    ok = bench_on_node(0, "node0", &p0, on0, sizeof(on0));
    CHECK(ok && p0 == 0, "sysram: the same bound to node 0 (guest RAM): pages on "
          "node %d (%s)", p0, on0);
    if (!CHECK(system("mkdir -p " NUMA_MNT " && mount -t tmpfs -o size=64m none "
                      NUMA_MNT) == 0, "sysram: a tmpfs for the gzip run")) {
        return;
    }
    mbps = gzip_on_node(node, &delta);
    CHECK(mbps > 0 && delta >= (NUMA_MIB << 10) * 9 / 10,
          "sysram: busybox gzip round trip of a %d MiB tmpfs file bound to node %d: "
          "exact, the file's pages are on that node (its Shmem grew by %ld KiB), "
          "%.1f MB/s", NUMA_MIB, node, delta, mbps);
    mbps0 = gzip_on_node(0, &delta0);
    CHECK(mbps0 > 0, "sysram: the same on node 0 (%.1f MB/s)", mbps0);
    printf("sysram_gzip_MBps=%.2f\nnode0_gzip_MBps=%.2f\n", mbps, mbps0);
    fflush(stdout);
    system("umount " NUMA_MNT);
}

void gt_group_sysram(void)
{
    nfabric_win_cfg low = {
        .base = 0x100000, .size = 0x1000, .counters = 0x200000,
        .path = NFABRIC_PATH_GBINARY, .width = 8,
    };
    nfabric_win_cfg fp = { .base = 0x400000, .size = 0x1000,
                           .path = NFABRIC_PATH_FP32 };
    int rc;

    if (!gt_need_regs("sysram")) {
        return;
    }
    nfabric_close(gt_dev);
    rc = system(sysram_online_cmd);
    CHECK(rc == 0, "sysram: the region's memory is online as System RAM "
          "(kmem), as daxctl reconfigure-device --mode=system-ram does");
    rc = nfabric_open(gt_dev, NFABRIC_OPEN_NO_MEM);
    CHECK(rc == 0, "sysram: registers open again (%s)",
          rc ? nfabric_errmsg(gt_dev) : "ok");
    if (rc) {
        return;
    }
    rc = nfabric_window_set(gt_dev, 0, &low);
    CHECK(rc == NFLIB_EBUSY && strstr(nfabric_errmsg(gt_dev), "System RAM") &&
          !(nfabric_rd32(gt_dev, NFABRIC_REG_ENABLED_MASK) & 1),
          "sysram: a G-Binary window over System RAM is refused, nothing "
          "enabled: %s", nfabric_errmsg(gt_dev));
    low.base = 0x8000000;           /* data elsewhere, counters there */
    low.counters = 0x200000;
    rc = nfabric_window_set(gt_dev, 0, &low);
    CHECK(rc == NFLIB_EBUSY, "sysram: so is one whose counter area is "
          "System RAM (rc %d)", rc);
    rc = nfabric_window_set(gt_dev, 1, &fp);
    CHECK(rc == 0, "sysram: an FP32 window (identity) over it is allowed "
          "(rc %d)", rc);
    nfabric_windows_reset(gt_dev);
    sysram_programs();
    gt_summary("sysram: low-bit windows over memory the kernel uses as System "
               "RAM are refused by the library; programs bound to its NUMA node "
               "run there");
}
