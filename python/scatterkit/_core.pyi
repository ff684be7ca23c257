# Stubs for the compiled module. Kept in step with python/bindings by
# tests/python/test_api.py. These entry points expect prepared arguments;
# use the functions of the scatterkit package.
import numpy as np

__version__: str
openmp: bool

def scatter_update(
    data: np.ndarray,
    indices: np.ndarray,
    updates: np.ndarray,
    axis: int,
    out: np.ndarray,
    dtype: str,
    allow_negative: bool,
    name: str,
) -> None: ...
def scatter_elements_update(
    data: np.ndarray,
    indices: np.ndarray,
    updates: np.ndarray,
    axis: int,
    out: np.ndarray,
    dtype: str,
    reduction: str,
    use_init_val: bool,
    allow_negative: bool,
    discard_out_on_error: bool,
    exact: bool,
    name: str,
) -> None: ...
def scatter_nd_update(
    data: np.ndarray,
    indices: np.ndarray,
    updates: np.ndarray,
    out: np.ndarray,
    dtype: str,
    reduction: str,
    allow_negative: bool,
    exact: bool,
    name: str,
) -> None: ...
def slice_scatter(
    data: np.ndarray,
    updates: np.ndarray,
    start: list[int],
    stop: list[int],
    step: list[int],
    axis: list[int],
    out: np.ndarray,
    dtype: str,
    name: str,
) -> None: ...
def set_num_threads(n: int) -> None: ...
def empty_output(dtype: np.dtype, shape: list[int]) -> np.ndarray: ...
def set_output_cache(max_bytes: int) -> None: ...
def output_cache_info() -> dict[str, int]: ...
def get_num_threads() -> int: ...
def run_batch(
    kind: str,
    rows: int,
    data: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    indices: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None,
    updates: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    out: np.ndarray,
    dtype: str,
    axis: int,
    reduction: str,
    use_init_val: bool,
    allow_negative: bool,
    starts: list[int],
    stops: list[int],
    steps: list[int],
    axes: list[int],
    exact: bool,
    name: str,
) -> list[str]: ...
def exact_state_words(dtype: str) -> int: ...
def exact_state_init(state: np.ndarray, values: np.ndarray, dtype: str) -> None: ...
def exact_state_fold(
    state: np.ndarray, indices: np.ndarray, updates: np.ndarray, dtype: str, subtract: bool
) -> None: ...
def exact_state_merge(into: np.ndarray, other: np.ndarray, dtype: str) -> None: ...
def exact_state_finish(state: np.ndarray, out: np.ndarray, dtype: str, mean: bool) -> None: ...
