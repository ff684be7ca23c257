"""run_batch: many rows in one call equal the per-row API; bad rows are reported."""

import numpy as np
import pytest

import scatterkit as sk
from scatterkit._batch import Ragged, run_batch


def _rows(out: np.ndarray, like: Ragged) -> list[np.ndarray]:
    result = Ragged(out, like.offsets, like.shapes, like.shape_offsets)
    return [result.row(r) for r in range(result.rows)]


@pytest.mark.parametrize("reduction", ["none", "sum", "max", "mean"])
def test_batch_elements_matches_single_calls(rng, reduction):
    datas = [rng.random((int(rng.integers(1, 6)), 7)) for _ in range(40)]
    idxs = [rng.integers(-d.shape[0], d.shape[0], (3, 7)) for d in datas]
    upds = [rng.random((3, 7)) for _ in datas]
    data = Ragged.from_arrays(datas)
    out, errors = run_batch(
        "ScatterElementsUpdate-12",
        data,
        Ragged.from_arrays(upds),
        Ragged.from_arrays(idxs),
        axis=0,
        reduction=reduction,
    )
    assert errors == [None] * len(datas)
    for got, d, i, u in zip(_rows(out, data), datas, idxs, upds):
        want = sk.scatter_elements_update(d, i, u, 0, reduction=reduction)
        assert np.array_equal(got, want)


def test_batch_each_op_matches_single_calls(rng):
    datas = [rng.random((4, 6)).astype(np.float32) for _ in range(5)]
    data = Ragged.from_arrays(datas)
    # ScatterUpdate along axis 1
    idx = [rng.integers(0, 6, (2,)) for _ in datas]
    upd = [rng.random((4, 2)).astype(np.float32) for _ in datas]
    out, errors = run_batch(
        "ScatterUpdate-3", data, Ragged.from_arrays(upd), Ragged.from_arrays(idx), axis=1
    )
    assert errors == [None] * 5
    for got, d, i, u in zip(_rows(out, data), datas, idx, upd):
        assert np.array_equal(got, sk.scatter_update(d, i, u, 1))
    # ScatterNDUpdate-15 with sub
    idx = [rng.integers(0, 4, (3, 2)) for _ in datas]
    upd = [rng.random(3).astype(np.float32) for _ in datas]
    out, errors = run_batch(
        "ScatterNDUpdate-15",
        data,
        Ragged.from_arrays(upd),
        Ragged.from_arrays(idx),
        reduction="sub",
    )
    for got, d, i, u in zip(_rows(out, data), datas, idx, upd):
        assert np.array_equal(got, sk.scatter_nd_update(d, i, u, reduction="sub"))
    # SliceScatter on two axes
    upd = [rng.random((2, 3)).astype(np.float32) for _ in datas]
    out, errors = run_batch(
        "SliceScatter-15",
        data,
        Ragged.from_arrays(upd),
        start=[0, -1],
        stop=[4, -7],
        step=[2, -2],
        axis=[0, 1],
    )
    assert errors == [None] * 5
    for got, d, u in zip(_rows(out, data), datas, upd):
        assert np.array_equal(got, sk.slice_scatter(d, u, [0, -1], [4, -7], [2, -2], [0, 1]))


def test_batch_bad_rows_are_reported_and_keep_their_data(rng):
    datas = [np.arange(6.0).reshape(2, 3) + 10 * r for r in range(4)]
    idxs = [
        np.array([[1, 0, 1]]),
        np.array([[5, 0, 0]]),
        np.array([[0, 0, 0]]),
        np.array([[-1, 0, 0]]),
    ]
    upds = [np.ones((1, 3))] * 4
    data = Ragged.from_arrays(datas)
    # Row 2's data shape claims 4 elements for 6 values.
    bad_shapes = data.shapes.copy()
    bad_shapes[4:6] = [2, 2]
    data = Ragged(data.values, data.offsets, bad_shapes, data.shape_offsets)
    out, errors = run_batch(
        "ScatterElementsUpdate-3", data, Ragged.from_arrays(upds), Ragged.from_arrays(idxs), axis=0
    )
    assert errors[0] is None
    assert (
        errors[1].startswith("IndexError:")
        and "index 5 is out of bounds for axis 0 with size 2" in errors[1]
    )
    assert errors[2] == (
        "ValueError: ScatterElementsUpdate-3: data shape (2, 2) does not match its 6 values"
    )
    assert errors[3].startswith("IndexError:") and "negative" in errors[3]  # v3 is strict
    rows = np.split(out, 4)
    assert np.array_equal(
        rows[0], sk.scatter_elements_update(datas[0], idxs[0], upds[0], 0).ravel()
    )
    for r in (1, 2, 3):
        assert np.array_equal(rows[r], datas[r].ravel())


