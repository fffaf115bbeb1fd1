"""Issue #38, point 5: every number report.md and sweep.md state is the number of their tables,
recomputed here from curves.csv alone.

Over generated scenarios (platform presets and research policies; money, price tiers, a
platform fee, gold questions, abandonment; sweeps), the study runs through the command line,
then this module reads curves.csv with the csv module and recomputes — with scipy's own
Student-t, not marketsim's statistics — each replicate's end, the means and 95 % intervals,
each replicate's labels-to-target and the paired differences, and checks against them: the
Arms table, the runs that ended under budget (table and sentences), the error at the
checkpoints, the "In short" sentences (winner, ties, "no difference detectable", "about N would
be needed", the comparison with the baseline), the paired comparisons (table cells, bold, and
the verdict sentences), sweep.md's table and stop sentences and sweep.csv's final and
difference columns. A few small examples run in the default loop; ``-m slow`` runs many."""

from __future__ import annotations

import csv
import math
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from scipy import stats

from marketsim.cli import main
from tests.report._recompute import (
    NUMBER,
    Paired,
    Rows,
    at_labels,
    check_error_cell,
    close,
    ends,
    interval,
    numbers,
    reach,
    read_curves,
    sections,
    table_rows,
    unlinked,
)

# ----------------------------------------------------------------------------- scenarios


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return repr(v)


def toml_text(doc: dict[str, Any]) -> str:
    """A scenario document as TOML: tables of scalars (dotted sub-tables), ``[[arms]]``."""
    out: list[str] = []

    def table(name: str, body: dict[str, Any]) -> None:
        out.append(f"[{name}]")
        subs = {k: v for k, v in body.items() if isinstance(v, dict) and name != "sweep"}
        out.extend(f"{k} = {_toml_value(v)}" for k, v in body.items() if k not in subs)
        out.append("")
        for k, v in subs.items():
            table(f"{name}.{k}", v)

    for name, body in doc.items():
        if name != "arms":
            table(name, body)
    for arm in doc["arms"]:
        out.extend(["[[arms]]", *(f"{k} = {_toml_value(v)}" for k, v in arm.items()), ""])
    return "\n".join(out)


POLICIES: list[Any] = ["uniform", "entropy-greedy", "until-agreement", "dynamic-overlap",
                       {"name": "fixed-overlap", "overlap": 2},
                       {"name": "fixed-overlap", "overlap": 3}]


@st.composite
def scenarios(draw: st.DrawFn, sweeps: bool = True) -> dict[str, Any]:
    """A small class market with two or three arms, each mechanic on or off."""
    n, m = draw(st.integers(10, 20)), draw(st.integers(4, 6))
    policies = draw(st.lists(st.sampled_from(range(len(POLICIES))), min_size=2, max_size=3,
                             unique=True))
    workers: dict[str, Any] = {"count": m, "ability": {
        "distribution": "shifted-beta", "alpha": 4, "beta": 2, "low": 0.3}}
    price = 1.0
    if draw(st.booleans()):
        workers["tiers"] = {"cuts": [0.75], "prices": [1.0, 2.0], "noise": 0.05}
        price = 2.0
    if draw(st.booleans()):
        workers["service"] = {"mean": 0.5, "abandon": draw(st.sampled_from([0.0, 0.1]))}
    edges = draw(st.integers(2 * n, 3 * n))
    budget: dict[str, Any] = {"edges": edges, "initial": "one-per-task",
                              "batch": draw(st.integers(4, 8))}
    fee = draw(st.sampled_from([0.0, 0.2]))
    if fee:
        budget["fee"] = fee
    if draw(st.booleans()):  # money that may run out before the labels
        budget["money"] = round(draw(st.floats(1.3, 2.5)) * n * price * (1 + fee), 2)
    doc: dict[str, Any] = {
        "scenario": {"name": "property", "seed": draw(st.integers(0, 2**16)),
                     "replicates": draw(st.integers(2, 3))},
        "tasks": {"count": n, "classes": 2},
        "workers": workers,
        "budget": budget,
        "report": {"targets": [0.3, 0.1]},
        "arms": [{"name": f"arm {i}", "policy": POLICIES[p],
                  "inference": draw(st.sampled_from(["mv", "one-coin"]))}
                 for i, p in enumerate(policies)],
    }
    if draw(st.booleans()):
        doc["gold"] = {"count": 3, "rate": 0.1}
    if sweeps and draw(st.booleans()):
        doc["sweep"] = {"budget.fee": [0.0, 0.25]} if draw(st.booleans()) else {
            "workers.count": [m, m + 1]}
    return doc


