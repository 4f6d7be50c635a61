"""Guest boot files: the cpio writer, module dependency order, kernel payload extraction."""

from __future__ import annotations

import io
import lzma
import stat
from pathlib import Path

import pytest

from virtbench.errors import VirtbenchError
from virtbench.platforms.vm import initramfs, kernel, modules
from virtbench.platforms.vm.cpio import CpioWriter

DATA = Path(__file__).parent.parent / "data" / "vm"


def read_newc(blob: bytes) -> dict[str, tuple[int, bytes]]:
    """Minimal newc reader: name -> (mode, data)."""
    out, pos = {}, 0
    f = io.BytesIO(blob)
    while True:
        f.seek(pos)
        hdr = f.read(110)
        assert hdr[:6] == b"070701"
        fields = [int(hdr[6 + 8 * i : 14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = fields[1], fields[6], fields[11]
        name = f.read(namesize)[:-1].decode()
        pos += 110 + namesize
        pos += -pos % 4
        f.seek(pos)
        data = f.read(size)
        pos += size + (-size % 4)
        if name == "TRAILER!!!":
            return out
        out[name] = (mode, data)


def test_cpio_round_trip():
    w = CpioWriter()
    w.dir("bin")
    w.file("bin/tool", b"abc", 0o755)
    w.symlink("bin/sh", "tool")
    w.chardev("dev/console", 5, 1)
    blob = w.bytes()
    assert len(blob) % 4 == 0
    entries = read_newc(blob)
    assert stat.S_ISDIR(entries["bin"][0])
    assert entries["bin/tool"] == (stat.S_IFREG | 0o755, b"abc")
    assert entries["bin/sh"][1] == b"tool"
    assert stat.S_ISCHR(entries["dev/console"][0])


def test_real_modules_dep_load_order():
    deps = modules.parse_modules_dep((DATA / "modules.dep").read_text())
    builtin = modules.builtin_names((DATA / "modules.builtin").read_text())
    order = modules.load_order(modules.GUEST_MODULES, deps, builtin)
    for name in order:
        for dep in deps[name][1]:
            if dep not in builtin:
                assert order.index(dep) < order.index(name), (dep, name)
    assert order.index("virtio_ring") < order.index("virtio_blk")
    assert order.index("jbd2") < order.index("ext4")
    assert order.index("libata") < order.index("ata_piix")
    assert len(order) == len(set(order))


def test_missing_module_is_a_clear_error():
    with pytest.raises(VirtbenchError, match="nosuchdrv"):
        modules.load_order(("nosuchdrv",), {}, set())


def test_modname_normalizes_dashes_and_compression():
    assert modules._modname("kernel/lib/crc-t10dif.ko.xz") == "crc_t10dif"


def test_decompress_bzimage_finds_the_xz_elf_payload():
    elf = b"\x7fELF" + bytes(range(256)) * 40
    fake = b"MZ setup code \xfd7zXZ\x00 not-a-stream " + lzma.compress(elf) + b"trailer"
    assert kernel.decompress_bzimage(fake) == elf


def test_decompress_bzimage_without_payload():
    with pytest.raises(VirtbenchError, match="compressed ELF"):
        kernel.decompress_bzimage(b"MZ nothing here")


def test_find_kernel_picks_newest_with_modules(tmp_path):
    boot, mods = tmp_path / "boot", tmp_path / "modules"
    boot.mkdir()
    for v in ("6.1.0-9-amd64", "6.1.0-10-amd64", "6.5.0-1-amd64"):
        (boot / f"vmlinuz-{v}").write_bytes(b"x")
    for v in ("6.1.0-9-amd64", "6.1.0-10-amd64"):  # 6.5 has no modules installed
        (mods / v).mkdir(parents=True)
        (mods / v / "modules.dep").write_text("")
    assert kernel.find_kernel(boot, mods).version == "6.1.0-10-amd64"


def test_find_kernel_names_the_package(tmp_path):
    with pytest.raises(VirtbenchError, match="linux-image-amd64"):
        kernel.find_kernel(tmp_path, tmp_path)


def test_init_scripts_change_the_cache_digest(monkeypatch):
    before = initramfs.script_digest()
    monkeypatch.setattr(initramfs, "STAGE2", initramfs.STAGE2 + "# changed\n")
    assert initramfs.script_digest() != before


def test_inittab_runs_the_agent_on_the_port_stage2_links():
    assert "/usr/sbin/qemu-ga" in initramfs.INITTAB and "/run/vb/qga" in initramfs.INITTAB
    assert initramfs.AGENT_PORT == "org.qemu.guest_agent.0"
