"""What a run records about where it ran: the machine, the package versions, the checkout's
commit and which scatterkit build this process imported."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import subprocess
import time
from pathlib import Path

import scatterkit as sk

# bench/, the directory of compare.py: its checkout is the one source_revision names.
BENCH_DIR = Path(__file__).resolve().parents[1]


def describe_build(package_dir: Path, core_file: Path) -> str:
    """Where a build of the package is and when its extension was written (its mtime)."""
    built = time.localtime(os.path.getmtime(core_file))
    return f"{package_dir}, extension built {time.strftime('%Y-%m-%d %H:%M', built)}"


# What this process runs, recorded before anyone can reinstall the package under it.
SK_BUILD = describe_build(Path(sk.__file__).parent, Path(sk._core.__file__))


def last_level_cache_bytes() -> int | None:
    """The size of cpu0's largest data or unified cache (sysfs), None when unknown."""
    best = None
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        try:
            size = int(text.rstrip("KMG")) * scale
        except ValueError:
            continue
        best = size if best is None else max(best, size)
    return best


def package_versions() -> dict[str, str]:
    names = ["scatterkit", "numpy", "torch", "openvino", "onnxruntime", "onnx", "matplotlib"]
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


@functools.cache
def source_revision() -> str:
    """The commit of the checkout this script is in, '+' if it has uncommitted changes
    (asked once, when the run starts: the run itself writes RESULTS.md and the chart)."""
    try:
        git = ["git", "-C", str(BENCH_DIR)]
        head = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return head + ("+" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine_info() -> dict[str, str]:
    info = {"cpu": platform.processor() or "?", "logical cpus": str(os.cpu_count())}
    try:
        # The first processor's block, "key : value" per line.
        first = Path("/proc/cpuinfo").read_text().split("\n\n", 1)[0]
        cpu = {
            key.strip(): value.strip()
            for key, sep, value in (ln.partition(":") for ln in first.splitlines())
            if sep
        }
        info["cpu"] = cpu.get("model name", info["cpu"])
        # A virtual machine may name only the brand: family and model tell the core.
        if "cpu family" in cpu or "model" in cpu:
            info["cpu"] += f" (family {cpu.get('cpu family', '?')}, model {cpu.get('model', '?')})"
        flags = cpu.get("flags", "").split()
        simd = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if f in flags]
        info["simd"] = ", ".join(simd) or "none of avx2/avx512"
    except OSError:
        pass
    caches = []
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level, kind, size = (
                (index / name).read_text().strip() for name in ("level", "type", "size")
            )
        except OSError:
            continue
        if kind != "Instruction":
            caches.append(f"L{level}{'d' if kind == 'Data' else ''} {size}")
    if caches:
        info["caches"] = ", ".join(caches)
    try:
        mem = Path("/proc/meminfo").read_text().split("\n", 1)[0].split()[1]
        info["memory"] = f"{int(mem) / 2**20:.1f} GiB"
    except (OSError, IndexError, ValueError):
        pass
    info["os"] = f"{platform.system()} {platform.release()}"
    return info
