"""``report.md``: a run's results written for a student — the setup in words, the plot, the
error at a few budget checkpoints, the labels needed to reach 5 % and 1 % error and the saving
against the uniform policy, and what each policy and inference method does."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from marketsim.record.metric import ERROR_RATE, Metric, metric_of
from marketsim.record.summary import TARGETS
from marketsim.report.plots import PNG_NAME, SVG_NAME, PlotInfo

REPORT_NAME = "report.md"
#: Budget checkpoints in the error table (evenly spaced, first and last included).
N_CHECKPOINTS = 5
BASELINE_POLICY = "uniform"


def pct(x: float | None) -> str:
    """An error rate as a percentage with sensible precision (``1.23 %``)."""
    if x is None:
        return "—"
    v = 100.0 * float(x)
    if v == 0:
        return "0 %"
    return f"{v:.2f} %" if v >= 0.1 else f"{v:.2g} %"


def num(x: float | int | None) -> str:
    """An integer with thousands separators (``12,000``), ``—`` for None."""
    return "—" if x is None else f"{int(x):,}"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(head: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> list[str]:
    """A Markdown table; ``align`` holds one of ``l``/``r`` per column (default: first left,
    others right)."""
    align = align or "l" + "r" * (len(head) - 1)
    sep = ["---:" if a == "r" else "---" for a in align]
    out = ["| " + " | ".join(_cell(h) for h in head) + " |", "|" + "|".join(sep) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def checkpoints(arms: Mapping[str, Mapping[str, Any]], n: int = N_CHECKPOINTS) -> list[int]:
    """``n`` recorded edge counts evenly spaced over the run, the first and last included
    (taken from the edges every arm recorded when there are any)."""
    edge_sets = [set(a["edges"]) for a in arms.values() if a.get("edges")]
    if not edge_sets:
        return []
    common = set.intersection(*edge_sets)
    grid = np.asarray(sorted(common or set.union(*edge_sets)))
    targets = np.linspace(grid[0], grid[-1], n)
    picks = [int(grid[np.argmin(np.abs(grid - t))]) for t in targets]
    return list(dict.fromkeys(picks))


def _arm_specs(setup: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    if not setup or not isinstance(setup.get("arms"), list):
        return {}
    return {str(a.get("name")): a for a in setup["arms"] if isinstance(a, Mapping)}


def _policy_name(spec: Mapping[str, Any] | None) -> str | None:
    pol = (spec or {}).get("policy")
    if isinstance(pol, Mapping):
        return str(pol.get("name"))
    return str(pol) if isinstance(pol, str) else None


def _policy_options(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    pol = (spec or {}).get("policy")
    opts = pol.get("options") if isinstance(pol, Mapping) else None
    return dict(opts) if isinstance(opts, Mapping) else {}


def _method(spec: Mapping[str, Any] | None) -> str | None:
    inf = (spec or {}).get("inference")
    if isinstance(inf, Mapping):
        return str(inf.get("method"))
    return str(inf) if isinstance(inf, str) else None


def policy_description(name: str) -> str:
    """The registry's paragraph for a built-in policy; for a ``module:Class`` policy its class
    docstring if that module is already imported (a report never imports outside code)."""
    from marketsim.policies.registry import POLICIES, describe, is_import_path

    if name in POLICIES:
        try:
            return " ".join(describe(name).split()) or "(no description)"
        except Exception as exc:  # noqa: BLE001 - a report must not fail on a broken import
            return f"(description unavailable: {exc})"
    if is_import_path(name):
        module, _, attr = name.partition(":")
        cls = getattr(sys.modules.get(module), attr, None)
        doc = getattr(cls, "DESCRIPTION", None) or getattr(cls, "__doc__", None)
        if doc:
            return "User policy (loaded by import path). " + " ".join(str(doc).split())
        return "User policy, loaded by import path from outside marketsim; no description."
    return "Unknown policy."


def method_description(name: str) -> str:
    """One line on an inference method, from the aggregation registry."""
    try:
        from marketsim.aggregation.registry import METHODS
    except ImportError:  # pragma: no cover - registry always present in a full install
        return ""
    spec = METHODS.get(name)
    return spec.description if spec else "unknown method"


def _score_setup(setup: Mapping[str, Any]) -> str:
    """The continuous-score world (seed 001) in words."""
    tasks = setup.get("tasks") or {}
    workers = setup.get("workers") or {}
    gs = workers.get("gaussian_scores") or {}
    means = tasks.get("means") or {}
    good, sigma = gs.get("good_fraction"), gs.get("sigma")
    a, b = means.get("alpha"), means.get("beta")
    mu_txt = (f"Beta({a:g}, {b:g})" if all(isinstance(v, int | float) for v in (a, b))
              else "a Beta distribution")
    type_txt = (f"{100 * good:g} % of them are good and score a task as its true mean plus "
                f"Gaussian noise of standard deviation {sigma:g} (clipped to [0, 1]); the others "
                "are bad and score uniformly at random on [0, 1]"
                if isinstance(good, int | float) and isinstance(sigma, int | float)
                else "good annotators score near the true mean, bad ones at random")
    return (f"Each replicate draws a fresh world of **{num(tasks.get('count'))} tasks**, each "
            f"with a true mean score drawn from {mu_txt} on [0, 1], and "
            f"**{num(workers.get('count'))} annotators** (seed 001's gaussian-scores model): "
            f"{type_txt}. Nobody is told who is good.")


def _setup_section(setup: Mapping[str, Any] | None, summary: Mapping[str, Any]) -> list[str]:
    out = ["## Setup", ""]
    if not setup:
        out += [
            f"The run folder has no `run.json` or readable `scenario.toml`, so only what "
            f"`curves.csv` holds is known: seed {summary.get('seed')}, "
            f"{summary.get('replicates')} replicates.", "",
        ]
        return out
    tasks = setup.get("tasks") or {}
    workers = setup.get("workers") or {}
    ability = workers.get("ability") or {}
    budget = setup.get("budget") or {}
    k = tasks.get("classes", 2)
    prior = tasks.get("prior") or []
    prior_txt = ", ".join(f"class {i + 1} {100 * p:g} %" for i, p in enumerate(prior))
    n_tasks, n_workers = tasks.get("count"), workers.get("count")
    a, b, low = ability.get("alpha"), ability.get("beta"), ability.get("low")
    ability_txt = "see the scenario"
    if all(isinstance(v, int | float) for v in (a, b, low)):
        mean_p = low + (1 - low) * a / (a + b)
        ability_txt = (
            f"each worker's accuracy (chance of giving the true class) is drawn once as "
            f"p = {low:g} + {1 - low:g} · Beta({a:g}, {b:g}), so p lies between {low:g} and 1 "
            f"with mean {mean_p:.3f}"
        )
    continuous = workers.get("model") == "gaussian-scores"
    world_txt = _score_setup(setup) if continuous else (
        f"Each replicate draws a fresh world of **{num(n_tasks)} tasks** with **{k} classes** "
        f"(class prior: {prior_txt or 'uniform'}) and **{num(n_workers)} workers** who answer "
        f"under the {workers.get('model', 'one-coin')} model: {ability_txt}. A one-coin worker "
        f"gives the true class with probability p and otherwise a wrong class at random."
    )
    features = tasks.get("features")
    if isinstance(features, Mapping):
        probs = features.get("probabilities")
        how = ("fixed class-conditional probabilities" if probs else
               f"class-conditional probabilities drawn per replicate uniformly within "
               f"±{features.get('informativeness', 0) / 2:g} of 1/2")
        world_txt += (f" Every task also carries {features.get('count')} binary features with "
                      f"{how} (seed 004); estimators that take features (ds-features) get them.")
    refit_txt = ("re-estimates every task's mean and every annotator's probability of being "
                 "good" if continuous else "re-estimates every task's class and every worker's "
                 "accuracy")
    error_txt = ("The headline error is the root-mean-square error (RMSE) of the estimated task "
                 "means against the true ones; a task without any score counts with the mean "
                 "of the task-mean distribution." if continuous else
                 "The task error rate is the fraction of tasks whose estimated class is wrong.")
    service = workers.get("service_mean", 0.0)
    service_txt = ("answer at once" if not service else
                   f"take on average {service:g} units of simulated time per label")
    initial = budget.get("initial")
    initial_txt = {
        "one-per-task": f"every task first gets one label (the {num(n_tasks)} initial labels "
                        "count towards the budget)",
        "none": "no labels are given before the policy starts",
    }.get(initial, f"initial graph: {initial}")
    out += [
        f"{world_txt} Workers arrive at rate {workers.get('arrival_rate', 1.0):g} per unit of "
        f"simulated time and {service_txt}.",
        "",
        f"The requester has a **budget of {num(budget.get('edges'))} labels** (edges of the "
        f"task–worker graph); {initial_txt}. Labels are bought in batches of "
        f"**{num(budget.get('batch'))}**; after each batch the inference service {refit_txt}, "
        f"and the policy decides where the next batch goes. {error_txt}",
        "",
        f"Every arm (policy + inference method) is run on the same "
        f"**{summary.get('replicates')} replicate worlds** (common random numbers, "
        f"**seed {summary.get('seed')}**), so differences between arms are not due to luck of "
        f"the draw of tasks and workers.",
        "",
    ]
    return out


def _score_section(
    arms: Mapping[str, Mapping[str, Any]], names: Sequence[str], metric: Metric
) -> list[str]:
    """Continuous markets: each arm's final RMSE against the plain mean of the same scores, and
    how well the good/bad annotator call matches the truth."""
    rows = []
    for name in names:
        a = arms[name]
        em, plain, good = (a.get(c)[-1] if a.get(c) else None
                           for c in ("rmse", "plain_rmse", "good_accuracy"))
        if em is None or plain is None:
            continue
        gain = f"{100 * (1 - em / plain):.0f} %" if plain > 0 else "—"
        rows.append([name, metric.fmt(em), metric.fmt(plain), gain,
                     "—" if good is None else f"{100 * good:.1f} %"])
    if not rows:
        return []
    return [
        "## Estimator against the plain mean", "",
        "At the end of the budget: the arm's task-mean RMSE, the RMSE of the plain (unweighted) "
        "mean of exactly the same scores, how much lower the estimator's is, and the share of "
        "annotators (with at least one score) whose good/bad call P(good) > 0.5 is right.", "",
        *table(["arm", "RMSE", "plain-mean RMSE", "reduction", "good/bad call accuracy"],
               rows), "",
    ]


def _is_score_method(name: Any) -> bool:
    """Whether ``name`` is a registry method estimating continuous scores."""
    from marketsim.aggregation.registry import METHODS

    spec = METHODS.get(name) if isinstance(name, str) else None
    return spec is not None and spec.output == "scores"


def _inference_settings(spec: Mapping[str, Any] | None) -> str:
    """The arm's inference settings in words (empty if unknown)."""
    inf = (spec or {}).get("inference")
    if not isinstance(inf, Mapping):
        return ""
    if _is_score_method(inf.get("method")):  # class prior, init, warm start do not apply
        return ""
    cp = inf.get("class_prior")
    cp_txt = {"true": "the class prior is the scenario's, known to the requester",
              "estimate": "the class prior is re-estimated by EM"}.get(
                  cp, f"the class prior is fixed at {cp}")
    init = inf.get("init")
    init_txt = {"majority": "majority vote", "random": "a random start",
                "spectral": "a spectral estimate"}.get(init, str(init))
    parts = [cp_txt, f"EM starts from {init_txt}" if init else ""]
    if inf.get("warm_start"):
        parts.append("each refresh starts from the previous estimate (warm start)")
    return "Settings: " + "; ".join(p for p in parts if p) + ". "


