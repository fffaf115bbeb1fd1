"""A resolved scenario written back as a scenario file (``validate --toml``).

:func:`to_document` gives the TOML document of a :class:`Scenario` with every default filled
in, in the shape a scenario file is written (``[workers.arrivals] rate``...), and
:func:`dumps` writes it (``tomllib`` only reads): feeding the text back to ``run`` gives an
equal scenario.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from marketsim.scenario.specs import (
    CONFUSION_DESIGN_KEYS,
    ArmSpec,
    BlockingSpec,
    GoldSpec,
    Scenario,
)

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def to_document(sc: Scenario) -> dict[str, Any]:
    """The scenario as a TOML document, defaults included."""
    doc: dict[str, Any] = {"scenario": {"name": sc.name, "seed": sc.seed,
                                        "replicates": sc.replicates}}
    replayed = sc.replay is not None
    if sc.replay is not None:
        rp = sc.replay
        doc["replay"] = {k: v for k, v in (
            ("dataset", rp.dataset), ("labels", _absolute(rp.labels)),
            ("truth", _absolute(rp.truth)), ("data_dir", _absolute(rp.data_dir)),
            ("format", rp.format)) if v is not None}
    tk, wk, bg = sc.tasks, sc.workers, sc.budget
    tasks: dict[str, Any] = {} if replayed else {"count": tk.count}
    if sc.worker_model.scores:
        assert tk.means is not None
        tasks["means"] = {"alpha": tk.means.alpha, "beta": tk.means.beta}
    else:
        if not replayed:
            tasks["classes"] = tk.classes
        tasks["prior"] = list(tk.prior)
    if tk.features is not None:
        ft = tk.features
        tasks["features"] = {"count": ft.count}
        if ft.probabilities is None:
            tasks["features"]["informativeness"] = ft.informativeness
        else:
            tasks["features"]["probabilities"] = [list(r) for r in ft.probabilities]
    doc["tasks"] = tasks
    workers: dict[str, Any] = {} if replayed else {"count": wk.count}
    workers["model"] = wk.model
    if not sc.worker_model.scores:
        ab = wk.ability
        workers["ability"] = {"distribution": ab.distribution, "alpha": ab.alpha,
                              "beta": ab.beta, "low": ab.low}
    workers["arrivals"] = {"rate": wk.arrival_rate}
    workers["service"] = {"mean": wk.service_mean}
    if wk.model == "confusion":
        cf = wk.confusion
        workers["confusion"] = {"design": cf.design, **{
            k: getattr(cf, k) for k in CONFUSION_DESIGN_KEYS[cf.design]}}
    if wk.model == "spammer-hammer":
        workers["spammer_hammer"] = {"hammer_fraction": wk.hammer_fraction}
    if wk.model == "gaussian-scores":
        gs = wk.gaussian_scores
        workers["gaussian_scores"] = {"good_fraction": gs.good_fraction, "sigma": gs.sigma}
    if wk.capacity is not None:
        workers["capacity"] = wk.capacity
    if wk.session_mean is not None:
        workers["session_mean"] = wk.session_mean
    if wk.tiers is not None:
        workers["tiers"] = {"cuts": list(wk.tiers.cuts), "noise": wk.tiers.noise,
                            "prices": list(wk.tiers.prices)}
    elif wk.price != 1.0:
        workers["price"] = wk.price
    doc["workers"] = workers
    doc["budget"] = {"edges": bg.edges, "initial": bg.initial, "batch": bg.batch,
                     "initial_probability": bg.initial_probability}
    if bg.money is not None:
        doc["budget"]["money"] = bg.money
    if bg.fee:
        doc["budget"]["fee"] = bg.fee
    if bg.min_price is not None:
        doc["budget"]["min_price"] = bg.min_price
    doc.update(_mechanics(sc.gold, sc.blocking))
    doc["output"] = {"graph": sc.output.graph, "graphml": sc.output.graphml}
    doc["arms"] = [_arm(arm) for arm in sc.arms]
    if sc.sweep:
        sweep: dict[str, Any] = {}
        for key, values in sc.sweep:
            node = sweep
            *parents, last = key.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[last] = list(values)
        doc["sweep"] = sweep
    return doc


def _absolute(path: str | None) -> str | None:
    return None if path is None else str(Path(path).resolve())


def _arm(arm: ArmSpec) -> dict[str, Any]:
    inf = arm.inference
    inference: dict[str, Any] = {"method": inf.method}
    settings = inf.options.model_dump() if inf.options is not None else {}
    for name, value in settings.items():  # the settings the method takes (it refuses others)
        if value is not None:
            inference[name] = value
    pol = arm.policy
    out: dict[str, Any] = {
        "name": arm.name,
        "policy": {"name": pol.name, **dict(pol.options)} if pol.options else pol.name,
        "inference": inference,
    }
    if arm.initial is not None:
        out["initial"] = arm.initial
    out.update(_mechanics(arm.gold, arm.blocking))
    return out


def _mechanics(gold: GoldSpec | None, blocking: BlockingSpec | None) -> dict[str, Any]:
    """``gold`` and ``blocking`` tables, for those that are on."""
    out: dict[str, Any] = {}
    if gold is not None:
        out["gold"] = {"count": gold.count, "rate": gold.rate, "in_inference": gold.in_inference}
    if blocking is not None:
        out["blocking"] = {"after": blocking.after, "min_accuracy": blocking.min_accuracy}
    return out


def key(name: str) -> str:
    """A TOML key: bare if it can be, else quoted."""
    return name if _BARE.fullmatch(name) else string(name)


def string(text: str) -> str:
    """A TOML basic string."""
    out = []
    for ch in text:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def value(v: Any) -> str:
    """A TOML value (tables inline)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return string(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"no TOML form for {type(v).__name__}")


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def dumps(doc: dict[str, Any], prefix: str = "") -> str:
    """TOML text for ``doc``: scalars first, then ``[table]`` and ``[[array]]`` sections (the
    tables inside an array's items are written inline)."""
    lines, later = [], []
    for k, v in doc.items():
        if isinstance(v, dict) or _is_table_array(v):
            later.append((k, v))
        else:
            lines.append(f"{key(k)} = {value(v)}")
    for k, v in later:
        name = f"{prefix}.{key(k)}" if prefix else key(k)
        if isinstance(v, dict):
            lines.append(f"\n[{name}]")
            lines.append(dumps(v, name).rstrip("\n"))
        else:
            for item in v:
                lines.append(f"\n[[{name}]]")
                lines.extend(f"{key(a)} = {value(b)}" for a, b in item.items())
    return "\n".join(line for line in lines if line).lstrip("\n") + "\n"
