# SPDX-License-Identifier: GPL-2.0-or-later
"""TAP: the verdicts of scripts/nfmachine/ddp.py on fabricated runs, and
the command line of pools.py.

Run by the unit suite:  PYTHONPATH=scripts:QEMU_SRC/python python3 THIS
Each check of the ddp and pools suites, each result line of the
benchmarks and each refusal of their options, on small made-up JSON and
console text: a passing and a failing case each; the guests' script; and
that a run that outlives its bound is stopped with its whole process group.
"""

import json
import os
import tempfile
import time

from nfmachine.tap import done, ok
from nfmachine import ddp, pools


def jl(*rows):
    """JSON lines, as a run prints them."""
    return "".join(json.dumps(r) + "\n" for r in rows)


def verdicts(checks):
    return [good for good, _ in checks]


def texts(checks):
    return [text for _, text in checks]


ADMISSION = [{"layer": "conv1", "params": 800}, {"layer": "conv2", "params": 6400},
             {"layer": "head", "params": 800}]


def admission_row(kept, planned, budget=8.0):
    return {"rank": 0, "fp32_layers": kept, "planned_pct": planned, "budget_pct": budget,
            "admission": ADMISSION, "ef_state_identical": True}


def planned_of(kept):
    sizes = {a["layer"]: a["params"] for a in ADMISSION}
    total = sum(sizes.values())
    return 100.0 * (total / 32 + sum(sizes[k] for k in kept) * 31 / 32) / total


def check_json_cases():
    mode = "gbinary --error-feedback server"
    same = ddp.check_run_json([{"rank": 0, "ef_state_identical": True},
                               {"rank": 1, "ef_state_identical": True}], mode)
    ok(verdicts(same) == [True] and texts(same) == [f"{mode}: server-side EF state identical"
                                                    " on every rank"],
       "server EF: the same state on every rank passes", same)
    differ = ddp.check_run_json([{"rank": 0, "ef_state_identical": True},
                                 {"rank": 1, "ef_state_identical": False}], mode)
    ok(verdicts(differ) == [False], "server EF: a rank with another state fails", differ)

    la = "layer_aware --warmup 3 --error-feedback both"
    kept = ["head", "conv1"]
    good = ddp.check_run_json([admission_row(kept, planned_of(kept), budget=25.0)], la)
    ok(verdicts(good) == [True, True] and
       texts(good)[1] == f"{la}: the admission kept head,conv1 on FP32, 22.50 % of FP32"
                         " planned within the 25.0 % budget",
       "admission: a kept set whose planned share is the one it makes passes", good)
    over = ddp.check_run_json([admission_row(kept, 9.0, budget=8.0)], "layer_aware")
    ok(verdicts(over) == [False], "admission: a planned share over the budget fails", over)
    wrong = ddp.check_run_json([admission_row(["conv2"], planned_of(["head"]), budget=100)],
                               "layer_aware")
    ok(verdicts(wrong) == [False], "admission: a planned share other than its layers' fails",
       wrong)
    empty = ddp.check_run_json([admission_row([], 3.125, budget=5)], "layer_aware")
    ok(verdicts(empty) == [False], "admission: an empty set fails", empty)

    ll = "layer_aware --admission last_linear"
    head = ddp.check_run_json([{"rank": 0, "fp32_layers": ["head"]}], ll)
    ok(verdicts(head) == [True] and texts(head) == [f"{ll}: the fixed rule keeps the head on"
                                                    " FP32 (['head'])"],
       "last_linear: the head alone passes", head)
    more = ddp.check_run_json([{"rank": 0, "fp32_layers": ["head", "conv1"]}], ll)
    ok(verdicts(more) == [False], "last_linear: another set fails", more)
    none = ddp.check_run_json([{"rank": 1}], "gbinary --error-feedback server")
    ok(verdicts(none) == [False], "no row of rank 0: fails, saying so", none)