def _key_results(arms: Mapping[str, Mapping[str, Any]], specs: Mapping[str, Mapping[str, Any]],
                 names: Sequence[str], metric: Metric = ERROR_RATE) -> list[str]:
    """One sentence per target: the arm that reached it with the fewest labels."""
    out = []
    for t in TARGETS:
        key = f"{t:g}"
        reached = [(arms[n]["edges_to_reach"].get(key), n) for n in names
                   if arms[n].get("edges_to_reach", {}).get(key) is not None]
        if not reached:
            out.append(f"- No arm reached {metric.target(t)} within the budget.")
            continue
        best_edges, best = min(reached)
        text = f"- **{metric.target(t)}**: fastest is *{best}* with {num(best_edges)} labels"
        base = _baseline(best, specs, names)
        base_edges = arms[base]["edges_to_reach"].get(key) if base else None
        if base and base != best and base_edges:
            saved = base_edges - best_edges
            text += (f", {num(saved)} labels ({100 * saved / base_edges:.0f} %) fewer than "
                     f"*{base}*")
        elif base and base != best:
            text += f"; *{base}* did not reach it within the budget"
        out.append(text + ".")
    return out


def _baseline(name: str, specs: Mapping[str, Mapping[str, Any]], arms: Sequence[str]) -> str | None:
    """The uniform arm with the same inference method as ``name``, else the first uniform arm."""
    uniform = [a for a in arms if _policy_name(specs.get(a)) == BASELINE_POLICY]
    if not uniform:
        return None
    method = _method(specs.get(name))
    same = [a for a in uniform if _method(specs.get(a)) == method]
    return (same or uniform)[0]