def run_study(doc: dict[str, Any], tmp: Path, *, generated: bool = True) -> Path:
    path = tmp / "s.toml"
    path.write_text(toml_text(doc), encoding="utf-8")
    out = tmp / "run"
    code = main(["run", str(path), "--out", str(out), "--quiet", "--no-figures", "--jobs", "1"])
    if generated:
        assume(code == 0)  # a market the simulator refuses or cannot finish is another test's
    assert code == 0
    return out


# ----------------------------------------------------------------------------- the checks


def check_report(folder: Path, doc: dict[str, Any]) -> None:
    rows = read_curves(folder / "curves.csv")
    report = (folder / "report.md").read_text(encoding="utf-8")
    secs = sections(report)
    names = [a["name"] for a in doc["arms"]]
    budget = int(doc["budget"]["edges"])
    _check_arms(rows, secs["Arms"], names, budget)
    _check_under_budget(rows, secs.get("Runs that ended under budget", []), budget)
    _check_checkpoints(rows, secs["Error at budget checkpoints"])
    targets = sorted(doc["report"]["targets"], reverse=True)
    _check_in_short(rows, secs[""], names, targets)
    costs = next((v for k, v in secs.items() if k.endswith("to reach each target")), [])
    for head, column in (("Least money", "money"), ("Least simulated time", "sim_time")):
        if any(ln.startswith(head) for ln in costs):  # the same sentences, in money (time)
            start = next(i for i, ln in enumerate(costs) if ln.startswith(head))
            end = next(i for i, ln in enumerate(costs) if i > start + 2 and not ln.strip())
            _check_in_short(rows, costs[start:end], names, targets, column)
    _check_paired(rows, next(v for k, v in secs.items()
                             if k.startswith("Paired comparisons against")), names)


def _check_arms(rows: Rows, lines: list[str], names: list[str], budget: int) -> None:
    for cells in table_rows(lines)[2:]:
        arm = cells[0]
        last = ends(rows, arm)
        labels = interval([r["edges"] for r in last.values()], 0.0, budget)
        found = numbers(cells[4])
        close(found[0], labels[0])
        if len(found) > 1:
            close(found[1], labels[1])
            close(found[2], labels[2])
        else:  # one number: every replicate ended there
            assert len({r["edges"] for r in last.values()}) == 1, cells
        check_error_cell(cells[5], *interval([r["error_rate"] for r in last.values()], 0, 1))
    assert [c[0] for c in table_rows(lines)[2:]] == names


def _listed(text: str) -> list[int]:
    return [int(x.replace(",", "")) for x in re.split(r", | and ", text)]


def _check_under_budget(rows: Rows, lines: list[str], budget: int) -> None:
    early = {arm: sum(r["edges"] < budget for r in ends(rows, arm).values()) for arm in rows}
    if not lines:
        assert not any(early.values()), early
        return
    for line in lines:
        m = re.match(r"- \*(.+?)\*: .*? at ([\d, and]+) labels.*? in replicates? ([\d, and]+) "
                     r"of (\d+)", line)
        if m:  # each replicate named stopped where its curve ends
            last = ends(rows, m[1])
            for labels, rep in zip(_listed(m[2]), _listed(m[3]), strict=True):
                assert last[rep]["edges"] == labels, line
            assert int(m[4]) == len(last)
    for cells in table_rows(lines)[2:]:
        arm, last = cells[0], ends(rows, cells[0])
        assert cells[1] == f"{early[arm]} of {len(last)}"
        for cell, column, low, high in ((cells[2], "edges", 0, budget),
                                        (cells[3], "money", 0, math.inf),
                                        (cells[4], "error_rate", 0, 1)):
            if cell == "—":
                continue
            want = interval([r[column] for r in last.values()], low, high)
            for text, value in zip(numbers(cell), want, strict=False):
                close(text, value)


def _check_checkpoints(rows: Rows, lines: list[str]) -> None:
    table = table_rows(lines)
    head = [int(h.replace(",", "")) for h in table[0][1:]]
    for cells in table[2:]:
        for e, cell in zip(head, cells[1:], strict=True):
            errors = at_labels(rows, cells[0], e)
            assert len(errors) == len(rows[cells[0]])  # every replicate reached it
            check_error_cell(cell, *interval(list(errors.values()), 0, 1))


def _means(rows: Rows, target: float, column: str = "edges") -> dict[str, float | None]:
    """Per arm: the replicates' mean labels-to-target, None unless every replicate reached."""
    out: dict[str, float | None] = {}
    for arm in rows:
        values = list(reach(rows, arm, target, column).values())
        out[arm] = None if None in values else float(np.mean(values))
    return out


