"""Which kernel modules the guest needs, in load order, resolved from the kernel's modules.dep.

Debian builds virtio, e1000, AHCI/PIIX and ext4 as modules, so the initramfs must carry them;
we resolve dependencies ourselves so the guest can `insmod` them without modprobe or udev.
"""

from __future__ import annotations

import lzma
from pathlib import Path

from ...errors import VirtbenchError

# container@vm bridge/nat networking: carried in the initramfs but loaded only on demand
# (VmPlatform.load_modules), so guests without such containers boot no slower
CONTAINER_NET_MODULES = ("veth", "bridge", "nf_tables", "nft_chain_nat", "nft_nat")
# Docker inside the guest (container@vm, runtime docker): dockerd programs iptables (Debian's
# iptables-nft: native nft expressions plus xt matches/targets through nft_compat) for its
# networks and published ports, and checks bridge netfilter; also loaded only on demand
DOCKER_MODULES = (
    *CONTAINER_NET_MODULES,
    "br_netfilter",
    "nft_compat",
    "nft_ct",
    "nft_masq",
    "nft_fib_ipv4",
    "xt_addrtype",
    "xt_conntrack",
    "xt_MASQUERADE",
    "xt_nat",
    "xt_tcpudp",
)

# virtio and emulated NICs/disks the platform offers, plus the root filesystem's driver.
GUEST_MODULES = (
    "virtio_pci",
    "virtio_blk",
    "virtio_net",
    "virtio_console",
    "e1000",
    "ata_piix",
    "ahci",
    "sd_mod",
    "crc32c_generic",  # ext4 metadata checksums ask the crypto API for crc32c at mount time
    "ext4",
    "overlay",  # containers inside the guest (container@vm) use an overlayfs root
    *DOCKER_MODULES,  # CONTAINER_NET_MODULES included
)


def _modname(path: str) -> str:
    base = path.rsplit("/", 1)[-1].split(".ko", 1)[0]
    return base.replace("-", "_")


def parse_modules_dep(text: str) -> dict[str, tuple[str, list[str]]]:
    """name -> (relative path, dependency names) from a modules.dep file."""
    out: dict[str, tuple[str, list[str]]] = {}
    for line in text.splitlines():
        if ":" not in line:
            continue
        path, deps = line.split(":", 1)
        out[_modname(path)] = (path.strip(), [_modname(d) for d in deps.split()])
    return out


def builtin_names(text: str) -> set[str]:
    return {_modname(line.strip()) for line in text.splitlines() if line.strip()}


def load_order(
    wanted: tuple[str, ...], deps: dict[str, tuple[str, list[str]]], builtin: set[str]
) -> list[str]:
    """Module names so that every module comes after its dependencies; built-ins dropped."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        name = name.replace("-", "_")
        if name in seen or name in builtin:
            return
        seen.add(name)
        if name not in deps:
            raise VirtbenchError(
                f"guest kernel module '{name}' is neither built in nor in modules.dep; "
                "is the kernel package complete? (apt-get install --reinstall linux-image-amd64)"
            )
        for dep in deps[name][1]:
            visit(dep)
        order.append(name)

    for name in wanted:
        visit(name)
    return order


def module_files(
    modules_dir: Path, wanted: tuple[str, ...] = GUEST_MODULES
) -> list[tuple[str, bytes]]:
    """(name, uncompressed .ko bytes) in load order."""
    deps = parse_modules_dep((modules_dir / "modules.dep").read_text())
    builtin_file = modules_dir / "modules.builtin"
    builtin = builtin_names(builtin_file.read_text()) if builtin_file.exists() else set()
    out = []
    for name in load_order(wanted, deps, builtin):
        path = modules_dir / deps[name][0]
        data = path.read_bytes()
        if path.name.endswith(".xz"):
            data = lzma.decompress(data)
        elif not path.name.endswith(".ko"):
            raise VirtbenchError(f"unsupported compressed kernel module {path}")
        out.append((name, data))
    return out


def resolve(modules_dir: Path, wanted: tuple[str, ...]) -> list[str]:
    """Load order of `wanted` plus dependencies, minus built-ins (for vb.modules=)."""
    deps = parse_modules_dep((modules_dir / "modules.dep").read_text())
    builtin_file = modules_dir / "modules.builtin"
    builtin = builtin_names(builtin_file.read_text()) if builtin_file.exists() else set()
    return load_order(wanted, deps, builtin)
