# SPDX-License-Identifier: GPL-2.0-or-later
"""The checks of the Python package nfabric (guest/python/nfabric), run by
the suites, not shipped with the package: with PYTHONPATH holding both
guest/python and tests/python,

    python3 -m nfcheck.selftest   the hooks against a reference (suite ddp)
    python3 -m nfcheck.poolcheck  pools, faults, bad arguments (suite pools)
    python3 -m nfcheck.failcheck  waits end when a head fails (suite pybind)
    python3 -m nfcheck.argcheck   every integer argument's range (suite pybind)
"""