@pytest.mark.parametrize("shape", [(2**62, 2**62, 0), (0, 2**62, 2**62), (0, 2**61)])
def test_batch_row_whose_zero_size_shape_overflows_is_too_big(shape):
    empty = np.zeros(0, np.float32)
    data = Ragged.from_arrays([np.zeros(2, np.float32)])
    data = Ragged(
        np.concatenate([data.values, empty]),
        np.array([0, 2, 2]),
        np.array([2, *shape]),
        np.array([0, 1, 1 + len(shape)]),
    )
    updates = Ragged(
        np.ones(1, np.float32), np.array([0, 1, 1]), np.array([1, 0]), np.array([0, 1, 2])
    )
    out, errors = run_batch("SliceScatter-15", data, updates, start=0, stop=1, step=1, axis=0)
    assert errors[0] is None and out.tolist() == [1, 0]
    assert errors[1] == (
        f"ValueError: SliceScatter-15: data shape {shape} is too big: "
        "its extents multiply past 2**63 - 1 bytes"
    )


def test_batch_row_of_zero_size_with_large_extents_that_fit_runs():
    shape = (0, 2**60)  # 2**62 bytes of float32 if it had a row: NumPy's limit allows it
    data = Ragged(np.zeros(0, np.float32), np.array([0, 0]), np.array(shape), np.array([0, 2]))
    upd = Ragged(np.zeros(0, np.float32), np.array([0, 0]), np.array(shape), np.array([0, 2]))
    out, errors = run_batch("SliceScatter-15", data, upd, start=0, stop=0, step=1, axis=0)
    assert errors == [None] and out.size == 0


def test_batch_rejects_malformed_buffers(rng):
    data = Ragged.from_arrays([np.zeros(3), np.zeros(2)])
    upd = Ragged.from_arrays([np.ones(1), np.ones(1)])
    idx = Ragged.from_arrays([np.array([0]), np.array([1])])
    broken = Ragged(data.values, np.array([0, 4, 99], np.int64), data.shapes, data.shape_offsets)
    with pytest.raises(ValueError, match="outside their buffer"):
        run_batch("ScatterElementsUpdate-12", broken, upd, idx, axis=0)
    backwards = Ragged(data.values, np.array([0, 4, 3], np.int64), data.shapes, data.shape_offsets)
    with pytest.raises(ValueError, match="decrease"):
        run_batch("ScatterElementsUpdate-12", backwards, upd, idx, axis=0)
    with pytest.raises(ValueError, match="no reduction"):
        run_batch("ScatterElementsUpdate-3", data, upd, idx, axis=0, reduction="sum")
    with pytest.raises(ValueError, match="unknown operation"):
        run_batch("Scatter-1", data, upd, idx)


def test_batch_threads_give_identical_bits(rng):
    datas = [rng.random((64, 64)).astype(np.float32) for _ in range(300)]
    idxs = [rng.integers(0, 64, (200, 64)) for _ in datas]
    upds = [rng.random((200, 64)).astype(np.float32) for _ in datas]
    args = (Ragged.from_arrays(datas), Ragged.from_arrays(upds), Ragged.from_arrays(idxs))
    sk.set_num_threads(1)
    one, _ = run_batch("ScatterElementsUpdate-12", *args, axis=0, reduction="sum")
    sk.set_num_threads(2)
    two, _ = run_batch("ScatterElementsUpdate-12", *args, axis=0, reduction="sum")
    assert one.tobytes() == two.tobytes()


