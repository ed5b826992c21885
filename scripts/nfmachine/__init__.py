# SPDX-License-Identifier: GPL-2.0-or-later
"""The machines NEURON-Fabric boots, on QEMU's own python/qemu.

topology.py  the description of a guest (CPUs, RAM, devices, shared state,
             RTL, networking) and the QEMU command line it makes
vm.py        GuestVM (a qemu.machine.QEMUMachine) and boot(): launch, the
             console and its markers, timeouts, the boot-hang retry, reaping
qmp.py       calls on a running guest's monitor socket through qemu.qmp
lifecycle.py the lifecycle suite: its guests, migrations, resets, checks

`python3 -m nfmachine --help` lists the commands scripts/nfabric uses.
"""