def mode_run_cases():
    r0 = {"rank": 0, "loss_last": 2.29, "params": "ab", "params_identical": True, "acc": 0.15,
          "traffic_pct": 3.165}
    r1 = {"rank": 1, "params": "ab", "params_identical": True}
    checks = ddp.mode_run_checks("gbinary", jl(r0, r1), "")
    ok(all(verdicts(checks)) and
       texts(checks) == ["DDP gbinary, 2 ranks, 12 steps: every rank ends with the same"
                         ' parameters ("traffic_pct": 3.165, "acc": 0.15)'],
       "a DDP run whose ranks end equal passes, with its traffic and accuracy", checks)
    r1["params_identical"] = False
    checks = ddp.mode_run_checks("gbinary", jl(r0, r1), "a\nb\nTraceback\nboom\n")
    ok(verdicts(checks) == [False] and texts(checks)[0].startswith("DDP gbinary, 2 ranks: b"
                                                                   " Traceback boom  {"),
       "a DDP run whose ranks differ fails, with its last 3 lines of stderr", checks)
    checks = ddp.mode_run_checks("gbinary", "", "")
    ok(verdicts(checks) == [False], "a DDP run with no output fails", checks)


def arch_cases():
    spec = ddp.ARCH_SPECS[0]
    ok(ddp.arch_name(spec) == "arch-resnet18-classes10" and
       ddp.arch_name(ddp.ARCH_SPECS[2]) == "arch-distilbert-classes2",
       "an architecture's files are named arch-ARCH-classesN")
    r0 = {"rank": 0, "params_total": 11181642, "params_identical": True,
          "traffic_pct_all": 52.497, "planned_pct": 4.993, "head_fp32": True,
          "fp32_layers": ["conv1", "fc"]}
    r1 = {"rank": 1, "params_identical": True}
    checks = ddp.arch_run_checks(spec, jl(r0, r1), "")
    ok(verdicts(checks) == [True, True] and
       texts(checks)[0] == f'{spec}: identical parameters on both ranks ("params_total":'
                           ' 11181642, "traffic_pct_all": 52.497)' and
       texts(checks)[1] == f"{spec}: the sensitivity admission keeps the classifier head on"
                           ' FP32 ("planned_pct": 4.993 within 5 %)',
       "an architecture run with equal ranks and the head on FP32 passes", checks)
    r0["head_fp32"] = False
    checks = ddp.arch_run_checks(spec, jl(r0, r1), "")
    ok(verdicts(checks) == [True, False] and
       texts(checks)[1].endswith('low-bit: "fp32_layers": ["conv1", "fc"]'),
       "layer_aware leaving the head low-bit fails, naming what it kept", checks)
    checks = ddp.arch_run_checks(ddp.ARCH_SPECS[1], jl(r0), "killed\n")
    ok(verdicts(checks) == [False], "an architecture run with one rank's line fails", checks)


def vm_cases():
    host = jl({"rank": 0, "params": "85c6"}, {"rank": 1, "params": "85c6"})
    logs = ("ok 1 - [rank 0] fp32 step 0: equal\n"
            '{"rank": 0, "params": "85c6"}\n'
            '# archs {"rank": 0, "params": "5b5b", "params_identical": true,'
            ' "traffic_pct": 3.126}\n'
            "# import-torch-seconds 26.6\n"
            "not ok 2 - [rank 1] gbinary\n"
            '{"rank": 1, "params": "85c6"}\n'
            '# archs {"rank": 1, "params": "5b5b", "params_identical": true}\n')
    good, text = ddp.vm_ddp_check(host, logs)
    ok(good and text.endswith('bit for bit ("params": "85c6")'),
       "2 VMs with the host run's parameters pass", text)
    good, text = ddp.vm_ddp_check(host, logs.replace('"params": "85c6"', '"params": "85c7"'))
    ok(not good and text == '2-VM DDP vs host: VMs "params": "85c7", host "params": "85c6"',
       "2 VMs whose parameters differ from the host run's fail", text)
    rn = jl({"rank": 0, "params": "5b5b"}, {"rank": 1, "params": "5b5b"})
    good, text = ddp.vm_resnet_check(rn, logs, "")
    ok(good and text.endswith('("params": "5b5b", "traffic_pct": 3.126)'),
       "ResNet-18 in the VMs equal to the host heads' passes", text)
    good, text = ddp.vm_resnet_check(rn.replace("5b5b", "0000"), logs, "x\ny\n")
    ok(not good and text.endswith("(x y )"), "ResNet-18 unlike the host heads' fails", text)
    good, _ = ddp.vm_resnet_check(rn, logs.replace('"params_identical": true}\n', "}\n"), "")
    ok(not good, "ResNet-18 with a guest's ranks unequal fails")
    marked = ddp.vm_tap_lines(logs)
    ok(marked == ["ok 1 - [VM] [rank 0] fp32 step 0: equal", "not ok 2 - [VM] [rank 1] gbinary",
                  "# VM import-torch-seconds 26.6"],
       "the guests' TAP lines are marked [VM], then their import times", marked)


