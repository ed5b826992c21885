/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Group devices (only with --only devices, on a guest with two devices and
 * no region: scripts/nfabric vm --devices 2 --append nfabric.region=none):
 * every device can be listed and addressed (PCI address, memdev name,
 * $NFABRIC_DEVICE, nfabricctl --dev), a window programmed on one device
 * leaves the other alone, an unknown name is refused with the names there
 * are; then a 2-way interleaved region over both devices is created with
 * `cxl create-region`, and a low-bit window on it is refused (it would
 * cover only one device's stripes), by the library and by nfabricctl.
 *
 * The direct map against the decoders (docs/device.md): the host bridge
 * has two root ports here, so its own HDM decoder routes every region.  A
 * 1-way region on one device is mapped directly (plain stores do not reach
 * the device's statistics); the 2-way interleaved region is not (every
 * plain store reaches one of the two devices and is counted there).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gt.h"

#define DM_WORDS 512

/* Bind the newest region's dax device to device_dax; its /dev path. */
static bool dm_dax(char *path, size_t len)
{
    FILE *f = popen("d=$(ls -d /sys/bus/cxl/devices/region*/dax_region*/dax*.* "
                    "2>/dev/null | tail -n 1); d=${d##*/}; [ -n \"$d\" ] && "
                    "daxctl reconfigure-device -m devdax -f $d >/dev/null 2>&1; "
                    "for i in 1 2 3 4 5 6 7 8 9 10; do [ -c /dev/$d ] && break; "
                    "usleep 100000; done; [ -c /dev/$d ] && echo /dev/$d", "r");
    bool ok = f && fgets(path, (int)len, f) != NULL;

    if (f) {
        ok = pclose(f) == 0 && ok;
    }
    path[strcspn(path, "\n")] = 0;
    return ok;
}

/* FP32 statistics of a device (opened without memory). */
static uint64_t dm_fp32_accesses(nfabric_dev *d)
{
    nfabric_path_stats st[NFABRIC_NUM_PATHS];

    nfabric_stats(d, st);
    return st[NFABRIC_PATH_FP32].reads + st[NFABRIC_PATH_FP32].writes;
}

/*
 * DM_WORDS plain stores then loads at the start of the region's dax
 * device; true if they read back.  *counted: the FP32 accesses both
 * devices' statistics gained meanwhile.
 */
static bool dm_plain(const char *dax, nfabric_dev *a, nfabric_dev *b,
                     uint64_t *counted)
{
    int fd = open(dax, O_RDWR);
    volatile uint64_t *m;
    uint64_t before;
    bool ok = true;

    if (fd < 0) {
        return false;
    }
    m = mmap(NULL, 2u << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        return false;
    }
    nfabric_ctrl(a, NFABRIC_CTRL_CLEAR_STATS);
    nfabric_ctrl(b, NFABRIC_CTRL_CLEAR_STATS);
    before = dm_fp32_accesses(a) + dm_fp32_accesses(b);
    for (unsigned i = 0; i < DM_WORDS; i++) {
        m[i] = 0xd1ec7000ull + i;
    }
    for (unsigned i = 0; i < DM_WORDS; i++) {
        ok = ok && m[i] == 0xd1ec7000ull + i;
    }
    *counted = dm_fp32_accesses(a) + dm_fp32_accesses(b) - before;
    munmap((void *)m, 2u << 20);
    return ok;
}

void gt_group_devices(void)
{
    char names[8][64];
    nfabric_win_cfg gb = {
        .base = 0x100000, .size = 0x1000, .counters = 0x200000,
        .path = NFABRIC_PATH_GBINARY, .width = 8,
    };
    nfabric_dev *a, *b;
    int n = nfabric_list(names, 8, false), rc;
    bool ok;

    CHECK(n == 2, "devices: nfabric_list finds 2 NEURON-Fabric devices "
          "(%d: %s, %s)", n, n > 0 ? names[0] : "-", n > 1 ? names[1] : "-");
    if (n != 2) {
        return;
    }
    a = nfabric_new();
    b = nfabric_new();
    if (!a || !b) {
        CHECK(0, "devices: library contexts: %s", strerror(ENOMEM));
        nfabric_free(a);
        nfabric_free(b);
        return;
    }
    for (int i = 0; i < 2; i++) {
        rc = nfabric_open_dev(a, names[i], NFABRIC_OPEN_NO_MEM);
        CHECK(rc == 0 && !strcmp(nfabric_pci_name(a), names[i]),
              "devices: opens %s by its PCI address", names[i]);
        nfabric_close(a);
    }
    /* By memdev name: mem0 and mem1 are children of the two PCI devices. */
    rc = nfabric_open_dev(a, "mem0", NFABRIC_OPEN_NO_MEM) |
         nfabric_open_dev(b, "mem1", NFABRIC_OPEN_NO_MEM);
    CHECK(rc == 0 && strcmp(nfabric_pci_name(a), nfabric_pci_name(b)) &&
          (!strcmp(nfabric_pci_name(a), names[0]) ||
           !strcmp(nfabric_pci_name(a), names[1])),
          "devices: opens mem0 (%s) and mem1 (%s), two devices",
          nfabric_pci_name(a), nfabric_pci_name(b));
    if (rc) {
        nfabric_free(a);
        nfabric_free(b);
        return;
    }
    /* A window on one device only. */
    rc = nfabric_window_set(b, 3, &gb);
    CHECK(rc == 0 && (nfabric_rd32(b, NFABRIC_REG_ENABLED_MASK) & 8) &&
          !(nfabric_rd32(a, NFABRIC_REG_ENABLED_MASK) & 8),
          "devices: window 3 set on mem1's device is not on mem0's (rc %d)", rc);
    nfabric_window_disable(b, 3);

    /* A 1-way region on mem0: its decoders allow the direct map. */
    {
        char dax[64] = "";
        uint64_t counted = ~0ull;

        rc = system("cxl create-region -m -t ram -d decoder0.0 -w 1 mem0 "
                    ">/tmp/region1.log 2>&1 || cat /tmp/region1.log");
        ok = rc == 0 && dm_dax(dax, sizeof(dax)) && dm_plain(dax, a, b, &counted);
        CHECK(ok && counted == 0, "devices: a 1-way region on mem0 (%s), routed by the "
              "host bridge's decoder: %u plain stores and loads read back and none "
              "reached the devices' statistics (%" PRIu64 "): mapped directly", dax,
              DM_WORDS, counted);
        CHECK(system("for r in $(ls /sys/bus/cxl/devices | grep '^region'); do "
                     "cxl disable-region $r && cxl destroy-region $r || exit 1; "
                     "done") == 0, "devices: the 1-way region destroyed");
    }
    nfabric_close(a);
    /* $NFABRIC_DEVICE. */
    setenv("NFABRIC_DEVICE", names[1], 1);
    rc = nfabric_open(a, NFABRIC_OPEN_NO_MEM);
    CHECK(rc == 0 && !strcmp(nfabric_pci_name(a), names[1]),
          "devices: $NFABRIC_DEVICE=%s picks it (%s)", names[1],
          nfabric_pci_name(a));
    nfabric_close(a);
    unsetenv("NFABRIC_DEVICE");
    rc = nfabric_open_dev(a, "mem7", NFABRIC_OPEN_NO_MEM);
    CHECK(rc == NFLIB_ENODEV && strstr(nfabric_errmsg(a), "have: "),
          "devices: an unknown name is refused: %s", nfabric_errmsg(a));
    nfabric_close(a);
    CHECK(system("nfabricctl --dev mem1 windows >/dev/null") == 0 &&
          system("nfabricctl --dev nosuch info >/dev/null 2>&1") != 0 &&
          system("nfabricctl list") == 0,
          "devices: nfabricctl --dev and list");

    /* A region interleaved over both devices. */
    rc = system("cxl create-region -m -t ram -d decoder0.0 -w 2 -g 256 mem0 mem1 "
                ">/tmp/interleave.log 2>&1 || cat /tmp/interleave.log; "
                "grep -q 2 /sys/bus/cxl/devices/region*/interleave_ways");
    CHECK(rc == 0, "devices: cxl create-region made a 2-way interleaved region "
          "over mem0 and mem1");
    {
        char dax[64] = "";
        uint64_t counted = 0;

        rc = nfabric_open_dev(a, "mem0", NFABRIC_OPEN_NO_MEM);
        ok = rc == 0 && dm_dax(dax, sizeof(dax)) && dm_plain(dax, a, b, &counted);
        CHECK(ok && counted == 2 * DM_WORDS, "devices: on the interleaved region (%s) "
              "the %u plain stores and loads read back and every one reached a "
              "device (%" PRIu64 " counted): interleave keeps the I/O path", dax,
              2 * DM_WORDS, counted);
        if (rc == 0) {
            nfabric_close(a);
        }
    }
    rc = nfabric_window_set(b, 0, &gb);
    CHECK(rc == NFLIB_EINTERLEAVE && !(nfabric_rd32(b, NFABRIC_REG_ENABLED_MASK) & 1),
          "devices: a G-Binary window on an interleaved region is refused, "
          "nothing enabled: %s", nfabric_errmsg(b));
    CHECK(system("nfabricctl --dev mem0 set-window 0 --base 0x100000 --size 4096 "
                 "--counters 0x200000 --path gbinary") != 0,
          "devices: so does nfabricctl set-window (exit status 1)");
    nfabric_free(a);
    nfabric_free(b);
    gt_summary("devices: 2 devices listed and addressed by PCI address, memdev "
               "and $NFABRIC_DEVICE; windows on an interleaved region refused");
}
