"""Many Python threads calling the kernels at once (the GIL is released while they run).

Inputs are shared and read-only; each thread writes only its own outputs. Every result must
equal the one computed alone, and a thread whose call is bad gets its own exception without
disturbing the others.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import scatterkit as sk

N_THREADS = 8
ROUNDS = 6


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@pytest.fixture(scope="module")
def shared():
    """Inputs large enough (several MB) that each call also starts OpenMP threads."""
    rng = np.random.default_rng(7)
    data = _read_only(rng.random((256, 64, 64), dtype=np.float32))
    se_idx = _read_only(rng.integers(0, 64, (256, 64, 48)))
    se_upd = _read_only(rng.random((256, 64, 48), dtype=np.float32))
    su_idx = _read_only(rng.integers(0, 64, (40,)))
    su_upd = _read_only(rng.random((256, 40, 64), dtype=np.float32))
    nd_idx = _read_only(rng.integers(0, 64, (3000, 2)) % [256, 64])
    nd_upd = _read_only(rng.random((3000, 64), dtype=np.float32))
    ss_upd = _read_only(rng.random((256, 21, 64), dtype=np.float32))
    return {
        "scatter_update": lambda out=None: sk.scatter_update(data, su_idx, su_upd, 1, out=out),
        "scatter_elements_sum": lambda out=None: sk.scatter_elements_update(
            data, se_idx, se_upd, 2, reduction="sum", out=out
        ),
        "scatter_elements_mean": lambda out=None: sk.scatter_elements_update(
            data, se_idx, se_upd, 2, reduction="mean", use_init_val=False, out=out
        ),
        "scatter_nd_sum": lambda out=None: sk.scatter_nd_update(
            data, nd_idx, nd_upd, reduction="sum", out=out
        ),
        "slice_scatter": lambda out=None: sk.slice_scatter(data, ss_upd, 1, 64, 3, 1, out=out),
        "data": data,
    }


@pytest.mark.parametrize("omp_threads", [1, 2])
def test_many_python_threads_get_the_single_threaded_results(shared, omp_threads):
    sk.set_num_threads(1)
    ops = {name: fn for name, fn in shared.items() if name != "data"}
    expected = {name: fn().tobytes() for name, fn in ops.items()}
    sk.set_num_threads(omp_threads)
    start = threading.Barrier(N_THREADS)

    def worker(t: int) -> list[str]:
        start.wait()  # all threads enter the kernels together
        wrong = []
        names = sorted(ops)
        for r in range(ROUNDS):
            name = names[(t + r) % len(names)]
            out = np.empty_like(shared["data"]) if r % 2 else None
            if ops[name](out=out).tobytes() != expected[name]:
                wrong.append(f"thread {t} round {r}: {name}")
        return wrong

    with ThreadPoolExecutor(N_THREADS) as pool:
        wrong = [w for ws in pool.map(worker, range(N_THREADS)) for w in ws]
    assert wrong == []
    assert not shared["data"].flags.writeable


def test_bad_calls_in_some_threads_do_not_disturb_the_others(shared):
    sk.set_num_threads(2)
    data = shared["data"]
    good = shared["scatter_elements_sum"]().tobytes()
    bad_idx = np.full((256, 64, 48), 3, np.int64)
    bad_idx[-1, -1, -1] = 64  # one bad index, last of all
    start = threading.Barrier(N_THREADS)

    def worker(t: int) -> str:
        start.wait()
        out = np.zeros_like(data)
        if t % 2:
            try:
                sk.scatter_elements_update(data, bad_idx, bad_idx.astype(np.float32), 2, out=out)
            except IndexError as exc:
                assert "index 64 is out of bounds for axis 2 with size 64" in str(exc)
                return "raised" if not out.any() else "wrote before raising"
            return "did not raise"
        res = shared["scatter_elements_sum"](out=out)
        return "ok" if res.tobytes() == good else "wrong result"

    with ThreadPoolExecutor(N_THREADS) as pool:
        outcomes = list(pool.map(worker, range(N_THREADS)))
    assert outcomes == ["ok", "raised"] * (N_THREADS // 2)


def test_threads_writing_disjoint_views_of_one_buffer(shared):
    # Each thread updates its own row block of one shared output in place.
    sk.set_num_threads(2)
    data = np.array(shared["data"])  # writable copy
    expected = data.copy()
    blocks = np.array_split(np.arange(data.shape[0]), N_THREADS)
    rng = np.random.default_rng(3)
    work = []
    for rows in blocks:
        idx = rng.integers(0, 64, (len(rows), 64, 16))
        upd = rng.random(idx.shape, dtype=np.float32)
        block = expected[rows[0] : rows[-1] + 1]
        for line in np.ndindex(idx.shape[:2]):
            for j in range(idx.shape[2]):
                block[line][idx[line][j]] = max(block[line][idx[line][j]], upd[line][j])
        work.append((rows, idx, upd))

    def worker(item) -> None:
        rows, idx, upd = item
        view = data[rows[0] : rows[-1] + 1]
        sk.scatter_elements_update(view, idx, upd, 2, reduction="max", out=view)

    with ThreadPoolExecutor(N_THREADS) as pool:
        list(pool.map(worker, work))
    np.testing.assert_array_equal(data, expected)
