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
