# SPDX-License-Identifier: GPL-2.0-or-later
"""TAP: the parts of the multihost suite and `bench cluster` that need no VM
(scripts/nfmachine/{hosts,multihost,benchcluster}.py).

Run by the unit suite:  PYTHONPATH=scripts:QEMU_SRC/python python3 THIS
The hosts' TAP relayed, the cluster's report, the refusal checks' lines,
the attackers' checks, the SIGSTOP plan of the pause cases, the fabric
manager's assignments, and the bench's options, figures (per path: all
hosts' bytes over the slowest host's time), best of the rounds, ratios and
its key=value lines in their order, as the shell had them.
"""

import io
import os
import subprocess
import sys

from nfmachine.tap import ok
import testkit
from nfmachine import benchcluster as bc
from nfmachine import hosts, multihost as mh, vm

SCRIPTS = os.path.dirname(os.path.dirname(os.path.abspath(bc.__file__)))

BENCH_LINES = """\
booting
mh_bench rank=0 path=gbinary bytes=33554432 seconds=1.272182 mbps=26.375\r
mh_bench rank=0 path=gternary bytes=33554432 seconds=1.251616 mbps=26.809
mh_bench rank=0 path=floor bytes=33554432 seconds=0.754760 mbps=44.457
ok 3 - [rank 0] bench: measured
mh_bench rank=1 path=gbinary bytes=33554432 seconds=1.309152 mbps=25.631
mh_bench rank=1 path=gternary bytes=33554432 seconds=1.273330 mbps=26.352
mh_bench rank=1 path=floor bytes=33554432 seconds=0.783946 mbps=42.802
""".splitlines()


def test_relay_and_report():
    console = ("[    1.2] cxl_pci: probe\nok 1 - [rank 0] head 0 of 2\n# [rank 0] a note\n"
               "not ok 2 - [rank 0] round\nsummary: multihost agg: fine\nokay, not TAP?\n"
               "  ok - indented\nNFABRIC-EXIT=0\n")
    ok(hosts.relay_lines(console) == ["ok 1 - [rank 0] head 0 of 2", "# [rank 0] a note",
                                      "not ok 2 - [rank 0] round",
                                      "summary: multihost agg: fine", "okay, not TAP?"],
       "a host's ok, not ok, comment and summary lines relayed in order, as grep -E"
       " '^(ok|not ok|#|summary:)' has them", hosts.relay_lines(console))
    msgs = "".join(f"line {k}\n" for k in range(8))
    got = hosts.report_lines("/d", [0, 124, None, 3], ["", msgs, "", ""])
    want = ["cluster: host 0: ok (console: /d/host0.log)",
            "cluster: host 1: TIMED OUT (hung) (console: /d/host1.log)",
            "    line 3", "    line 4", "    line 5", "    line 6", "    line 7",
            "cluster: host 2: stopped without reporting a status (console: /d/host2.log)",
            "cluster: host 3: FAILED (status 3) (console: /d/host3.log)"]
    ok(got == want, "the cluster's report: each host's status in words, the last 5 lines"
       " of a failed host's messages indented", "\n".join(got))
    ok(hosts.TIMED_OUT == vm.TIMED_OUT and hosts.NO_STATUS == vm.NO_STATUS,
       "hosts.py's statuses are vm.py's")
    lines = ["lock_waits=1", "job0_lock_head=none", "job1_lock_head=1", "x=2"]
    ok(hosts.state_value(lines, "job1_lock_head") == "1"
       and hosts.state_value(lines, "job0_lock_head") == "none"
       and hosts.state_value(lines, "lock_sleeps") == "",
       "nfabric-state's values by key ('' if absent)")