def _check_in_short(rows: Rows, lines: list[str], names: list[str],
                    targets: list[float], column: str = "edges") -> None:
    """The sentences of "In short" (labels) or of "Least money to each target"."""
    fewer = {"edges": "fewer labels", "money": "less money",
             "sim_time": "less simulated time"}[column]
    items = [ln for ln in lines if ln.startswith("- ")]
    assert len(items) == len(targets), items
    for line, target in zip(items, targets, strict=True):
        means = _means(rows, target, column)
        if line.startswith("- No arm reached"):
            assert all(v is None for v in means.values()), (line, means)
            continue
        best = re.search(r"\*\*: (?:only )?\*(.+?)\*", line)
        assert best, line
        name = best[1]
        assert means[name] is not None and means[name] == min(
            v for v in means.values() if v is not None), (line, means)
        per = {a: reach(rows, a, target, column) for a in rows}
        others = [a for a in names if a != name and means[a] is not None]
        if f"needs detectably {fewer} than every other arm" in line:
            m = re.search(rf"({NUMBER}) on average", line)
            assert m
            close(m[1], means[name])
            for other in others:
                cmp = Paired(per[name], per[other])
                assert cmp.detected and cmp.mean < 0, (line, other)
        elif "but no difference from" in line:
            m = re.search(rf"on average \(({NUMBER})\)", line)
            assert m
            close(m[1], means[name])
            close_part = line.split("but no difference from ", 1)[1].split(" is detectable")[0]
            named = re.findall(rf"\*(.+?)\* \(({NUMBER})\)", close_part)
            assert named, line
            pairs = [Paired(per[name], per[o]) for o, _ in named]
            for (other, value), cmp in zip(named, pairs, strict=True):
                close(value, means[other])
                assert not cmp.detected, (line, other)
            for other in others:
                if other not in dict(named):
                    assert Paired(per[name], per[other]).detected, (line, other)
            m = re.search(r"detectable with (\d+) replicates?", line)
            if m:
                assert int(m[1]) == min(c.n for c in pairs)
            m = re.search(r"about (\d+) would be needed", line)
            if m:
                needed = [c.needed() for c in pairs]
                if None not in needed:
                    assert int(m[1]) == max(n for n in needed if n), (line, needed)
        elif " tie with " in line:
            tied = re.findall(r"\*([^*]+?)\*(?:,| tie)", line.split(" tie with ")[0] + " tie")
            for arm in tied:
                assert means[arm] == means[name], (line, arm)
        for names_, where in re.findall(r"; ((?:\*[^*]+\*(?:, )?)+) did not reach it "
                                        r"(within the budget|in every replicate)", line):
            for arm in re.findall(r"\*(.+?)\*", names_):
                got = [v is not None for v in reach(rows, arm, target, column).values()]
                assert not all(got) and any(got) == (where == "in every replicate"), line
        against = re.search(r"; against \*(.+?)\*: (.*)\.$", line)
        if against:
            cmp = Paired(per[name], per[against[1]])
            text = against[2]
            if "no difference detectable" in text:
                assert not cmp.detected
            elif "paired 95 % interval" in text:
                found = numbers(text.replace("95 %", ""))  # the level is not a figure
                assert cmp.detected
                close(found[0], abs(cmp.mean))
                close(found[1], cmp.low)
                close(found[2], cmp.high)
                assert ("fewer" in text) == (cmp.mean < 0)


def _check_diff_cell(cell: str, cmp: Paired) -> None:
    """``**+7.22 pt [+4.83 pt, +9.61 pt]**``: mean and interval in points, bold iff detected."""
    if cell == "—":
        assert cmp.n == 0
        return
    found = numbers(cell)
    close(found[0], cmp.mean, 100)
    if cmp.low is not None:
        close(found[1], cmp.low, 100)
        close(found[2], cmp.high, 100)
    assert cell.startswith("**") == cmp.detected, (cell, cmp.d)


