"""bench/compare.py family H (issue 33): the histogram sweep's workloads, indices, table and
the hand-written results sections a rewrite of RESULTS.md keeps (bench/comparison/). One
subprocess runs `--quick --workloads H` on one table size."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))  # bench/comparison and bench/bare_loop.py
import bare_loop  # noqa: E402
from comparison import reports, tables, workloads  # noqa: E402
from comparison.measurement import Cell, Row  # noqa: E402


def test_histogram_workloads():
    w = workloads.histogram_workloads()
    assert len(w) == 5 * 2 * 2 * 2  # sizes x distributions x index types x reductions
    assert {x.bins for x in w} == set(workloads.HISTOGRAM_BINS)
    assert all(x.group == "H" and x.preallocated and x.reduction in ("sum", "max") for x in w)
    assert len({x.name for x in w}) == len(w)
    assert workloads.histogram_workloads((4096,))[0].name == "H 4K sum i64 uniform"
    # H runs only when named: the default selection is W1-W6
    assert all(x.group != "H" for x in workloads.canonical_workloads())
    assert [workloads.bins_label(b) for b in workloads.HISTOGRAM_BINS] == [
        "4K",
        "64K",
        "1M",
        "16M",
        "128M",
    ]
    assert workloads.bins_label(1000) == "1000"


def test_histogram_indices():
    rng = np.random.default_rng(0)
    n, bins = 200_000, 65_536
    skewed = workloads.histogram_indices(n, bins, True, rng)
    assert skewed.dtype == np.int64 and skewed.min() >= 0 and skewed.max() < bins
    hot = np.count_nonzero(skewed < bins // 100) / n
    assert 0.5 < hot < 0.52  # half, plus the uniform half's 1%
    assert np.count_nonzero(skewed[: n // 2] < bins // 100) / (n // 2) < 0.55  # shuffled
    uniform = workloads.histogram_indices(n, bins, False, rng)
    assert abs(np.count_nonzero(uniform < bins // 100) / n - 0.01) < 0.002
    assert workloads.histogram_indices(10, 50, True, rng).max() < 50  # 1% of 50 bins: 1 bin


def test_histogram_case_same_values_for_both_index_types():
    w64, w32 = (
        workloads.Workload(
            "H",
            "H",
            "elements",
            "H4096s",
            "sum",
            index_dtype=t,
            bins=4096,
            skewed=True,
            preallocated=True,
        )
        for t in ("int64", "int32")
    )
    a, b = workloads.make_case(w64, True), workloads.make_case(w32, True)
    assert a.indices.dtype == np.int64 and b.indices.dtype == np.int32
    assert np.array_equal(a.indices, b.indices) and np.array_equal(a.updates, b.updates)
    assert a.data.shape == (4096,) and not a.data.any()
    assert a.indices.size == workloads.HISTOGRAM_QUICK_UPDATES
    # A skewed case carries its uniform row's indices, for the skew ratio in the same rounds.
    uniform = workloads.make_case(dataclasses.replace(w64, skewed=False), True)
    assert uniform.uniform_indices is None
    assert np.array_equal(a.uniform_indices, uniform.indices)
    assert b.uniform_indices.dtype == np.int32
    assert np.array_equal(b.uniform_indices, uniform.indices)


def test_histogram_table():
    cell = Cell

    def row(bins, skewed, threads, sk_ms, peer_ms, uniform_ms=None):
        w = workloads.Workload(
            "H", "H", "elements", "H", "sum", bins=bins, skewed=skewed, preallocated=True
        )
        cells = {
            "floor": cell([0.001]),
            "scatterkit out=": cell([sk_ms / 1e3]),
            "bare loop": cell([0.009]),
            "inputs read": cell([0.007]),
            "PyTorch": cell([peer_ms / 1e3]),
            "NumPy": cell([2 * peer_ms / 1e3]),
        }
        if uniform_ms is not None:
            cells["sk uniform"] = cell([uniform_ms / 1e3])
        return Row(w, threads, cells, 1)

    # The skewed row's ratio is over its own `sk uniform` (8 ms, the same rounds), not over
    # the uniform row's time (5 ms, other rounds).
    rows = [
        row(4096, False, 1, 5, 10),
        row(4096, True, 1, 10, 10, uniform_ms=8),
        row(1 << 27, False, 1, 6, 10),
    ]
    text = tables.histogram_table(rows, llc=32 << 20)
    lines = text.splitlines()
    assert len(lines) == 2 + 3
    cols = [c.strip() for c in lines[2].split("|")[1:-1]]
    head = [c.strip() for c in lines[0].split("|")[1:-1]]
    got = dict(zip(head, cols))
    assert got["sk/best peer"] == "0.500" and got["best peer"] == "PyTorch"
    assert got["target"] == "0.8" and got["met"] == "yes" and got["skewed/uniform"] == ""
    assert got["target ms"] == "8" and got["bare loop ms"] == "9" and got["sk/bare loop"] == "0.556"
    assert got["read ms"] == "7"
    got = dict(zip(head, [c.strip() for c in lines[3].split("|")[1:-1]]))
    assert got["skewed/uniform"] == "1.250 (>1.2)" and got["met"] == "no"
    got = dict(zip(head, [c.strip() for c in lines[4].split("|")[1:-1]]))
    assert got["target"] == "0.5" and got["met"] == "no"  # 512 MB > 32 MB
    assert tables.histogram_table([]) == ""


@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_bare_loop_folds_in_c_order(index_dtype):
    rng = np.random.default_rng(4)
    idx = rng.integers(0, 1000, 50_000).astype(index_dtype)
    upd = rng.normal(0, 100, 50_000).astype(np.float32)
    data = rng.normal(0, 100, 1000).astype(np.float32)
    got, want = data.copy(), data.copy()
    bare_loop.fold(got, idx, upd, "sum")
    np.add.at(want, idx, upd)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    got, want = data.copy(), data.copy()
    bare_loop.fold(got, idx, upd, "max")
    np.maximum.at(want, idx, upd)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_inputs_read_sums_every_index_and_update_bit_pattern(index_dtype):
    rng = np.random.default_rng(5)
    idx = rng.integers(-(2**31), 2**31, 10_001).astype(index_dtype)
    upd = rng.normal(0, 1, 10_001).astype(np.float32)
    want = int(idx.astype(np.int64).astype(np.uint64).sum(dtype=np.uint64))
    want ^= int(upd.view(np.uint32).astype(np.uint64).sum(dtype=np.uint64))
    assert bare_loop.read(idx, upd) == want
    with pytest.raises(ValueError, match="2 indices for 3 updates"):
        bare_loop.read(idx[:2], upd[:3])
    with pytest.raises(TypeError, match="float32"):
        bare_loop.read(idx, upd.astype(np.float64))


def test_bare_loop_refuses_what_it_cannot_fold():
    table, idx, upd = np.zeros(8, np.float32), np.zeros(4, np.int64), np.ones(4, np.float32)
    with pytest.raises(ValueError, match="'sum' or 'max'"):
        bare_loop.fold(table, idx, upd, "prod")
    with pytest.raises(TypeError, match="float32"):
        bare_loop.fold(table.astype(np.float64), idx, upd, "sum")
    with pytest.raises(TypeError, match="int64 or int32"):
        bare_loop.fold(table, idx.astype(np.int16), upd, "sum")
    with pytest.raises(ValueError, match="4 indices for 3 updates"):
        bare_loop.fold(table, idx, upd[:3], "sum")
    with pytest.raises(ValueError, match="1-D contiguous"):
        bare_loop.fold(table[::2], idx, upd, "sum")
    assert not table.any()


def test_kept_sections():
    text = "\n".join(
        [
            "# results",
            "## Summary",
            "table",
            "## Histograms at every table size",
            "note",
            "### sub",
            "more",
            "## All implementations",
            "rows",
        ]
    )
    assert reports.kept_sections(text) == "## Histograms at every table size\nnote\n### sub\nmore"
    assert reports.kept_sections("# results\n## Summary\n") == ""


def test_quick_histogram_run(tmp_path):
    out = tmp_path / "RESULTS.md"
    out.write_text("# old\n\n## Histograms at every table size\n\nhand-written\n")
    cmd = [sys.executable, str(ROOT / "bench/compare.py"), "--quick", "--workloads", "H"]
    cmd += ["--histogram-bins", "4096", "--threads", "1", "--repeats", "3", "--peers", "NumPy"]
    cmd += ["--out", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    text = out.read_text()
    assert "## Histograms (H)" in text and "H 4K max i32 skewed" in text
    assert text.rstrip().endswith("## Histograms at every table size\n\nhand-written")


def test_exact_histogram_workloads():
    """HX (issue 48): the H sums with exact=True, alone or after each size's sum and max."""
    only = workloads.histogram_workloads((4096,), plain=False, exact=True)
    assert [x.name for x in only] == [
        "H 4K sum exact i64 uniform",
        "H 4K sum exact i32 uniform",
        "H 4K sum exact i64 skewed",
        "H 4K sum exact i32 skewed",
    ]
    assert all(x.group == "H" and x.exact and x.reduction == "sum" for x in only)
    both = workloads.histogram_workloads((4096,), exact=True)
    assert len(both) == 12 and len({x.name for x in both}) == 12
    assert [x.name for x in both[:3]] == [
        "H 4K sum i64 uniform",
        "H 4K max i64 uniform",
        "H 4K sum exact i64 uniform",
    ]
    names = [x.name for x in workloads.canonical_workloads()]
    assert "W3 sum exact" in names and "W3 mean exact" in names


