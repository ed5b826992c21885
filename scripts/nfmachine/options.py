# SPDX-License-Identifier: GPL-2.0-or-later
"""The command lines of nfmachine's commands: argparse, each command's
--help its own text as it always read, a bad option said and refused."""

import argparse
import re
import sys
from typing import List, Optional, Sequence


class UsageError(Exception):
    """A bad option: exit status 2, the message (then, if USAGE, the
    command's usage)."""

    def __init__(self, msg: str, usage: bool = False):
        super().__init__(msg)
        self.usage = usage


class Parser(argparse.ArgumentParser):
    """argparse for one command.  -h/--help prints HELP_TEXT; a bad
    argument raises ERROR(message[, True: show the usage]) instead of
    exiting, for the caller to say (status 2).  The messages are the
    project's: 'unknown WORD "--x"' (with the usage), '--x needs a value'
    (without); argparse's own for the rest."""

    def __init__(self, prog: str, help_text: str = "", error=UsageError, word: str = "argument",
                 prefix: str = ""):
        super().__init__(prog=prog, add_help=False, allow_abbrev=False)
        self.help_text, self.error_type, self.word, self.prefix = help_text, error, word, prefix

    def print_help(self, file=None) -> None:
        (file or sys.stdout).write(self.help_text)

    def error(self, message: str):
        usage = True
        m = re.fullmatch(r"unrecognized arguments: (\S*).*", message, re.S)
        if m:
            message = f'unknown {self.word} "{m.group(1)}"'
        m = re.fullmatch(r"argument (\S+?)(/\S+)?: expected one argument", message)
        if m:
            message, usage = f"{m.group(1)} needs a value", False
        exc = self.error_type(self.prefix + message)
        exc.usage = usage
        raise exc

    def options(self, valued: Sequence[str] = (), flags: Sequence[str] = (),
                repeated: Sequence[str] = ()) -> "Parser":
        """Options that take a value (the last one given counts; REPEATED:
        every one, in order) and FLAGS; their defaults None, False, []."""
        for o in valued:
            self.add_argument(o, action="append" if o in repeated else "store",
                              default=[] if o in repeated else None)
        for f in flags:
            self.add_argument(f, action="store_true")
        return self

    def parse(self, argv: Sequence[str]) -> Optional[argparse.Namespace]:
        """ARGV's arguments, or None if -h/--help was asked.  An option that
        takes a value takes the next argument whatever it is (--qemu-arg -S,
        --run "-x"), as it always did."""
        valued = {s for a in self._actions if a.option_strings and a.nargs != 0
                  for s in a.option_strings}
        known = {s for a in self._actions for s in a.option_strings}
        joined: List[str] = []
        i = 0
        while i < len(argv):
            a = argv[i]
            if a == "--":                # the rest are arguments
                joined += argv[i:]
                break
            if a in ("-h", "--help"):
                return None
            if a.startswith("-") and a.split("=", 1)[0] not in known:
                self.error(f"unrecognized arguments: {a}")
            if a in valued and i + 1 < len(argv):
                joined.append(f"{a}={argv[i + 1]}")
                i += 2
            else:
                joined.append(a)
                i += 1
        return self.parse_args(joined)


def given(ns: argparse.Namespace, names: Sequence[str]) -> dict:
    """{option: value} of the options among NAMES that were given."""
    out = {}
    for n in names:
        v = getattr(ns, n.lstrip("-").replace("-", "_"))
        if v not in (None, [], False):
            out[n] = v
    return out