def _check_verdict(text: str, cmp: Paired) -> None:
    if "no difference detectable" in text:
        assert not cmp.detected, (text, cmp.d)
        m = re.search(r"with (\d+) replicates", text)
        assert m and int(m[1]) == cmp.n
        m = re.search(r"about (\d+) would be needed", text)
        if m and cmp.needed() is not None:
            assert int(m[1]) == cmp.needed(), (text, cmp.d)
    elif " is better than " in text or " is worse than " in text:
        assert cmp.detected, (text, cmp.d)
        assert (" is better than " in text) == (cmp.mean < 0)
        by = re.search(rf"by ({NUMBER}) pt", text)
        assert by
        close(by[1], abs(cmp.mean), 100)
        m = re.search(rf"interval ({NUMBER}) pt to ({NUMBER}) pt, p = ([\d.e-]+), (\d+) "
                      "replicates", text)
        if m:
            close(m[1], cmp.low, 100)
            close(m[2], cmp.high, 100)
            assert int(m[4]) == cmp.n
            with warnings.catch_warnings():  # nearly constant differences
                warnings.simplefilter("ignore", RuntimeWarning)
                p = stats.ttest_1samp(cmp.d, 0.0).pvalue
            assert abs(float(m[3]) - p) <= max(0.051 * p, 1e-12), (text, p)


def _check_paired(rows: Rows, lines: list[str], names: list[str]) -> None:
    ref = re.search(r"against \*(.+)\*", lines[0])
    assert ref
    reference = ref[1]
    # the first table only: the section also holds the labels-to-target and the money and time
    # differences, whose tables may have as many columns
    start = next(i for i, ln in enumerate(lines) if ln.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    table = table_rows(lines[start:end])
    head = table[0][1:]
    for cells in (r for r in table[2:] if r[0] in rows and len(r) == len(head) + 1):
        arm = cells[0]
        for h, cell in zip(head, cells[1:], strict=True):
            if h == "end of each run":
                cmp = Paired({k: r["error_rate"] for k, r in ends(rows, arm).items()},
                             {k: r["error_rate"] for k, r in ends(rows, reference).items()},
                             (-1, 1))
            elif h.replace(",", "").isdigit():
                e = int(h.replace(",", ""))
                cmp = Paired(at_labels(rows, arm, e), at_labels(rows, reference, e), (-1, 1))
            else:
                break  # the labels-to-target table has its own head
            _check_diff_cell(cell, cmp)
    for line in lines:
        m = re.match(r"- at (?:([\d,]+) labels|the end of each run): (.+?)(?: is | vs )", line)
        if not m:
            continue
        arm = m[2]
        if m[1]:
            e = int(m[1].replace(",", ""))
            cmp = Paired(at_labels(rows, arm, e), at_labels(rows, reference, e), (-1, 1))
        else:
            cmp = Paired({k: r["error_rate"] for k, r in ends(rows, arm).items()},
                         {k: r["error_rate"] for k, r in ends(rows, reference).items()},
                         (-1, 1))
        _check_verdict(line, cmp)


def check_sweep(out: Path, doc: dict[str, Any]) -> None:
    keys = list(doc["sweep"])
    targets = sorted(doc["report"]["targets"], reverse=True)
    with open(out / "sweep.csv", newline="", encoding="utf-8") as handle:
        recs = list(csv.DictReader(handle))
    md = unlinked((out / "sweep.md").read_text(encoding="utf-8"))
    md_rows = {(c[len(keys)], tuple(c[:len(keys)])): c
               for c in table_rows(md.splitlines())[2:]}
    for rec in recs:
        folder = out / rec["point"]
        rows = read_curves(folder / "curves.csv")
        arm, reference = rec["arm"], rec["reference"]
        last = ends(rows, arm)
        mean, low, high = interval([r["error_rate"] for r in last.values()], 0, 1)
        assert float(rec["final_error"]) == pytest.approx(mean, abs=1e-12)
        if low is not None:
            assert float(rec["final_error_low"]) == pytest.approx(low, abs=1e-12)
            assert float(rec["final_error_high"]) == pytest.approx(high, abs=1e-12)
        for column, name in (("edges", "final_edges"), ("money", "final_money"),
                             ("sim_time", "final_time")):
            want = float(np.mean([r[column] for r in last.values()]))
            assert float(rec[name]) == pytest.approx(want, rel=1e-9), name
        if arm != reference:
            cmp = Paired({k: r["error_rate"] for k, r in last.items()},
                         {k: r["error_rate"] for k, r in ends(rows, reference).items()},
                         (-1, 1))
            assert float(rec["diff_final_error_mean"]) == pytest.approx(cmp.mean, abs=1e-12)
            if cmp.low is not None:
                assert float(rec["diff_final_error_low"]) == pytest.approx(cmp.low, abs=1e-12)
                assert float(rec["diff_final_error_high"]) == pytest.approx(cmp.high, abs=1e-12)
        values = tuple(c for c in md_rows if c[0] == arm and all(
            v.replace(" ", "") in (rec[k].replace(" ", ""), f"{float(rec[k]):g}")
            for v, k in zip(c[1], keys, strict=True)))
        assert len(values) == 1, (rec, list(md_rows))
        cells = md_rows[values[0]]
        close(cells[len(keys) + 1], mean)
        for cell, target in zip(cells[len(keys) + 2:], targets, strict=True):
            per = reach(rows, arm, target)
            if None in per.values():
                got = sum(v is not None for v in per.values())
                assert cell == "—" if not got else f"({got}/{len(per)} reached)" in cell, cell
            else:
                want = interval(list(per.values()), 0.0)  # type: ignore[arg-type]
                for text, value in zip(numbers(cell), want, strict=False):
                    close(text, value)
    for line in md.splitlines():
        m = re.match(r"- (points/p\d+) \(.*?\), \*(.+?)\*: .*? at ([\d, and]+) labels.*? in "
                     r"replicates? ([\d, and]+) of", line)
        if m:
            last = ends(read_curves(out / m[1] / "curves.csv"), m[2])
            for labels, rep in zip(_listed(m[3]), _listed(m[4]), strict=True):
                assert last[rep]["edges"] == labels, line


def check_run(out: Path, doc: dict[str, Any]) -> None:
    if "sweep" in doc:
        check_sweep(out, doc)
        for folder in sorted((out / "points").glob("p*")):
            check_report(folder, doc)
    else:
        check_report(out, doc)


SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much])