def test_tap():
    out = io.StringIO()
    tap = mh.Tap(out, numbered=False)
    tap.ok(True, "a")
    tap.ok(False, "b", numbered=True)
    tap.ok(True, "c", numbered=True)
    tap.lines(["x", "y"], "# ")
    tap.ok(False, "d")
    ok(out.getvalue() == "ok - a\nnot ok 1 - b\nok 2 - c\n# x\n# y\nnot ok - d\n",
       "the suite's TAP: plain checks, and numbered ones as nf_tap numbered them",
       out.getvalue())
    names = [n for n, _, _ in mh.cases(tap)]
    heads = [c for _, c, _ in mh.cases(tap)]
    ok(len(set(names)) == 22 and names[9] == "jobs2" and names[15] == "apart2"
       and len(heads) == 22 and heads[0] == ["(d) refusals and joining, QEMU alone"]
       and heads[-1] == ["(o) the Python example of docs/guest.md: two heads started from Python"]
       and sum(len(c) for c in heads) == 16,
       "22 cases in the suite's order, 16 comment lines before them", heads)


def test_refused_line():
    msg = ("qemu-system-x86_64: -device cxl-neuron-fabric,bus=rp0: cxl-neuron-fabric: "
           "property 'heads' must be 1..16, not 17")
    ok(mh.refused_line("heads=17", "must be 1..16", 1, msg)
       == "ok - refused: heads=17 (property 'heads' must be 1..16, not 17)",
       "a refusal: ok, QEMU's message from the device's name on", mh.refused_line(
           "heads=17", "must be 1..16", 1, msg))
    ok(mh.refused_line("x", "must be 1..16", 124, msg).startswith("not ok - refused: x: status 124"),
       "a QEMU that timed out (124) is no refusal")
    ok(mh.refused_line("x", "must be 1..16", 0, msg).startswith("not ok - refused: x: status 0"),
       "a QEMU that exited 0 is no refusal")
    got = mh.refused_line("x", "other text", 1, "l1\nl2\nl3\nl4")
    ok(got == 'not ok - refused: x: status 1, wanted "other text", got: l1\nl2\nl3',
       "another message: not ok, with what was wanted and QEMU's first 3 lines", got)


def test_corrupt_and_attacks():
    console = ("wait 0: HEAD_INFO.STATE_FAILED\nwait-status=1\nclear-status=1\n"
               "enabled-mask: 0x00000000\nlast-error: 16\n")
    msgs = "host 0: the state file was truncated; it refuses the device's accesses\n"
    ok(mh.corrupt_ok(console, msgs), "(g): a host that saw it all passes")
    ok(not mh.corrupt_ok(console.replace("clear-status=1", "clear-status=0"), msgs),
       "(g): a clear that was not refused fails")
    ok(not mh.corrupt_ok(console, "nothing said\n"), "(g): a QEMU that said nothing fails")
    console = ("destroy-status=0\nsanitize-status=1\ninject-0xc00000-status=1\n"
               "clear-0xc00000-status=1\ninject-0x200000-status=1\nclear-0x200000-status=0\n")
    msgs = ("mailbox command SANITIZE_OVERWRITE (0x4400) refused (return code 0x13)\n"
            "mailbox command MEDIA_AND_POISON_INJECT_POISON (0x4301) refused (return code 0xf)\n"
            "mailbox command MEDIA_AND_POISON_CLEAR_POISON (0x4302) refused (return code 0xf)\n")
    got = mh.attack_lines("/d", 2, 1, console, msgs)
    ok(len(got) == 6 and got[0] == "ok - sanitize2: host 1 destroyed its own region (the kernel"
       " allows Sanitize only then)"
       and got[1] == "ok - sanitize2: host 1's sanitize fails in its guest (sanitize-status=1)"
       " and the device refused SANITIZE_OVERWRITE with return code 0x13"
       and all(g.startswith("ok - ") for g in got[2:5])
       and got[5].startswith("not ok - sanitize2: host 1's clear-0x200000 fails in its guest"
                             " (clear-0x200000-status=0)"),
       "(h): each attack checked in the guest and the device; one that succeeded fails",
       "\n".join(got))
    got = mh.attack_lines("/d", 3, 2, "", "")
    ok(got[0] == "not ok - sanitize3: host 2 could not destroy its region (console /d/host2.log)"
       and all(g.startswith("not ok - ") and "fails in its guest ()" in g for g in got[1:]),
       "(h): an attacker that printed nothing fails every check", "\n".join(got))


