"""exact=True: float sums and means as the exact real sum rounded once, order-free min/max.

Everything is compared bit for bit (``.view(np.uintN)``) with an oracle built on Python's
``fractions.Fraction``: the exact sum of the terms, rounded once to the dtype by code written
here from the formats' parameters (precision, smallest subnormal exponent, largest exponent),
never through ``float()`` and ``astype`` (which would round twice). The oracle itself is
checked first, on hand-made halfway cases and against NumPy's single roundings.

Then: random cases of every op, dtype, reduction and layout against the oracle; hypothesis
properties (permutations of the updates, splits into mergeable states); adversarial sums
(cancellation, long runs of tiny terms, subnormals, overflow, infinities, NaN payloads,
signed zeros, counts past 2**24); thread counts; every API surface (the functions,
``get_op``, ``run_batch``, the state API, a Parquet round trip of states); and the errors.
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from conftest import (
    BFLOAT16,
    BOOL_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    assert_unchanged,
    dtype_id,
    same_at_thread_counts,
    snapshot,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import scatterkit as sk
from scatterkit._batch import Ragged, run_batch

F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)

# precision (with the implicit bit), exponent of the smallest subnormal, largest exponent
FORMATS = {
    F16: (11, -24, 15),
    BFLOAT16: (8, -133, 127),
    F32: (24, -149, 127),
    F64: (53, -1074, 1023),
}
UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}
# np.nan's bits in each dtype: the only NaN an exact result may hold
DEFAULT_NAN = {F16: 0x7E00, BFLOAT16: 0x7FC0, F32: 0x7FC00000, F64: 0x7FF8000000000000}
# NaNs that are not the default one: a payload, the sign bit, both
ODD_NANS = {
    F16: (0x7E01, 0xFE00, 0xFE2A),
    BFLOAT16: (0x7FC1, 0xFFC0, 0xFFD5),
    F32: (0x7FC00001, 0xFFC00000, 0xFFC12345),
    F64: (0x7FF8000000000001, 0xFFF8000000000000, 0xFFF8000000012345),
}

some = settings(max_examples=50, deadline=None)

# --------------------------------------------------------------------------------------------
# the oracle


def _pow2(e: int) -> Fraction:
    return Fraction(1 << e) if e >= 0 else Fraction(1, 1 << -e)


def format_bits(dtype) -> tuple[int, int, int, int]:
    """(precision, smallest subnormal exponent, largest exponent, exponent field width)."""
    p, emin, emax = FORMATS[np.dtype(dtype)]
    return p, emin, emax, (emax + 1).bit_length()


def inf_bits(dtype, negative: bool = False) -> int:
    p, _, _, ebits = format_bits(dtype)
    return (int(negative) << (ebits + p - 1)) | (((1 << ebits) - 1) << (p - 1))


def max_bits(dtype) -> int:
    return inf_bits(dtype) - 1


def round_fraction(q: Fraction, dtype, negative_zero: bool = False) -> int:
    """The bits of ``q`` rounded to ``dtype``: to nearest, ties to even, gradual underflow,
    past the largest finite value (from max + half an ulp on) an infinity. A zero ``q`` is
    -0 when ``negative_zero``."""
    p, emin, emax, ebits = format_bits(dtype)
    sign = 1 << (ebits + p - 1)
    if q == 0:
        return sign if negative_zero else 0
    s = sign if q < 0 else 0
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()  # floor(log2 a) or one above
    if a < _pow2(e):
        e -= 1
    assert _pow2(e) <= a < _pow2(e + 1)
    ulp = max(e - (p - 1), emin)  # exponent of the result's last bit
    scaled = a / _pow2(ulp)
    m = scaled.numerator // scaled.denominator
    rest = scaled - m
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and m % 2 == 1):
        m += 1
    if m == 1 << p:  # the rounding carried into a new leading bit
        m >>= 1
        ulp += 1
    if m < 1 << (p - 1):  # subnormal (or zero, which keeps the value's sign)
        assert ulp == emin
        return s | m
    exponent = ulp + p - 1
    if exponent > emax:
        return s | inf_bits(dtype)
    return s | ((exponent + emax) << (p - 1)) | (m - (1 << (p - 1)))


def from_bits(bits, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    return np.asarray(bits, dtype=UINT[dtype.itemsize]).view(dtype)


def to_bits(values) -> np.ndarray:
    values = np.asarray(values)
    return np.ascontiguousarray(values).view(UINT[values.dtype.itemsize]).reshape(values.shape)


def as_fraction(x: float) -> Fraction:
    """The exact value of a finite float (every float16/bfloat16/float32 is a float64)."""
    return Fraction(x)


def oracle(terms, dtype, mean: bool = False) -> int:
    """The bits of the exact sum (or mean) of ``terms`` (Python floats), rounded once."""
    assert terms, "an element with no terms keeps data"
    if any(math.isnan(t) for t in terms):
        return DEFAULT_NAN[np.dtype(dtype)]
    pos = any(t == math.inf for t in terms)
    neg = any(t == -math.inf for t in terms)
    if pos and neg:
        return DEFAULT_NAN[np.dtype(dtype)]
    if pos or neg:
        return inf_bits(dtype, neg)
    # every term is a multiple of 2**-1074: sum integers in that unit
    unit = 1074
    total_units = 0
    for t in terms:
        n, d = t.as_integer_ratio()
        total_units += n * ((1 << unit) // d)
    total = Fraction(total_units, 1 << unit)
    all_negative_zero = all(t == 0 and math.copysign(1.0, t) < 0 for t in terms)
    if total == 0:
        return round_fraction(total, dtype, negative_zero=all_negative_zero)
    if mean:
        total /= len(terms)
    return round_fraction(total, dtype)


def _floats(a: np.ndarray) -> list[float]:
    return [float(x) for x in np.asarray(a, dtype=np.float64).reshape(-1)]


def oracle_elements(data, indices, updates, axis, *, mean, use_init_val):
    """ScatterElementsUpdate-12 with exact sums, element by element (expected bits)."""
    data = np.asarray(data)
    indices = np.asarray(indices)
    updates = np.asarray(updates)
    axis = axis % data.ndim
    size = data.shape[axis]
    terms: dict[tuple, list[float]] = {}
    upd = np.asarray(updates, dtype=np.float64)
    for pos in np.ndindex(indices.shape):
        target = list(pos)
        i = int(indices[pos])
        target[axis] = i + size if i < 0 else i
        terms.setdefault(tuple(target), []).append(float(upd[pos]))
    out = to_bits(data).copy()
    values = np.asarray(data, dtype=np.float64)
    for target, ts in terms.items():
        all_terms = ([float(values[target])] if use_init_val else []) + ts
        out[target] = oracle(all_terms, data.dtype, mean)
    return out


def oracle_nd(data, indices, updates, *, subtract):
    """ScatterNDUpdate-15 sum (sub: data minus the updates) with exact sums (expected bits)."""
    data = np.asarray(data)
    indices = np.asarray(indices)
    k = indices.shape[-1]
    slab_shape = data.shape[k:]
    batch = indices.shape[:-1]
    upd = np.asarray(updates, dtype=np.float64).reshape(batch + slab_shape)
    values = np.asarray(data, dtype=np.float64)
    terms: dict[tuple, list[float]] = {}
    for pos in np.ndindex(batch):
        coords = tuple(
            int(c) + data.shape[j] if int(c) < 0 else int(c) for j, c in enumerate(indices[pos])
        )
        for rest in np.ndindex(slab_shape):
            v = float(upd[pos + rest])
            terms.setdefault(coords + rest, []).append(-v if subtract else v)
    out = to_bits(data).copy()
    for target, ts in terms.items():
        out[target] = oracle([float(values[target]), *ts], data.dtype)
    return out


def assert_bits(actual: np.ndarray, expected_bits) -> None:
    """actual's bits equal expected_bits exactly (NaN payloads and zero signs included)."""
    got = to_bits(actual)
    want = np.asarray(expected_bits, dtype=got.dtype).reshape(got.shape)
    bad = np.argwhere(got != want)
    assert not bad.size, (
        f"{len(bad)} of {got.size} elements differ, first at {bad[:5].tolist()}: got "
        f"{[hex(int(got[tuple(b)])) for b in bad[:5]]}, expected "
        f"{[hex(int(want[tuple(b)])) for b in bad[:5]]}"
    )


