"""The bare serial loop of a 1-D histogram, for bench/compare.py's family H: what a fold in C
order costs with nothing around it (no index check, no copy, no threads), timed in the same
rounds as scatterkit and the peers.

    table[idx[i]] += upd[i]                                  (sum)
    table[idx[i]] = max(table[idx[i]], upd[i])              (max, updates without NaN)

and what one thread takes to read those indices and updates and nothing else (`read`): the
inputs a serial fold must stream in, a bound that memory sets.

The loops are C, compiled at first use with the system's C compiler at the flags of the
library's release build (-O3, no -march) and loaded with ctypes; without a compiler,
`load()` says why.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

# Index types by the suffix of their loops' names, and the reductions.
INDEX_TYPES = {"i64": np.dtype(np.int64), "i32": np.dtype(np.int32)}
REDUCTIONS = ("sum", "max")

SOURCE = r"""
#include <stdint.h>

#define BARE_LOOPS(suffix, KI)                                                       \
  void sum_##suffix(float* table, const KI* idx, const float* upd, int64_t n) {      \
    for (int64_t i = 0; i < n; ++i) table[idx[i]] += upd[i];                         \
  }                                                                                  \
  void max_##suffix(float* table, const KI* idx, const float* upd, int64_t n) {      \
    for (int64_t i = 0; i < n; ++i) {                                                \
      const float a = table[idx[i]], v = upd[i];                                     \
      table[idx[i]] = v > a ? v : a;                                                 \
    }                                                                                \
  }                                                                                  \
  uint64_t read_##suffix(const KI* idx, const uint32_t* upd, int64_t n) {            \
    uint64_t a = 0, b = 0; /* integer sums: vectorized, unlike a float sum */        \
    for (int64_t i = 0; i < n; ++i) a += (uint64_t)idx[i], b += upd[i];              \
    return a ^ b;                                                                    \
  }

BARE_LOOPS(i64, int64_t)
BARE_LOOPS(i32, int32_t)
"""
FLAGS = ["-O3", "-shared", "-fPIC"]

_library: ctypes.CDLL | None = None


def load() -> ctypes.CDLL | str:
    """The compiled loops, or why there are none (a message). Built once per source and
    compiler into the temporary directory."""
    global _library
    if _library is not None:
        return _library
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        return f"no C compiler ({cc})"
    key = hashlib.sha256((SOURCE + cc + " ".join(FLAGS)).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"scatterkit-bare-loop-{key}.so"
    if not path.exists():
        with tempfile.TemporaryDirectory() as tmp:
            src, built = Path(tmp) / "bare_loop.c", Path(tmp) / "bare_loop.so"
            src.write_text(SOURCE)
            run = subprocess.run([cc, *FLAGS, str(src), "-o", str(built)], capture_output=True)
            if run.returncode != 0:
                return f"{cc} failed: {run.stderr.decode(errors='replace').strip()[:150]}"
            os.replace(built, path)  # atomic: concurrent runs never load half a file
    lib = ctypes.CDLL(str(path))
    for kind in INDEX_TYPES:
        for reduction in REDUCTIONS:
            getattr(lib, f"{reduction}_{kind}").restype = None
        getattr(lib, f"read_{kind}").restype = ctypes.c_uint64
    _library = lib
    return lib


def _loop_args(idx: np.ndarray, upd: np.ndarray, *tables: np.ndarray) -> tuple[ctypes.CDLL, str]:
    """The compiled loops and the index type's suffix, after checking the arrays: float32
    updates (and tables), int64 or int32 indices, 1-D, contiguous, as many indices as updates."""
    lib = load()
    if isinstance(lib, str):
        raise RuntimeError(lib)
    kind = next((k for k, t in INDEX_TYPES.items() if t == idx.dtype), None)
    if kind is None or any(a.dtype != np.float32 for a in (upd, *tables)):
        raise TypeError("float32 table and updates, int64 or int32 indices")
    for a in (*tables, idx, upd):
        if a.ndim != 1 or not a.flags.c_contiguous:
            raise ValueError("1-D contiguous arrays")
    if idx.size != upd.size:
        raise ValueError(f"{idx.size} indices for {upd.size} updates")
    return lib, kind


def fold(table: np.ndarray, idx: np.ndarray, upd: np.ndarray, reduction: str) -> None:
    """Folds upd into table at idx in C order, in place: float32 table and updates, int64 or
    int32 indices, all in range (unchecked), reduction "sum" or "max"."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be 'sum' or 'max', not {reduction!r}")
    lib, kind = _loop_args(idx, upd, table)
    getattr(lib, f"{reduction}_{kind}")(
        ctypes.c_void_p(table.ctypes.data),
        ctypes.c_void_p(idx.ctypes.data),
        ctypes.c_void_p(upd.ctypes.data),
        ctypes.c_int64(idx.size),
    )


def read(idx: np.ndarray, upd: np.ndarray) -> int:
    """Reads every index and update once, in order, on one thread, and returns a checksum of
    them (so that the reads cannot be left out): float32 updates, int64 or int32 indices."""
    lib, kind = _loop_args(idx, upd)
    return getattr(lib, f"read_{kind}")(
        ctypes.c_void_p(idx.ctypes.data), ctypes.c_void_p(upd.ctypes.data), ctypes.c_int64(idx.size)
    )