@pytest.mark.parametrize(
    ("op", "kwargs", "match"),
    [
        ("ScatterNDUpdate-15", {"reduction": "mean"}, "not one of this version's"),
        ("ScatterElementsUpdate-12", {"reduction": "sub"}, "not one of this version's"),
        ("ScatterNDUpdate-3", {"reduction": "sum"}, "has no reduction"),
        ("SliceScatter-15", {"start": 0, "stop": 1, "step": 0, "axis": 0}, "step must not be 0"),
        (
            "SliceScatter-15",
            {"start": [0, 0], "stop": [1, 1], "step": [1, 1], "axis": [0, 0]},
            "distinct",
        ),
    ],
)
def test_batch_attributes_wrong_for_every_row_raise(op, kwargs, match):
    # An attribute no row can use is an error of the call, not one error per row.
    data = Ragged.from_arrays([np.zeros((2, 2))])
    updates = Ragged.from_arrays([np.zeros((1, 2))])
    indices = None if op.startswith("Slice") else Ragged.from_arrays([np.zeros((1, 1), np.int64)])
    with pytest.raises(ValueError, match=match):
        run_batch(op, data, updates, indices, **kwargs)


@pytest.mark.parametrize("field", ["offsets", "shapes", "shape_offsets"])
def test_batch_non_integer_layout_is_a_type_error(field):
    good = Ragged.from_arrays([np.arange(4.0)])
    bad = Ragged(**{**good.__dict__, field: getattr(good, field).astype(np.float64) + 0.5})
    with pytest.raises(TypeError, match=f"Ragged {field} must be integers"):
        run_batch("ScatterElementsUpdate-12", bad, good, Ragged.from_arrays([np.array([0])]))


def test_batch_values_outside_every_row_keep_data():
    # Row 0 covers values[1:3]; values[0] and values[3:] belong to no row.
    data = Ragged(np.array([7.0, 1, 2, 8, 9]), np.array([1, 3]), np.array([2]), np.array([0, 1]))
    updates = Ragged(np.array([5.0]), np.array([0, 1]), np.array([1]), np.array([0, 1]))
    indices = Ragged(np.array([1]), np.array([0, 1]), np.array([1]), np.array([0, 1]))
    out, errors = run_batch("ScatterElementsUpdate-12", data, updates, indices)
    assert errors == [None]
    assert out.tolist() == [7.0, 1, 5, 8, 9]


@pytest.mark.parametrize(
    ("op", "indices"),
    [
        ("ScatterUpdate-3", [np.array([-1]), np.array([1])]),
        ("ScatterNDUpdate-3", [np.array([[-1]]), np.array([[1]])]),
        ("ScatterElementsUpdate-3", [np.array([[-1, 0]]), np.array([[1, 0]])]),
    ],
)
def test_batch_v3_rows_reject_negative_indices(op, indices):
    # The -3 versions refuse negative indices row by row, as get_op's callables do.
    datas = [np.zeros((2, 2)), np.zeros((2, 2))]
    updates = [np.ones((1, 2))] * 2
    args = (Ragged.from_arrays(datas), Ragged.from_arrays(updates), Ragged.from_arrays(indices))
    kwargs = {} if op == "ScatterNDUpdate-3" else {"axis": 0}
    out, errors = run_batch(op, *args, **kwargs)
    assert errors[0].startswith("IndexError:") and "negative" in errors[0]
    assert errors[1] is None
    rows = np.split(out, 2)
    assert not rows[0].any()
    want = sk.get_op(op)(datas[1], indices[1], updates[1], **kwargs)
    assert np.array_equal(rows[1], want.ravel())


@pytest.mark.parametrize("field", ["offsets", "shapes", "shape_offsets"])
@pytest.mark.parametrize("huge", [2**63, 2**64 - 1])
def test_batch_parts_beyond_int64_are_a_value_error(field, huge):
    # One error for the call, before any row runs: such a value would read as negative.
    good = Ragged.from_arrays([np.arange(4.0)])
    parts = {f: getattr(good, f).astype(np.uint64) for f in ("offsets", "shapes", "shape_offsets")}
    parts[field][-1] = huge
    bad = Ragged(good.values, **parts)
    with pytest.raises(ValueError, match=f"Ragged {field} hold a value beyond int64"):
        run_batch("ScatterElementsUpdate-12", bad, good, Ragged.from_arrays([np.array([0])]))


@pytest.mark.parametrize("flag", [1, "yes", None])
def test_batch_use_init_val_must_be_a_bool(flag):
    data = Ragged.from_arrays([np.zeros(2)])
    with pytest.raises(TypeError, match="use_init_val"):
        run_batch(
            "ScatterElementsUpdate-12",
            data,
            Ragged.from_arrays([np.ones(1)]),
            Ragged.from_arrays([np.array([0])]),
            reduction="sum",
            use_init_val=flag,
        )
