"""The application suite's own code, compiled on the host with the JRE's compiler module:

- vb-trade.jar: VbTrade.java, a small DayTrader-like servlet on embedded Tomcat 10 with an
  HSQLDB database, run inside the environment with Debian's Tomcat and HSQLDB jars (copied in
  with it, so every platform runs the very jars of the host's packages);
- vb-jmeter.jar: VbJMeter.java, the launcher of Debian's JMeter 2.13 (drivers/jmeter.py).

Cached under /var/lib/virtbench/appstack/<hash> (as root; else ~/.cache/virtbench/appstack,
or VIRTBENCH_APPSTACK_DIR); the hash covers the sources, the Java version and the jars'
package versions.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import zipfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from .. import cachedir, setup_host, tools
from ..errors import MissingToolError
from ..java.cache import javac

JAVA_DIR = Path("/usr/share/java")
# Embedded Tomcat 10 (libtomcat10-java) without JSP, WebSocket or clustering, and HSQLDB
# (libhsqldb-java): the jars the servlet container and the database need at run time
SERVER_JARS = {
    "tomcat10-catalina.jar": "libtomcat10-java",
    "tomcat10-servlet-api.jar": "libtomcat10-java",
    "tomcat10-coyote.jar": "libtomcat10-java",
    "tomcat10-util.jar": "libtomcat10-java",
    "tomcat10-util-scan.jar": "libtomcat10-java",
    "tomcat10-juli.jar": "libtomcat10-java",
    "tomcat10-api.jar": "libtomcat10-java",
    "tomcat10-annotations-api.jar": "libtomcat10-java",
    "tomcat10-jaspic-api.jar": "libtomcat10-java",
    "hsqldb.jar": "libhsqldb-java",
}
PACKAGES = ("libtomcat10-java", "libhsqldb-java", "jmeter", "jmeter-http")
APP, APP_JAR = "VbTrade", "vb-trade.jar"
LAUNCHER, LAUNCHER_JAR = "VbJMeter", "vb-jmeter.jar"
PLAN = "plan.jmx"
JMETER_JAR = "/usr/share/jmeter/bin/ApacheJMeter.jar"


def cache_root() -> Path:
    return cachedir.cache_root("appstack")


def resource(name: str) -> bytes:
    return (resources.files("virtbench") / "appstack" / name).read_bytes()


def server_jars() -> list[Path]:
    """Debian's Tomcat and HSQLDB jars (resolved: the versioned files the symlinks name)."""
    out = []
    for name, package in SERVER_JARS.items():
        path = JAVA_DIR / name
        if not path.exists():
            raise MissingToolError(name, package, "the application suite's server")
        out.append(path.resolve())
    return out


def package_versions() -> dict[str, str]:
    r = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${Version}\\n", *PACKAGES],
        capture_output=True,
        text=True,
    )
    return dict(ln.split(" ", 1) for ln in r.stdout.splitlines() if " " in ln)


def build_hash() -> str:
    h = hashlib.sha256()
    for name in (f"{APP}.java", f"{LAUNCHER}.java"):
        h.update(resource(name))
    h.update((tools.version("java") or "none").encode())
    h.update(repr(sorted(package_versions().items())).encode())
    return h.hexdigest()[:16]


def _jar(classes: Path, jar: Path, manifest: str) -> None:
    """A jar is a zip with a manifest: Python's zipfile makes it (the JRE has no jar tool)."""
    with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("META-INF/MANIFEST.MF", manifest)
        for f in sorted(classes.rglob("*.class")):
            z.write(f, f.relative_to(classes).as_posix())


def build(log: Callable[[str], None] = lambda m: None) -> Path:
    """Compile both jars if not cached; return the directory holding them."""
    tools.require(["java"], needed_by="the application suite")
    jars = server_jars()
    if not Path(JMETER_JAR).exists():
        raise MissingToolError("jmeter", "jmeter", "the application suite's client")
    final = cache_root() / build_hash()
    if _complete(final):
        return final
    with cachedir.building(final, _complete) as tmp:
        for cls, jar, cp, manifest in (
            (APP, APP_JAR, jars, "Manifest-Version: 1.0\r\n\r\n"),
            (
                LAUNCHER,
                LAUNCHER_JAR,
                [],
                # JMeter's own jar (its manifest names every library JMeter needs)
                f"Manifest-Version: 1.0\r\nMain-Class: {LAUNCHER}\r\n"
                f"Class-Path: file:{JMETER_JAR}\r\n\r\n",
            ),
        ):
            src = tmp / f"{cls}.java"
            src.write_bytes(resource(src.name))
            classes = tmp / f"{cls}-classes"
            javac(src, cp, classes, log)
            _jar(classes, tmp / jar, manifest)
            shutil.rmtree(classes)
            src.unlink()
    return final


def _complete(d: Path) -> bool:
    return (d / APP_JAR).exists() and (d / LAUNCHER_JAR).exists()


@setup_host.register("appstack")
def _setup_step(log: Callable[[str], None]) -> None:
    log(f"application suite: {build(log)}")
