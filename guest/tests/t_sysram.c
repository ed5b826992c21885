/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Group sysram (only with --only sysram: it changes the guest for good):
 * the region's dax device is handed to the kmem driver and its memory
 * onlined as System RAM, as `daxctl reconfigure-device --mode=system-ram`
 * does; then a low-bit window over that memory (whose contents the device
 * would replace by aggregation results under the kernel's feet) must be
 * refused by the library with a clear error, and an FP32 window (identity)
 * is still allowed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt.h"

/* Hand daxN.M to kmem and online its memory blocks (shell, like an admin). */
static const char online_cmd[] =
    "{ grep -q '^kmem ' /proc/modules || insmod /lib/nfabric/kmem.ko; } && "
    "d=$(ls /sys/bus/dax/devices | head -n 1); "
    "echo $d > /sys/bus/dax/drivers/device_dax/unbind && "
    "echo $d > /sys/bus/dax/drivers/kmem/new_id 2>/dev/null; "
    "[ -e /sys/bus/dax/drivers/kmem/$d ] || echo $d > /sys/bus/dax/drivers/kmem/bind; "
    "for m in /sys/devices/system/memory/memory*/state; do "
    "  [ \"$(cat $m)\" = offline ] && echo online_movable > $m 2>/dev/null; "
    "done; grep -q 'System RAM (kmem)' /proc/iomem";

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
    rc = system(online_cmd);
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
    gt_summary("sysram: low-bit windows over memory the kernel uses as System "
               "RAM are refused by the library");
}