def pools_cases():
    logs = "".join('{"rank": %d, "params": "b5a3", "params_identical": true}\n' % r
                   for r in range(4))
    host = jl({"rank": 0, "params": "b5a3"})
    good, text = ddp.pools_vm_check(logs, host, host)
    ok(good and text.endswith('with 4 heads ("params": "b5a3")'),
       "4 guests equal to the host pools and one device pass", text)
    good, text = ddp.pools_vm_check(logs, host, jl({"rank": 0, "params": "0000"}))
    ok(not good and text.endswith('one device "params": "0000"'),
       "host pools unlike one device fail", text)
    good, text = ddp.pools_vm_check(logs.replace("true", "false", 1), host, host)
    ok(not good and "(3 identical)" in text, "3 identical guests of 4 fail", text)
    good, text = ddp.pools_vm_check("", "", "")
    ok(not good and text == "2 x 2 VMs: guests  (0 identical), host pools none, one device none",
       "no output at all fails", text)


TSV = ("# name\tacc\tinter_pool_B\tintra_pool_B\tcxl_write_B\tstep_s\n"
       "pools1_counts\t0.6435\t0\t0\t10392\t0.0078\n"
       "pools2_counts\t0.7293\t5162\t5136\t10392\t0.0574\n"
       "pools2_votes\t0.3120\t674\t5136\t10392\t0.0536\n"
       "pools10_counts\t0.7692\t5162\t5136\t10392\t0.5334\n"
       "flat16\t0.7433\t0\t0\t0\t0\n")


def bench_cases():
    acc = ddp.pools_acc_dat(TSV)
    ok(acc == "1 0.6435 0.6435 0.7433\n2 0.7293 0.3120 0.7433\n10 0.7692 0.7692 0.7433\n",
       "bench pools: acc.dat by P, votes of P = 1 its counts", acc)
    by = ddp.pools_bytes_dat(TSV)
    ok(by.splitlines() == ["pools1_counts 0 0 10392", "pools2_counts 5162 5136 10392",
                           "pools2_votes 674 5136 10392", "pools10_counts 5162 5136 10392"],
       "bench pools: bytes.dat a line per pools row", by)
    out, row = ddp.host_result({"acc": 0.81234, "traffic_pct": 3.1654, "backward_seconds": 1.5},
                               "gbinary_ef", "iid")
    ok(out == ["acc_gbinary_ef_iid=0.8123", "traffic_pct_gbinary_ef_iid=3.165",
               "backward_s_gbinary_ef_iid=1.500", "traffic_pct_gbinary_ef=3.165"] and
       row == "gbinary_ef\tiid\t0.8123\t3.165\n", "bench ddp: a host run's lines and row", out)
    tsv = "".join(f"{k}\t{s}\t{a}\t1.0\n" for s in ("iid", "noniid")
                  for k, a in (("allreduce", 0.8), ("gbinary", 0.4), ("gternary", 0.6),
                               ("layer_aware", 0.8)))
    ratios = ddp.acc_ratios(tsv)
    ok(ratios[:3] == ["acc_gbinary_vs_allreduce_iid=0.500", "acc_gternary_vs_allreduce_iid=0.750",
                      "acc_layer_aware_vs_allreduce_iid=1.000"] and len(ratios) == 6,
       "bench ddp: accuracy against allreduce's", ratios)
    js = '{"rank": 0, "exchange_seconds": 0.4, "acc": 0.7, "traffic_pct": 3.1, "params": "aa"}'
    out, exch = ddp.vm_result("gbinary", js)
    ok(out == ["vm_exchange_s_gbinary=0.4", "vm_acc_gbinary=0.7", "vm_traffic_pct_gbinary=3.1"]
       and exch == "0.4", "bench ddp: a 2-VM run's lines", out)
    same = ddp.vm_host_result("gbinary", js, js)[2]
    differ = ddp.vm_host_result("gbinary", js, js.replace('"aa"', '"ab"'))[2]
    ok(same == "vm_params_equal_host_gbinary=yes" and differ == "vm_params_equal_host_gbinary=no",
       "bench ddp: the VMs' parameters against the host run's, equal and not", [same, differ])
    ok(ddp.speedup("1.2", "0.4") == "exchange_speedup_vs_gloo=3.000" and
       ddp.speedup("1.2", "") == "exchange_speedup_vs_gloo=0.000",
       "bench ddp: the speed-up over gloo, 0 without G-Binary's time")
    rows = [{"rank": 0, "params_total": 100, "traffic_pct": 4.5, "params_identical": True,
             "fp32_layers": ["fc"], "head": "fc", "head_fp32": True, "head_rank": 1,
             "ranking": ["fc", "conv1"]}, {"rank": 1, "params_identical": True}]
    out = ddp.archs_result(rows, "layer_aware", "resnet18_c10")
    ok(out == ["params_resnet18_c10=100", "traffic_pct_layer_aware_resnet18_c10=4.500",
               "fp32_layers_layer_aware_resnet18_c10=fc",
               "fp32_layer_count_layer_aware_resnet18_c10=1", "head_resnet18_c10=fc",
               "head_fp32_layer_aware_resnet18_c10=yes", "head_sensitivity_rank_resnet18_c10=1",
               "ranking_resnet18_c10=fc,conv1"], "bench archs: a layer_aware run's lines", out)
    rows[1]["params_identical"] = False
    try:
        ddp.archs_result(rows, "gbinary", "distilbert")
        ok(False, "bench archs: ranks that differ are refused", "accepted")
    except ddp.BenchError as exc:
        ok("gbinary distilbert: the ranks' parameters differ" in str(exc),
           "bench archs: ranks that differ are refused", exc)


