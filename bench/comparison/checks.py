"""Each implementation's output against scatterkit's."""

from __future__ import annotations

import numpy as np

from .peers import UNORDERED_DUPLICATES
from .workloads import Case, Workload

# Tolerances for reductions whose float additions a peer may order differently.
RTOL = {"float32": 1e-5, "float16": 5e-3}
ATOL = {"float32": 1e-6, "float16": 1e-3}


def check_output(w: Workload, c: Case, impl: str, ref: np.ndarray, got: np.ndarray) -> str:
    """How `got` compares with scatterkit's `ref`: '=', '≈ …', '= off dups …' or 'MISMATCH …'."""
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return f"MISMATCH: {got.dtype}{got.shape} vs {ref.dtype}{ref.shape}"
    equal = (got == ref) | (np.isnan(got) & np.isnan(ref))
    if equal.all():
        return "="
    if w.reduction in ("sum", "mean"):  # float addition order may differ
        a, b = got.astype(np.float64), ref.astype(np.float64)
        rel = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), ATOL[w.dtype])))
        if np.allclose(a, b, rtol=RTOL[w.dtype], atol=ATOL[w.dtype]):
            return f"≈ (max rel diff {rel:.1e})"
        return f"MISMATCH: max rel diff {rel:.1e}"
    differ = ~equal
    if w.reduction == "none" and c.dup_mask is not None:
        off_dups = differ & ~c.dup_mask
        if not off_dups.any():
            why = "undefined order" if impl in UNORDERED_DUPLICATES else "order differs"
            return f"= off dups ({int(differ.sum())} dup elements differ: {why})"
        differ = off_dups
    first = tuple(int(i) for i in np.argwhere(differ)[0])
    return (
        f"MISMATCH: {int(differ.sum())} elements differ, first at {first}: "
        f"{got[first]!r} vs scatterkit {ref[first]!r}"
    )