def _saving(arm: Mapping[str, Any], base: Mapping[str, Any], key: str) -> str:
    mine, theirs = arm["edges_to_reach"].get(key), base["edges_to_reach"].get(key)
    if mine is None:
        return "— (not reached)"
    if theirs is None:
        last = base["edges"][-1] if base.get("edges") else None
        if last is None:
            return "—"
        return f"> {num(max(last - mine, 0))} (baseline never reached it)"
    diff = theirs - mine
    rel = f" ({100 * diff / theirs:+.0f} %)" if theirs else ""
    return f"{diff:+,}{rel}" if diff else "0"


def report_markdown(
    summary: Mapping[str, Any],
    setup: Mapping[str, Any] | None,
    plot: PlotInfo,
    *,
    run_dir: Path | None = None,
    versions: Mapping[str, str] | None = None,
) -> str:
    """The text of ``report.md``."""
    arms: Mapping[str, Mapping[str, Any]] = summary.get("arms") or {}
    names = list(arms)
    specs = _arm_specs(setup)
    metric = metric_of(summary)
    pct = metric.fmt
    lines = [f"# {summary.get('scenario')}: which policy gets the error down fastest?", ""]
    if not summary.get("complete", True):
        resume = f"python -m marketsim run --resume {run_dir}" if run_dir else "run --resume"
        lines += [
            f"> **Partial run.** Only {summary.get('units_finished')} of "
            f"{summary.get('units_total')} (replicate, arm) units finished; the numbers below "
            f"use the finished units only and may change. Finish it with `{resume}`.", "",
        ]
    if arms:
        lines += ["**In short** (labels needed for the mean error to reach and stay below a "
                  "target; details below):", "", *_key_results(arms, specs, names, metric), ""]
    lines += _setup_section(setup, summary)

    lines += ["## Arms", ""]
    rows = []
    for name in names:
        spec, a = specs.get(name), arms[name]
        final = a.get("final_error_rate")
        half = a["error_rate_ci95"][-1] if a.get("error_rate_ci95") else None
        final_txt = "—" if final is None else f"{pct(final)} ± {pct(half).removesuffix(' %')}"
        rows.append([name, f"`{_policy_name(spec) or '?'}`", f"`{_method(spec) or '?'}`",
                     a.get("replicates"), num(a["edges"][-1]) if a.get("edges") else "—",
                     final_txt])
    lines += table(["arm", "policy", "inference", "replicates", "labels spent",
                    f"final {metric.short}"], rows, "lllrrr") + [""]
    lines += _score_section(arms, names, metric)

    lines += [
        f"## {metric.heading} against labels spent", "",
        f"![{metric.sentence} against labels spent, one curve per arm]({PNG_NAME})",
        "",
        f"*Mean {metric.label} over replicates (line) with its 95 % confidence band (shaded: "
        f"mean ± 1.96 standard errors), on a log scale"
        + ("; thin dotted lines: the plain (unweighted) mean of the same arm's scores"
           if not metric.percent else "")
        + f". An error of exactly 0 cannot be drawn on "
        f"a log axis, so means and band edges below {plot.floor:.2g} ("
        + ("half of one task's error, 0.5 / number of tasks" if metric.percent else
           "half the smallest positive mean")
        + ") are drawn at that floor (dotted line)"
        + (f"; {plot.clipped_points} mean point(s) were clipped this way" if plot.clipped_points
           else "; no mean point needed clipping")
        + f". Vector version: [`{SVG_NAME}`]({SVG_NAME}).*", "",
    ]

    cps = checkpoints(arms)
    lines += [f"## {metric.heading} at budget checkpoints", ""]
    if cps:
        lines += [f"Mean {metric.label} ± 95 % confidence half-width after the given number "
                  "of labels.", ""]
        rows = []
        for name in names:
            a = arms[name]
            at = {e: (m, h) for e, m, h in zip(a["edges"], a["error_rate"],
                                                 a["error_rate_ci95"], strict=False)}
            rows.append([name] + [
                f"{pct(at[e][0])} ± {pct(at[e][1]).removesuffix(' %')}" if e in at else "—"
                for e in cps])
        lines += table(["arm \\ labels spent", *(num(e) for e in cps)], rows) + [""]
    else:
        lines += ["No unit has finished yet.", ""]

    goal = (" / ".join(f"{100 * t:g} %" for t in TARGETS) + " error" if metric.percent
            else "RMSE " + " / ".join(f"{t:g}" for t in TARGETS))
    lines += [f"## Labels needed to reach {goal}", ""]
    lines += [
        "The fewest labels after which the mean error stays at or below the target for the rest "
        "of the run ('—' = not reached within the budget). The saving is measured against the "
        "uniform-policy arm with the same inference method (else the first uniform arm): a "
        "positive number is labels saved.", "",
    ]
    has_uniform = any(_policy_name(specs.get(n)) == BASELINE_POLICY for n in names)
    head = ["arm"]
    for t in TARGETS:
        short = f"{100 * t:g} %" if metric.percent else f"{t:g}"
        head += [f"labels to {short}"] + ([f"saving at {short}"] if has_uniform else [])
    if has_uniform:
        head.append("baseline")
    rows = []
    for name in names:
        a = arms[name]
        base = _baseline(name, specs, names)
        row: list[Any] = [name]
        for t in TARGETS:
            key = f"{t:g}"
            row.append(num(a["edges_to_reach"].get(key)))
            if has_uniform:
                row.append("(baseline)" if base == name else
                           _saving(a, arms[base], key) if base else "—")
        if has_uniform:
            row.append(base or "—")
        rows.append(row)
    lines += table(head, rows) + [""]
    if not has_uniform:
        lines += ["There is no uniform-policy arm in this run, so no savings are shown.", ""]

    lines += ["## Policies", ""]
    used: dict[str, list[str]] = {}
    for name in names:
        used.setdefault(_policy_name(specs.get(name)) or "?", []).append(name)
    for pol, arm_names in used.items():
        lines += [f"### `{pol}`", "", f"Arms: {', '.join(arm_names)}.", ""]
        if pol != "?":
            lines += [policy_description(pol), ""]
        opts = {k: v for n in arm_names for k, v in _policy_options(specs.get(n)).items()}
        if opts:
            lines += ["Options: " + ", ".join(f"`{k} = {v!r}`" for k, v in opts.items()), ""]

    estimate_txt = ("task's mean score (and every annotator's probability of being good)"
                    if not metric.percent else "task's class (and every worker's accuracy)")
    lines += ["## Inference methods", "",
              "The inference service turns the labels bought so far into an estimate of every "
              f"{estimate_txt}; the policy only sees this estimate.",
              ""]
    groups: dict[tuple[str, str], list[str]] = {}
    for name in names:
        method = _method(specs.get(name)) or "?"
        groups.setdefault((method, _inference_settings(specs.get(name))), []).append(name)
    for (method, settings), arm_names in groups.items():
        desc = method_description(method) if method != "?" else "unknown (no scenario found)"
        lines.append(f"- `{method}` — {desc}. {settings}Arms: {', '.join(arm_names)}.")
    lines.append("")

    lines += ["## Files and reproduction", ""]
    seconds = summary.get("seconds")
    point = (setup or {}).get("sweep_point")
    if point:
        rerun = ("- this folder is one grid point of a sweep; re-run the sweep from its "
                 "top-level folder's `scenario.toml`")
    else:
        # a policy given as 'module:Class' runs only with --allow-imports
        plugin = any(":" in (_policy_name(spec) or "") for spec in specs.values())
        replay = (setup or {}).get("replay")
        data = replay.get("data_dir") if isinstance(replay, Mapping) else None
        rerun = (f"- re-run (from this folder): `python -m marketsim run scenario.toml --seed "
                 f"{summary.get('seed')} --replicates {summary.get('replicates')}"
                 f"{f' --data-dir {data}' if isinstance(data, str) else ''}"
                 f"{' --allow-imports' if plugin else ''}`"
                 + (" (the policy modules must be importable: on `PYTHONPATH`)" if plugin
                    else ""))
    lines += [
        f"- `curves.csv`, `summary.json`, `{PNG_NAME}`, `{SVG_NAME}`, `scenario.toml`, `run.json`"
        f" in this folder; see `reports/README.md` for what they hold.",
        "- run time: " + (f"{seconds:.1f} s" if isinstance(seconds, int | float) else "unknown"),
        rerun,
        "- re-render this report: `python -m marketsim report "
        f"{run_dir if run_dir is not None else 'RUN_DIR'}`",
    ]
    if versions:
        keep = ("marketsim", "python", "numpy", "scipy", "matplotlib")
        lines.append("- versions: " + ", ".join(f"{k} {versions[k]}" for k in keep
                                                 if k in versions))
    lines.append("")
    return "\n".join(lines)