RESNET_ROW = {"rank": 0, "world": 2, "bench": "resnet_exchange", "elements": 11689512,
              "packed_bytes": 1461189, "reps": 5, "trapped_reps": 2, "staging": True,
              "gloo_ms": [3334.9, 4431.3, 4263.9, 3847.8, 5310.1],
              "trapped_ms": [213.7, 96.7], "posted_ms": [4.528, 4.559, 6.076, 4.858, 13.059],
              "pack_ms": 500.722, "clear_ms": [0.8, 0.75, 1.4], "posted_equal_trapped": True,
              "majority_identical": True, "majority_matches_reference": True,
              "majority": "787a7e583d062d6d"}


def resnet_cases():
    ok(ddp.median([3, 1, 2]) == 2 and ddp.median([4, 1, 3, 2]) == 2.5 and
       ddp.median([7.0]) == 7.0, "bench ddp: the median, of an even count the middle two's mean")
    out = ddp.resnet_exchange_result(RESNET_ROW)
    want = ["resnet_exchange_elements=11689512", "resnet_exchange_packed_bytes=1461189",
            "resnet_exchange_reps=5", "resnet_exchange_trapped_reps=2",
            "resnet_exchange_gloo_ms=4263.90", "resnet_exchange_trapped_ms=155.20",
            "resnet_exchange_posted_ms=4.86", "resnet_exchange_posted_vs_gloo=877.707",
            "resnet_exchange_posted_vs_trapped=31.947",
            "resnet_exchange_posted_equal_trapped=1", "resnet_exchange_majority_ok=1",
            "resnet_exchange_pack_ms=500.72", "resnet_exchange_clear_ms=0.80",
            "target_resnet_exchange_posted_vs_gloo=10",
            "target_resnet_exchange_posted_vs_trapped=10"]
    ok(out == want, "bench ddp: the ResNet-18 exchange's lines, medians and ratios", out)
    row = dict(RESNET_ROW, posted_equal_trapped=False, majority_identical=False,
               posted_ms=[0, 0, 0], clear_ms=[])
    out = ddp.resnet_exchange_result(row)
    ok("resnet_exchange_posted_equal_trapped=0" in out and
       "resnet_exchange_majority_ok=0" in out and "resnet_exchange_posted_vs_gloo=0.000" in out
       and "resnet_exchange_clear_ms=0.00" in out,
       "bench ddp: read-backs that differ give 0, a zero time a 0 ratio", out)
    logs = ("NFABRIC-READY uptime=8.03s\n"
            '{"rank": 1, "bench": "resnet_exchange", "elements": 1}\r\n'
            "[   12.3] random: crng init done\r\n"
            + json.dumps(RESNET_ROW) + "\r\nNFABRIC-EXIT=0\n")
    ok(ddp.resnet_exchange_row(logs) == RESNET_ROW,
       "bench ddp: rank 0's exchange line found in a console log, its CR dropped")
    try:
        ddp.resnet_exchange_row(logs.replace('"rank": 0,', '"rank": 2,'))
        ok(False, "bench ddp: a log without rank 0's exchange line is refused", "accepted")
    except ddp.BenchError as exc:
        ok("no line of rank 0 from nfabric.exchangebench" in str(exc),
           "bench ddp: a log without rank 0's exchange line is refused", exc)
    cmd = ddp.resnet_exchange_command()
    ok(cmd == "/usr/bin/python3 -m nfabric.exchangebench --master-addr 169.254.0.1"
              f" --reps {ddp.RESNET_REPS} --trapped-reps {ddp.RESNET_TRAPPED_REPS}",
       "bench ddp: the guests' ResNet-18 exchange command", cmd)
    ok("resnet_exchange_posted_equal_trapped=" in ddp.HELP["ddp"],
       "bench ddp's help names the ResNet-18 exchange's keys")


