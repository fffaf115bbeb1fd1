"""The claims of ``report.md``: which arms need the fewest labels to each target, and the paired
comparisons against the reference arm. A claim that one arm beats another is made only when
the paired 95 % interval of their per-replicate differences excludes zero (arms share their
worlds replicate by replicate); otherwise the report says no difference is detectable with
the replicates run, and roughly how many would be needed."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from marketsim.record.metric import Metric
from marketsim.record.stats import PairedComparison, paired_comparison
from marketsim.record.summary import targets_of
from marketsim.record.summary_model import ArmSummary, Checkpoint, Difference, Summary
from marketsim.report.arm_text import ArmSpec, method_name, policy_name
from marketsim.report.formatting import count_of, num, signed, table

Arms = Mapping[str, ArmSummary]
BASELINE_POLICY = "uniform"


def baseline(name: str, specs: Mapping[str, ArmSpec], arms: Sequence[str]) -> str | None:
    """The uniform arm with the same inference method as ``name``, else the first uniform arm."""
    uniform = [a for a in arms if policy_name(specs.get(a)) == BASELINE_POLICY]
    if not uniform:
        return None
    method = method_name(specs.get(name))
    same = [a for a in uniform if method_name(specs.get(a)) == method]
    return (same or uniform)[0]


@dataclass(frozen=True)
class Reach:
    """One axis of "to reach a target" as ``report.md`` reads and words it."""

    #: ``summary.json`` key prefix: ``edges``, ``money`` or ``time``.
    axis: str
    #: e.g. "fewer labels" / "less money"
    fewer: str
    #: e.g. "the fewest labels" / "the least money"
    fewest: str
    #: a value as printed in a sentence
    fmt: Callable[[float | None], str]
    #: a value with its unit: "9,600 labels"
    amount: Callable[[float], str]
    #: after "No arm reached 1 % error": where it was not reached
    missing: str

    def value(self, arm: ArmSummary, key: str) -> float | None:
        """The arm's figure for target ``key``: the mean of the replicates' own labels (money,
        time) to reach it, None unless every replicate reached it — the per-replicate values
        the paired comparisons are computed from, so a ranking by it never contradicts them
        (the mean curve's labels-to-target is another statistic, shown in its own column)."""
        ci = arm.to_reach_ci95(self.axis).get(key)
        return float(ci.mean) if ci is not None and ci.mean is not None else None


#: A paired difference in money or simulated time as printed.
DIFF_FORMATS: dict[str, Callable[[float], str]] = {"money": "{:+,.2f}".format,
                                                   "time": "{:+,.1f}".format}


def money(x: float | None) -> str:
    """An amount of money: ``1,234.50`` (``—`` when unknown)."""
    return "—" if x is None or not np.isfinite(x) else f"{x:,.2f}"


def sim_time(x: float | None) -> str:
    """A simulated duration: ``1,234.5`` (``—`` when unknown)."""
    return "—" if x is None or not np.isfinite(x) else f"{x:,.1f}"


LABELS = Reach("edges", "fewer labels", "the fewest labels", num, lambda x: f"{num(x)} labels",
               "in every replicate")
MONEY = Reach("money", "less money", "the least money", money, lambda x: f"{money(x)} in money",
              "in every replicate")
TIME = Reach("time", "less simulated time", "the least simulated time", sim_time,
             lambda x: f"{sim_time(x)} in simulated time", "in every replicate")


def reach_comparison(arms: Arms, name: str, other: str, key: str,
                     reach: Reach = LABELS) -> PairedComparison:
    """``name`` minus ``other`` in labels (money, time) to target ``key``, paired by
    replicate."""
    def by_rep(arm: ArmSummary) -> dict[int, float]:
        values = arm.to_reach_replicates(reach.axis).get(key, [])
        return {r: (np.nan if v is None else float(v))
                for r, v in zip(arm.replicate_ids, values, strict=False)}

    mine, theirs = by_rep(arms[name]), by_rep(arms[other])
    reps = sorted(set(mine) & set(theirs))
    return paired_comparison(name, other, [mine[r] for r in reps], [theirs[r] for r in reps])


def _fewest(arms: Arms, names: Sequence[str], key: str, reach: Reach
            ) -> tuple[str, str, list[str]] | None:
    """The sentence naming the arms with the fewest labels (least money, time) to target
    ``key``, a winner only when it needs detectably less than every other arm; with the best
    arm and the arms tied with it. None when no arm has a figure."""
    reached = sorted((v, n) for n in names if (v := reach.value(arms[n], key)) is not None)
    if not reached:
        return None
    best_value, best = reached[0]
    ties = [n for v, n in reached if v == best_value]
    others = [n for n in names if n not in ties and reach.value(arms[n], key) is not None]
    missed = [n for n in names if reach.value(arms[n], key) is None]
    cmps = [reach_comparison(arms, best, o, key, reach) for o in others]
    undetected = [c for c in cmps if not c.detected]
    beaten = [c for c in cmps if c.detected and c.difference.mean > 0]
    if beaten:  # arms with different replicates (a partial run): the pairs decide
        text = (f"*{best}* needs {reach.fewest} on average ({reach.fmt(best_value)}), but on "
                "the replicates both ran " + ", ".join(
                    f"*{c.reference}* needs detectably {reach.fewer} "
                    f"({_interval_text(c, reach)})" for c in beaten))
    elif len(ties) > 1:
        text = (f"{', '.join(f'*{n}*' for n in ties)} tie with {reach.amount(best_value)} "
                "on average")
    elif not others:
        text = f"only *{best}* reached it: {reach.fmt(best_value)} on average"
    elif not undetected:
        text = (f"*{best}* needs detectably {reach.fewer} than every other arm "
                f"{'that reached it' if missed else ''}: {reach.fmt(best_value)} on average"
                ).replace(" :", ":")
    else:
        close = ", ".join(f"*{c.reference}* ({reach.fmt(reach.value(arms[c.reference], key))})"
                          for c in undetected)
        pairs = min(c.difference.n for c in undetected)
        needed = [c.replicates_needed for c in undetected if c.replicates_needed]
        text = f"*{best}* needs {reach.fewest} on average ({reach.fmt(best_value)}), but no "
        if pairs < 2:
            text += (f"difference from {close} can be tested: a paired comparison needs two "
                     f"replicates where both reached it, and there {_were(pairs)}")
        else:
            text += f"difference from {close} is detectable with {count_of(pairs, 'replicate')}"
        if needed and pairs >= 2:
            text += f" (about {max(needed)} would be needed)"
    if missed and len(ties) < len(names):
        text += _missed(arms, missed, key, reach)
    return text, best, ties


def _missed(arms: Arms, missed: Sequence[str], key: str, reach: Reach) -> str:
    """``; *b* did not reach it within the budget; *c* did not reach it in every replicate``:
    the arms with no figure, those no replicate of which reached the target first."""
    def reached(name: str) -> int:
        ci = arms[name].to_reach_ci95(reach.axis).get(key)
        return ci.reached if ci is not None else 0

    groups = (([n for n in missed if not reached(n)], "within the budget"),
              ([n for n in missed if reached(n)], "in every replicate"))
    return "".join(f"; {', '.join(f'*{n}*' for n in names)} did not reach it {where}"
                   for names, where in groups if names)


def _interval_text(cmp: PairedComparison, reach: Reach) -> str:
    """``-128 [-237, -19]``: ``cmp``'s reference minus its arm (the other arm's saving), with
    the paired interval."""
    d = cmp.difference
    fmt = {"edges": signed, **DIFF_FORMATS}[reach.axis]
    return f"{fmt(-d.mean)} [{fmt(-d.high)}, {fmt(-d.low)}]"


def _were(n: int) -> str:
    """``were none`` / ``was one``."""
    return "were none" if n == 0 else "was one" if n == 1 else f"were {n}"


def key_results(arms: Arms, specs: Mapping[str, ArmSpec], names: Sequence[str],
                metric: Metric, reach: Reach = LABELS) -> list[str]:
    """One sentence per target: the arms needing the fewest labels (least money, time), a
    winner named only when it needs detectably less than every other arm, and (labels) the
    comparison with the baseline."""
    out = []
    for t in targets_of(arms):
        key = f"{t:g}"
        found = _fewest(arms, names, key, reach)
        if found is None:
            out.append(f"- No arm reached {metric.target(t)} {reach.missing}.")
            continue
        text, best, ties = found
        text = f"- **{metric.target(t)}**: {text}"
        base = baseline(best, specs, names) if reach is LABELS else None
        # A baseline that missed the target is already named among those that did not reach it.
        if base and base not in ties and reach.value(arms[base], key) is not None:
            text += f"; against *{base}*: {_against(reach_comparison(arms, best, base, key))}"
        out.append(text + ".")
    return out


def _against(cmp: PairedComparison) -> str:
    d = cmp.difference
    if d.n == 0:
        return "no replicate where both reached it, so no comparison"
    if d.n < 2:
        return (f"{LABELS.amount(abs(d.mean))} {'fewer' if d.mean < 0 else 'more'} in the one "
                "replicate where both reached it (no interval)")
    if not cmp.detected:
        return f"no difference detectable with {count_of(d.n, 'replicate')}"
    word = "fewer" if d.mean < 0 else "more"
    return (f"{LABELS.amount(abs(d.mean))} {word} (paired 95 % interval {signed(d.low)} to "
            f"{signed(d.high)})")


def diff_cell(entry: Difference | Checkpoint | None, fmt: Any) -> str:
    """A paired difference as a table cell: ``+120 [+40, +200]``, bold when detected."""
    if entry is None or entry.difference is None:
        return "—"
    text = fmt(entry.difference)
    if entry.low is not None:
        text += f" [{fmt(entry.low)}, {fmt(entry.high)}]"
    return f"**{text}**" if entry.detected else text


def comparisons_section(summary: Summary, names: Sequence[str], metric: Metric,
                        checkpoints: Sequence[int], replicates: int = 2,
                        cost_lines: Sequence[str] = ()) -> list[str]:
    """"Paired comparisons": each arm minus the reference arm on the same worlds (with fewer
    than two ``replicates`` there is no pair to compare, and the text says so); ``cost_lines``,
    the differences in money and time to each target, follow those in labels."""
    comp = summary.comparisons
    ref = comp.reference
    if not ref or not comp.arms:
        return []

    def diff(x: float) -> str:
        return f"{100 * x:+.2f} pt" if metric.percent else f"{x:+.4f}"

    intro = (
        f"Every arm runs on the same worlds as *{ref}* (same tasks, workers and arrivals per "
        "replicate), so each is compared on the per-replicate differences (arm minus "
        f"*{ref}*): their mean and 95 % paired t-interval in brackets. **Bold**: the interval "
        "excludes zero, a difference detected with these replicates; otherwise none can be "
        "claimed. Negative is better (lower error, fewer labels)."
        if replicates >= 2 else
        f"Every arm runs on the same world as *{ref}*, but with one replicate there are no "
        f"replicate pairs: the differences below (arm minus *{ref}*) are those of that one "
        "world, with no interval, and no difference can be claimed (a paired comparison "
        "needs at least two replicates). Negative is better (lower error, fewer labels).")
    lines = [f"## Paired comparisons against *{ref}*", "", intro, ""]
    end = _ends_elsewhere(summary, checkpoints)
    if end:
        lines += ["Some runs did not end at the last label count shown: the last column, *end "
                  "of each run*, pairs each replicate's own final error (at its last point) "
                  "with the reference's on the same replicate.", ""]
    rows = []
    for name in names:
        entry = comp.arms.get(name)
        if entry is None:
            continue
        at = {c.edges: c for c in entry.checkpoints}
        rows.append([name, *(diff_cell(at.get(e), diff) for e in checkpoints),
                     *([diff_cell(entry.final_error, diff)] if end else [])])
    lines += table(["arm \\ labels spent", *(num(e) for e in checkpoints),
                    *(["end of each run"] if end else [])], rows) + [""]
    rows = []
    for name in names:
        entry = comp.arms.get(name)
        if entry is None:
            continue
        rows.append([name, *(diff_cell(entry.to_reach("edges").get(f"{t:g}"),
                                   signed) for t in targets_of(summary.arms))])
    head = ["arm", *(f"difference in labels to {metric.target_short(t)}"
                     for t in targets_of(summary.arms))]
    lines += ["Paired difference in labels needed to reach each target: the mean over the "
              "replicates where both arms reached it of (arm − reference), each replicate's "
              "own labels-to-target; a third figure, neither the mean curve's nor the "
              "replicates' mean of the table above:", "", *table(head, rows), "",
              *cost_lines]
    for name in names:
        entry = comp.arms.get(name)
        if entry is None:
            continue
        at = {c.edges: c for c in entry.checkpoints}
        last = at.get(checkpoints[-1]) if checkpoints else None
        if last is not None:
            lines.append(f"- at {num(last.edges)} labels: {last.verdict}")
        if end and entry.final_error is not None:
            lines.append(f"- at the end of each run: {entry.final_error.verdict}")
    return [*lines, ""]


def _ends_elsewhere(summary: Summary, checkpoints: Sequence[int]) -> bool:
    """Whether some replicate's run did not end at the last of ``checkpoints`` (it stopped
    earlier, or the arms ran different budgets): the final errors are then a comparison of
    their own."""
    if not checkpoints:
        return False
    for arm in summary.arms.values():
        labels = arm.final("edges")
        if labels is None or labels.mean != checkpoints[-1] or (
                labels.low is not None and labels.low != labels.high):
            return True
    return False
