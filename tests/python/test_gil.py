"""The kernels release the GIL: another Python thread keeps running meanwhile."""

import threading
import time

import numpy as np

import scatterkit as sk


def _python_ticks_during(func) -> tuple[int, float]:
    """Counts how often a pure-Python loop runs while func runs in another thread."""
    done = threading.Event()
    elapsed = []

    def work():
        t0 = time.perf_counter()
        func()
        elapsed.append(time.perf_counter() - t0)
        done.set()

    worker = threading.Thread(target=work)
    ticks = 0
    worker.start()
    while not done.is_set():
        ticks += 1
    worker.join()
    return ticks, elapsed[0]


def test_kernel_releases_the_gil():
    sk.set_num_threads(1)
    # A single-threaded histogram large enough to take tens of milliseconds.
    rng = np.random.default_rng(0)
    indices = rng.integers(0, 1 << 20, 20_000_000)
    values = rng.random(indices.size, dtype=np.float32)
    data = np.zeros(1 << 20, np.float32)

    def kernel():
        sk.scatter_elements_update(data, indices, values, 0, reduction="sum", out=data)

    ticks, seconds = _python_ticks_during(kernel)
    # With the GIL held, the main thread would be starved for the whole kernel and
    # manage only the ticks of a couple of switch intervals (5 ms each).
    per_second_free = 1_000_000  # a bare Python loop runs far faster than this
    assert seconds > 0.02
    assert ticks > per_second_free * seconds * 0.2, (ticks, seconds)