def refused(name, argv, want):
    try:
        ddp.options(name, argv)
    except ddp.Usage as exc:
        ok(str(exc) == want, f"bench {name} refuses {argv}", exc)
        return
    ok(False, f"bench {name} refuses {argv}", "accepted")


def option_cases():
    ok(ddp.options("ddp", []) == {"--steps": "400", "--vm-steps": "20",
                                  "--parts": "host,hard,archs,vm"}, "bench ddp's defaults")
    ok(ddp.options("ef", ["--seeds", "2", "--help"]) is None, "--help after options: the help")
    ok(ddp.options("archs", ["--steps", "2", "--budget-pct", "2.5"])["--budget-pct"] == "2.5",
       "bench archs takes --steps 2 --budget-pct 2.5")
    refused("ddp", ["--bogus"], 'bench ddp: unknown option "--bogus"')
    refused("ddp", ["--steps", "x"], "bench ddp: bad --steps or --vm-steps")
    refused("ddp", ["--parts", "host,foo"], 'bench ddp: unknown part "foo" in --parts'
            " (host, hard, archs, vm)")
    refused("ddp", ["--steps"], "bench ddp: --steps needs a value")
    refused("archs", ["--steps", "1"], "bench archs: --steps must be an integer >= 2,"
            " --budget-pct a number")
    refused("archs", ["--budget-pct", "5%"], "bench archs: --steps must be an integer >= 2,"
            " --budget-pct a number")
    refused("hard", ["--seeds", "0"], "bench hard: --seeds and --steps must be positive integers")


def script_case(tmp):
    os.environ.update(NF_ROOT="/r", NF_BUILD="/b", NF_HOST_BUILD="/b/host", NF_RUN_SHM=tmp,
                      NF_RUN_TMP=tmp)
    path = os.path.join(tmp, "run.sh")
    ddp.vm_script(ddp.Ctx(), path, ddp.ddp_vm_commands())
    with open(path) as f:
        got = f.read().splitlines()
    ok(got[:3] == ["#!/bin/sh", "export PYTHONPATH=/r/guest/python:/r/tests/python"
                   " NFABRIC_LIB=/b/host/guest/libnfabric.so", ddp.VM_ENV] and
       got[4] == '/usr/bin/python3 -c "import torch" && echo "# import-torch-seconds'
                 ' $(awk -v a=$start "{print \\$1 - a}" /proc/uptime)"' and
       got[-1].endswith("--master-port 29660 --master-addr 169.254.0.1 | sed 's/^/# archs /'"),
       "the guests' script: the host's package, its checks and library, the portable kernels,"
       " the runs", got)