def plan_of(held):
    """StopPlan over a sequence of stops (True: holding the lock): the
    stops kept, and the counts."""
    plan, kept = mh.StopPlan(), []
    for h in held:
        if not plan.more():
            break
        plan.tries += 1
        kept.append(plan.keep(h))
    return kept, (plan.k, plan.free, plan.busy, plan.tries)


def test_stop_plan():
    kept, counts = plan_of([False] * 40)
    ok(kept == [True, True, True, True, False] * 1 + [False] * 14 + [True] and
       counts == (5, 5, 0, 20),
       "(j): with the lock never held, the last stop waits for one holding it until"
       " the 20th try", (kept, counts))
    kept, counts = plan_of([True, True, False, False, True, False, False])
    ok(kept == [True, False, True, True, False, True, True] and counts == (5, 4, 1, 7),
       "(j): one stop holding the lock counts, another is undone at once", (kept, counts))
    kept, counts = plan_of([True] * 40)
    ok(counts == (1, 0, 1, 40), "(j): at most 40 stops in all", counts)


def test_assignments():
    ok(" ".join(mh.jobs_fm(3, ",14")) == "--job 0 --heads 0-1 --windows 0-7,15,14 --mem 0+16M"
       " --job 1 --heads 2 --windows 8-13 --mem 16M+16M", "(i): the jobs of 3 hosts")
    ok(" ".join(mh.reassign_fm(2, "slot")) == "--job 0 --heads 0-0 --windows 0-7,9 --mem 0+16M"
       " --job 1 --heads 1 --windows 8,10-13 --mem 16M+16M", "(m): the slot step of 2 hosts")
    ok(" ".join(mh.own_fm(3)) == "--job 0 --heads 0-2 --windows 0-15 --mem 0+64M"
       " --own 0@64M+16M --own 1@80M+16M --own 2@96M+16M", "(k): 3 heads' own ranges")
    ok(len(mh.apart_fm(2)) == 16 and mh.apart_fm(3)[16:21] == ["--job", "2", "--heads", "2",
                                                               "--windows"],
       "(n): job 2 only with 3 hosts")


def test_bench_options():
    ok(bc.parse([]) == (16, 2) and bc.parse(["--mib", "1", "--rounds", "3"]) == (1, 3),
       "bench cluster: 16 MiB and 2 rounds by default, or as given")
    ok(bc.parse(["--mib", "1", "-h"]) is None and bc.parse(["--help"]) is None,
       "bench cluster: -h and --help")
    for argv, msg in ((["--mib", "0"], "bench cluster: --mib and --rounds take positive numbers"),
                      (["--rounds", "x"], "bench cluster: --mib and --rounds take positive numbers"),
                      (["--bytes"], 'bench cluster: unknown option "--bytes"'),
                      (["--mib"], "bench cluster: --mib needs a value")):
        try:
            bc.parse(argv)
            got = None
        except bc.Usage as exc:
            got = str(exc)
        ok(got == msg, f"bench cluster {' '.join(argv)}: {msg}", got)
    ok(bc.USAGE.startswith("usage: scripts/nfabric bench cluster [--mib N] [--rounds N]\n")
       and len(bc.USAGE.splitlines()) == 17, "bench cluster --help: its 17 lines")


