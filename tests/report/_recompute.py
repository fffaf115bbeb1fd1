"""Independent recomputation for the report property test
(``test_report_numbers_property.py``): ``curves.csv`` read with the csv module, each replicate's
end, means and Student-t intervals with scipy's own t quantiles, labels-to-target and paired
differences as the documented rules define them — none of it marketsim's code — and the
reading of report text (numbers to the digits printed, sections, tables)."""

from __future__ import annotations

import csv
import math
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats

Rows = dict[str, dict[int, list[dict[str, float]]]]  # arm -> replicate -> rows by labels
NUMBER = r"[+-]?[\d,]*\.?\d+"

# ----------------------------------------------------------------------------- recomputation


def read_curves(path: Path) -> Rows:
    rows: Rows = defaultdict(lambda: defaultdict(list))
    with open(path, newline="", encoding="utf-8") as handle:
        for rec in csv.DictReader(handle):
            rows[rec["arm"]][int(rec["replicate"])].append(
                {k: float(v) if v not in ("", None) else math.nan for k, v in rec.items()
                 if k not in ("arm", "replicate")})
    for reps in rows.values():
        for curve in reps.values():
            curve.sort(key=lambda r: r["edges"])
    return rows


def interval(values: list[float], low: float = -math.inf,
             high: float = math.inf) -> tuple[float, float | None, float | None]:
    """Mean and 95 % Student-t interval, clipped to [low, high] (no interval for one value)."""
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return float(v.mean()), None, None
    half = stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return float(v.mean()), max(v.mean() - half, low), min(v.mean() + half, high)


def ends(rows: Rows, arm: str) -> dict[int, dict[str, float]]:
    return {rep: curve[-1] for rep, curve in rows[arm].items()}


def at_labels(rows: Rows, arm: str, edges: int) -> dict[int, float]:
    return {rep: r["error_rate"] for rep, curve in rows[arm].items() for r in curve
            if r["edges"] == edges}


def to_target(curve: list[dict[str, float]], target: float) -> dict[str, float] | None:
    """The row after which the replicate's error stays at or below ``target``."""
    for i in range(len(curve)):
        if all(r["error_rate"] <= target for r in curve[i:]):
            return curve[i]
    return None


def reach(rows: Rows, arm: str, target: float, column: str = "edges") -> dict[int, float | None]:
    out = {}
    for rep, curve in rows[arm].items():
        row = to_target(curve, target)
        out[rep] = None if row is None else row[column]
    return out


class Paired:
    """``a`` minus ``b`` over the replicates where both have a value."""

    def __init__(self, a: dict[int, float | None], b: dict[int, float | None],
                 bounds: tuple[float, float] = (-math.inf, math.inf)) -> None:
        reps = sorted(r for r in set(a) & set(b) if a[r] is not None and b[r] is not None)
        self.d = np.asarray([a[r] - b[r] for r in reps], dtype=float)  # type: ignore[operator]
        self.n = self.d.size
        self.mean, self.low, self.high = interval(list(self.d), *bounds) if self.n else (
            math.nan, None, None)
        self.spread = float(self.d.std(ddof=1)) if self.n >= 2 else math.nan

    @property
    def no_spread(self) -> bool:
        """Every pair differs by the same amount (up to rounding)."""
        return self.n >= 2 and self.mean != 0 and (
            self.spread / math.sqrt(self.n) <= 1e-12 * max(1.0, abs(self.mean)))

    @property
    def detected(self) -> bool:
        if self.no_spread:
            return 2 * 0.5 ** self.n < 0.05
        return self.n >= 2 and self.low is not None and (self.low > 0 or self.high < 0)

    def needed(self) -> int | None:
        """The fewest replicates whose paired t-test detects the mean at 80 % power."""
        if self.n < 2 or self.mean == 0:
            return None
        if self.spread <= 1e-12 * abs(self.mean):
            return 2
        for n in range(2, 1001):
            t = stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)
            if t * self.spread / math.sqrt(n) <= abs(self.mean):
                return n
        return None  # beyond the exact search: not checked


# ----------------------------------------------------------------------------- reading text


def close(text: str, value: float | None, scale: float = 1.0) -> None:
    """The printed ``text`` is ``value`` (times ``scale``) to the digits it shows."""
    assert value is not None, text
    s = text.replace(",", "").replace("+", "").replace("−", "-").strip()
    digits = len(s.split(".")[1]) if "." in s else 0
    tol = 0.5 * 10.0 ** -digits + 1e-9 * max(1.0, abs(value * scale))
    if "e" in s.lower():  # a .4g verdict number
        tol = abs(float(s)) * 5e-4
    assert abs(float(s) - value * scale) <= tol, (text, value * scale)


def numbers(text: str) -> list[str]:
    return re.findall(NUMBER, text)


def unlinked(text: str) -> str:
    """``text`` without the glossary's links (a term keeps its words)."""
    return re.sub(r"\[([^\]]+)\]\(glossary\.md#[^)]+\)", r"\1", text)


def sections(report: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    name = ""
    for line in unlinked(report).splitlines():
        if line.startswith("## "):
            name = line[3:]
        out[name].append(line)
    return out


def table_rows(lines: list[str]) -> list[list[str]]:
    rows = [ln for ln in lines if ln.startswith("|")]
    return [[c.strip() for c in re.split(r"(?<!\\)\|", r)[1:-1]] for r in rows]


def check_error_cell(cell: str, mean: float, low: float | None, high: float | None,
                     percent: bool = True) -> None:
    """``12.34 % [8.10, 16.58]`` (or ``[—]``) is the mean and its clipped interval."""
    scale = 100.0 if percent else 1.0
    found = numbers(cell.replace("—", ""))
    if mean == 0 and cell.startswith("0 %"):
        found[0] = "0"
    close(found[0], mean, scale)
    if low is None:
        assert "[—]" in cell or len(found) == 1, cell
    else:
        close(found[1], low, scale)
        close(found[2], high, scale)
