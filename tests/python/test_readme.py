"""The README's Python quick start runs as written and its stated results hold."""

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_quick_start_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "the README has a Python quick start"
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    assert np.array_equal(namespace["sums"], [50.0, 10.0, 40.0, 0.0])
    assert np.array_equal(namespace["grid"], [[2, 2], [0, 0], [1, 1]])
    assert np.array_equal(namespace["x"][:, ::2], np.ones((2, 3)))
    assert np.array_equal(namespace["data"][[3, 7]], np.ones((2, 64), np.float32))
    assert namespace["sk"].get_num_threads() == 2


def test_readme_exact_sums_example_holds():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    exact = [b for b in blocks if "exact=True" in b]
    assert len(exact) == 1, "the README's exact-sums section has one Python example"
    import scatterkit as sk

    lines = [line for line in exact[0].splitlines() if line.startswith("sk.")]
    namespace: dict = {"np": np, "sk": sk}
    exec(compile(exact[0], "README.md", "exec"), namespace)
    ordered, exact_sum = (eval(line, namespace) for line in lines)
    assert np.array_equal(ordered, [0.0]) and np.array_equal(exact_sum, [1.0])
