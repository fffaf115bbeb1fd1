"""The worker-aware market mechanics of a scenario (issue #16): gold questions, blocking,
capacity, drop-out, prices and a money budget — every check that spans several keys.

Each mechanic is off unless the scenario asks for it. They need a simulated crowd of class
labels: a replayed crowd has no worker model to answer gold questions or to leave, and a
continuous-score market has no classes to check gold answers against.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marketsim.errors import InputError
from marketsim.policies.registry import POLICIES
from marketsim.scenario.arm_specs import ArmSpec, PolicySpec
from marketsim.scenario.crowd_specs import WorkersSpec
from marketsim.scenario.market_specs import BlockingSpec, BudgetSpec, GoldSpec
from marketsim.scenario.validation import printable

#: The worker keys of the mechanics (checked against a replay or a score market).
WORKER_KEYS = ("capacity", "session_mean", "price", "tiers")
#: The budget keys of the mechanics.
BUDGET_KEYS = ("money", "fee", "min_price")


def _fail(key: str, message: str, source: str) -> InputError:
    return InputError(f"{printable(key)} {message}", source=source)


def _given(doc: Mapping[str, Any]) -> list[str]:
    """Dotted keys of the mechanics the scenario sets."""
    keys = [name for name in ("gold", "blocking") if doc[name] is not None]
    if doc["workers"] is not None:
        keys += [f"workers.{k}" for k in WORKER_KEYS if k in doc["workers"].model_fields_set]
    if doc["budget"] is not None:
        keys += [f"budget.{k}" for k in BUDGET_KEYS if k in doc["budget"].model_fields_set]
    return keys


def check_initial_graph(kind: str, key: str, n_tasks: int, workers: WorkersSpec,
                        budget: BudgetSpec, source: str) -> None:
    """Refuse an initial graph that can never fit ``workers.capacity`` or ``budget.money``.

    The initial graph is part of the market: its labels are bought like any other. A
    ``one-per-task`` graph hands each worker ⌈tasks / workers⌉ labels at most (round-robin) and
    costs tasks × price, so both are known here; a random graph (``bernoulli``) or one priced by
    tiers that may or may not fit is cut to fit when it is drawn (the ledger keeps each worker's
    first ``capacity`` labels and pays the graph in task order while the money lasts)."""
    if kind != "one-per-task":
        return
    per_worker = -(-n_tasks // workers.count)
    if workers.capacity is not None and per_worker > workers.capacity:
        raise _fail("workers.capacity", f"= {workers.capacity} is below the {per_worker} labels "
                    f"the initial graph gives a worker ({key} = 'one-per-task': {n_tasks} tasks "
                    f"round-robin over {workers.count} workers); raise it to at least "
                    f"{per_worker}, add workers, or set {key} = 'none'", source)
    if budget.money is None:
        return
    price = workers.cheapest_price
    cost = n_tasks * price * (1.0 + budget.fee)
    if cost > budget.money * (1 + 1e-12):
        cheapest = "at least " if workers.tiers is not None else ""
        raise _fail("budget.money", f"= {budget.money:g} cannot pay the initial graph: "
                    f"{n_tasks} labels ({key} = 'one-per-task') cost {cheapest}{cost:g}; raise "
                    f"budget.money above {cost:g} or set {key} = 'none'", source)


def check_blocking(gold: GoldSpec | None, blocking: BlockingSpec | None,
                   inherited: GoldSpec | None, prefix: str, source: str) -> None:
    """A blocking rule of the scenario (``prefix`` "") or of an arm (``prefix`` "arms[i].";
    ``inherited``: the scenario's gold, which the arm's rule may judge by) has gold questions
    to judge by, and enough of them."""
    judged_by = gold or inherited
    if blocking is None:
        return
    if judged_by is None:
        raise _fail(f"{prefix}blocking", "needs [gold]: the rule judges workers by their "
                    "gold answers", source)
    if blocking.after > judged_by.count:
        raise _fail(f"{prefix}blocking.after", f"must be <= gold.count "
                    f"({judged_by.count}): a worker answers each gold question at most "
                    "once", source)


def check_replay_policy(policy: type | None, name: str, replay: bool, key: str,
                        source: str) -> None:
    """Refuse a platform preset (a worker-aware policy that closes tasks at an overlap, with
    ``wanted_tasks``) in a replayed crowd: the file may hold too few answers of a task, or
    none from the workers left, for the overlap it waits for. Other worker-aware policies
    choose among the tasks the arriving worker answered in the file."""
    if replay and policy is not None and callable(getattr(policy, "assign", None)) \
            and callable(getattr(policy, "wanted_tasks", None)):
        raise _fail(key, f"{name!r} closes tasks at an overlap the replayed file may not hold "
                    "and needs a simulated crowd, not [replay]", source)


def arm_mechanics(arm: ArmSpec, key: str, scenario_gold: GoldSpec | None, replay: bool,
                  workers: WorkersSpec, source: str, policy: PolicySpec) -> None:
    """An arm's own gold questions and blocking rule fit the market; its policy checked
    against a replayed crowd."""
    check_replay_policy(policy.cls or POLICIES.get(policy.name), policy.name, replay,
                        f"{key}.policy", source)
    given = [name for name in ("gold", "blocking") if getattr(arm, name) is not None]
    if given and replay:
        raise _fail(f"{key}.{given[0]}", "is not available with [replay] (a replayed crowd "
                    "has no worker model to answer gold questions)", source)
    if given and workers.model_class.scores:
        raise _fail(f"{key}.{given[0]}", "needs class labels; it does not apply with "
                    f"workers.model = {workers.model!r}", source)
    check_blocking(arm.gold, arm.blocking, scenario_gold, f"{key}.", source)


def check_arm_blocking(arm: ArmSpec, key: str, scenario_blocking: BlockingSpec | None,
                       source: str) -> None:
    """An arm's own gold questions under the scenario's blocking rule (the arm has no rule of
    its own): the rule judges the arm's workers by the arm's questions, so there must be as
    many as it waits for."""
    if arm.gold is None or arm.blocking is not None or scenario_blocking is None:
        return
    if scenario_blocking.after > arm.gold.count:
        raise _fail(f"{key}.gold.count", f"= {arm.gold.count} is below blocking.after = "
                    f"{scenario_blocking.after}: the scenario's blocking rule judges this arm's "
                    "workers by the arm's gold questions, each answered at most once", source)


def read_mechanics(doc: Mapping[str, Any], workers: WorkersSpec, replay: bool, source: str
                   ) -> tuple[GoldSpec | None, BlockingSpec | None]:
    """The scenario's gold questions and blocking rule (``None`` when off), the mechanics
    checked against the market (``doc``: the scenario's tables as given)."""
    given = _given(doc)
    if given and replay:
        raise _fail(given[0], "is not available with [replay] (a replayed crowd has no worker "
                    "model to answer gold questions, leave or be priced)", source)
    if given and workers.model_class.scores:
        raise _fail(given[0], "needs class labels; it does not apply with workers.model = "
                    f"{workers.model!r}", source)
    check_blocking(doc["gold"], doc["blocking"], None, "", source)
    if doc["budget"] is not None:
        _check_min_price(workers, doc["budget"].min_price, source)
    return doc["gold"], doc["blocking"]


def _check_min_price(workers: WorkersSpec, min_price: float | None, source: str) -> None:
    """Refuse a price below the platform's minimum (``budget.min_price``)."""
    if min_price is None:
        return
    if workers.tiers is not None and min(workers.tiers.prices) < min_price:
        raise _fail("workers.tiers.prices", f"must all be >= budget.min_price = {min_price:g}, "
                    f"got {min(workers.tiers.prices):g}", source)
    if workers.tiers is None and workers.price < min_price:
        raise _fail("workers.price", f"= {workers.price:g} is below budget.min_price = "
                    f"{min_price:g}, the platform's minimum price of a label", source)
