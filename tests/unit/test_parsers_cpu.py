"""CPU suite parsers against real outputs captured on the development machine (tests/data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.drivers.hpcc import input_file as hpcc_input
from virtbench.drivers.hpcc import parse_hpl_runs
from virtbench.drivers.hpcc import parse_summary as parse_hpcc_summary
from virtbench.drivers.stress_ng import parse_yaml as parse_stress_ng_yaml
from virtbench.errors import WorkloadError
from virtbench.platforms import stall
from virtbench.platforms.base import ExecResult
from virtbench.workloads import registry
from virtbench.workloads.base import RunContext
from virtbench.workloads.cpu import (
    HPCC_STALL_S,
    HpccLinpack,
    HpccLinpackSweep,
    StressNgInt64,
    StressNgMatrixprod,
    StressNgQsort,
    SysbenchCpu1,
    SysbenchCpuAll,
)

DATA = Path(__file__).parent.parent / "data"


def read(rel: str) -> str:
    return (DATA / rel).read_text()


def ctx(workload, **params) -> RunContext:
    return RunContext(params={k: p.default for k, p in workload.params.items()} | params)


def result(stdout: str, argv: tuple[str, ...] = ("tool",)) -> ExecResult:
    return ExecResult(list(argv), 0, stdout, "", 1.0)


# --- sysbench cpu ---------------------------------------------------------------------------


def test_sysbench_cpu_1t():
    w = SysbenchCpu1()
    (s,) = w.parse(result(read("sysbench/cpu-1t.txt")), ctx(w))
    assert (s.metric, s.value, s.unit, s.higher_is_better) == (
        "events_per_s",
        1208.55,
        "events/s",
        True,
    )
    assert s.labels == {"threads": 1}


def test_sysbench_cpu_all_uses_pinned_cpus():
    w = SysbenchCpuAll()
    c = ctx(w)
    c.cpus = [0, 1]
    (s,) = w.parse(result(read("sysbench/cpu-2t.txt")), c)
    assert s.value == 2131.70 and s.labels == {"threads": 2}
    assert "--threads=2" in w.command(c, None)


def test_sysbench_cpu_all_asks_the_environment_for_its_cpus():
    class OneCpu:
        def __init__(self):
            self.calls = []

        def exec(self, argv, *, cpus=None, timeout=None, env=None):
            self.calls.append(argv)
            out = "1\n" if argv == ["nproc"] else read("sysbench/cpu-1t.txt")
            return ExecResult(list(argv), 0, out, "", 0.1)

    p = OneCpu()
    w = SysbenchCpuAll()
    (s,) = w.run(p, ctx(w))
    assert "--threads=1" in p.calls[1] and s.labels == {"threads": 1}


def test_sysbench_cpu_malformed():
    w = SysbenchCpu1()
    with pytest.raises(WorkloadError, match="events per second"):
        w.parse(result("sysbench 1.0.20\nFATAL: something\n"), ctx(w))


# --- stress-ng ------------------------------------------------------------------------------


def test_stress_ng_matrixprod_yaml():
    w = StressNgMatrixprod()
    samples = w.parse_yaml(read("stress-ng/cpu-matrixprod-1.yaml"), ctx(w))
    by = {s.metric: s for s in samples}
    assert by["bogo_ops_per_s"].value == pytest.approx(970.512522)
    assert by["bogo_ops_per_cpu_s"].value == pytest.approx(988.543212)
    assert by["bogo_ops_per_s"].unit == "bogo-ops/s"
    labels = by["bogo_ops_per_s"].labels
    assert labels["stressor"] == "cpu" and labels["workers"] == 1
    assert labels["bogo_ops"] == 2914 and labels["args"] == "--cpu-method matrixprod"
    assert "invalid" not in labels


def test_stress_ng_int64_all_workers():
    w = StressNgInt64()
    samples = w.parse_yaml(read("stress-ng/cpu-int64-all.yaml"), ctx(w, workers=0))
    assert samples[0].value == pytest.approx(2879.364478)
    assert samples[0].labels["workers"] == "all-online"


def test_stress_ng_qsort_few_bogo_ops_flagged_not_dropped():
    w = StressNgQsort()
    samples = w.parse_yaml(read("stress-ng/qsort-1.yaml"), ctx(w))
    assert samples[0].value == pytest.approx(14.99867)
    assert "invalid" not in samples[0].labels  # 30 bogo-ops: enough
    text = read("stress-ng/qsort-1.yaml").replace("bogo-ops: 30", "bogo-ops: 3")
    flagged = w.parse_yaml(text, ctx(w))
    assert len(flagged) == 2 and all("run longer" in s.labels["invalid"] for s in flagged)


def test_stress_ng_yaml_wrong_stressor_or_malformed():
    with pytest.raises(WorkloadError, match="stressor 'qsort' missing"):
        parse_stress_ng_yaml(read("stress-ng/cpu-matrixprod-1.yaml"), "qsort", "t")
    with pytest.raises(WorkloadError, match="no 'metrics' list"):
        parse_stress_ng_yaml("---\nsystem-info:\n  cpus: 2\n...\n", "cpu", "t")
    with pytest.raises(WorkloadError, match="does not parse"):
        parse_stress_ng_yaml("metrics: [\n  - stressor: cpu\n", "cpu", "t")
    w = StressNgMatrixprod()
    broken = read("stress-ng/cpu-matrixprod-1.yaml").replace(
        "bogo-ops-per-second-real-time", "renamed"
    )
    with pytest.raises(WorkloadError, match="bogo-ops-per-second-real-time"):
        w.parse_yaml(broken, ctx(w))


class FakePlatform:
    """Answers exec calls from a script; records argv (unit tests only)."""

    workdir = "/wd"

    def __init__(self, outputs: dict[str, str]) -> None:
        self.outputs = outputs
        self.calls: list[list[str]] = []
        self.put: list[tuple[str, str, str]] = []

    def exec(self, argv, *, cpus=None, timeout=None, env=None):
        self.calls.append(list(argv))
        return ExecResult(list(argv), 0, self.outputs.get(argv[0], ""), "", 0.1)

    def put_file(self, host_path, dest=None, mode=0o755):
        self.put.append((host_path, dest, Path(host_path).read_text()))
        return dest

    def direct_io(self) -> str:
        return "honoured"


def test_stress_ng_run_reads_yaml_through_platform_and_cleans_up():
    p = FakePlatform({"cat": read("stress-ng/cpu-matrixprod-1.yaml")})
    w = StressNgMatrixprod()
    samples = w.run(p, ctx(w, duration=2))
    assert samples[0].value == pytest.approx(970.512522)
    stress = next(c for c in p.calls if c[0] == "stress-ng")
    yaml_path = stress[stress.index("--yaml") + 1]
    assert yaml_path.startswith("/wd/vb-stress-ng-") and "--metrics-brief" in stress
    assert stress[1:3] == ["--cpu", "1"] and "2s" in stress
    assert ["cat", yaml_path] in p.calls
    assert p.calls[-1][:3] == ["rm", "-rf", "--"] and yaml_path.startswith(p.calls[-1][3])


# --- hpcc / LINPACK -------------------------------------------------------------------------


def test_hpcc_summary_and_samples():
    w = HpccLinpack()
    samples = w.parse_output(read("hpcc/hpccoutf-n3000.txt"))
    by = {s.metric: s for s in samples}
    assert by["hpl_gflops"].value == pytest.approx(1.87917)
    assert by["hpl_gflops"].unit == "GFLOPS" and by["hpl_gflops"].higher_is_better
    assert by["dgemm_gflops"].value == pytest.approx(3.6807)
    assert by["stream_triad_gbs"].value == pytest.approx(31.4183)
    assert by["random_access_gups"].value == pytest.approx(0.0829037)
    assert by["fft_gflops"].value == pytest.approx(1.95543)
    assert by["hpl_gflops"].labels == {"n": 3000, "nb": 80, "processes": 1, "hpl_time_s": 9.5859}
    assert all("invalid" not in s.labels for s in samples)
    assert w.primary().name == "hpl_gflops"


def test_hpcc_failed_residual_is_flagged():
    text = read("hpcc/hpccoutf-n3000.txt")
    bad = text.replace("...... PASSED", "...... FAILED")
    samples = HpccLinpack().parse_output(bad)
    assert all(s.labels["invalid"] == "HPL residual check FAILED" for s in samples)
    samples = HpccLinpack().parse_output(text.replace("Success=1", "Success=0"))
    assert all("Success=0" in s.labels["invalid"] for s in samples)


def test_hpcc_malformed():
    text = read("hpcc/hpccoutf-n3000.txt")
    with pytest.raises(WorkloadError, match="no Summary section"):
        parse_hpcc_summary(text.split("Begin of Summary section.")[0], "t")
    with pytest.raises(WorkloadError, match="HPL_Tflops"):
        HpccLinpack().parse_output(text.replace("HPL_Tflops=", "HPL_Xflops="))


def test_hpcc_input_file_and_run():
    inf = hpcc_input(1234, 64).splitlines()
    assert inf[5].split()[0] == "1234" and inf[7].split()[0] == "64"
    assert inf[10].split()[0] == "1" and inf[11].split()[0] == "1"  # 1 x 1 grid: no MPI
    assert len(inf) == 36  # hpcc reads lines 33-36 (PTRANS) too
    p = FakePlatform({"cat": read("hpcc/hpccoutf-n3000.txt")})
    w = HpccLinpack()
    samples = w.run(p, ctx(w, n=1234, nb=64))
    assert samples[0].metric == "hpl_gflops"
    ((_, dest, text),) = p.put
    wd = dest.rsplit("/", 1)[0]
    assert dest.endswith("/hpccinf.txt") and wd.startswith("/wd/vb-hpcc-") and "1234" in text
    # hpcc runs under the stall watchdog (issue 11)
    hpcc_argv = ["sh", "-c", 'cd "$1" && exec hpcc', "sh", wd]
    assert stall.watched(hpcc_argv, HPCC_STALL_S) in p.calls
    assert p.calls[-1] == ["rm", "-rf", "--", wd]


def test_cpu_suite_registered():
    names = {w.name for w in registry.by_suite("cpu")}
    assert {
        "sysbench-cpu-1t",
        "sysbench-cpu-all",
        "stress-ng-cpu-matrixprod",
        "stress-ng-cpu-int64",
        "stress-ng-qsort",
        "hpcc-linpack",
    } <= names


# --- hpcc matrix-order sweep and stalls (issue 11) --------------------------------------------


def test_hpcc_sweep_one_sample_per_order():
    text = read("hpcc/hpccoutf-sweep-300-600-1000.txt")
    samples = HpccLinpackSweep().parse_sweep(text)
    assert [(s.labels["order"], s.value) for s in samples] == [
        (300, 1.894),
        (600, 2.81),
        (1000, 3.686),
    ]
    assert all(s.metric == "hpl_gflops" and "invalid" not in s.labels for s in samples)
    assert samples[2].labels == {"order": 1000, "nb": 80, "processes": 1, "hpl_time_s": 0.18}
    # a failed residual flags that order only
    bad = text.replace("0.0071960 ...... PASSED", "0.0071960 ...... FAILED")  # the N=1000 check
    flags = [s.labels.get("invalid") for s in HpccLinpackSweep().parse_sweep(bad)]
    assert flags == [None, None, "HPL residual check FAILED"]
    # the single-order parse of the n3000 capture agrees with its summary
    (run,) = parse_hpl_runs(read("hpcc/hpccoutf-n3000.txt"), "t")
    assert (run.n, run.nb, run.gflops, run.passed) == (3000, 80, 1.879, True)
    with pytest.raises(WorkloadError, match="no HPL section"):
        parse_hpl_runs("nothing", "t")


def test_hpcc_sweep_input_file_and_bad_orders():
    inf = hpcc_input([500, 1000, 2000], 80).splitlines()
    assert inf[4].split()[0] == "3" and inf[5].split()[:3] == ["500", "1000", "2000"]
    assert hpcc_input(1234, 64) == hpcc_input([1234], 64)
    w = HpccLinpackSweep()
    p = FakePlatform({"cat": read("hpcc/hpccoutf-sweep-300-600-1000.txt")})
    assert len(w.run(p, ctx(w, orders=[300, 600, 1000]))) == 3
    ((_, _, text),) = p.put
    assert "300 600 1000" in text
    with pytest.raises(WorkloadError, match="whole numbers"):
        w.run(p, ctx(w, orders=[]))
    with pytest.raises(WorkloadError, match="at most 20"):
        w.run(p, ctx(w, orders=list(range(100, 2200, 100))))
    assert "order" in w.dimension_labels


def test_hpcc_stall_fails_the_cell_with_the_reason():
    class Stalling(FakePlatform):
        def exec(self, argv, *, cpus=None, timeout=None, env=None):
            self.calls.append(list(argv))
            if argv[:2] == ["sh", "-c"] and "vb-watch" in argv:
                err = "vb-stall: no CPU used for 10 s (under 1% of one CPU); stopped it\n"
                return ExecResult(list(argv), stall.STALL_EXIT, "", err, 12.0)
            if argv[:2] == ["sh", "-c"] and "tail" in argv[2]:
                return ExecResult(list(argv), 0, "Begin of MPIRandomAccess section.\n", "", 0.1)
            return ExecResult(list(argv), 0, "", "", 0.1)

    p = Stalling({})
    w = HpccLinpack()
    with pytest.raises(WorkloadError) as e:
        w.run(p, ctx(w, n=500))
    assert str(e.value) == (
        "hpcc-linpack: stalled after 12s: no CPU used for 10 s (under 1% of one CPU); "
        "stopped it; last output: Begin of MPIRandomAccess section."
    )
    assert p.calls[-1][:3] == ["rm", "-rf", "--"]  # the scratch directory still goes
