"""java and wasm suite parsers against real outputs captured on the development machine
(tests/data/java, tests/data/wasm), JVM flags, JMH argv and the jar verification."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from virtbench.drivers import jmh, jvm, scimark
from virtbench.errors import VirtbenchError, WorkloadError
from virtbench.images import wasm_runtime
from virtbench.java import cache
from virtbench.platforms.base import ExecResult
from virtbench.workloads.java import JmhThreads, Scimark
from virtbench.workloads.wasm import ScimarkC, ScimarkWasm

from .fakes import FakePlatform

DATA = Path(__file__).parent.parent / "data"
KERNELS = {"fft_mflops", "sor_mflops", "montecarlo_mflops", "sparse_mflops", "lu_mflops"}


def read(rel: str) -> str:
    return (DATA / rel).read_text()


# --- SciMark reports ------------------------------------------------------------------------


def test_plain_scimark_commandline_report_is_one_iteration():
    r = scimark.parse(read("java/scimark-commandline.txt"), "t")
    assert len(r.iterations) == 1
    figures = r.first()
    assert set(figures) == set(scimark.FIGURES.values())
    # SciMark's composite is the mean of its five kernels
    mean = sum(figures[k] for k in KERNELS) / 5
    assert figures["composite_mflops"] == pytest.approx(mean, rel=1e-9)
    assert r.sizes["fft_mflops"] == "1024"
    assert r.sizes["sparse_mflops"] == "N=1000,nz=5000"
    assert r.steady() == figures  # one iteration: it is also the steady figure


def test_jvm_harness_iterations_and_settings():
    r = scimark.parse(read("java/scimark-harness.txt"), "t")
    assert len(r.iterations) == 3
    assert r.info["gc"] == "G1 Young Generation, G1 Old Generation"
    assert r.info["max_heap_mib"] == "256"
    assert r.iterations[0].end_ms == 1213
    later = [it.figures["composite_mflops"] for it in r.iterations[1:]]
    assert r.steady()["composite_mflops"] == pytest.approx(sum(later) / 2)  # median of two


def test_scimark_workload_samples():
    labels = jvm.labels("256m", "g1", "tiered")
    samples = Scimark().parse_output(read("java/scimark-harness.txt"), labels)
    by = {s.metric: s for s in samples}
    assert set(by) == {m.name for m in Scimark.metrics}
    assert by["jvm_startup_ms"].value == 151
    assert by["first_result_s"].value == pytest.approx(1.213)
    assert by["composite_first_mflops"].value < by["composite_mflops"].value  # JIT warm-up
    s = by["composite_mflops"]
    assert s.unit == "Mflops" and s.higher_is_better
    assert s.labels["gc"] == "g1" and s.labels["heap"] == "256m"
    assert s.labels["jvm_flags"].startswith("-Xms256m -Xmx256m -XX:+UseG1GC")
    assert s.labels["gc_names"].startswith("G1")
    assert not any("invalid" in x.labels for x in samples)


def test_incomplete_or_missing_report_is_an_error():
    text = read("java/scimark-harness.txt")
    with pytest.raises(WorkloadError, match="no SciMark report"):
        scimark.parse("Exception in thread main", "t")
    cut = text[: text.index("LU (100x100)", text.index("vb-iteration 2 start"))]
    with pytest.raises(WorkloadError, match="iteration 2 is incomplete.*lu_mflops"):
        scimark.parse(cut, "t")


def test_non_finite_figure_is_flagged_invalid():
    text = read("wasm/scimark-native.txt").replace("Monte Carlo : ", "Monte Carlo : inf #", 1)
    text = text.replace("inf #", "inf\n#")
    samples = ScimarkC().parse_output(text.replace("#", ""))
    # inf only in the first iteration: the steady median is finite, so nothing is invalid
    assert not any("invalid" in s.labels for s in samples)
    bad = read("wasm/scimark-native.txt").replace("LU (100x100): ", "LU (100x100): -")
    samples = ScimarkC().parse_output(bad)
    assert all("lu_mflops" in s.labels["invalid"] for s in samples)


# --- the same kernels natively and under wasmtime -------------------------------------------


def test_native_and_wasm_share_metrics_with_java():
    c = {m.name: m for m in ScimarkC.metrics}
    w = {m.name: m for m in ScimarkWasm.metrics}
    j = {m.name: m for m in Scimark.metrics}
    for name in ("composite_mflops", *KERNELS):
        assert c[name] == w[name] == j[name]


def test_wasm_report_has_startup():
    samples = ScimarkWasm().parse_output(read("wasm/scimark-wasmtime.txt"))
    by = {s.metric: s for s in samples}
    assert by["startup_ms"].value > 0 and not by["startup_ms"].higher_is_better
    assert by["composite_mflops"].labels["runtime"] == "wasmtime"
    assert by["composite_mflops"].labels["wasm_runtime"].startswith("wasmtime ")
    assert by["composite_mflops"].labels["iterations"] == 3


def test_native_kernels_report():
    samples = ScimarkC().parse_output(read("wasm/scimark-native.txt"))
    assert {s.metric for s in samples} == {m.name for m in ScimarkC.metrics}
    assert all(s.labels["runtime"] == "native" for s in samples)


# --- JMH ------------------------------------------------------------------------------------


def test_jmh_result_and_warmup():
    r = jmh.parse(read("java/jmh-maps-2t.json"), read("java/jmh-maps-2t.txt"), "t")
    assert r.iterations == pytest.approx([515241.899574989, 519148.26148089557, 514625.056048424])
    assert r.warmup == [80009.757, 314257.743]
    assert r.labels["threads"] == 2 and r.labels["param_type"] == "hashmap"
    assert r.labels["jvm_args"] == "-Xms256m -Xmx256m -XX:+UseG1GC"


def test_jmh_workload_samples():
    samples = JmhThreads().parse_output(
        read("java/jmh-maps-2t.json"),
        read("java/jmh-maps-2t.txt"),
        jvm.labels("256m", "g1", "tiered"),
        "maps-hashmap",
    )
    by = {s.metric: s for s in samples}
    assert by["ops_per_s"].value == pytest.approx(515241.899574989)  # median
    assert by["first_warmup_ops_per_s"].value == 80009.757
    assert by["ops_per_s"].labels["sample"] == "maps-hashmap"


def test_jmh_bad_json():
    with pytest.raises(WorkloadError, match="no JMH result"):
        jmh.parse("[]", "", "t")
    with pytest.raises(WorkloadError, match="ops/s expected"):
        jmh.parse('[{"primaryMetric": {"scoreUnit": "ns/op", "score": 1}}]', "", "t")


def test_jmh_argv():
    argv = jmh.argv(["java"], "a.B.test", 0, 2, 3, 1, ["-Xmx1m"], "/w/r.json", {"type": "x"})
    assert argv[:3] == ["java", jmh.MAIN, r"^a\.B\.test$"]
    assert argv[argv.index("-t") + 1] == "max"
    assert argv[argv.index("-jvmArgsAppend") + 1] == "-Xmx1m"
    assert argv[-2:] == ["-p", "type=x"]


def test_jvm_flags():
    assert jvm.flags("1g", "parallel", "c1") == [
        "-Xms1g",
        "-Xmx1g",
        "-XX:+UseParallelGC",
        "-XX:TieredStopAtLevel=1",
        "-XX:-UsePerfData",
    ]
    assert "-Xint" in jvm.flags("64m", "serial", "interpreter")


# --- jar verification -----------------------------------------------------------------------


def test_verify_refuses_a_changed_jar(tmp_path):
    jar = tmp_path / "x.jar"
    jar.write_bytes(b"jar bytes")
    good = cache.Artifact("g", "x", "1", hashlib.sha256(b"jar bytes").hexdigest())
    cache.verify(jar, good, hashlib.sha1(b"jar bytes").hexdigest())
    with pytest.raises(VirtbenchError, match="published checksum"):
        cache.verify(jar, good, "0" * 40)
    with pytest.raises(VirtbenchError, match="not the pinned"):
        cache.verify(jar, cache.Artifact("g", "x", "1", "0" * 64), None)


def test_published_sha1_is_read_from_maven_layout(tmp_path):
    a = cache.Artifact("org.example", "x", "1.0", "")
    d = tmp_path / "org" / "example" / "x" / "1.0"
    d.mkdir(parents=True)
    (d / "x-1.0.jar.sha1").write_text("ABCDEF  x-1.0.jar\n")
    assert cache.published_sha1(tmp_path, a) == "abcdef"
    with pytest.raises(VirtbenchError, match="no published checksum"):
        cache.published_sha1(tmp_path / "none", a)


class _Env(FakePlatform):
    """An environment that has the Wasm runtime in the places listed in `has`."""

    def __init__(self, has: set[str]):
        super().__init__("env", [])
        self.has = has

    def exec(self, argv, *, cpus=None, timeout=None, env=None):
        where = "image" if argv[0] == "env" else "virtbench"
        return ExecResult(argv, 0 if where in self.has else 1, "", "", 0.0)


def test_wasm_runtime_is_the_images_copy_inside_environments_else_virtbenchs():
    assert ScimarkWasm().prefix(_Env({"image", "virtbench"}), "m.wasm") == wasm_runtime.argv(
        "m.wasm"
    )
    host = ScimarkWasm().prefix(_Env({"virtbench"}), "m.wasm")
    assert host[1] == "-I" and host[-2:] == ["virtbench.wasm.run", "m.wasm"]  # never the cwd's
    with pytest.raises(WorkloadError, match="neither the shared image's copy"):
        ScimarkWasm().prefix(_Env(set()), "m.wasm")