def test_bench_figures():
    got = bc.figures(BENCH_LINES)
    ok(got == {"gbinary": ("51.261", 2, "25.631", "26.375"),
               "gternary": ("52.703", 2, "26.352", "26.809"),
               "floor": ("85.604", 2, "42.802", "44.457")},
       "figures: all hosts' bytes over the slowest host's time, the hosts, the slowest and"
       " fastest host (as the shell's awk)", got)
    ok(bc.figures(["mh_bench rank=0 path=floor bytes=8 seconds=0.000000 mbps=0"]) == {},
       "figures: a path timed at 0 s has no figure")
    best = bc.Best()
    ok(best.keep("heads2_gbinary", "51.261", "25.631", "26.375"), "best: a first figure is kept")
    ok(not best.keep("heads2_gbinary", "9.5", "1", "2") and best.get("heads2_gbinary") == "51.261"
       and best.lo["heads2_gbinary"] == "25.631",
       "best: a lower round changes nothing (its slowest and fastest neither)")
    ok(best.keep("heads2_gbinary", "100.000", "40", "60") and best.hi["heads2_gbinary"] == "60",
       "best: a higher round replaces it with its own slowest and fastest host")
    ok(not best.keep("pair", "") and not best.keep("pair", "0.0000") and best.get("pair") == "",
       "best: no figure, or 0, is never kept")
    best.keep("single_floor", "44.068")
    ok(best.lo["single_floor"] == "44.068" == best.hi["single_floor"],
       "best: one host's figure is its own slowest and fastest")
    ok(bc.ratio("k", "51.261", "27.200") == "k=1.885" and bc.ratio("k", "1", "") == "k=n/a"
       and bc.ratio("k", "1", "0") == "k=n/a" and bc.ratio("k", "", "3") == "k=0.000",
       "ratio: three decimals, n/a without a divisor")
    ok(bc.pair("27.200", "41.303") == "0.6585" and bc.pair(None, "41.303") == "0.0000"
       and bc.pair("1", "0.000") == "", "pair: four decimals; no floor, no figure")
    ok(bc.direct_figures("x\nmh_direct rank=1 plain_mbps=2166.7 ram_mbps=4510.1 enable_ms=1\r\n")
       == ("2166.7", "4510.1") and bc.direct_figures("mh_direct rank=1\n") is None,
       "direct: a host's plain and RAM MB/s")


def test_bench_batch():
    """In a child (the policy is inherited): batch() makes it SCHED_BATCH,
    and a process it starts is SCHED_BATCH too."""
    code = ("import os, subprocess, sys; from nfmachine import benchcluster as bc; "
            "said = bc.batch(); "
            "child = subprocess.run([sys.executable, '-c', "
            "'import os; print(os.sched_getscheduler(0))'], capture_output=True, text=True); "
            "print(said, os.sched_getscheduler(0) == os.SCHED_BATCH, "
            "child.stdout.strip() == str(os.SCHED_BATCH))")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=SCRIPTS), check=False)
    ok(got.stdout.split() == ["batch", "True", "True"],
       "bench cluster: its VMs run as SCHED_BATCH (this process and what it starts)",
       got.stdout + got.stderr)


