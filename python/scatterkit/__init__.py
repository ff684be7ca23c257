"""scatterkit: exact, threaded scatter operations from the OpenVINO opset.

>>> import numpy as np, scatterkit as sk
>>> sk.scatter_nd_update(np.zeros(4), [[1], [3]], [5.0, 7.0])
array([0., 5., 0., 7.])
"""

import os as _os
from pathlib import Path as _Path

# libgomp's default wait policy spins between parallel regions; on a machine
# whose other cores are busy (a Spark executor, a shared CI box) the spinning
# worker is descheduled and each region then waits milliseconds for it. Passive
# waiting wakes in ~0.1 ms. Only a default: an explicit setting wins, and it
# takes effect only if no library has loaded OpenMP yet.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from . import (
    _check_numpy,  # noqa: F401  (first: refuses NumPy 1.x)
    _core,
)
from ._api import (
    get_num_threads,
    get_op,
    output_cache_info,
    scatter_elements_update,
    scatter_nd_update,
    scatter_update,
    set_num_threads,
    set_output_cache,
    slice_scatter,
)
from ._exact import exact_finish, exact_fold, exact_merge, exact_state, exact_state_words

__version__: str = _core.__version__

__all__ = [
    "__version__",
    "exact_finish",
    "exact_fold",
    "exact_merge",
    "exact_state",
    "exact_state_words",
    "get_cmake_dir",
    "get_include",
    "get_num_threads",
    "get_op",
    "output_cache_info",
    "scatter_elements_update",
    "scatter_nd_update",
    "scatter_update",
    "set_num_threads",
    "set_output_cache",
    "slice_scatter",
]


def get_include() -> str:
    """Directory holding the C++ headers (``scatterkit/scatterkit.hpp``)."""
    return str(_Path(__file__).parent / "include")


def get_cmake_dir() -> str:
    """Directory holding ``scatterkitConfig.cmake``, for ``-Dscatterkit_DIR=...``."""
    return str(_Path(__file__).parent / "cmake")
