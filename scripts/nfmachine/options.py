# SPDX-License-Identifier: GPL-2.0-or-later
"""The command lines of `vm`, `cluster` and `libvirt-xml`: one scanner."""

from typing import Dict, List, Optional, Sequence, Set, Tuple


def scan(argv: Sequence[str], valued: Sequence[str], flags: Sequence[str],
         error) -> Optional[Tuple[Dict[str, List[str]], Set[str]]]:
    """ARGV as (every value of each option of VALUED, in order; the FLAGS
    given), or None if -h/--help was asked.  ERROR(message[, show usage])
    is raised for an unknown argument or an option without its value."""
    values: Dict[str, List[str]] = {}
    seen: Set[str] = set()
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            return None
        if a in valued:
            if i + 1 >= len(argv):
                raise error(f"{a} needs a value")
            values.setdefault(a, []).append(argv[i + 1])
            i += 2
        elif a in flags:
            seen.add(a)
            i += 1
        else:
            raise error(f'unknown argument "{a}"', True)
    return values, seen
