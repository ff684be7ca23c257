"""scatterkit: exact, threaded scatter operations from the OpenVINO opset.

>>> import numpy as np, scatterkit as sk
>>> sk.scatter_nd_update(np.zeros(4), [[1], [3]], [5.0, 7.0])
array([0., 5., 0., 7.])
"""

from __future__ import annotations

from pathlib import Path

from . import _core
from ._api import (
    get_num_threads,
    get_op,
    scatter_elements_update,
    scatter_nd_update,
    scatter_update,
    set_num_threads,
    slice_scatter,
)

__version__: str = _core.__version__

__all__ = [
    "__version__",
    "get_cmake_dir",
    "get_include",
    "get_num_threads",
    "get_op",
    "scatter_elements_update",
    "scatter_nd_update",
    "scatter_update",
    "set_num_threads",
    "slice_scatter",
]


def get_include() -> str:
    """Directory holding the C++ headers (``scatterkit/scatterkit.hpp``)."""
    return str(Path(__file__).parent / "include")


def get_cmake_dir() -> str:
    """Directory holding ``scatterkitConfig.cmake``, for ``-Dscatterkit_DIR=...``."""
    return str(Path(__file__).parent / "cmake")