def test_bench_report():
    best = bc.Best()
    for k, v in (("heads1_gbinary", "27.200"), ("heads2_gbinary", "51.261"),
                 ("pair_heads1_gbinary", "0.6585"), ("pair_heads2_gbinary", "0.5988"),
                 ("own_vs_ram_0", "0.928"), ("own_vs_ram_1", "0.480"),
                 ("single_gbinary", "33.882"), ("pair_single_gbinary", "0.7689")):
        best.keep(k, v)
    best.keep("heads1_unshared_gbinary", "28.596")
    best.every("beside_gbinary", "0.9512")
    best.every("beside_gbinary", "0.9400")
    lines = bc.report(1, 1, best, {2: "1234"},
                      {2: {"lock_sleeps": "5", "bias_grants": "7", "bias_revokes": "3",
                           "bias_drops": "2"}})
    keys = [line.split("=")[0] for line in lines]
    want = ["bench_mib_per_host", "rounds"]
    for p in ("gbinary", "gternary"):
        want.append(f"single_{p}_mbps")
        for n in (1, 2, 4):
            want += [f"heads{n}_{p}_mbps", f"heads{n}_{p}_per_head_mbps_min",
                     f"heads{n}_{p}_per_head_mbps_max"]
        want += [f"{p}_heads2_vs_heads1", f"{p}_heads4_vs_heads1"]
    want += ["trap_floor_single_mbps"] + [f"trap_floor_heads{n}_mbps" for n in (1, 2, 4)]
    want += ["trap_floor_heads2_vs_heads1", "trap_floor_heads4_vs_heads1"]
    for p in ("gbinary", "gternary"):
        want += [f"{p}_heads{n}_vs_trap_floor" for n in (1, 2, 4)]
        want += [f"{p}_heads2_scaling_vs_floor", f"{p}_heads4_scaling_vs_floor"]
    want += ["gbinary_write_vs_trap_floor", "single_gbinary_write_vs_trap_floor",
             "heads1_unshared_gbinary_mbps", "shared_vs_single_head",
             "shared_vs_single_head_rounds", "heads1_unshared_gternary_mbps",
             "shared_vs_single_head_gternary", "shared_vs_single_head_gternary_rounds",
             "shared_vs_single_vm", "shared_vs_single_vm_gternary"]
    for h in (0, 1):
        want += [f"head{h}_plain_write_mbps", f"head{h}_ram_write_mbps"]
    want.append("shared_plain_write_vs_ram")
    want += ["rounds_bucket_bytes", "rounds_timed"]
    for p in ("plain", "gbinary_posted"):
        for n in (1, 2, 4):
            want += [f"{p}_heads{n}_MBps", f"{p}_heads{n}_per_head_MBps_min",
                     f"{p}_heads{n}_per_head_MBps_max"]
    for p in ("plain", "gbinary_posted"):
        want += [f"{p}_heads2_vs_heads1", f"{p}_heads4_vs_heads1"]
    want += [f"gbinary_posted_heads{n}_scaling_vs_plain" for n in (2, 4)]
    want += [f"target_gbinary_posted_heads{n}_scaling_vs_plain" for n in (2, 4)]
    want.append("gbinary_posted_scaling_meets_targets")
    for n in (1, 2, 4):
        want += [f"lock_waits_heads{n}", f"lock_sleeps_heads{n}", f"lock_contended_pct_heads{n}",
                 f"bias_grants_heads{n}", f"bias_revokes_heads{n}", f"bias_drops_heads{n}"]
    ok(keys == want and len(keys) == 104, "report: the 104 keys in their order", keys)
    d = dict(line.split("=", 1) for line in lines)
    ok(d["gbinary_heads2_vs_heads1"] == "1.885" and d["gbinary_heads4_vs_heads1"] == "0.000"
       and d["gternary_heads2_vs_heads1"] == "n/a"
       and d["gbinary_heads2_scaling_vs_floor"] == "0.909"
       and d["gbinary_write_vs_trap_floor"] == "0.658"
       and d["single_gbinary_write_vs_trap_floor"] == "0.769"
       and d["shared_vs_single_vm"] == "0.803" and d["shared_plain_write_vs_ram"] == "0.480"
       and d["shared_vs_single_head"] == "0.951"
       and d["shared_vs_single_head_rounds"] == "0.951,0.940"
       and d["heads1_unshared_gbinary_mbps"] == "28.596"
       and d["shared_vs_single_head_gternary"] == "0.000"
       and d["shared_vs_single_head_gternary_rounds"] == ""
       and d["gternary_heads1_vs_trap_floor"] == "0.000" and d["heads4_gbinary_mbps"] == "",
       "report: ratios with three decimals, the slower head's plain writes, none as the"
       " shell printed none", d)
    ok(d["lock_waits_heads2"] == "1234" and d["lock_contended_pct_heads2"] == "0.24"
       and d["lock_waits_heads4"] == "0" and d["lock_contended_pct_heads4"] == "0.00"
       and d["lock_sleeps_heads2"] == "5" and d["bias_grants_heads2"] == "7"
       and d["bias_revokes_heads2"] == "3" and d["bias_grants_heads4"] == "0"
       and d["bias_drops_heads2"] == "2" and d["bias_drops_heads4"] == "0",
       "report: lock waits over the writes (N x MiB x 2 paths / 8 bytes), in percent;"
       " the state's sleeps and biases", d)
    ok(d["plain_heads1_MBps"] == "" and d["gbinary_posted_heads2_scaling_vs_plain"] == "n/a"
       and d["plain_heads2_vs_heads1"] == "n/a"
       and d["target_gbinary_posted_heads4_scaling_vs_plain"] == "0.9"
       and d["gbinary_posted_scaling_meets_targets"] == "no",
       "report: no whole rounds, no figures, n/a ratios, the targets, not met", d)


