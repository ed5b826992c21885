# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/nfmachine/concurrency.py and lint.py without a VM: the vCPU
count read from a console, the second boot when fewer came up, the
verdicts; the shell files the lint finds in a made-up repository, a clean
and a failing file, and the unit suite's status."""

import io
import os
import stat
import subprocess
import sys
import tempfile

from nfmachine import concurrency as cc
from nfmachine import lint
from nfmachine import testfront as tf
from nfmachine.tap import done, ok

GOOD = "NFABRIC-READY uptime=1s\nNFABRIC-CPUS=4\nok 1 - a\nok 2 - b\n1..2\n"
SHORT = ("NFABRIC-READY uptime=1s\nNFABRIC-CPUS=3\n# guest kernel: smpboot: CPU 3 is now"
         " offline\nok 1 - a\n")


def boots(consoles, statuses):
    """A stand-in boot writing each console in turn; the argv it got."""
    seen = []

    def boot(argv, log):
        k = len(seen)
        seen.append(argv)
        with open(log, "w", encoding="utf-8") as f:
            f.write(consoles[k])
        return statuses[k]
    return boot, seen


def test_concurrency(d):
    log = os.path.join(d, "c.log")
    out = []
    boot, seen = boots([GOOD], [0])
    rc = cc.suite(log, boot, out.append)
    ok(rc == 0 and len(seen) == 1 and seen[0][:2] == ["--cpus", "4"]
       and "nfabric-test --only gbinary,gternary,mixed,stats,toggle" in seen[0][-1]
       and out == ["ok - the guest runs on 4 vCPUs", "ok 1 - a", "ok 2 - b", "1..2"],
       "4 vCPUs at the first boot: one boot, its TAP relayed", out)

    out = []
    boot, seen = boots([SHORT, GOOD], [0, 0])
    rc = cc.suite(log, boot, out.append)
    ok(rc == 0 and len(seen) == 2 and os.path.exists(log + ".attempt1")
       and out[0].startswith("# the guest came up on 3 of 4 vCPUs")
       and out[1] == "# guest kernel: smpboot: CPU 3 is now offline"
       and out[2] == "ok - the guest runs on 4 vCPUs",
       "3 vCPUs: booted once more, said with the kernel's words, the first console kept", out)

    out = []
    boot, seen = boots([SHORT, SHORT.replace("NFABRIC-READY uptime=1s\n", "")], [0, 0])
    rc = cc.suite(log, boot, out.append)
    ok(rc == 1 and len(seen) == 2
       and any(l.startswith("not ok - the guest runs on 4 vCPUs (it reported 3;") for l in out)
       and "not ok - the guest did not get ready" in out,
       "3 vCPUs twice and no READY: both fail", out)

    out = []
    boot, _ = boots(["NFABRIC-READY\nNFABRIC-CPUS=4\nnot ok 1 - a\n"], [1])
    rc = cc.suite(log, boot, out.append)
    ok(rc == 1 and "not ok 1 - a" in out, "the guest command's failure is the suite's", out)
    ok(cc.cpus_reported("x\r\nNFABRIC-CPUS=2\nNFABRIC-CPUS=4\r\n") == 4
       and cc.cpus_reported("nothing") is None, "the last count printed is read")


def git(d, *args):
    subprocess.run(["git", "-C", d, *args], check=True, capture_output=True)


def test_lint(d):
    repo = os.path.join(d, "repo")
    os.makedirs(os.path.join(repo, "lib"))
    files = {"a.sh": "#!/bin/sh\necho ok\n", "run": "#!/usr/bin/env bash\necho ok\n",
             "tool.py": "#!/bin/sh\n", "README": "text\n", "x.txt": "#!/bin/sh\n",
             "lib/b.sh": "# shellcheck shell=bash\necho \"$1\"\n"}
    for name, text in files.items():
        with open(os.path.join(repo, name), "w", encoding="utf-8") as f:
            f.write(text)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    found = sorted(lint.shell_files(repo))
    ok(found == ["a.sh", "lib/b.sh", "run"],
       "shell files by name (*.sh) or by first line (no dot in the name)", found)
    out = []
    rc = lint.lint(repo, out.append)
    ok(rc == 1 and out == ["# shellcheck " + out[0].split("shellcheck ")[1].split(",")[0]
                           + ", 3 files", "not ok - only 3 shell files found (git ls-files"
                           f" in {repo})"],
       "fewer than 25 shell files: the search is broken, said", out)
    for k in range(25):
        with open(os.path.join(repo, f"s{k:02d}.sh"), "w", encoding="utf-8") as f:
            f.write("#!/bin/sh\necho $1\n" if k == 3 else "#!/bin/sh\necho ok\n")
    git(repo, "add", ".")
    out = []
    rc = lint.lint(repo, out.append)
    bad = [l for l in out if l.startswith("not ok")]
    ok(rc == 1 and len([l for l in out if l.startswith("ok ")]) == 27
       and len(bad) == 1 and bad[0].endswith("shellcheck s03.sh: 1 findings")
       and any(l.startswith("#   s03.sh:2:") for l in out),
       "each file a TAP line; a finding fails its file, shellcheck's words as comments", bad)