def same_bits(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    assert_bits(a, to_bits(b))


# --------------------------------------------------------------------------------------------
# values that make rounding hard


def wild_values(rng: np.random.Generator, dtype, shape, *, specials: float = 0.0) -> np.ndarray:
    """Exactly representable values of ``dtype`` over its whole range: most clustered around
    one magnitude (partial cancellation, sums inexact in the dtype and in double), some
    anywhere, a few next to the largest finite value, some subnormal, some small integers
    (exact cancellation, zeros), and a share of negations of other values (cancellation of
    large terms that leaves the small ones). With ``specials`` (a probability), also +-0,
    +-inf and NaN."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    p, emin, emax = FORMATS[dtype]
    lo, hi = emin, emax - p + 1  # value = m * 2**e with m < 2**p stays exact and finite
    m = rng.integers(0, 1 << p, n, dtype=np.int64)
    centre = int(rng.integers(min(lo + p, hi), hi + 1))
    kind = rng.choice(5, n, p=[0.6, 0.25, 0.01, 0.06, 0.08])
    e = np.where(kind == 0, rng.integers(centre - 12, centre + 3, n), 0)
    e = np.where(kind == 1, rng.integers(lo, hi + 1, n), e)
    e = np.where(kind == 2, hi, e)
    m = np.where(kind == 2, (1 << p) - 1 - rng.integers(0, 4, n), m)
    e = np.where(kind == 3, lo, e)
    m = np.where(kind == 3, rng.integers(0, 1 << (p - 1), n), m)
    e = np.where(kind == 4, 0, e)
    m = np.where(kind == 4, rng.integers(0, 9, n), m)
    e = np.clip(e, lo, hi)
    values = np.ldexp(m.astype(np.float64), e.astype(np.int32))
    values *= rng.choice(np.array([-1.0, 1.0]), n)
    if n > 1:
        values = np.where(rng.random(n) < 0.3, -values[rng.integers(0, n, n)], values)
    if specials:
        pick = rng.random(n) < specials
        pool = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -0.0, 0.0])
        values = np.where(pick, rng.choice(pool, n), values)
    out = values.astype(dtype)
    assert np.array_equal(out.astype(np.float64), values, equal_nan=True), "not exact"
    return out.reshape(shape)


def with_odd_nans(rng: np.random.Generator, a: np.ndarray, count: int) -> np.ndarray:
    """``a`` with ``count`` random elements replaced by NaNs that are not the default NaN."""
    a = a.copy()
    flat = to_bits(a).reshape(-1)
    where = rng.choice(flat.size, min(count, flat.size), replace=False)
    flat[where] = rng.choice(np.array(ODD_NANS[a.dtype], dtype=flat.dtype), where.size)
    return a


def bits_value(bits: int, dtype) -> float:
    return float(from_bits(bits, dtype).astype(np.float64))


def one_bits(dtype) -> int:
    p, _, emax, _ = format_bits(dtype)
    return emax << (p - 1)


# --------------------------------------------------------------------------------------------
# the oracle on known values


def test_oracle_format_constants_match_numpy():
    for dtype in FLOAT_DTYPES:
        assert DEFAULT_NAN[dtype] == int(to_bits(np.array(np.nan, dtype)))
        info = ml_dtypes.finfo(dtype) if dtype == BFLOAT16 else np.finfo(dtype)
        assert max_bits(dtype) == int(to_bits(np.array(info.max, dtype)))
        assert inf_bits(dtype) == int(to_bits(np.array(np.inf, dtype)))
        assert inf_bits(dtype, True) == int(to_bits(np.array(-np.inf, dtype)))
        p, emin, emax = FORMATS[dtype]
        assert round_fraction(_pow2(emin), dtype) == 1  # the smallest subnormal
        assert round_fraction(-_pow2(emin), dtype) == int(to_bits(-from_bits(1, dtype)))
        assert info.nmant == p - 1 and info.maxexp == emax + 1
        assert bits_value(1, dtype) == 2.0**emin


# (dtype, value, expected bits): halfway cases rounded to even, near 1, near the subnormals,
# at the subnormal/normal boundary and near overflow.
def _known_cases():
    cases = []
    for dtype in FLOAT_DTYPES:
        p, emin, emax, ebits = format_bits(dtype)
        one = (emax) << (p - 1)
        half_ulp_1 = _pow2(-p)  # half an ulp of 1
        top = _pow2(emax) * (2 - _pow2(1 - p))  # the largest finite value
        half_ulp_top = _pow2(emax - p)
        tiny = _pow2(emin)
        cases += [
            (dtype, Fraction(1), one),
            (dtype, 1 + half_ulp_1, one),  # halfway: to even (down)
            (dtype, 1 + 3 * half_ulp_1, one + 2),  # halfway: to even (up)
            (dtype, 1 + half_ulp_1 + _pow2(-200), one + 1),  # just past halfway
            (dtype, 1 + half_ulp_1 - _pow2(-200), one),  # just before halfway
            (dtype, -(1 + 3 * half_ulp_1), (1 << (ebits + p - 1)) | (one + 2)),
            (dtype, tiny / 2, 0),  # halfway between 0 and the smallest subnormal: 0
            (dtype, -tiny / 2, 1 << (ebits + p - 1)),  # -0
            (dtype, tiny * 3 / 2, 2),  # halfway between 1 and 2 units: 2
            (dtype, tiny * 5 / 2, 2),  # halfway between 2 and 3 units: 2
            (dtype, tiny / 2 + _pow2(emin - 80), 1),
            (dtype, tiny * 7, 7),
            # halfway between the largest subnormal and the smallest normal: up (even)
            (dtype, _pow2(emin + p - 1) - tiny / 2, 1 << (p - 1)),
            (dtype, _pow2(emin + p - 1) - tiny, (1 << (p - 1)) - 1),
            (dtype, top, max_bits(dtype)),
            (dtype, top + half_ulp_top, inf_bits(dtype)),  # max + half an ulp: inf
            (dtype, top + half_ulp_top - _pow2(emin), max_bits(dtype)),
            (dtype, -(top + half_ulp_top), inf_bits(dtype, True)),
            (dtype, top * 2, inf_bits(dtype)),
            (dtype, Fraction(1, 3), None),
            (dtype, Fraction(-2, 3), None),
            (dtype, Fraction(0), 0),
        ]
    # a few by hand, in hex
    cases += [
        (F32, 1 + _pow2(-24), 0x3F800000),
        (F32, 1 + 3 * _pow2(-24), 0x3F800002),
        (F32, Fraction(1, 3), 0x3EAAAAAB),
        (F32, _pow2(-150), 0x00000000),
        (F32, 3 * _pow2(-150), 0x00000002),
        (F32, _pow2(-126) - _pow2(-150), 0x00800000),
        (F32, Fraction(2**128 - 2**103), 0x7F800000),
        (F32, Fraction(2**128 - 2**103 - 1), 0x7F7FFFFF),
        (F16, Fraction(65520), 0x7C00),
        (F16, Fraction(65519), 0x7BFF),
        (F16, Fraction(2049), 0x6800),
        (F16, Fraction(2051), 0x6802),
        (F16, _pow2(-25), 0x0000),
        (F16, 3 * _pow2(-25), 0x0002),
        (BFLOAT16, 1 + _pow2(-8), 0x3F80),
        (BFLOAT16, 1 + 3 * _pow2(-8), 0x3F82),
        (BFLOAT16, _pow2(-134), 0x0000),
        (F64, 1 + _pow2(-53), 0x3FF0000000000000),
        (F64, 1 + 3 * _pow2(-53), 0x3FF0000000000002),
        (F64, Fraction(1, 10), 0x3FB999999999999A),
        (F64, 3 * _pow2(-1075), 0x0000000000000002),
    ]
    return cases


@pytest.mark.parametrize("case", _known_cases(), ids=lambda c: f"{dtype_id(c[0])}-{c[1]}"[:60])
def test_oracle_rounds_known_values(case):
    dtype, value, expected = case
    got = round_fraction(value, dtype)
    if expected is None:  # no tie: NumPy's one rounding of the nearest double must agree
        expected = int(to_bits(np.array(float(value), np.float64).astype(dtype)))
    assert got == expected, (hex(got), hex(expected))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_oracle_agrees_with_numpy_single_roundings(rng, dtype):
    # NumPy rounds a float64 to float16/float32 once, and ml_dtypes a float32 to bfloat16:
    # for values exactly held by the source type, the oracle must agree bit for bit.
    src = np.float32 if dtype == BFLOAT16 else np.float64
    p_src = 24 if src is np.float32 else 53
    n = 3000
    m = rng.integers(0, 1 << p_src, n, dtype=np.int64).astype(np.float64)
    _, emin, emax = FORMATS[dtype]
    lo = max(-149 if src is np.float32 else -1074, emin - p_src - 2)
    hi = min(127 - 23 if src is np.float32 else 1023 - 52, emax - p_src + 3)
    e = rng.integers(lo, hi + 1, n)
    values = (np.ldexp(m, e) * rng.choice([-1.0, 1.0], n)).astype(src)
    with np.errstate(over="ignore"):
        want = to_bits(values.astype(dtype))
    for v, w in zip(values, want):
        assert round_fraction(Fraction(float(v)), dtype) == int(w), (float(v), hex(int(w)))


def test_oracle_sum_rules():
    assert oracle([1e30, 1.0, -1e30], F32) == 0x3F800000
    assert oracle([-0.0, -0.0], F32) == 0x80000000
    assert oracle([-0.0, 0.0], F32) == 0
    assert oracle([1.0, -1.0], F32) == 0
    assert oracle([math.inf, -math.inf], F32) == DEFAULT_NAN[F32]
    assert oracle([math.inf, 1.0], F16) == 0x7C00
    assert oracle([-math.inf, 1.0], BFLOAT16) == 0xFF80
    assert oracle([math.nan, math.inf], F64) == DEFAULT_NAN[F64]
    assert oracle([1.0, 2.0], F32, mean=True) == 0x3FC00000
    assert oracle([-(2.0**-149), 0.0], F32, mean=True) == 0x80000000  # -2**-150: -0
    assert oracle([3 * 2.0**-149, 0.0], F32, mean=True) == 2  # 1.5 units: 2


# --------------------------------------------------------------------------------------------
# random cases against the oracle


def _elements_case(rng, dtype, layout, specials):
    if layout == "1d":
        data = wild_values(rng, dtype, (5,), specials=specials)
        idx = rng.integers(-5, 5, (40,))
        axis = 0
    elif layout == "2d-axis0":
        data = wild_values(rng, dtype, (4, 3), specials=specials)
        idx = rng.integers(-4, 4, (14, 2))
        axis = 0
    else:
        data = wild_values(rng, dtype, (3, 4), specials=specials)
        idx = rng.integers(-4, 4, (2, 15))
        axis = 1
    upd = wild_values(rng, dtype, idx.shape, specials=specials)
    return data, idx, upd, axis


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("use_init_val", [True, False], ids=["init", "no_init"])
@pytest.mark.parametrize("layout", ["1d", "2d-axis0", "2d-axis1"])
def test_elements_random_against_oracle(rng, dtype, reduction, use_init_val, layout):
    for trial in range(12):
        specials = 0.0 if trial < 8 else 0.04
        data, idx, upd, axis = _elements_case(rng, dtype, layout, specials)
        if trial % 3 == 2:
            data = with_odd_nans(rng, data, 2)  # untargeted ones keep their bits
        want = oracle_elements(
            data, idx, upd, axis, mean=reduction == "mean", use_init_val=use_init_val
        )
        got = sk.scatter_elements_update(
            data, idx, upd, axis, reduction=reduction, use_init_val=use_init_val, exact=True
        )
        assert_bits(got, want)


def cancelling_terms(rng: np.random.Generator, dtype, bins: int, per_bin: int):
    """(targets, values): per bin, large terms and their negations around a few small
    ones, shuffled, so that only an exact sum keeps the small ones."""
    p, emin, emax = FORMATS[np.dtype(dtype)]
    targets, values = [], []
    for b in range(bins):
        big_e = rng.integers(emax - p - 4, emax - p + 1, per_bin)
        big = np.ldexp(rng.integers(1 << (p - 1), 1 << p, per_bin).astype(np.float64), big_e)
        big *= rng.choice([-1.0, 1.0], per_bin)
        small_e = rng.integers(emin, emin + p + 8, 3)
        small = np.ldexp(rng.integers(1, 1 << p, 3).astype(np.float64), small_e)
        small *= rng.choice([-1.0, 1.0], 3)
        n_mid = int(rng.integers(0, 3))  # without them, the small terms are the sum
        mid = np.ldexp(
            rng.integers(1, 1 << p, n_mid).astype(np.float64), rng.integers(-3, 3, n_mid)
        )
        terms = np.concatenate([big, -big, small, mid])
        values.append(terms)
        targets.append(np.full(terms.size, b))
    values = np.concatenate(values)
    order = rng.permutation(values.size)
    out = values[order].astype(dtype)
    assert np.array_equal(out.astype(np.float64), values[order])
    return np.concatenate(targets)[order], out


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_cancellation_of_large_terms_against_oracle(rng, dtype, reduction):
    for per_bin in (1, 3, 8):
        idx, upd = cancelling_terms(rng, dtype, 6, per_bin)
        data = wild_values(rng, dtype, (6,))
        for use_init_val in (True, False):
            want = oracle_elements(
                data, idx, upd, 0, mean=reduction == "mean", use_init_val=use_init_val
            )
            got = sk.scatter_elements_update(
                data, idx, upd, 0, reduction=reduction, use_init_val=use_init_val, exact=True
            )
            assert_bits(got, want)
        if reduction == "sum":
            for sub in (False, True):
                got = sk.scatter_nd_update(
                    data, idx[:, None], upd, reduction="sub" if sub else "sum", exact=True
                )
                assert_bits(got, oracle_nd(data, idx[:, None], upd, subtract=sub))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("use_init_val", [True, False], ids=["init", "no_init"])
def test_elements_few_updates_into_many_elements_against_oracle(
    rng, dtype, reduction, use_init_val
):
    # Far more elements than updates: the table over the targeted elements only.
    data = wild_values(rng, dtype, (3, 40000), specials=0.01)
    data = with_odd_nans(rng, data, 20)
    idx = rng.integers(0, 8, (2, 60))  # many duplicates among few targets
    idx[0, :5] = [-1, -1, -2, 7, 7]
    upd = wild_values(rng, dtype, idx.shape, specials=0.03)
    mean = reduction == "mean"
    want = oracle_elements(data, idx, upd, 1, mean=mean, use_init_val=use_init_val)
    for axis in (1, -1):
        got = sk.scatter_elements_update(
            data, idx, upd, axis, reduction=reduction, use_init_val=use_init_val, exact=True
        )
        assert_bits(got, want)


def _nd_case(rng, dtype, k, specials):
    shape = (3, 4, 2)
    data = wild_values(rng, dtype, shape, specials=specials)
    batch = (5, 4) if k else (7,)
    idx = np.zeros((*batch, k), np.int64)
    for j in range(k):
        idx[..., j] = rng.integers(-shape[j], shape[j], batch)
    upd = wild_values(rng, dtype, batch + shape[k:], specials=specials)
    return data, idx, upd


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("reduction", ["sum", "sub"])
@pytest.mark.parametrize("k", [3, 2, 1, 0], ids=lambda k: f"k{k}")
def test_nd_random_against_oracle(rng, dtype, reduction, k):
    for trial in range(8):
        specials = 0.0 if trial < 5 else 0.04
        data, idx, upd = _nd_case(rng, dtype, k, specials)
        if trial % 3 == 2:
            data = with_odd_nans(rng, data, 3)
        want = oracle_nd(data, idx, upd, subtract=reduction == "sub")
        got = sk.scatter_nd_update(data, idx, upd, reduction=reduction, exact=True)
        assert_bits(got, want)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_out_and_in_place_give_the_same_bits(rng, dtype):
    data, idx, upd, axis = _elements_case(rng, dtype, "2d-axis1", 0.02)
    want = oracle_elements(data, idx, upd, axis, mean=False, use_init_val=True)
    out = np.empty_like(data)
    assert (
        sk.scatter_elements_update(data, idx, upd, axis, reduction="sum", exact=True, out=out)
        is out
    )
    assert_bits(out, want)
    inplace = data.copy()
    sk.scatter_elements_update(inplace, idx, upd, axis, reduction="sum", exact=True, out=inplace)
    assert_bits(inplace, want)
    ndata, nidx, nupd = _nd_case(rng, dtype, 2, 0.02)
    want = oracle_nd(ndata, nidx, nupd, subtract=True)
    inplace = ndata.copy()
    sk.scatter_nd_update(inplace, nidx, nupd, reduction="sub", exact=True, out=inplace)
    assert_bits(inplace, want)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("reduction", ["sum", "sub"])
def test_nd_slabs_longer_than_a_chunk_against_oracle(rng, dtype, reduction):
    # slabs of 700 elements: the kernel sums them in chunks
    data = with_odd_nans(rng, wild_values(rng, dtype, (3, 700), specials=0.01), 5)
    idx = rng.integers(-3, 3, (6, 1))
    upd = wild_values(rng, dtype, (6, 700), specials=0.01)
    got = sk.scatter_nd_update(data, idx, upd, reduction=reduction, exact=True)
    assert_bits(got, oracle_nd(data, idx, upd, subtract=reduction == "sub"))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_input_layouts_and_index_dtypes_do_not_change_the_bits(rng, dtype):
    data, idx, upd, axis = _elements_case(rng, dtype, "2d-axis1", 0.02)
    want = oracle_elements(data, idx, upd, axis, mean=True, use_init_val=True)
    variants = [(data, upd), (np.asfortranarray(data), np.asfortranarray(upd))]
    if dtype != BFLOAT16:
        swapped = dtype.newbyteorder()
        variants.append((data.astype(swapped), upd.astype(swapped)))
    big = np.zeros((data.shape[0], 2 * data.shape[1]), dtype)
    big[:, ::2] = data
    variants.append((big[:, ::2], upd))
    for d, u in variants:
        for index_dtype in (np.int8, np.int32, np.int64):
            got = sk.scatter_elements_update(
                d, idx.astype(index_dtype), u, axis, reduction="mean", exact=True
            )
            assert got.dtype == dtype
            assert_bits(got, want)
    positive = np.where(idx < 0, idx + data.shape[axis], idx)
    for index_dtype in (np.uint8, np.uint32, np.uint64):
        got = sk.scatter_elements_update(
            data, positive.astype(index_dtype), upd, axis, reduction="mean", exact=True
        )
        assert_bits(got, want)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_no_updates_keep_data(rng, dtype):
    data = with_odd_nans(rng, wild_values(rng, dtype, (4, 3), specials=0.2), 2)
    for reduction in ("sum", "mean", "min", "max"):
        got = sk.scatter_elements_update(
            data,
            np.zeros((0, 3), np.int64),
            np.zeros((0, 3), dtype),
            0,
            reduction=reduction,
            exact=True,
        )
        same_bits(got, data)
    for reduction in ("sum", "sub", "min", "max"):
        got = sk.scatter_nd_update(
            data,
            np.zeros((0, 1), np.int64),
            np.zeros((0, 3), dtype),
            reduction=reduction,
            exact=True,
        )
        same_bits(got, data)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_empty_data(dtype):
    # an index along an empty axis is an IndexError; no elements, no updates: an empty result
    for reduction in ("sum", "mean", "max"):
        for use_init_val in (True, False):
            with pytest.raises(IndexError):
                sk.scatter_elements_update(
                    np.zeros(0, dtype),
                    [0, 0],
                    np.ones(2, dtype),
                    0,
                    reduction=reduction,
                    use_init_val=use_init_val,
                    exact=True,
                )
            with pytest.raises(IndexError):
                sk.scatter_elements_update(
                    np.zeros((3, 0), dtype),
                    [[0, 0]],
                    np.ones((1, 2), dtype),
                    1,
                    reduction=reduction,
                    use_init_val=use_init_val,
                    exact=True,
                )
            got = sk.scatter_elements_update(
                np.zeros((2, 0), dtype),
                np.zeros((3, 0), np.int64),
                np.zeros((3, 0), dtype),
                0,
                reduction=reduction,
                use_init_val=use_init_val,
                exact=True,
            )
            assert got.shape == (2, 0) and got.dtype == dtype
    with pytest.raises(IndexError):
        sk.scatter_nd_update(
            np.zeros(0, dtype), [[0]], np.ones(1, dtype), reduction="sum", exact=True
        )
    state = sk.exact_state((0, 2), dtype)
    with pytest.raises(IndexError):
        sk.exact_fold(state, [[0]], np.ones((1, 2), dtype), dtype=dtype)
    assert sk.exact_finish(state, dtype=dtype).shape == (0, 2)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize(
    "shape", [(6,), (1000,), (70000,)], ids=["dense", "targeted-only", "targeted-only-checked"]
)
def test_bad_index_leaves_out_untouched(rng, dtype, shape):
    data = wild_values(rng, dtype, shape)
    idx = rng.integers(0, 6, 50)
    idx[37] = shape[0]  # out of range
    upd = wild_values(rng, dtype, (50,))
    for reduction in ("sum", "mean", "min", "max"):
        out = np.full_like(data, 3.0)
        snap = snapshot(out)
        with pytest.raises(IndexError):
            sk.scatter_elements_update(data, idx, upd, 0, reduction=reduction, exact=True, out=out)
        assert_unchanged(out, snap)
        inplace = data.copy()
        snap = snapshot(inplace)
        with pytest.raises(IndexError):
            sk.scatter_elements_update(
                inplace, idx, upd, 0, reduction=reduction, exact=True, out=inplace
            )
        assert_unchanged(inplace, snap)
    for reduction in ("sum", "sub", "min", "max"):
        inplace = data.copy()
        snap = snapshot(inplace)
        with pytest.raises(IndexError):
            sk.scatter_nd_update(
                inplace, idx[:, None], upd, reduction=reduction, exact=True, out=inplace
            )
        assert_unchanged(inplace, snap)


# --------------------------------------------------------------------------------------------
# hypothesis: order and grouping never change the bits

float_dtypes = st.sampled_from(FLOAT_DTYPES)
seeds = st.integers(0, 2**32 - 1)


@some
@given(
    dtype=float_dtypes,
    seed=seeds,
    n_bins=st.integers(1, 6),
    n_updates=st.integers(0, 40),
    reduction=st.sampled_from(["sum", "mean", "min", "max"]),
    use_init_val=st.booleans(),
    perm=st.randoms(use_true_random=False),
)
def test_elements_permuting_updates_keeps_the_bits(
    dtype, seed, n_bins, n_updates, reduction, use_init_val, perm
):
    rng = np.random.default_rng(seed)
    data = with_odd_nans(rng, wild_values(rng, dtype, (n_bins,), specials=0.1), 1)
    idx = rng.integers(-n_bins, n_bins, n_updates)
    upd = wild_values(rng, dtype, (n_updates,), specials=0.05)
    order = list(range(n_updates))
    perm.shuffle(order)
    kw = dict(reduction=reduction, use_init_val=use_init_val, exact=True)
    first = sk.scatter_elements_update(data, idx, upd, 0, **kw)
    second = sk.scatter_elements_update(data, idx[order], upd[order], 0, **kw)
    same_bits(first, second)
    if reduction in ("sum", "mean"):
        assert_bits(
            first,
            oracle_elements(data, idx, upd, 0, mean=reduction == "mean", use_init_val=use_init_val),
        )


@some
@given(
    dtype=float_dtypes,
    seed=seeds,
    n_tuples=st.integers(0, 30),
    reduction=st.sampled_from(["sum", "sub", "min", "max"]),
    perm=st.randoms(use_true_random=False),
)
def test_nd_permuting_updates_keeps_the_bits(dtype, seed, n_tuples, reduction, perm):
    rng = np.random.default_rng(seed)
    data = wild_values(rng, dtype, (3, 2), specials=0.1)
    idx = rng.integers(-3, 3, (n_tuples, 1))
    upd = wild_values(rng, dtype, (n_tuples, 2), specials=0.05)
    order = list(range(n_tuples))
    perm.shuffle(order)
    first = sk.scatter_nd_update(data, idx, upd, reduction=reduction, exact=True)
    second = sk.scatter_nd_update(data, idx[order], upd[order], reduction=reduction, exact=True)
    same_bits(first, second)


def _merge_randomly(states, dtype, rnd):
    """Merges a list of states into one, picking random pairs, orders and `out` modes."""
    states = list(states)
    while len(states) > 1:
        i, j = rnd.sample(range(len(states)), 2)
        a, b = states[i], states[j]
        mode = rnd.randrange(3)
        if mode == 0:
            merged = sk.exact_merge(a, b, dtype=dtype)
        elif mode == 1:
            merged = sk.exact_merge(a, b, dtype=dtype, out=a)
            assert merged is a
        else:
            out = np.empty_like(a)
            merged = sk.exact_merge(a, b, dtype=dtype, out=out)
            assert merged is out
        states = [s for k, s in enumerate(states) if k not in (i, j)] + [merged]
    return states[0]


@some
@given(
    dtype=float_dtypes,
    seed=seeds,
    n_updates=st.integers(0, 40),
    parts=st.integers(1, 5),
    subtract=st.booleans(),
    rnd=st.randoms(use_true_random=False),
)
def test_states_split_and_merged_any_way_finish_like_one_shot(
    dtype, seed, n_updates, parts, subtract, rnd
):
    rng = np.random.default_rng(seed)
    shape = (4, 2)
    data = wild_values(rng, dtype, shape, specials=0.05)
    idx = rng.integers(-4, 4, (n_updates, 1))
    upd = wild_values(rng, dtype, (n_updates, 2), specials=0.05)
    reduction = "sub" if subtract else "sum"
    want = sk.scatter_nd_update(data, idx, upd, reduction=reduction, exact=True)
    assert_bits(want, oracle_nd(data, idx, upd, subtract=subtract))
    # the updates dealt into parts (some empty), data's terms in a state of their own
    owner = np.array([rnd.randrange(parts) for _ in range(n_updates)], dtype=np.int64)
    states = [sk.exact_state(shape, dtype, data=data)]
    for k in range(parts):
        st_k = sk.exact_state(shape, dtype)
        mine = owner == k
        assert sk.exact_fold(st_k, idx[mine], upd[mine], dtype=dtype, subtract=subtract) is st_k
        states.append(st_k)
    rnd.shuffle(states)
    merged = _merge_randomly(states, dtype, rnd)
    same_bits(sk.exact_finish(merged, dtype=dtype), want)
    same_bits(sk.exact_finish(merged, dtype=dtype, data=data), want)


@some
@given(
    dtype=float_dtypes,
    seed=seeds,
    n_updates=st.integers(0, 40),
    parts=st.integers(1, 4),
    use_init_val=st.booleans(),
    rnd=st.randoms(use_true_random=False),
)
def test_states_finish_means_like_scatter_elements(
    dtype, seed, n_updates, parts, use_init_val, rnd
):
    rng = np.random.default_rng(seed)
    data = wild_values(rng, dtype, (6,), specials=0.05)
    if not use_init_val:
        data = with_odd_nans(rng, data, 1)  # untargeted: finish keeps data's bits
    idx = rng.integers(-6, 6, n_updates)
    upd = wild_values(rng, dtype, (n_updates,), specials=0.05)
    owner = np.array([rnd.randrange(parts) for _ in range(n_updates)], dtype=np.int64)
    states = [sk.exact_state(6, dtype, data=data if use_init_val else None)]
    for k in range(parts):
        st_k = sk.exact_state((6,), dtype)
        mine = owner == k
        sk.exact_fold(st_k, idx[mine][:, None], upd[mine], dtype=dtype)
        states.append(st_k)
    rnd.shuffle(states)
    merged = _merge_randomly(states, dtype, rnd)
    for reduction in ("sum", "mean"):
        want = sk.scatter_elements_update(
            data, idx, upd, 0, reduction=reduction, use_init_val=use_init_val, exact=True
        )
        got = sk.exact_finish(merged, dtype=dtype, reduction=reduction, data=data)
        same_bits(got, want)


# --------------------------------------------------------------------------------------------
# adversarial sums


def _sum1(dtype, terms, *, reduction="sum", use_init_val=False, data=0.0):
    """A one-element exact scatter of ``terms`` (updates) into ``data``."""
    upd = np.asarray(terms, dtype=dtype)
    idx = np.zeros(upd.shape, np.int64)
    d = np.array([data], dtype=dtype)
    return sk.scatter_elements_update(
        d, idx, upd, 0, reduction=reduction, use_init_val=use_init_val, exact=True
    )


def _check1(dtype, terms, *, reduction="sum", use_init_val=False, data=0.0, expect=None):
    dtype = np.dtype(dtype)
    got = _sum1(dtype, terms, reduction=reduction, use_init_val=use_init_val, data=data)
    all_terms = ([float(np.asarray(data, dtype))] if use_init_val else []) + _floats(
        np.asarray(terms, dtype=dtype)
    )
    want = oracle(all_terms, dtype, mean=reduction == "mean")
    if expect is not None:
        assert want == expect, (hex(want), hex(expect))
    assert_bits(got, [want])
    # ScatterND over the same terms (sum; data is always a term there)
    if reduction == "sum" and use_init_val:
        upd = np.asarray(terms, dtype=dtype)
        nd = sk.scatter_nd_update(
            np.array([data], dtype),
            np.zeros((upd.size, 1), np.int64),
            upd,
            reduction="sum",
            exact=True,
        )
        assert_bits(nd, [want])
    return got


def test_cancellation_float32_gives_exactly_one():
    got = _check1(F32, [1e30, 1.0, -1e30], expect=0x3F800000)
    assert got[0] == np.float32(1.0)
    _check1(F32, [1.0, -1e30], use_init_val=True, data=1e30, expect=0x3F800000)
    _check1(F64, [1e300, 1.0, -1e300], expect=0x3FF0000000000000)
    _check1(F64, [2.0**-1074, 1e308, -1e308], expect=0x1)  # a subnormal survives
    _check1(F16, [60000.0, 2.0**-24, -60000.0], expect=0x0001)
    _check1(BFLOAT16, [3e38, 2.0**-133, -3e38], expect=0x0001)


def test_halfway_sums_round_to_even():
    # float32: 1 + 2**-24 is halfway between 1 and its successor: to even
    _check1(F32, [2.0**-24], use_init_val=True, data=1.0, expect=0x3F800000)
    _check1(F32, [2.0**-24, 2.0**-23], use_init_val=True, data=1.0, expect=0x3F800002)
    _check1(F32, [2.0**-24, 2.0**-100], use_init_val=True, data=1.0, expect=0x3F800001)
    _check1(F32, [2.0**-24, -(2.0**-100)], use_init_val=True, data=1.0, expect=0x3F800000)
    _check1(F16, [2048.0, 1.0], expect=0x6800)
    _check1(F16, [2048.0, 3.0], expect=0x6802)
    _check1(BFLOAT16, [1.0, 2.0**-8], expect=0x3F80)
    _check1(BFLOAT16, [1.0, 3 * 2.0**-8], expect=0x3F82)
    _check1(F64, [1.0, 2.0**-53], expect=0x3FF0000000000000)
    _check1(F64, [1.0, 2.0**-53, 2.0**-1074], expect=0x3FF0000000000001)
    _check1(F64, [1.0, 2.0**-53, 2.0**-52], expect=0x3FF0000000000002)


def test_halfway_means_round_to_even_near_the_subnormals():
    tiny = 2.0**-149
    _check1(F32, [tiny, 0.0], reduction="mean", expect=0x0)  # 2**-150: tie to 0
    _check1(F32, [-tiny, 0.0], reduction="mean", expect=0x80000000)  # -0
    _check1(F32, [3 * tiny, 0.0], reduction="mean", expect=0x2)  # 1.5 units: 2
    _check1(F32, [5 * tiny, 0.0], reduction="mean", expect=0x2)  # 2.5 units: 2
    _check1(F32, [tiny, 0.0, 0.0], reduction="mean", expect=0x0)
    _check1(F32, [2 * tiny, 0.0, 0.0], reduction="mean", expect=0x1)
    _check1(F32, [1.0, 1.0 + 2.0**-23], reduction="mean", expect=0x3F800000)
    _check1(F32, [1.0 + 2.0**-23, 1.0 + 2.0**-22], reduction="mean", expect=0x3F800002)
    _check1(F16, [2.0**-24, 0.0], reduction="mean", expect=0x0)
    _check1(F16, [3 * 2.0**-24, 0.0], reduction="mean", expect=0x2)
    _check1(BFLOAT16, [2.0**-133, 0.0], reduction="mean", expect=0x0)
    _check1(F64, [2.0**-1074, 0.0], reduction="mean", expect=0x0)
    _check1(F64, [3 * 2.0**-1074, 0.0], reduction="mean", expect=0x2)
    _check1(F64, [2.0**-1074, 0.0, 0.0], reduction="mean", use_init_val=True, data=2.0**-1074)
    for dtype in FLOAT_DTYPES:
        _check1(dtype, [1.0, 1.0, 2.0], reduction="mean")
        _check1(dtype, [1.0, 0.0, 0.0], reduction="mean")
        _check1(dtype, [5.0, 1.0], reduction="mean", use_init_val=True, data=1.0)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_near_overflow(dtype):
    top = bits_value(max_bits(dtype), dtype)
    p, _, emax = FORMATS[dtype]
    half_ulp = 2.0 ** (emax - p)
    # sums past the range that come back
    _check1(dtype, [top, top, -top], expect=max_bits(dtype))
    _check1(dtype, [-top, -top, top, 1.0], use_init_val=True, data=top, expect=one_bits(dtype))
    _check1(dtype, [top, half_ulp, -half_ulp], expect=max_bits(dtype))
    # max + half an ulp is the overflow threshold: inf; a hair below it: max
    _check1(dtype, [top, half_ulp], expect=inf_bits(dtype))
    _check1(dtype, [top, half_ulp, -bits_value(1, dtype)], expect=max_bits(dtype))
    _check1(dtype, [-top, -half_ulp], expect=inf_bits(dtype, True))
    _check1(dtype, [top, top], expect=inf_bits(dtype))
    _check1(dtype, [-top, -top, -top], expect=inf_bits(dtype, True))
    # means of sums past the range are finite
    _check1(dtype, [top, top], reduction="mean", expect=max_bits(dtype))
    _check1(dtype, [top, top, top, -top], reduction="mean")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_subnormals(dtype):
    tiny = bits_value(1, dtype)
    largest_sub = bits_value((1 << (FORMATS[dtype][0] - 1)) - 1, dtype)
    _check1(dtype, [tiny] * 7, expect=7)
    _check1(dtype, [largest_sub, tiny], expect=1 << (FORMATS[dtype][0] - 1))  # smallest normal
    _check1(
        dtype, [largest_sub, largest_sub, -largest_sub], expect=(1 << (FORMATS[dtype][0] - 1)) - 1
    )
    _check1(dtype, [tiny, -tiny], expect=0)  # an exact zero of non-zero terms: +0
    _check1(dtype, [-tiny, tiny, -0.0], expect=0)
    _check1(dtype, [tiny, tiny, tiny], reduction="mean", expect=1)
    _check1(dtype, [largest_sub, tiny, 1.0, -1.0], reduction="mean")


def test_long_runs_of_tiny_values_float32():
    n = 10**6
    tiny = np.float32(2.0**-149)
    # alone: 10**6 units of 2**-149, exact in float32
    got = _sum1(F32, np.full(n, tiny))
    assert_bits(got, [round_fraction(Fraction(n, 2**149), F32)])
    assert got[0] == np.float32(n * 2.0**-149)
    # beside 1.0: far below half an ulp of 1, rounds to 1.0
    got = _sum1(F32, np.full(n, tiny), use_init_val=True, data=1.0)
    assert_bits(got, [0x3F800000])
    # half-ulps of 1: a C-order float32 fold stays at 1.0 (each step is a tie to even);
    # exactly, 1 + 10**6 * 2**-24
    got = _sum1(F32, np.full(n, 2.0**-24, np.float32), use_init_val=True, data=1.0)
    assert_bits(got, [round_fraction(1 + Fraction(n, 2**24), F32)])
    got = _sum1(
        F32, np.full(n, 2.0**-24, np.float32), reduction="mean", use_init_val=True, data=1.0
    )
    assert_bits(got, [round_fraction((1 + Fraction(n, 2**24)) / (n + 1), F32)])
    # float16: 10**5 smallest subnormals
    got = _sum1(F16, np.full(10**5, 2.0**-24, np.float16))
    assert_bits(got, [round_fraction(Fraction(10**5, 2**24), F16)])
    # float64: 10**6 smallest subnormals beside 1e-300 (exact state territory)
    got = _sum1(F64, np.full(n, 2.0**-1074), use_init_val=True, data=1e-300)
    assert_bits(got, [round_fraction(Fraction(1e-300) + Fraction(n, 2**1074), F64)])


def test_huge_count_into_one_float32_bin():
    # 2**24 + 6 ones: a float32 C-order fold gets stuck at 16777216 (2**24 + 1 is a tie to
    # even); the exact sum is 16777222, which float32 holds.
    n = 2**24 + 6
    ones = np.ones(n, np.float32)
    idx = np.zeros(n, np.int32)
    zero = np.zeros(1, np.float32)
    got = sk.scatter_elements_update(zero, idx, ones, 0, reduction="sum", exact=True)
    assert_bits(got, [int(to_bits(np.array(16777222.0, np.float32)))])
    got = sk.scatter_elements_update(
        zero, idx, ones, 0, reduction="sum", use_init_val=False, exact=True
    )
    assert got[0] == np.float32(16777222.0)
    # one more: 16777223 is a tie between ...222 and ...224: to even (...224)
    got = sk.scatter_elements_update(
        np.ones(1, np.float32), idx, ones, 0, reduction="sum", exact=True
    )
    assert got[0] == np.float32(16777224.0)
    got = sk.scatter_elements_update(zero, idx, ones, 0, reduction="mean", exact=True)
    assert_bits(got, [round_fraction(Fraction(n, n + 1), F32)])
    nd = sk.scatter_nd_update(zero, idx.reshape(-1, 1), ones, reduction="sum", exact=True)
    assert nd[0] == np.float32(16777222.0)
    nd = sk.scatter_nd_update(zero, idx.reshape(-1, 1), ones, reduction="sub", exact=True)
    assert nd[0] == np.float32(-16777222.0)


def with_bits(dtype, values, at: int, bits: int) -> np.ndarray:
    """An array of ``values`` with the element ``at`` set to ``bits`` (a NaN's payload kept)."""
    a = np.array(values, dtype=dtype)
    to_bits(a)[at] = bits
    return a


def value_bits(value, dtype) -> int:
    return int(to_bits(np.array(value, dtype)))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_infinities_and_nans(dtype):
    inf, nan = np.inf, np.nan
    nan_bits = DEFAULT_NAN[dtype]
    _check1(dtype, [inf, -inf], expect=nan_bits)
    _check1(dtype, [-inf], use_init_val=True, data=inf, expect=nan_bits)
    _check1(dtype, [inf, 1.0, inf], expect=inf_bits(dtype))
    _check1(dtype, [-inf, -1.0], use_init_val=True, data=5.0, expect=inf_bits(dtype, True))
    _check1(dtype, [inf, 2.0], reduction="mean", expect=inf_bits(dtype))
    _check1(dtype, [inf, -inf], reduction="mean", expect=nan_bits)
    _check1(dtype, [nan, inf], expect=nan_bits)
    _check1(dtype, [nan], use_init_val=True, data=-inf, expect=nan_bits)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("reduction", ["sum", "mean", "min", "max"])
def test_nan_payloads_become_the_default_nan_elements(dtype, reduction):
    nan_bits = DEFAULT_NAN[dtype]
    seven = value_bits(7.0, dtype)
    for odd in ODD_NANS[dtype]:
        # in an update
        upd = with_bits(dtype, [1.0, 2.0, 3.0], 1, odd)
        got = _sum1(dtype, upd, reduction=reduction, use_init_val=True, data=3.0)
        assert_bits(got, [nan_bits])
        got = _sum1(dtype, upd, reduction=reduction, use_init_val=False)
        assert_bits(got, [nan_bits])
        # in the targeted data
        data = with_bits(dtype, [0.0, 7.0], 0, odd)
        two = np.array([1.0, -1.0], dtype)
        got = sk.scatter_elements_update(data, [0, 0], two, 0, reduction=reduction, exact=True)
        assert_bits(got, [nan_bits, seven])
        # use_init_val=False: the targeted element's data is no term
        four = np.array([4.0], dtype)
        got = sk.scatter_elements_update(
            data, [0], four, 0, reduction=reduction, use_init_val=False, exact=True
        )
        assert_bits(got, [value_bits(4.0, dtype), seven])
        # untargeted: keeps its bits
        got = sk.scatter_elements_update(data, [1], four, 0, reduction=reduction, exact=True)
        want = {"sum": 11.0, "mean": 5.5, "min": 4.0, "max": 7.0}[reduction]
        assert_bits(got, [odd, value_bits(want, dtype)])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("reduction", ["sum", "sub", "min", "max"])
def test_nan_payloads_become_the_default_nan_nd(dtype, reduction):
    nan_bits = DEFAULT_NAN[dtype]
    four = value_bits(4.0, dtype)
    one = np.array([1.0], dtype)
    for odd in ODD_NANS[dtype]:
        upd = with_bits(dtype, [1.0, 0.0], 1, odd)
        data = np.array([3.0, 4.0], dtype)
        got = sk.scatter_nd_update(data, [[0], [0]], upd, reduction=reduction, exact=True)
        assert_bits(got, [nan_bits, four])
        data = with_bits(dtype, [0.0, 4.0], 0, odd)
        got = sk.scatter_nd_update(data, [[0]], one, reduction=reduction, exact=True)
        assert_bits(got, [nan_bits, four])
        got = sk.scatter_nd_update(data, [[1]], one, reduction=reduction, exact=True)
        assert to_bits(got)[0] == odd


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_signed_zero_rules(dtype):
    neg0 = 1 << (8 * dtype.itemsize - 1)
    # sum: -0 only when every term is -0
    _check1(dtype, [-0.0, -0.0], use_init_val=True, data=-0.0, expect=neg0)
    _check1(dtype, [0.0], use_init_val=True, data=-0.0, expect=0)
    _check1(dtype, [-0.0], use_init_val=True, data=0.0, expect=0)
    _check1(dtype, [1.0, -1.0], use_init_val=True, data=-0.0, expect=0)
    _check1(dtype, [-0.0], expect=neg0)
    _check1(dtype, [-0.0, 0.0], expect=0)
    _check1(dtype, [-0.0, -0.0, -0.0], reduction="mean", expect=neg0)
    _check1(dtype, [-0.0, 0.0], reduction="mean", expect=0)
    _check1(dtype, [-2.0, 2.0, -0.0], reduction="mean", expect=0)

    # ScatterND sub: the terms are data and minus the updates
    def sub(data, u):
        return sk.scatter_nd_update(
            np.array([data], dtype), [[0]], np.array([u], dtype), reduction="sub", exact=True
        )

    assert_bits(sub(-0.0, 0.0), [neg0])  # -0 - (+0) = -0 + -0
    assert_bits(sub(-0.0, -0.0), [0])  # -0 - (-0) = -0 + +0
    assert_bits(sub(0.0, 0.0), [0])
    assert_bits(sub(2.0, 2.0), [0])
    # min/max: order-free, max(-0, +0) = +0 and min(-0, +0) = -0 however they come
    for data, upd in ((-0.0, [0.0]), (0.0, [-0.0]), (-0.0, [0.0, -0.0]), (0.0, [-0.0, 0.0])):
        for reduction, want in (("max", 0), ("min", neg0)):
            got = _sum1(dtype, upd, reduction=reduction, use_init_val=True, data=data)
            assert_bits(got, [want])
            got = _sum1(dtype, upd[::-1], reduction=reduction, use_init_val=True, data=data)
            assert_bits(got, [want])
            nd_upd = np.array(upd, dtype)
            got = sk.scatter_nd_update(
                np.array([data], dtype),
                np.zeros((len(upd), 1), np.int64),
                nd_upd,
                reduction=reduction,
                exact=True,
            )
            assert_bits(got, [want])
    assert_bits(_sum1(dtype, [0.0, -0.0], reduction="max"), [0])
    assert_bits(_sum1(dtype, [-0.0, 0.0], reduction="max"), [0])
    assert_bits(_sum1(dtype, [0.0, -0.0], reduction="min"), [neg0])
    assert_bits(_sum1(dtype, [-0.0, 0.0], reduction="min"), [neg0])


# --------------------------------------------------------------------------------------------
# thread counts


def _grid_values(rng, n, dtype):
    """Multiples of 2**-20 below 8 in magnitude: float64 sums of tens of them are exact."""
    return (rng.integers(-(2**23), 2**23, n) * 2.0**-20).astype(dtype)


def _per_thread_count(call, counts=(1, 2, 3)):
    return same_at_thread_counts(call, same_bits, counts)


@pytest.mark.parametrize("dtype", [F32, F64, F16], ids=dtype_id)
def test_threads_give_the_same_bits_2m_updates_into_100k_bins(rng, dtype):
    before = sk.get_num_threads()
    bins, n = 100_000, 2_000_000
    data = _grid_values(rng, bins, F32).astype(dtype)
    idx = rng.integers(0, bins, n)
    upd = _grid_values(rng, n, F32).astype(dtype)
    wild_pos = rng.choice(n, 50, replace=False)
    upd[wild_pos] = wild_values(rng, dtype, (50,))  # exact states on some
    sums = _per_thread_count(
        lambda: sk.scatter_elements_update(data, idx, upd, 0, reduction="sum", exact=True)
    )
    means = _per_thread_count(
        lambda: sk.scatter_elements_update(
            data, idx, upd, 0, reduction="mean", use_init_val=False, exact=True
        )
    )
    nd = _per_thread_count(
        lambda: sk.scatter_nd_update(data, idx[:, None], upd, reduction="sub", exact=True)
    )
    for reduction in ("min", "max"):
        _per_thread_count(
            lambda reduction=reduction: sk.scatter_elements_update(
                data, idx, upd, 0, reduction=reduction, exact=True
            )
        )
    assert sk.get_num_threads() == 3
    sk.set_num_threads(before)
    # and the values themselves, where float64 sums are exact: the few wild updates aside
    clean = np.ones(bins, bool)
    special_bins = np.unique(idx[wild_pos])
    clean[special_bins] = False
    w = upd.astype(np.float64)
    w[np.isin(idx, special_bins)] = 0
    total = np.bincount(idx, weights=w, minlength=bins)
    counts = np.bincount(idx, minlength=bins)
    want_sum = (data.astype(np.float64) + total).astype(dtype)
    assert np.array_equal(to_bits(sums)[clean], to_bits(want_sum)[clean])
    want_nd = (data.astype(np.float64) - total).astype(dtype)
    assert np.array_equal(to_bits(nd)[clean], to_bits(want_nd)[clean])
    if dtype == F64:  # one IEEE division of an exact double: the correctly rounded mean
        hit = clean & (counts > 0)
        want_mean = total[hit] / counts[hit]
        assert np.array_equal(to_bits(means)[hit], to_bits(want_mean))
    untouched = counts == 0
    assert np.array_equal(to_bits(means)[untouched], to_bits(data)[untouched])


@pytest.mark.parametrize("dtype", [F32, F64], ids=dtype_id)
def test_threads_give_the_same_bits_2d(rng, dtype):
    data = wild_values(rng, dtype, (1000, 100), specials=0.001)
    upd = wild_values(rng, dtype, (20000, 100), specials=0.001)
    idx0 = rng.integers(-1000, 1000, (20000, 100))
    idx1 = rng.integers(-100, 100, (1000, 2000))
    upd1 = upd.reshape(1000, 2000)
    for reduction in ("sum", "mean", "max"):
        _per_thread_count(
            lambda r=reduction: sk.scatter_elements_update(
                data, idx0, upd, 0, reduction=r, exact=True
            )
        )
        _per_thread_count(
            lambda r=reduction: sk.scatter_elements_update(
                data, idx1, upd1, 1, reduction=r, use_init_val=False, exact=True
            )
        )
    nidx = rng.integers(-1000, 1000, (20000, 1))
    for reduction in ("sum", "sub", "min"):
        _per_thread_count(
            lambda r=reduction: sk.scatter_nd_update(data, nidx, upd, reduction=r, exact=True)
        )
    # a sample of rows of the ScatterND sum against the oracle
    sk.set_num_threads(2)
    got = sk.scatter_nd_update(data, nidx, upd, reduction="sum", exact=True)
    rows = np.where(nidx[:, 0] < 0, nidx[:, 0] + 1000, nidx[:, 0])
    for r in rng.integers(0, 1000, 5):
        mine = upd[rows == r].astype(np.float64)
        for c in rng.integers(0, 100, 4):
            terms = [float(data[r, c]), *_floats(mine[:, c])]
            assert int(to_bits(got)[r, c]) == oracle(terms, dtype), (r, c)


@pytest.mark.parametrize("dtype", [F32, BFLOAT16], ids=dtype_id)
def test_threads_give_the_same_bits_1d_histogram_1m_into_1m(rng, dtype):
    bins = n = 1_000_000
    data = _grid_values(rng, bins, F32).astype(dtype)
    idx = rng.integers(-bins, bins, n)
    upd = wild_values(rng, dtype, (n,), specials=0.001)
    for reduction in ("sum", "mean", "max", "min"):
        for use_init_val in (True, False):
            _per_thread_count(
                lambda reduction=reduction, use_init_val=use_init_val: sk.scatter_elements_update(
                    data, idx, upd, 0, reduction=reduction, use_init_val=use_init_val, exact=True
                ),
                counts=(1, 2),
            )
    _per_thread_count(
        lambda: sk.scatter_nd_update(data, idx[:, None], upd, reduction="sum", exact=True),
        counts=(1, 2),
    )
    # a sample of the bins against the oracle
    sk.set_num_threads(2)
    got = sk.scatter_elements_update(data, idx, upd, 0, reduction="sum", exact=True)
    wrapped = np.where(idx < 0, idx + bins, idx)
    order = np.argsort(wrapped, kind="stable")
    starts = np.searchsorted(wrapped[order], np.arange(bins + 1))
    for b in rng.integers(0, bins, 200):
        terms = [float(data[b]), *_floats(upd[order[starts[b] : starts[b + 1]]])]
        assert int(to_bits(got)[b]) == oracle(terms, dtype), b


def _targets(shape, idx, axis):
    """The flat offset in data of shape `shape` of the element each index reaches."""
    coords = list(np.indices(idx.shape))
    coords[axis] = np.where(idx < 0, idx + shape[axis], idx)
    return np.ravel_multi_index(coords, shape).ravel()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("use_init_val", [True, False], ids=["init", "no_init"])
@pytest.mark.parametrize(
    "case",
    [
        ((400_000,), (40_000,), 0),  # far more elements than updates
        ((150_000,), (40_000,), 0),  # 3.75 elements per update
        ((4, 100_000), (4, 10_000), 1),  # threads split the outer extent
        ((3, 100_000), (1, 40_000), 1),  # ... the axis
        ((8, 40_000), (1, 40_000), 0),  # ... the inner extent
    ],
    ids=["1d-sparse", "1d-mid", "2d-outer", "2d-along", "2d-inner"],
)
def test_few_updates_into_many_elements_cost_the_targets_only(
    rng, dtype, reduction, use_init_val, case
):
    # Few updates into many elements fold into a table over the targeted elements only: the
    # same bits as the table over every element (the call on the targeted elements alone), on
    # every thread count, and untargeted elements (odd NaNs among them) keep data's bits.
    shape, ishape, axis = case
    data = with_odd_nans(rng, wild_values(rng, dtype, shape, specials=0.001), 50)
    size = shape[axis]
    idx = rng.integers(-size, size, ishape)
    upd = wild_values(rng, dtype, ishape, specials=0.001)
    kwargs = dict(reduction=reduction, use_init_val=use_init_val, exact=True)
    got = _per_thread_count(
        lambda: sk.scatter_elements_update(data, idx, upd, axis, **kwargs), counts=(1, 2)
    )
    in_place = data.copy()
    sk.set_num_threads(2)
    sk.scatter_elements_update(in_place, idx, upd, axis, out=in_place, **kwargs)
    same_bits(in_place, got)
    # the targeted elements alone, renumbered in a 1-D call: a table over every element
    targets = _targets(shape, idx, axis)
    kept = np.unique(targets)
    want = sk.scatter_elements_update(
        data.ravel()[kept], np.searchsorted(kept, targets), upd.ravel(), 0, **kwargs
    )
    same_bits(got.ravel()[kept], want)
    untargeted = np.ones(data.size, bool)
    untargeted[kept] = False
    same_bits(got.ravel()[untargeted], data.ravel()[untargeted])
    if len(shape) == 1:  # a sample of the targets against the oracle
        sk.set_num_threads(1)
        few = idx[:3000]
        assert_bits(
            sk.scatter_elements_update(data, few, upd[:3000], 0, **kwargs),
            oracle_elements(
                data, few, upd[:3000], 0, mean=reduction == "mean", use_init_val=use_init_val
            ),
        )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("reduction", ["max", "min"])
def test_exact_min_max_keep_untargeted_nan_bits_on_every_thread_count(rng, dtype, reduction):
    # A 1-D histogram (more updates than bins): with 2 threads each part of the updates folds
    # into a table of its own and the tables are merged; an untargeted element holding a NaN
    # that is not the default one must keep its bits, as it does with 1 thread.
    bins, n = 100_000, 1_000_000
    data = _grid_values(rng, bins, F32).astype(dtype)
    for k, odd in enumerate(ODD_NANS[dtype]):
        to_bits(data)[k] = odd
    idx = rng.integers(len(ODD_NANS[dtype]), bins, n)  # never the NaN elements
    upd = _grid_values(rng, n, F32).astype(dtype)
    got = {}
    for threads in (1, 2):
        sk.set_num_threads(threads)
        out = sk.scatter_elements_update(data, idx, upd, 0, reduction=reduction, exact=True)
        got[threads] = [hex(int(b)) for b in to_bits(out)[:3]]
    want = [hex(b) for b in ODD_NANS[dtype]]
    assert got == {1: want, 2: want}


# --------------------------------------------------------------------------------------------
# API surfaces


def test_get_op_versions_are_the_exact_functions(rng):
    elements = sk.get_op("ScatterElementsUpdate-12")
    nd = sk.get_op("ScatterNDUpdate-15")
    assert elements is sk.scatter_elements_update
    assert nd is sk.scatter_nd_update
    for dtype in FLOAT_DTYPES:
        data, idx, upd, axis = _elements_case(rng, dtype, "2d-axis0", 0.02)
        for reduction in ("sum", "mean"):
            got = elements(data, idx, upd, axis, reduction=reduction, exact=True)
            want = oracle_elements(
                data, idx, upd, axis, mean=reduction == "mean", use_init_val=True
            )
            assert_bits(got, want)
        ndata, nidx, nupd = _nd_case(rng, dtype, 1, 0.02)
        assert_bits(
            nd(ndata, nidx, nupd, reduction="sub", exact=True),
            oracle_nd(ndata, nidx, nupd, subtract=True),
        )
        with pytest.raises(ValueError, match="prod"):
            elements(data, idx, upd, axis, reduction="prod", exact=True)
        with pytest.raises(ValueError, match="prod"):
            nd(ndata, nidx, nupd, reduction="prod", exact=True)
    # the v3 versions have no reductions and so no exact keyword
    with pytest.raises(TypeError):
        sk.get_op("ScatterElementsUpdate-3")(data, idx, upd, axis, exact=True)


def _rows(out: np.ndarray, like: Ragged) -> list[np.ndarray]:
    result = Ragged(out, like.offsets, like.shapes, like.shape_offsets)
    return [result.row(r) for r in range(result.rows)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_run_batch_exact_rows_equal_single_calls(rng, dtype):
    datas, idxs, upds = [], [], []
    for _ in range(12):
        rows = int(rng.integers(1, 5))
        datas.append(wild_values(rng, dtype, (rows, 3), specials=0.03))
        idxs.append(rng.integers(-rows, rows, (int(rng.integers(0, 9)), 3)))
        upds.append(wild_values(rng, dtype, idxs[-1].shape, specials=0.03))
    data = Ragged.from_arrays(datas, dtype)
    for reduction in ("sum", "mean", "min", "max"):
        for use_init_val in (True, False):
            out, errors = run_batch(
                "ScatterElementsUpdate-12",
                data,
                Ragged.from_arrays(upds, dtype),
                Ragged.from_arrays(idxs),
                axis=0,
                reduction=reduction,
                use_init_val=use_init_val,
                exact=True,
            )
            assert errors == [None] * len(datas)
            for got, d, i, u in zip(_rows(out, data), datas, idxs, upds):
                want = sk.scatter_elements_update(
                    d, i, u, 0, reduction=reduction, use_init_val=use_init_val, exact=True
                )
                same_bits(got, want)
                if reduction in ("sum", "mean"):
                    assert_bits(
                        got,
                        oracle_elements(
                            d, i, u, 0, mean=reduction == "mean", use_init_val=use_init_val
                        ),
                    )
    nidx = [rng.integers(-d.shape[0], d.shape[0], (5, 1)) for d in datas]
    nupd = [wild_values(rng, dtype, (5, 3), specials=0.03) for _ in datas]
    for reduction in ("sum", "sub", "min", "max"):
        out, errors = run_batch(
            "ScatterNDUpdate-15",
            data,
            Ragged.from_arrays(nupd, dtype),
            Ragged.from_arrays(nidx),
            reduction=reduction,
            exact=True,
        )
        assert errors == [None] * len(datas)
        for got, d, i, u in zip(_rows(out, data), datas, nidx, nupd):
            same_bits(got, sk.scatter_nd_update(d, i, u, reduction=reduction, exact=True))
            if reduction in ("sum", "sub"):
                assert_bits(got, oracle_nd(d, i, u, subtract=reduction == "sub"))


def test_run_batch_exact_errors(rng):
    datas = [np.arange(6.0, dtype=np.float32).reshape(2, 3) for _ in range(3)]
    idxs = [np.array([[1, 0, 1]]), np.array([[5, 0, 0]]), np.array([[0, 0, 0]])]
    upds = [np.array([[1e30, 1.0, -1e30]], np.float32) for _ in datas]
    data, upd, idx = Ragged.from_arrays(datas), Ragged.from_arrays(upds), Ragged.from_arrays(idxs)
    out, errors = run_batch(
        "ScatterElementsUpdate-12", data, upd, idx, axis=0, reduction="sum", exact=True
    )
    assert errors[0] is None and errors[2] is None
    assert errors[1] is not None and "IndexError" in errors[1]
    rows = _rows(out, data)
    same_bits(rows[1], datas[1])  # a bad row keeps its data
    same_bits(
        rows[0],
        sk.scatter_elements_update(datas[0], idxs[0], upds[0], 0, reduction="sum", exact=True),
    )
    for reduction in ("prod", "none"):
        with pytest.raises(
            ValueError, match=f"exact=True is not defined for reduction '{reduction}'"
        ):
            run_batch(
                "ScatterElementsUpdate-12", data, upd, idx, axis=0, reduction=reduction, exact=True
            )
        with pytest.raises(ValueError, match=reduction):
            run_batch("ScatterNDUpdate-15", data, upd, idx, reduction=reduction, exact=True)
        # an error of the call, not of each row: a batch of no rows (a Spark driver's dry
        # run) raises it too
        none, no_idx = Ragged.from_arrays([], np.float32), Ragged.from_arrays([], np.int64)
        with pytest.raises(ValueError, match=f"reduction '{reduction}'"):
            run_batch(
                "ScatterElementsUpdate-12",
                none,
                none,
                no_idx,
                axis=0,
                reduction=reduction,
                exact=True,
            )
    # operations without a reduction have none to make exact
    with pytest.raises(ValueError, match="exact=True is not defined for reduction 'none'"):
        run_batch("ScatterUpdate-3", data, upd, Ragged.from_arrays([[1]] * 3), exact=True)
    with pytest.raises(ValueError, match="exact=True is not defined for reduction 'none'"):
        run_batch("SliceScatter-15", data, upd, start=0, stop=1, step=1, axis=0, exact=True)
    with pytest.raises(TypeError, match="exact"):
        run_batch("ScatterElementsUpdate-12", data, upd, idx, axis=0, reduction="sum", exact=1)
    # integer rows: exact changes nothing, prod included
    idata = Ragged.from_arrays([np.arange(6, dtype=np.int32).reshape(2, 3) + 1 for _ in range(3)])
    iupd = Ragged.from_arrays([np.array([[2, 3, 4]], np.int32) for _ in range(3)])
    good_idx = Ragged.from_arrays([np.array([[1, 0, 1]]) for _ in range(3)])
    for reduction in ("prod", "sum", "none", "mean"):
        a, ea = run_batch(
            "ScatterElementsUpdate-12",
            idata,
            iupd,
            good_idx,
            axis=0,
            reduction=reduction,
            exact=True,
        )
        b, eb = run_batch(
            "ScatterElementsUpdate-12", idata, iupd, good_idx, axis=0, reduction=reduction
        )
        assert ea == eb == [None] * 3
        assert a.tobytes() == b.tobytes()


# --------------------------------------------------------------------------------------------
# the state API


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_state_shapes_and_words(dtype):
    words = 36 if dtype == F64 else 8
    assert sk.exact_state_words(dtype) == words
    st0 = sk.exact_state((3, 2), dtype)
    assert st0.shape == (3, 2, words) and st0.dtype == np.uint64
    assert not st0.any()  # all zeros: no terms
    assert sk.exact_state(4, dtype).shape == (4, words)
    # an empty state finishes to data (default zeros)
    assert_bits(sk.exact_finish(st0, dtype=dtype), np.zeros((3, 2), UINT[dtype.itemsize]))
    data = wild_values(np.random.default_rng(1), dtype, (3, 2))
    same_bits(sk.exact_finish(st0, dtype=dtype, data=data), data)
    # a state from data finishes to data's bits (its one term), mean too
    st1 = sk.exact_state((3, 2), dtype, data=data)
    same_bits(sk.exact_finish(st1, dtype=dtype), data)
    same_bits(sk.exact_finish(st1, dtype=dtype, reduction="mean"), data)


def test_state_example_from_the_issue():
    st0 = sk.exact_state(2, np.float32)
    sk.exact_fold(st0, [[0], [0], [0]], np.float32([1e30, 1, -1e30]), dtype=np.float32)
    assert_bits(sk.exact_finish(st0, dtype=np.float32), [0x3F800000, 0])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_state_fold_addressing_like_scatter_nd(rng, dtype):
    # k < rank, negative coordinates, a batch of index tuples, subtract
    data = wild_values(rng, dtype, (3, 4, 2))
    idx = np.stack([rng.integers(-3, 3, (4, 5)), rng.integers(-4, 4, (4, 5))], axis=-1)
    upd = wild_values(rng, dtype, (4, 5, 2))
    for subtract in (False, True):
        state = sk.exact_state(data.shape, dtype, data=data)
        sk.exact_fold(state, idx, upd, dtype=dtype, subtract=subtract)
        want = sk.scatter_nd_update(
            data, idx, upd, reduction="sub" if subtract else "sum", exact=True
        )
        same_bits(sk.exact_finish(state, dtype=dtype), want)
        assert_bits(want, oracle_nd(data, idx, upd, subtract=subtract))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_state_parquet_round_trip_then_merge_and_finish(rng, dtype, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    shape = (50, 3)
    words = sk.exact_state_words(dtype)
    data = wild_values(rng, dtype, shape, specials=0.02)
    idx = rng.integers(-50, 50, (400, 1))
    upd = wild_values(rng, dtype, (400, 3), specials=0.01)
    want = sk.scatter_nd_update(data, idx, upd, reduction="sum", exact=True)
    # three writers: data's terms, and two halves of the updates
    parts = [
        sk.exact_state(shape, dtype, data=data),
        sk.exact_fold(sk.exact_state(shape, dtype), idx[:150], upd[:150], dtype=dtype),
        sk.exact_fold(sk.exact_state(shape, dtype), idx[150:], upd[150:], dtype=dtype),
    ]
    for k, state in enumerate(parts):
        column = pa.FixedSizeListArray.from_arrays(pa.array(state.reshape(-1)), words)
        pq.write_table(pa.table({"state": column}), tmp_path / f"part{k}.parquet")
    back = []
    for k in (2, 0, 1):
        table = pq.read_table(tmp_path / f"part{k}.parquet")
        column = table.column("state").combine_chunks()
        assert column.type == pa.list_(pa.uint64(), words)
        flat = column.values.to_numpy(zero_copy_only=False)
        assert flat.dtype == np.uint64
        back.append(np.array(flat).reshape(*shape, words))  # a writeable copy
    same_bits(back[1], parts[0])
    merged = sk.exact_merge(sk.exact_merge(back[0], back[1], dtype=dtype), back[2], dtype=dtype)
    same_bits(sk.exact_finish(merged, dtype=dtype), want)
    assert_bits(want, oracle_nd(data, idx, upd, subtract=False))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_read_only_states_merge_and_finish(rng, dtype):
    # States read back from Arrow or Parquet without a copy are read-only arrays: merging
    # one into another (it is only read) and finishing one (only read) must work.
    idx = rng.integers(0, 4, (10, 1))
    upd = wild_values(rng, dtype, (10,))
    a = sk.exact_fold(sk.exact_state(4, dtype), idx[:5], upd[:5], dtype=dtype)
    b = sk.exact_fold(sk.exact_state(4, dtype), idx[5:], upd[5:], dtype=dtype)
    want = sk.exact_finish(sk.exact_merge(a, b, dtype=dtype), dtype=dtype)
    b.flags.writeable = False
    before = b.tobytes()
    same_bits(sk.exact_finish(sk.exact_merge(a, b, dtype=dtype), dtype=dtype), want)
    merged = sk.exact_merge(a, b, dtype=dtype)
    merged.flags.writeable = False
    same_bits(sk.exact_finish(merged, dtype=dtype), want)
    assert b.tobytes() == before


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_merge_with_out_being_b_is_right_or_refused(dtype):
    # exact_merge(a, b, out=b): the merge of a and b (as NumPy's out= gives), or a refusal;
    # never a silently wrong state.
    a = sk.exact_fold(sk.exact_state(2, dtype), [[0]], np.array([1.0], dtype), dtype=dtype)
    b = sk.exact_fold(sk.exact_state(2, dtype), [[1]], np.array([5.0], dtype), dtype=dtype)
    want = sk.exact_finish(sk.exact_merge(a, b, dtype=dtype), dtype=dtype)
    assert_bits(want, to_bits(np.array([1.0, 5.0], dtype)))
    try:
        merged = sk.exact_merge(a, b, dtype=dtype, out=b)
    except ValueError:
        return
    same_bits(sk.exact_finish(merged, dtype=dtype), want)


def test_state_counts_past_2_to_24_and_means():
    n = 2**24 + 6
    st0 = sk.exact_state(1, np.float32)
    sk.exact_fold(st0, np.zeros((n, 1), np.int32), np.ones(n, np.float32), dtype=np.float32)
    assert sk.exact_finish(st0, dtype=np.float32)[0] == np.float32(16777222.0)
    assert sk.exact_finish(st0, dtype=np.float32, reduction="mean")[0] == 1.0
    twice = sk.exact_merge(st0, st0, dtype=np.float32)
    assert sk.exact_finish(twice, dtype=np.float32)[0] == np.float32(2 * 16777222.0)


# --------------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("reduction", ["prod", "none"])
def test_exact_prod_and_none_on_floats_are_value_errors(dtype, reduction):
    data = np.arange(6.0).reshape(2, 3).astype(dtype)
    upd = np.ones((1, 3), dtype)
    out = np.full_like(data, 9.0)
    snap = snapshot(out)
    pattern = f"exact=True is not defined for reduction '{reduction}'"
    with pytest.raises(ValueError, match=pattern):
        sk.scatter_elements_update(
            data, [[1, 0, 1]], upd, 0, reduction=reduction, exact=True, out=out
        )
    assert_unchanged(out, snap)
    with pytest.raises(ValueError, match=pattern):
        sk.scatter_nd_update(data, [[1]], upd, reduction=reduction, exact=True, out=out)
    assert_unchanged(out, snap)
    inplace = data.copy()
    snap = snapshot(inplace)
    with pytest.raises(ValueError, match=pattern):
        sk.scatter_nd_update(inplace, [[1]], upd, reduction=reduction, exact=True, out=inplace)
    assert_unchanged(inplace, snap)
    # exact=False: both are fine
    sk.scatter_nd_update(data, [[1]], upd, reduction=reduction, out=out)


@pytest.mark.parametrize("value", [1, 0, None, "yes", 1.0, np.int64(1)], ids=repr)
def test_exact_must_be_a_bool(value):
    data = np.zeros(3, np.float32)
    with pytest.raises(TypeError, match="exact"):
        sk.scatter_elements_update(data, [0], np.float32([1]), 0, reduction="sum", exact=value)
    with pytest.raises(TypeError, match="exact"):
        sk.scatter_nd_update(data, [[0]], np.float32([1]), reduction="sum", exact=value)
    # NumPy's bool is a bool
    got = sk.scatter_nd_update(data, [[0]], np.float32([1]), reduction="sum", exact=np.bool_(True))
    assert got[0] == 1


@pytest.mark.parametrize("dtype", INT_DTYPES + BOOL_DTYPES, ids=dtype_id)
def test_integer_and_bool_data_are_unchanged_by_exact(rng, dtype):
    data = rng.integers(0, 2 if dtype == np.bool_ else 100, (4, 3)).astype(dtype)
    idx = rng.integers(-4, 4, (9, 3))
    upd = rng.integers(0, 2 if dtype == np.bool_ else 100, (9, 3)).astype(dtype)

    def both(call):
        results = []
        for exact in (False, True):
            try:
                results.append(("ok", call(exact).tobytes()))
            except (TypeError, ValueError) as exc:
                results.append((type(exc).__name__, str(exc)))
        assert results[0] == results[1]

    for reduction in ("none", "sum", "prod", "min", "max", "mean"):
        for use_init_val in (True, False):
            both(
                lambda exact, r=reduction, u=use_init_val: sk.scatter_elements_update(
                    data, idx, upd, 0, reduction=r, use_init_val=u, exact=exact
                )
            )
    nidx = rng.integers(-4, 4, (6, 1))
    nupd = rng.integers(0, 2 if dtype == np.bool_ else 100, (6, 3)).astype(dtype)
    for reduction in ("none", "sum", "sub", "prod", "min", "max"):
        both(
            lambda exact, r=reduction: sk.scatter_nd_update(
                data, nidx, nupd, reduction=r, exact=exact
            )
        )


def test_state_api_errors():
    f32 = np.float32
    st32 = sk.exact_state((3,), f32)
    # non-float dtypes: TypeError
    for bad in (np.int32, np.int64, np.bool_, np.complex64):
        with pytest.raises(TypeError):
            sk.exact_state_words(bad)
        with pytest.raises(TypeError):
            sk.exact_state((3,), bad)
        with pytest.raises(TypeError):
            sk.exact_finish(st32, dtype=bad)
        with pytest.raises(TypeError):
            sk.exact_fold(st32, [[0]], [1], dtype=bad)
        with pytest.raises(TypeError):
            sk.exact_merge(st32, st32, dtype=bad)
    # a float32 state is not a float64 one (8 words, not 36)
    with pytest.raises(ValueError, match="36"):
        sk.exact_finish(st32, dtype=np.float64)
    with pytest.raises(ValueError):
        sk.exact_fold(st32, [[0]], [1.0], dtype=np.float64)
    with pytest.raises(ValueError):
        sk.exact_merge(st32, sk.exact_state((3,), np.float64), dtype=np.float64)
    # wrong last axis, wrong element type, too few axes
    for bad_state in (
        np.zeros((3, 7), np.uint64),
        np.zeros((3, 9), np.uint64),
        np.zeros((3, 8), np.int64),
        np.zeros((3, 8), np.uint32),
        np.zeros(8, np.uint64),
    ):
        with pytest.raises(ValueError):
            sk.exact_finish(bad_state, dtype=f32)
        with pytest.raises(ValueError):
            sk.exact_merge(bad_state, bad_state, dtype=f32)
        with pytest.raises(ValueError):
            sk.exact_fold(bad_state, [[0]], [1.0], dtype=f32)
    with pytest.raises(TypeError):
        sk.exact_finish(st32.tolist(), dtype=f32)
    # merge of different shapes, out of another shape
    with pytest.raises(ValueError, match="do not merge"):
        sk.exact_merge(st32, sk.exact_state((4,), f32), dtype=f32)
    with pytest.raises(ValueError):
        sk.exact_merge(st32, st32, dtype=f32, out=sk.exact_state((2,), f32))
    # an unknown reduction, a data of the wrong shape
    with pytest.raises(ValueError, match="reduction"):
        sk.exact_finish(st32, dtype=f32, reduction="max")
    with pytest.raises(ValueError):
        sk.exact_finish(st32, dtype=f32, data=np.zeros(4, f32))
    with pytest.raises(ValueError):
        sk.exact_state((3,), f32, data=np.zeros(4, f32))
    with pytest.raises(TypeError):
        sk.exact_state((3,), f32, data=np.zeros(3, np.float64))
    # a word of flags no state has
    corrupt = sk.exact_state((3,), f32)
    corrupt[1, -1] = 1 << 40
    with pytest.raises(ValueError, match="not an exact-sum state"):
        sk.exact_finish(corrupt, dtype=f32)
    with pytest.raises(ValueError, match="not an exact-sum state"):
        sk.exact_merge(st32, corrupt, dtype=f32)
    # a read-only or non-contiguous state cannot be folded into
    ro = sk.exact_state((3,), f32)
    ro.flags.writeable = False
    with pytest.raises(ValueError):
        sk.exact_fold(ro, [[0]], [1.0], dtype=f32)
    strided = sk.exact_state((6,), f32)[::2]
    with pytest.raises(ValueError):
        sk.exact_fold(strided, [[0]], [1.0], dtype=f32)
    # subtract must be a bool; indices integers; updates of the addressed shape
    with pytest.raises(TypeError):
        sk.exact_fold(st32, [[0]], [1.0], dtype=f32, subtract=1)
    with pytest.raises(TypeError):
        sk.exact_fold(st32, [[0.0]], [1.0], dtype=f32)
    with pytest.raises(ValueError):
        sk.exact_fold(st32, [[0]], [1.0, 2.0], dtype=f32)
    with pytest.raises(ValueError):
        sk.exact_fold(st32, [[0, 0]], [1.0], dtype=f32)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
def test_fold_with_a_bad_index_leaves_the_state_unchanged(rng, dtype):
    data = wild_values(rng, dtype, (5, 2))
    state = sk.exact_state((5, 2), dtype, data=data)
    sk.exact_fold(state, [[1], [2]], np.ones((2, 2), dtype), dtype=dtype)
    before = state.copy()
    for bad in ([[0], [1], [5]], [[0], [-6], [1]], [[7]]):
        upd = np.ones((len(bad), 2), dtype)
        with pytest.raises(IndexError):
            sk.exact_fold(state, bad, upd, dtype=dtype)
        assert state.tobytes() == before.tobytes()
    with pytest.raises(IndexError):
        sk.exact_fold(
            state, np.array([[0], [2**63 - 1]], np.int64), np.ones((2, 2), dtype), dtype=dtype
        )
    assert state.tobytes() == before.tobytes()


@pytest.mark.parametrize("dtype", [F32, F16, BFLOAT16], ids=dtype_id)
@pytest.mark.parametrize("spread", [18, 19, 20], ids=lambda s: f"spread{s}")
def test_rows_at_the_edge_of_the_unchecked_bound_against_oracle(rng, dtype, spread):
    # 1000 updates (10 bits of count) whose exponents span `spread`: the kernel folds
    # without checks up to hi - lo + 10 <= 29, so 19 is the last unchecked spread and the
    # sums there use every bit of a double; 20 takes the checked path. Both exact.
    n, bins = 1000, 3
    exponents = rng.integers(-spread, 1, n)
    exponents[:2] = (-spread, 0)
    mantissas = 1 + rng.integers(0, 2 ** min(FORMATS[np.dtype(dtype)][0] - 1, 23), n) / 2**23
    updates = (mantissas * 2.0**exponents).astype(dtype)
    indices = rng.integers(0, bins, n)
    data = np.zeros(bins, dtype)
    got = sk.scatter_elements_update(data, indices, updates, 0, reduction="sum", exact=True)
    assert_bits(got, oracle_elements(data, indices, updates, 0, mean=False, use_init_val=True))
