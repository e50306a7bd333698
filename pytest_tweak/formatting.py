"""Numbers as people read them, shared by the terminal, the report files and the command line:
seconds and bytes with their unit, the geometric mean of several runs, a source path, a plain
text table."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence

__all__ = ["format_bytes", "format_seconds", "geometric_mean", "short_path", "text_table"]


def format_seconds(seconds: float) -> str:
    """``0.000123`` -> ``123 us``, ``1.23456e-5`` -> ``12.35 us``: up to four significant
    digits, the unit picked to fit the rounded value (``0.00099996`` -> ``1 ms``)."""
    seconds = float(f"{seconds:.4g}")
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"


def format_bytes(n: int | None) -> str:
    """``1536`` -> ``1.5 KiB``; ``None`` -> ``-``."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.3g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def geometric_mean(values: Sequence[float]) -> float:
    """The geometric mean of positive ``values``: how several runs' medians are combined."""
    if not values:
        raise ValueError("geometric_mean of no values")
    if len(values) == 1:  # exactly the one value, not exp(log(x))
        return values[0]
    return math.exp(sum(math.log(v) for v in values) / len(values))


def text_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """Left-aligned columns two spaces apart, a rule of dashes under the headers."""
    rows = [tuple(r) for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return [fmt(headers), fmt(["-" * w for w in widths]), *(fmt(r) for r in rows)]


def short_path(filename: str | None) -> str:
    """``filename`` relative to the current folder when it lies below it; ``?`` for none."""
    if not filename:
        return "?"
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # another drive on Windows
        return filename
    return filename if relative.startswith("..") else relative
