/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The shell command that hands daxN.M to kmem and onlines its memory
 * blocks (movable), as an admin does; true once /proc/iomem shows System
 * RAM (kmem).  Shared by the guest checks (t_sysram.c) and the driver's
 * (tests/driver/nfabric-drvtest.c).
 */
#ifndef NFABRIC_SYSRAM_ONLINE_H
#define NFABRIC_SYSRAM_ONLINE_H

static const char sysram_online_cmd[] =
    "{ grep -q '^kmem ' /proc/modules || insmod /lib/nfabric/kmem.ko; } && "
    "d=$(ls /sys/bus/dax/devices | head -n 1); "
    "echo $d > /sys/bus/dax/drivers/device_dax/unbind && "
    "echo $d > /sys/bus/dax/drivers/kmem/new_id 2>/dev/null; "
    "[ -e /sys/bus/dax/drivers/kmem/$d ] || echo $d > /sys/bus/dax/drivers/kmem/bind; "
    "for m in /sys/devices/system/memory/memory*/state; do "
    "  [ \"$(cat $m)\" = offline ] && echo online_movable > $m 2>/dev/null; "
    "done; grep -q 'System RAM (kmem)' /proc/iomem";

#endif