def bound_case(tmp):
    mark = "%d.%d" % (os.getpid() % 1000 + 100, time.time_ns() % 1000)
    err = os.path.join(tmp, "slow.err")
    t = time.monotonic()
    status = ddp.run(["sh", "-c", f"sleep {mark} & sleep {mark}; echo never"], timeout=0.5,
                     out=os.path.join(tmp, "slow.out"), err=err)
    took = time.monotonic() - t
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if mark.encode() in f.read():
                    left.append(pid)
        except OSError:
            continue
    with open(err) as f:
        said = f.read()
    ok(status == ddp.TIMED_OUT and took < 5 and not left and "stopped after 0 s" in said,
       "a run past its bound is stopped with its process group (status 124, said in its"
       " stderr file)", f"status {status}, {took:.1f} s, left {left}, stderr {said!r}")
    status = ddp.run(["sh", "-c", "exit 3"], timeout=10)
    ok(status == 3, "a run's own status is returned", status)


def pools_refused(argv, want):
    try:
        pools.Options(argv)
    except pools.PoolsUsage as exc:
        ok(exc.args[0] == want, f"pools refuses {argv}", exc.args[0])
        return
    ok(False, f"pools refuses {argv}", "accepted")


def pools_command_cases(tmp):
    o = pools.Options(["--pools", "3", "--hostfs", "--timeout", "90", "--run", "true",
                       "--device-props", "x=1"])
    cmd = pools.pool_command(o, 2, "/d/net", "/d")
    ok(cmd[3:] == ["cluster", "--hosts", "2", "--dir", "/d/pool2", "--net-hub", "/d/net",
                   "--net-first", "4", "--hostfs", "--timeout", "90", "--device-props", "x=1",
                   "--run", "export NFABRIC_POOL=2 NFABRIC_POOLS=3 NFABRIC_WORLD=6; export"
                   " NFABRIC_GLOBAL_RANK=$((NFABRIC_POOL * NFABRIC_HOSTS + NFABRIC_RANK)); true"],
       "pools: pool 2 of 3 is a cluster on the hub's ports 4.., the pool's names set", cmd)
    ok(o.bound_s() == 90 + pools.BUILD_GRACE_S, "pools: a pool's bound is its --timeout's")
    ok(pools.Options(["--help", "--bogus"]).help, "pools: --help first is the help")
    pools_refused(["--bogus"], 'unknown argument "--bogus"')
    pools_refused(["--run"], "--run needs a value")
    pools_refused(["--pools", "2"], "--run CMD is required")
    pools_refused(["--pools", "9", "--run", "x"], "--pools 9 --hosts 2: 2..16 guests in all")
    pools_refused(["--pools", "1", "--hosts", "1", "--run", "x"],
                  "--pools 1 --hosts 1: 2..16 guests in all")
    pools_refused(["--pools", "02", "--run", "x"], "--pools 02 --hosts 2: 2..16 guests in all")
    for p, rcs in ((0, ("0", "0")), (1, ("0", "124"))):
        os.makedirs(os.path.join(tmp, f"pool{p}"))
        for r, rc in enumerate(rcs):
            with open(os.path.join(tmp, f"pool{p}", f"host{r}.rc"), "w") as f:
                f.write(rc + "\n")
    lines = pools.report(tmp, 3)
    ok(lines == [f"pool 0: {tmp}/pool0 (consoles host<R>.log, 0 0 )",
                 f"pool 1: {tmp}/pool1 (consoles host<R>.log, 0 124 )",
                 f"pool 2: {tmp}/pool2 (consoles host<R>.log, )"],
       "pools: a line per pool with its hosts' statuses", lines)


def main():
    check_json_cases()
    mode_run_cases()
    arch_cases()
    vm_cases()
    pools_cases()
    bench_cases()
    resnet_cases()
    option_cases()
    with tempfile.TemporaryDirectory(prefix="nfmachine-ddp-test-") as tmp:
        script_case(tmp)
        bound_case(tmp)
    with tempfile.TemporaryDirectory(prefix="nfmachine-pools-test-") as tmp:
        pools_command_cases(tmp)
    return done()


if __name__ == "__main__":
    raise SystemExit(main())
