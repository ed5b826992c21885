# SPDX-License-Identifier: GPL-2.0-or-later
"""The one TAP writer of nfmachine's suites and checks and of the tests of
tests/machine (as tests/tap.h for C, nf_tap for the shell).

    tap = Tap()                         # lines on stdout (print, flushed);
                                        # Tap(f): on the stream or function f
    tap.ok(cond, "name", detail)        # "ok N - name" | "not ok N - name"
                                        # and DETAIL as "#   ..." lines
    tap.note("text")                    # "# text"
    tap.line(text)                      # a line as it is (a guest's TAP)
    tap.diag(lines)                     # "#   line" each
    return tap.done()                   # "1..N"; 1 if a check failed

`scripts/nfabric test` counts the lines that start "ok " and "not ok ",
and prints each "not ok" with the comment lines after it (what was
wanted, what was seen): a check's detail belongs after its "not ok".

Options keep each suite's lines as they were: PREFIX before every name
("libvirt: "), NUMBERED=False for "ok - name" (a suite whose guests'
lines carry no number either); ok(..., numbered=) for one check.  The
tests of tests/machine use the module's own writer: ok() and done().
"""

from typing import Callable, Iterable, List, Optional, TextIO, Union

Out = Callable[[str], None]
Detail = Union[str, List[str], None]


def _print(text: str) -> None:
    """A line on the stdout of the moment (tests redirect it), flushed so
    that it comes before what a child process prints next."""
    print(text, flush=True)


def _writer(stream: TextIO) -> Out:
    def write(text: str) -> None:
        stream.write(text + "\n")
        stream.flush()
    return write


def _lines(detail: Detail) -> Iterable[str]:
    if detail is None or detail == "":
        return []
    return detail if isinstance(detail, list) else str(detail).splitlines()


class Tap:
    """Checks numbered from 1 (those printed without a number are counted
    but not numbered); passed and failed count every check."""

    def __init__(self, out: Union[Out, TextIO, None] = None, *, prefix: str = "",
                 numbered: bool = True):
        self.out: Out = _writer(out) if hasattr(out, "write") else out or _print
        self.prefix = prefix
        self.numbered = numbered
        self.n = 0              # the last number given
        self.passed = 0
        self.failed = 0

    def ok(self, cond: object, name: str, detail: Detail = "", *,
           numbered: Optional[bool] = None) -> bool:
        """One check: "ok N - NAME", or "not ok N - NAME" then DETAIL (a
        string or lines) as comments; whether COND held."""
        good = bool(cond)
        if good:
            self.passed += 1
        else:
            self.failed += 1
        word = "ok" if good else "not ok"
        if self.numbered if numbered is None else numbered:
            self.n += 1
            word += f" {self.n}"
        self.out(f"{word} - {self.prefix}{name}")
        if not good:
            self.diag(detail)
        return good

    def note(self, text: str) -> None:
        """TEXT as a "# " comment (what the suite is doing)."""
        self.out(f"# {text}")

    def diag(self, detail: Detail) -> None:
        """DETAIL (a string or lines) as "#   " comment lines."""
        for line in _lines(detail):
            self.out(f"#   {line}")

    def line(self, text: str) -> None:
        """A line as it is (a guest's own TAP, relayed)."""
        self.out(text)

    def lines(self, texts: Iterable[str], prefix: str = "") -> None:
        for text in texts:
            self.out(prefix + text)

    def plan(self) -> None:
        """The plan after the checks: "1..N"."""
        self.out(f"1..{self.n}")

    def status(self) -> int:
        """The exit status: 1 if a check failed."""
        return 1 if self.failed else 0

    def done(self) -> int:
        """The plan, then the exit status."""
        self.plan()
        return self.status()


# The writer of the tests of tests/machine: `from nfmachine.tap import ok, done`.
_tests = Tap()


def ok(cond: object, name: str, detail: Detail = "") -> bool:
    return _tests.ok(cond, name, detail)


def done() -> int:
    return _tests.done()


__all__ = ["Tap", "ok", "done"]