def test_exact_table_target():
    """Issue 48 item 2: 0.8x the fastest peer, or 1.1x the read floor where that is larger."""
    assert tables.exact_target(10.0, 4.0) == (8.0, "0.8x peer")
    assert tables.exact_target(5.0, 4.0) == (pytest.approx(4.4), "1.1x read")
    assert tables.exact_target(None, 4.0) == (None, "n/a")
    w = workloads.Workload(
        "H 4K sum exact i64 uniform", "H", "elements", "H", "sum", exact=True, preallocated=True
    )
    cells = {
        "scatterkit out=": Cell([0.007], cpus=[1.9]),
        "scatterkit inexact": Cell([0.006]),
        "inputs read": Cell([0.004]),
        "PyTorch": Cell([0.010]),
    }
    lines = tables.exact_table([Row(w, 2, cells, 1)]).splitlines()
    head = [c.strip() for c in lines[0].split("|")[1:-1]]
    got = dict(zip(head, [c.strip() for c in lines[2].split("|")[1:-1]]))
    assert got["exact/best peer"] == "0.700" and got["target ms"] == "8" and got["met"] == "yes"
    assert got["exact cpus"] == "1.90" and got["read ms"] == "4" and got["peer/read"] == "2.500"
    # H's table (issue 33's targets) leaves the exact rows to this one
    assert tables.histogram_table([Row(w, 2, cells, 1)]) == ""
