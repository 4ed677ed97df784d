"""TABLE contents computed from the source semantics: `table_i8` (256 entries: exact, every input is
tabulated) and `table_i16` (513 entries TOSA interpolates, one table or a high/low pair), which reports
how far it is from the source on all 65536 inputs (the rules use it only when exact)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .carrier import QInfo, decode, encode

# ------------------------------------------------------------------------------ TABLE
RealFunction = Callable[[np.ndarray], np.ndarray]


def table_i8(fn: RealFunction, x: QInfo, y: QInfo) -> np.ndarray:
    """The 256-entry TABLE computing y = encode(fn(decode(x))) for every i8 input (index v + 128)."""
    inputs = np.arange(-128, 128)
    with np.errstate(all="ignore"):
        real = np.asarray(fn(decode(inputs, x)), dtype=np.float32)
    return encode(real, y).astype(np.int8)


def _interpolate_i16(table: np.ndarray) -> np.ndarray:
    """TOSA TABLE on every i16 input: (table[i] << 7) + (table[i+1] - table[i]) * fraction, i32."""
    v = np.arange(65536, dtype=np.int64)
    index, fraction = v >> 7, v & 0x7F
    base = table[index].astype(np.int64)
    return (base << 7) + (table[index + 1].astype(np.int64) - base) * fraction


def _round_shift(values: np.ndarray, shift: int) -> np.ndarray:
    """RESCALE's SINGLE_ROUND by 2**-shift (round half up)."""
    return (values + (1 << (shift - 1))) >> shift


@dataclass(frozen=True)
class Table16:
    """TOSA TABLE(s) for an i16 input and how their i32 results become the output.

    One table: output = round(TABLE(x, entries[0]) * 2**-shift) + zero point. Two tables (a high and
    a low part of the function times 2**(shift - 7)): TOSA's interpolation is linear in the entries,
    so 256 * TABLE(x, high) + TABLE(x, low) interpolates the function with 8 more fraction bits
    than one i16 table can hold; output = round(that * 2**-shift) + zero point."""

    entries: tuple[np.ndarray, ...]  # one or two int16 [513] arrays (high part first)
    shift: int
    worst: int  # the largest |output - source result| over all 65536 inputs
    misses: int  # how many of the 65536 inputs differ from the source result

    def raw(self) -> np.ndarray:
        """The i32 value the tables give (before the output RESCALE) for every input."""
        values = [_interpolate_i16(e.astype(np.int64)) for e in self.entries]
        return values[0] if len(values) == 1 else values[0] * 256 + values[1]


def table_i16(fn: RealFunction, x: QInfo, y: QInfo, want: np.ndarray | None = None) -> Table16:
    """TABLE entries for an i16 input, computed from the source semantics, and how well they do.

    TOSA interpolates 513 entries linearly between every 128th input. One table holds the exact
    results at those inputs, rounded (times 2**k when the outputs leave i16 headroom); when it does
    not give the target integers for every one of the 65536 inputs - `want` (the results of
    LiteRT's kernel, lowering/fixed_point/litert_kernels.py), by default encode(fn(decode(v))), the integers
    Arm NN computes - a high/low pair of tables (8 more fraction bits) is tried. Returned: the one
    with fewer misses, with its worst error and miss count over all inputs. Given `want`, a table of
    the target integers at the knots (which TFLite's own int16 LUTs reproduce exactly) is tried too."""
    inputs = np.arange(-32768, 32768)
    given = want is not None
    with np.errstate(all="ignore"):
        if want is None:
            want = encode(np.asarray(fn(decode(inputs, x)), dtype=np.float32), y)
        want = np.asarray(want, np.int64) - y.zero_point  # [65536]
        knots = np.arange(-32768, 32768 + 1, 128)
        real_knots = np.asarray(fn(decode(knots, x)), dtype=np.float64)
    lo, hi = y.qmin - y.zero_point, y.qmax - y.zero_point
    exact = np.clip(np.where(np.isfinite(real_knots), real_knots / y.scale, 0.0), lo, hi)
    reach = max(float(np.max(np.abs(exact))), float(np.max(np.abs(np.diff(exact)))), 1.0)

    def judged(entries: tuple[np.ndarray, ...], shift: int) -> Table16:
        table = Table16(tuple(e.astype(np.int16) for e in entries), shift, 0, 0)
        error = np.abs(np.clip(_round_shift(table.raw(), shift), lo, hi) - want)
        return Table16(table.entries, shift, int(error.max()), int((error != 0).sum()))

    k = 0
    while k < 8 and reach * 2 ** (k + 1) <= 32767:
        k += 1
    best = judged((np.round(exact * 2 ** k).astype(np.int64),), 7 + k)
    if best.misses == 0:
        return best
    if given:  # a kernel interpolating its own 513-entry table (TFLite's int16 LUTs) outputs its entries at the knots
        own = judged((np.append(want[::128], _last_knot(want)),), 7)
        if own.misses == 0:
            return own
    bits = 8  # entries of the pair: high = scaled >> 8 (|high| <= 32767), low = scaled & 255
    while bits < 16 and reach * 2 ** (bits + 1) < 1 << 23:
        bits += 1
    scaled = np.round(exact * 2 ** bits).astype(np.int64)
    pair = judged((scaled >> 8, scaled & 0xFF), 7 + bits)
    return pair if (pair.misses, pair.worst) < (best.misses, best.worst) else best


def _last_knot(want: np.ndarray) -> int:
    """The end knot (input 32768, outside i16) that makes TOSA's interpolation of the last segment, rounded
    half up, give `want` on it: a slope s with floor((s * f + 64) / 128) == want[f] - want[0] for all f."""
    base, f = int(want[-128]), np.arange(1, 128)
    rise = np.asarray(want[-127:], np.int64) - base
    low = int(np.max(-((64 - 128 * rise) // f)))  # ceil((128 rise - 64) / f)
    high = int(np.min((128 * rise + 63) // f))
    slope = low if low <= high else int(round(float(rise[-1]) * 128 / 127))
    return int(np.clip(base + slope, -32768, 32767))


def source_results(fn: RealFunction, x: QInfo, y: QInfo) -> np.ndarray:
    """encode(fn(decode(v))) for every carried input v of x's type, in order (the exact table)."""
    lo, hi = x.qmin, x.qmax
    with np.errstate(all="ignore"):
        return encode(np.asarray(fn(decode(np.arange(lo, hi + 1), x)), np.float32), y)

