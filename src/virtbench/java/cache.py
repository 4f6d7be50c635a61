"""The java suite's jars, fetched from Maven Central by Maven at setup and verified, and the
VbScimark harness compiled against them with the JRE's own compiler module.

A jar is cached only once its SHA-1 matches the checksum file Maven Central publishes beside
it (Maven downloads it, `--strict-checksums` fails on a mismatch, and we check again) and its
SHA-256 matches the one pinned here: a republished or tampered artifact is refused. The cache
is /var/lib/virtbench/java (as root; else ~/.cache/virtbench/java, or VIRTBENCH_JAVA_DIR).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .. import cachedir, ownedtmp, setup_host, tools
from ..errors import VirtbenchError


@dataclass(frozen=True)
class Artifact:
    group: str
    name: str
    version: str
    sha256: str  # pinned after checking Maven Central's published SHA-1

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.name}:{self.version}"

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.version}.jar"


SCIMARK = Artifact(
    "gov.nist.math",
    "scimark",
    "2.0",
    "6f84f949c3167b385da1a9957ecd53fe0111b42e981e0c481be53dba0504305f",
)
# JMH's runner and its two runtime dependencies, and its samples jar: prebuilt benchmarks
# (annotation processing already done), so no JDK is needed anywhere
JMH = (
    Artifact(
        "org.openjdk.jmh",
        "jmh-core",
        "1.37",
        "dc0eaf2bbf0036a70b60798c785d6e03a9daf06b68b8edb0f1ba9eb3421baeb3",
    ),
    Artifact(
        "net.sf.jopt-simple",
        "jopt-simple",
        "5.0.4",
        "df26cc58f235f477db07f753ba5a3ab243ebe5789d9f89ecf68dd62ea9a66c28",
    ),
    Artifact(
        "org.apache.commons",
        "commons-math3",
        "3.6.1",
        "1e56d7b058d28b65abd256b8458e3885b674c1d588fa43cd7d1cbb9c7ef2b308",
    ),
    Artifact(
        "org.openjdk.jmh",
        "jmh-samples",
        "1.37",
        "b5b98f7aedb5d37f7d055218bf31bf1afe2a63876992ee4654019c8939c697f0",
    ),
)
HARNESS = "VbScimark"


def cache_root() -> Path:
    return cachedir.cache_root("java")


def _digest(path: Path, algo: str) -> str:
    h = hashlib.new(algo)
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def published_sha1(repo: Path, a: Artifact) -> str:
    """The SHA-1 Maven downloaded from the repository beside the jar (`<jar>.sha1`)."""
    path = repo.joinpath(*a.group.split("."), a.name, a.version, a.filename + ".sha1")
    try:
        words = path.read_text().split()
    except OSError as e:
        raise VirtbenchError(f"{a.coordinates}: no published checksum file ({e})") from e
    if not words:
        raise VirtbenchError(f"{a.coordinates}: empty published checksum file {path}")
    return words[0].lower()


def verify(jar: Path, a: Artifact, sha1: str | None) -> None:
    """Raise unless `jar` matches the published SHA-1 (when given) and the pinned SHA-256."""
    if sha1 is not None and _digest(jar, "sha1") != sha1:
        raise VirtbenchError(f"{a.coordinates}: SHA-1 differs from the published checksum")
    got = _digest(jar, "sha256")
    if got != a.sha256:
        raise VirtbenchError(
            f"{a.coordinates}: SHA-256 {got} is not the pinned {a.sha256}; refusing the jar"
        )


def _fetch(a: Artifact, root: Path, log: Callable[[str], None]) -> Path:
    final = root / a.filename
    if final.exists():
        verify(final, a, None)  # pinned SHA-256: an altered cache entry is refused too
        return final
    tools.require(["mvn"], needed_by="fetching the java suite's jars")
    repo = root / "m2"  # Maven's own local repository, kept: it holds the published .sha1
    with ownedtmp.tempdir("fetch", dir=root, hidden=True) as tmp:  # cleanup sweeps it
        argv = [
            tools.which("mvn") or "mvn",
            "-B",
            "-q",
            "--strict-checksums",
            f"-Dmaven.repo.local={repo}",
            "dependency:copy",
            f"-Dartifact={a.coordinates}:jar",
            f"-DoutputDirectory={tmp}",
        ]
        log(f"fetching {a.coordinates} with Maven")
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp)
        got = Path(tmp) / a.filename
        if r.returncode != 0 or not got.exists():
            tail = (r.stdout + r.stderr).strip()[-800:]
            raise VirtbenchError(f"fetching {a.coordinates} failed: {tail}")
        verify(got, a, published_sha1(repo, a))
        got.chmod(0o644)
        os.replace(got, final)
    return final


def scimark_jar(log: Callable[[str], None] = lambda m: None) -> Path:
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    return _fetch(SCIMARK, root, log)


def jmh_jars(log: Callable[[str], None] = lambda m: None) -> list[Path]:
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    return [_fetch(a, root, log) for a in JMH]


def _harness_source() -> bytes:
    return (resources.files("virtbench") / "java" / f"{HARNESS}.java").read_bytes()


def harness_class(log: Callable[[str], None] = lambda m: None) -> Path:
    """VbScimark.class, compiled once per source and Java version with `java -m jdk.compiler`
    (Debian's JRE carries the compiler module, so no JDK is needed)."""
    tools.require(["java"], needed_by="the SciMark harness")
    jar = scimark_jar(log)
    h = hashlib.sha256(_harness_source())
    h.update((tools.version("java") or "none").encode())
    final = cache_root() / f"harness-{h.hexdigest()[:16]}"
    done = final / f"{HARNESS}.class"
    if done.exists():
        return done
    with cachedir.building(final, lambda d: (d / done.name).exists()) as tmp:
        src = tmp / f"{HARNESS}.java"
        src.write_bytes(_harness_source())
        javac(src, [jar], tmp, log)
        src.unlink()
    return done


@setup_host.register("java")
def _setup_step(log: Callable[[str], None]) -> None:
    jars = [scimark_jar(log), *jmh_jars(log)]
    log(f"java suite: {len(jars)} verified jars and {harness_class(log).name} in {cache_root()}")


def javac(src: Path, classpath: list[Path], out: Path, log: Callable[[str], None]) -> None:
    """Compile one source with the JRE's own compiler module (Debian's headless JRE has no
    javac binary), warnings as errors; the java suite's harness and the application stack."""
    argv = [
        tools.which("java") or "java",
        "-m",
        "jdk.compiler/com.sun.tools.javac.Main",
        "--release",
        "17",
        "-Xlint:all",
        "-Werror",
        "-cp",
        ":".join(str(p) for p in classpath) or ".",
        "-d",
        str(out),
        str(src),
    ]
    log(" ".join(argv))
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise VirtbenchError(f"compiling {src.name} failed: {r.stderr.strip()[-800:]}")