def run_unit(root, build, qemu_src):
    """lint.unit() in a process of its own (its children write to stdout)."""
    return subprocess.run([sys.executable, "-c",
                           "import sys; from nfmachine import lint;"
                           f" sys.exit(lint.unit({root!r}, {build!r}, {qemu_src!r}))"],
                          capture_output=True, text=True, check=False,
                          env=dict(os.environ, PYTHONPATH=os.path.join(
                              os.path.dirname(__file__), "..", "..", "scripts")))


def test_unit(d):
    build = os.path.join(d, "build")
    os.makedirs(os.path.join(build, "tests", "unit"))
    os.makedirs(os.path.join(build, "bench"))
    root = os.path.join(d, "root")
    os.makedirs(os.path.join(root, "tests", "unit"))
    os.makedirs(os.path.join(root, "tests", "machine"))
    with open(os.path.join(root, "tests", "unit", "test_timing_tool.sh"), "w") as f:
        f.write("echo ok - timing tool $1\n")
    for name, status in (("test-a", 0), ("test-b", 0)):
        path = os.path.join(build, "tests", "unit", name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"#!/bin/sh\necho ok 1 - {name}\nexit {status}\n")
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    with open(os.path.join(root, "tests", "machine", "test_x.py"), "w") as f:
        f.write("print('ok 1 - x')\n")
    r = run_unit(root, build, d)
    lines = r.stdout.splitlines()
    ok(r.returncode == 0 and lines[0].endswith("tests/unit/test-a") and "ok 1 - test-a" in lines
       and "ok 1 - test-b" in lines and "# tests/unit/test_timing_tool.sh" in lines
       and "# tests/machine/test_x.py" in lines and "ok 1 - x" in lines,
       "unit: every program, the timing tool's test and each machine test, in order", lines)
    path = os.path.join(build, "tests", "unit", "test-b")
    with open(path, "w", encoding="utf-8") as f:
        f.write("#!/bin/sh\necho not ok 1 - b\nexit 1\n")
    r = run_unit(root, build, d)
    ok(r.returncode == 1 and "ok 1 - x" in r.stdout,
       "a failing program fails the suite; the rest still runs", r.stdout)


def test_front(d):
    root = os.path.join(d, "front")
    os.makedirs(os.path.join(root, "tests"))
    with open(os.path.join(root, "tests", "meson.build"), "w", encoding="utf-8") as f:
        f.write("nf_suites = [\n  # name, needs the set-up, what it checks\n"
                "  ['lint', false, 'shellcheck'],\n  ['guest', true, 'the guest checks'],\n]\n")
    ok(tf.meson_table(os.path.join(root, "tests", "meson.build"), "nf_suites")
       == [["lint", "0", "shellcheck"], ["guest", "1", "the guest checks"]],
       "meson-table: rows, booleans as 1/0, comments dropped")
    try:
        tf.meson_table(os.path.join(root, "tests", "meson.build"), "nf_benchmarks")
        ok(False, "a missing table is refused")
    except ValueError as exc:
        ok("no nf_benchmarks table" in str(exc), "a missing table is refused, named", exc)
    cases = [([], 0, "setup\nlint\nguest\n"), (["lint"], 0, "no-setup\nlint\n"),
             (["--list"], tf.HELP_DONE, "lint\nguest\n"), (["bogus"], 2, ""),
             (["--x"], 2, "")]
    for argv, want_rc, want_out in cases:
        out, err = io.StringIO(), io.StringIO()
        rc = tf.test_args(root, argv, out, err)
        ok(rc == want_rc and out.getvalue() == want_out
           and (rc != 2 or err.getvalue().startswith("nfabric test: unknown")),
           f"test-args {argv}: status {want_rc}", (rc, out.getvalue(), err.getvalue()))
    counts = os.path.join(d, "counts")
    with open(counts, "w", encoding="utf-8") as f:
        f.write("lint 31 0\nhost 4 0\n")
    out = []
    ok(tf.test_total(d, counts, ["lint"], out.append) == 0 and out == ["35 passed, 0 failed"],
       "test-total: the suites' and the host check's counts", out)
    with open(os.path.join(d, "boot-hangs.log"), "w", encoding="utf-8") as f:
        f.write("2026-12-06T10:00:00Z boot hung, attempt 1: x.log\n")
    out = []
    ok(tf.test_total(d, counts, ["lint", "guest"], out.append) == 1
       and out == ["not ok - suite guest: meson test did not run it",
                   "boot hangs (a guest printed nothing, killed and started again):",
                   "  2026-12-06T10:00:00Z boot hung, attempt 1: x.log",
                   "35 passed, 1 failed"],
       "test-total: a suite meson did not run fails; the boot hangs listed", out)


def main():
    with tempfile.TemporaryDirectory(prefix="nf-host-suites-") as d:
        test_concurrency(d)
        test_lint(d)
        test_unit(d)
        test_front(d)
    done()


if __name__ == "__main__":
    main()
