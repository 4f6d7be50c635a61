"""Run a WASI command module under wasmtime (the runtime the `wasmtime` Python package ships):
`python -m virtbench.wasm.run MODULE [ARG...]`.

Prints the runtime's own start-up first (compiling the module to machine code, instantiating
it), then the module's output; exits with the module's exit status.
"""

from __future__ import annotations

import importlib.metadata
import sys
import time


def main(argv: list[str]) -> int:
    import wasmtime  # here, not at import: the module is only run where the package is

    if not argv:
        print("usage: python -m virtbench.wasm.run MODULE [ARG...]", file=sys.stderr)
        return 2
    path, args = argv[0], argv[1:]
    engine = wasmtime.Engine()
    t0 = time.perf_counter()
    module = wasmtime.Module.from_file(engine, path)
    t1 = time.perf_counter()
    linker = wasmtime.Linker(engine)
    linker.define_wasi()
    store = wasmtime.Store(engine)
    wasi = wasmtime.WasiConfig()
    wasi.argv = [path, *args]
    wasi.inherit_stdout()
    wasi.inherit_stderr()
    store.set_wasi(wasi)
    instance = linker.instantiate(store, module)
    t2 = time.perf_counter()
    version = importlib.metadata.version("wasmtime")
    print(f"vb-wasm runtime: wasmtime {version}")
    print(f"vb-wasm python: {sys.executable}")  # virtbench's environment, or the image's
    print(f"vb-wasm compile_ms: {(t1 - t0) * 1e3:.1f}")
    print(f"vb-wasm instantiate_ms: {(t2 - t1) * 1e3:.1f}")
    sys.stdout.flush()  # the module writes to the same descriptor, past Python's buffer
    start = instance.exports(store)["_start"]
    try:
        start(store)  # type: ignore[operator]
    except wasmtime.ExitTrap as e:
        return e.code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
