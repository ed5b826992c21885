# SPDX-License-Identifier: GPL-2.0-or-later
"""NEURON-Fabric from Python: the device (a ctypes binding of libnfabric) and
PyTorch DistributedDataParallel communication hooks that aggregate gradients
in it.  docs/pytorch.md."""
from .device import Device, NFabricError, Round, Heads, counter_bytes, path_number

__all__ = ["Device", "NFabricError", "Round", "Heads", "counter_bytes",
           "path_number"]