def _doc(arms: list[Any], **mechanics: Any) -> dict[str, Any]:
    """A fixed example of :func:`scenarios`' shape."""
    doc: dict[str, Any] = {
        "scenario": {"name": "example", "seed": 29, "replicates": 3},
        "tasks": {"count": 16, "classes": 2},
        "workers": {"count": 5, "ability": {"distribution": "shifted-beta", "alpha": 4,
                                            "beta": 2, "low": 0.3}},
        "budget": {"edges": 48, "initial": "one-per-task", "batch": 5},
        "report": {"targets": [0.3, 0.1]},
        "arms": [{"name": f"arm {i}", "policy": a, "inference": "mv"}
                 for i, a in enumerate(arms)]}
    for key, value in mechanics.items():
        table, name = key.split("__")
        doc.setdefault(table, {})[name] = value
    return doc


#: Presets that stop early, with tiers, a fee, money that runs out and gold; presets with
#: abandonment: always run, beside the generated examples.
EXAMPLES = [
    _doc(["uniform", "until-agreement", {"name": "fixed-overlap", "overlap": 2}],
         workers__tiers={"cuts": [0.75], "prices": [1.0, 2.0], "noise": 0.05},
         budget__fee=0.2, budget__money=60.0, gold__count=3, gold__rate=0.1),
    _doc(["entropy-greedy", "dynamic-overlap", {"name": "fixed-overlap", "overlap": 3}],
         workers__service={"mean": 0.5, "abandon": 0.1}),
]


@settings(max_examples=2, **SETTINGS)  # type: ignore[arg-type]
@given(doc=scenarios(sweeps=False))
@example(doc=EXAMPLES[0])
@example(doc=EXAMPLES[1])
def test_report_numbers_are_the_tables_and_the_curves(doc: dict[str, Any],
                                                      tmp_path_factory: pytest.TempPathFactory
                                                      ) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    check_run(run_study(doc, tmp), doc)


def test_a_sweep_of_presets_states_its_tables_numbers(tmp_path: Path) -> None:
    """One fixed sweep in the default loop: a preset that stops early against uniform, money
    and a fee, so sweep.md's final errors and stops and sweep.csv's final and difference
    columns are checked on every run of the suite."""
    doc = {"scenario": {"name": "sweep", "seed": 3, "replicates": 3},
           "tasks": {"count": 14, "classes": 2},
           "workers": {"count": 5, "ability": {"distribution": "shifted-beta", "alpha": 4,
                                               "beta": 2, "low": 0.3}},
           "budget": {"edges": 42, "initial": "one-per-task", "batch": 4, "fee": 0.2},
           "report": {"targets": [0.3, 0.1]},
           "sweep": {"workers.count": [5, 6]},
           "arms": [{"name": "uniform", "policy": "uniform", "inference": "mv"},
                    {"name": "until agreement", "policy": "until-agreement",
                     "inference": "mv"}]}
    out = run_study(doc, tmp_path, generated=False)
    check_run(out, doc)
    assert "closed every task" in (out / "sweep.md").read_text(encoding="utf-8")


@pytest.mark.slow
@settings(max_examples=40, **SETTINGS)  # type: ignore[arg-type]
@given(doc=scenarios())
def test_report_numbers_are_the_tables_and_the_curves_many(
        doc: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    check_run(run_study(doc, tmp), doc)