ROUND_LINES = """\
mh_rounds rank=0 path=plain bytes=4194304 rounds=8 seconds=0.030185 mbps=1111.640\r
mh_rounds rank=0 path=gbinary_posted bytes=4194304 rounds=8 seconds=0.165312 mbps=202.977
mh_bench rank=0 path=gbinary bytes=4194304 seconds=1.0 mbps=4.194
ok 4 - [rank 0] bench: a whole gbinary_posted round of 2 heads read back right
mh_rounds rank=1 path=plain bytes=4194304 rounds=8 seconds=0.030065 mbps=1116.068
mh_rounds rank=1 path=gbinary_posted bytes=4194304 rounds=8 seconds=0.157732 mbps=212.731
mh_rounds rank=2 path=plain bytes=4194304 rounds=8 seconds=0.030000 mbps=1000.000
mh_rounds rank=3 path=plain bytes=4194304 rounds=8 seconds=0.000000 mbps=0
""".splitlines()


def test_bench_rounds():
    got = bc.round_figures(ROUND_LINES)
    ok(got == {"plain": ("1111.640", 3, "1000.000", "1116.068", "4194304", "8"),
               "gbinary_posted": ("207.854", 2, "202.977", "212.731", "4194304", "8")},
       "rounds: per path the median of the heads' own MB/s (the middle one of 3, the"
       " mean of 2), the heads, the slowest and fastest, the bucket and the timed rounds;"
       " a head timed at 0 s and the mh_bench lines left out", got)
    ok(bc.round_figures(BENCH_LINES) == {}, "rounds: none in the contribution loops' lines")
    best = bc.Best()
    for k, v in (("rounds_heads1_plain", "1411.386"), ("rounds_heads2_plain", "1113.854"),
                 ("rounds_heads4_plain", "380.325"), ("rounds_heads1_gbinary_posted", "619.949"),
                 ("rounds_heads2_gbinary_posted", "207.854"),
                 ("rounds_heads4_gbinary_posted", "195.367")):
        best.keep(k, v, "1.000", "2.000")
    best.best["rounds_bucket"], best.best["rounds_timed"] = "4194304", "8"
    d = dict(line.split("=", 1) for line in bc.rounds_report(best))
    ok(d["rounds_bucket_bytes"] == "4194304" and d["rounds_timed"] == "8"
       and d["plain_heads1_MBps"] == "1411.386" and d["gbinary_posted_heads4_MBps"] == "195.367"
       and d["plain_heads2_per_head_MBps_min"] == "1.000"
       and d["gbinary_posted_heads1_per_head_MBps_max"] == "2.000",
       "rounds report: the bucket, the timed rounds, each path's per-head MB/s, slowest"
       " and fastest head", d)
    ok(d["plain_heads2_vs_heads1"] == "0.789" and d["plain_heads4_vs_heads1"] == "0.269"
       and d["gbinary_posted_heads2_vs_heads1"] == "0.335"
       and d["gbinary_posted_heads4_vs_heads1"] == "0.315"
       and d["gbinary_posted_heads2_scaling_vs_plain"] == "0.425"
       and d["gbinary_posted_heads4_scaling_vs_plain"] == "1.169"
       and d["target_gbinary_posted_heads2_scaling_vs_plain"] == "0.9"
       and d["target_gbinary_posted_heads4_scaling_vs_plain"] == "0.9"
       and d["gbinary_posted_scaling_meets_targets"] == "no",
       "rounds report: N heads over one of each path, posted's over plain's (from the"
       " figures, three decimals), the targets 0.9, not met with 2 heads at 0.425", d)
    best.keep("rounds_heads2_gbinary_posted", "560.000")
    d = dict(line.split("=", 1) for line in bc.rounds_report(best))
    ok(d["gbinary_posted_heads2_scaling_vs_plain"] == "1.145"
       and d["gbinary_posted_scaling_meets_targets"] == "yes",
       "rounds report: both scalings at 0.9 or more meet the targets", d)


def main():
    return testkit.run(test_relay_and_report, test_bench_batch, test_tap, test_refused_line,
                       test_corrupt_and_attacks, test_stop_plan, test_assignments,
                       test_bench_options, test_bench_figures, test_bench_report,
                       test_bench_rounds)


if __name__ == "__main__":
    sys.exit(main())
