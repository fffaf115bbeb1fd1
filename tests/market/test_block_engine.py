"""The block engine (``[scenario] engine = "blocks"``) simulates the event engine's model: on
the same worlds their error curves agree within paired intervals, the log keeps the
requester's rule, the books close, the same seed gives the same bytes, and what it cannot
simulate is refused at parse in one line naming the key."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from marketsim.cli import main
from marketsim.errors import InputError
from marketsim.market import block_requester
from marketsim.market.block_market import BlockMarket
from marketsim.market.inference import estimator_factory
from marketsim.market.ledger import Ledger, LedgerError
from marketsim.market.market import Market
from marketsim.market.worker_models import draw_world
from marketsim.policies.registry import make_policy
from marketsim.record.curves import CurvePoint
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.toml_out import dumps
from marketsim.study.run_folder import run_record
from marketsim.study.runner import market_setup
from marketsim.study.seeds import unit_streams, world_rng

DOC: dict[str, Any] = {
    "scenario": {"seed": 4, "engine": "blocks"},
    "tasks": {"count": 200, "prior": [0.7, 0.3]},
    "workers": {"count": 30},
    "budget": {"edges": 1400, "batch": 100},
    "output": {"graph": False},
    "arms": [{"name": "eg", "policy": "entropy-greedy", "inference": "one-coin-shifted-beta"}],
}


def doc(**tables: Any) -> dict[str, Any]:
    """DOC with keys added to its tables (``arms``: replaced)."""
    out = copy.deepcopy(DOC)
    for table, keys in tables.items():
        if table == "arms":
            out["arms"] = keys
        else:
            out.setdefault(table, {}).update(keys)
    return out


def toml_text(document: dict[str, Any]) -> str:
    """The scenario file of ``document``."""
    return dumps(document)


def run(document: dict[str, Any], replicate: int = 0, engine: str | None = None,
        policy: str | None = None) -> Market:
    document = copy.deepcopy(document)
    if engine is not None:
        document["scenario"]["engine"] = engine
    sc = parse_scenario(document, "blocks.toml")
    arm = sc.arms[0]
    cls = BlockMarket if sc.scenario.engine == "blocks" else Market
    market = cls(market_setup(sc), draw_world(sc.crowd, world_rng(sc.seed, replicate)),
                 make_policy(policy or arm.policy.name, dict(arm.policy.options)),
                 estimator_factory(sc.crowd, arm.inference), unit_streams(sc.seed, replicate, 0),
                 keep_graph=False)
    market.run()
    return market


def labels_to(curve: list[CurvePoint], target: float) -> float:
    """Labels at the first point at or below ``target`` error (the budget if never)."""
    return float(next((p.edges for p in curve if p.error_rate <= target), curve[-1].edges))


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["uniform", "entropy-greedy"])
def test_blocks_and_events_agree_within_paired_intervals(policy: str) -> None:
    """40 replicates, each world run by both engines: the mean difference of the final error,
    of the labels to 5 % error and of the simulated time is within 3 standard errors of the
    paired differences (a different layout of the draws, the same model)."""
    base = doc(tasks={"count": 300}, budget={"edges": 2400, "batch": 100})
    diffs: dict[str, list[float]] = {"final": [], "to_target": [], "time": []}
    for r in range(40):
        blocks = run(base, r, "blocks", policy).curve
        events = run(base, r, "events", policy).curve
        assert [p.edges for p in blocks] == [p.edges for p in events]
        diffs["final"].append(blocks[-1].error_rate - events[-1].error_rate)
        diffs["to_target"].append(labels_to(blocks, 0.05) - labels_to(events, 0.05))
        diffs["time"].append(blocks[-1].sim_time - events[-1].sim_time)
    for name, values in diffs.items():
        d = np.asarray(values)
        se = d.std(ddof=1) / np.sqrt(d.size)
        assert abs(d.mean()) <= 3 * se + 1e-12, (name, d.mean(), se)
    assert np.std(diffs["final"]) > 0  # not the same draws


def test_the_log_keeps_the_requesters_rule_and_the_books_close() -> None:
    """Never a task twice to a worker; within a refresh (fewer labels than tasks) distinct
    tasks; every label paid; refresh points every batch."""
    market = run(doc(tasks={"count": 300}, workers={"count": 8},
                     budget={"edges": 2000, "batch": 150}))
    tasks, workers, _ = market.log.arrays()
    keys = tasks.astype(np.int64) * 8 + workers
    assert np.unique(keys).size == keys.size == 2000
    for a in range(300, 2000, 150):
        assert np.unique(tasks[a:a + 150]).size == tasks[a:a + 150].size
    assert [p.edges for p in market.curve] == list(range(300, 2000, 150)) + [2000]
    assert market.ledger.spent == 2000.0
    assert int(market.ledger.labels.sum()) == 2000


def test_a_market_that_labels_every_pair_ends_with_every_pair() -> None:
    """tasks × workers labels: every worker labels every task exactly once (the refusals
    near the end are walked past, the ranking wraps)."""
    market = run(doc(tasks={"count": 60}, workers={"count": 5},
                     budget={"edges": 300, "batch": 70}))
    tasks, workers, _ = market.log.arrays()
    pairs = set(zip(tasks.tolist(), workers.tolist(), strict=True))
    assert len(pairs) == 300


def test_same_seed_same_curve_and_the_python_walk_gives_it_too(
        monkeypatch: pytest.MonkeyPatch) -> None:
    first = run(DOC).curve
    assert run(DOC).curve == first
    monkeypatch.setattr(block_requester, "walk_native", None)
    assert run(DOC).curve == first
    assert run(doc(scenario={"seed": 5})).curve != first


def test_weighted_arrivals_bring_workers_by_weight() -> None:
    """Workers 0-9 weigh 10, the other 20 weigh 1: 100/120 of the arrivals are theirs."""
    weights = [10.0] * 10 + [1.0] * 20
    market = run(doc(workers={"arrivals": {"weights": weights}}, budget={"initial": "none"}))
    _, workers, _ = market.log.arrays()
    share = float((workers < 10).mean())
    assert abs(share - 100 / 120) < 4 * np.sqrt(share * (1 - share) / workers.size)


def test_confusion_workers_in_blocks_with_three_classes() -> None:
    market = run(doc(tasks={"classes": 3, "prior": [0.5, 0.3, 0.2]},
                     workers={"model": "confusion"},
                     arms=[{"name": "u", "policy": "uniform", "inference": "ds"}]))
    assert market.curve[-1].edges == 1400
    assert market.curve[-1].error_rate < market.curve[0].error_rate


@pytest.mark.parametrize(("tables", "key"), [
    ({"gold": {"count": 10, "rate": 0.1}}, "gold"),
    ({"workers": {"capacity": 100}}, "workers.capacity"),
    ({"workers": {"session_mean": 50.0}}, "workers.session_mean"),
    ({"budget": {"money": 5000.0}}, "budget.money"),
    ({"workers": {"service": {"mean": 2.0}}}, "workers.service.mean"),
    ({"workers": {"service": {"abandon": 0.1}}}, "workers.service.abandon"),
    ({"workers": {"dynamics": {"drift": 0.1}}}, "workers.dynamics"),
    ({"workers": {"model": "glad"}}, "workers.model"),
    ({"workers": {"model": "confusion", "confusion": {"sigma": 0.5}}}, "workers.confusion"),
    ({"output": {"graph": True}}, "output.graph"),
    ({"arms": [{"name": "w", "policy": "explore-exploit", "inference": "one-coin"}]},
     "arms[0].policy"),
    ({"arms": [{"name": "g", "policy": "uniform", "gold": {"count": 5, "rate": 0.1}}]},
     "arms[0].gold"),
])
def test_what_blocks_cannot_simulate_is_refused_naming_the_key(tables: dict[str, Any],
                                                              key: str) -> None:
    document = doc(**tables)
    with pytest.raises(InputError) as err:
        parse_scenario(document, "blocks.toml")
    text = str(err.value)
    assert text.startswith(f"blocks.toml: {key}") and "engine = 'blocks'" in text
    assert "\n" not in text
    document["scenario"]["engine"] = "events"
    if key != "output.graph":
        parse_scenario(document, "blocks.toml")  # the event engine takes it


def test_the_engine_key_is_left_out_of_the_record_at_its_default() -> None:
    events = doc(scenario={"engine": "events"})
    sc = parse_scenario(events, "e.toml")
    assert sc.resolved_document()["scenario"]["engine"] == "events"
    blocks = parse_scenario(DOC, "b.toml")
    assert blocks.resolved_document()["scenario"]["engine"] == "blocks"
    assert run_record(blocks).fingerprint != run_record(sc).fingerprint


def test_block_debits_refuse_each_broken_limit_as_an_internal_error() -> None:
    """``hand_out_block`` / ``receive_block`` keep the per-label debits' invariants."""
    def ledger(**kw: Any) -> Ledger:
        return Ledger(np.ones(4), kw.get("edges", 100), kw.get("money"), kw.get("capacity"))

    books = ledger(capacity=2)
    with pytest.raises(LedgerError, match="capacity"):
        books.hand_out_block(np.array([0, 1, 0, 0]), 1.0)
    books = ledger(edges=3)
    with pytest.raises(LedgerError, match="budget.edges"):
        books.hand_out_block(np.array([0, 1, 2, 3]), 1.0)
    books = ledger(money=2.5)
    with pytest.raises(LedgerError, match="budget.money"):
        books.hand_out_block(np.array([0, 1, 2]), 1.0)
    books = ledger()
    books.close(2)
    with pytest.raises(LedgerError, match="worker 2 .*blocked"):
        books.hand_out_block(np.array([0, 2]), 1.0)
    books = ledger()
    books.hand_out_block(np.array([0, 1]), 2.0)
    with pytest.raises(LedgerError, match="time went back"):
        books.receive_block(np.array([0, 1]), 1.0)
    with pytest.raises(LedgerError, match="worker 3 delivered"):
        books.receive_block(np.array([0, 3]), 2.0)
    books.receive_block(np.array([0, 1]), 2.0)
    assert (books.bought, books.spent, books.in_flight) == (2, 2.0, 0)


def test_the_command_line_refuses_blocks_with_gold_in_one_line_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "gold.toml"
    path.write_text(toml_text(doc(gold={"count": 10, "rate": 0.1})))
    assert main(["run", str(path), "--quiet", "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"marketsim: error: {path}: gold is not simulated by scenario.engine = 'blocks' "
        "(it hands out a refresh's labels at once); use engine = 'events'")


def test_jobs_1_and_2_give_the_same_bytes_on_the_block_engine(tmp_path: Path) -> None:
    path = tmp_path / "blocks.toml"
    document = doc(scenario={"replicates": 3})
    document["arms"].append({"name": "u", "policy": "uniform", "inference": "mv"})
    path.write_text(toml_text(document))
    curves = []
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}"
        assert main(["run", str(path), "--quiet", "--no-figures", "--jobs", jobs,
                     "--out", str(out)]) == 0
        curves.append((out / "curves.csv").read_bytes())
    assert curves[0] == curves[1]
    assert len(curves[0].splitlines()) == 1 + 3 * 2 * 13
