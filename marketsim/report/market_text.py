"""The market's rules of a run in words, for ``report.md``'s "Setup": what a label costs (the
flat price or the qualification tiers, with the platform's fee and minimum price), capacity,
sessions, the money budget, gold questions and blocking, and the initial graph, each as the
scenario sets it and, when an arm has its own, per arm.

Values are read from the run's resolved scenario, typed (every default filled in)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from marketsim.report.crowd_text import g, listed
from marketsim.report.formatting import num
from marketsim.scenario.crowd_specs import WorkersSpec
from marketsim.scenario.market_specs import BlockingSpec, BudgetSpec, GoldSpec, HeaderSpec
from marketsim.scenario.specs import Scenario


def money(x: float) -> str:
    """A money figure as the reports' money columns print it (``2.50``, ``1,200.00``)."""
    return f"{x:,.2f}"


def _cost(price: float, fee: float) -> str:
    """A price, and with a fee what the requester pays for it."""
    return g(price) if not fee else f"{g(price)} ({money(price * (1 + fee))} with the fee)"


def prices_text(workers: WorkersSpec, budget: BudgetSpec) -> str:
    """What a label costs: per qualification tier or the flat price, the platform's fee on top
    (what every money figure counts) and its minimum price."""
    fee, min_price = budget.fee, budget.min_price
    fee_txt = (f"the platform's fee of {100 * fee:g} % of every payment comes on top (every "
               "money figure of this report counts it)" if fee else "")
    tiers = workers.tiers
    out = []
    if tiers is not None:
        cuts, prices = list(tiers.cuts), list[float](tiers.prices)
        bands = []
        for i, price in enumerate(prices):
            low = g(cuts[i - 1]) if i else None
            high = g(cuts[i]) if i < len(cuts) else None
            where = (f"below {high}" if low is None else f"{low} or more" if high is None
                     else f"from {low} to below {high}")
            bands.append(f"tier {i} (score {where}) {_cost(price, fee)}")
        out.append(f"Workers are sorted into {len(prices)} qualification tiers by a noisy "
                   f"qualification score, their hidden accuracy plus N(0, "
                   f"{g(tiers.noise)}²) noise, and a label (gold answers "
                   f"included) costs the worker's tier price: {'; '.join(bands)}"
                   + (f"; {fee_txt}." if fee else "."))
    else:
        price = workers.price
        if fee:
            out.append(f"Every label (gold answers included) pays the worker {g(price)}, and "
                       f"{fee_txt}: a label costs the requester {money(price * (1 + fee))}.")
        elif price != 1:
            out.append(f"Every label (gold answers included) costs {g(price)}.")
    if min_price is not None:
        out.append(f"The platform's minimum price of a label is {g(min_price)} "
                   "(`budget.min_price`; no price of this scenario is below it).")
    return " ".join(out)


def gold_text(gold: GoldSpec | None, blocking: BlockingSpec | None) -> str:
    """Gold (control) questions and the blocking rule in words ("" when neither is on)."""
    parts = []
    if gold is not None:
        rate = gold.rate
        parts.append(
            f"{num(gold.count)} gold (control) questions with known classes are mixed "
            "in: " + (f"an arriving worker answers one with probability {g(rate)} "
                      f"(about one arrival in {num(1 / rate)})" if rate else
                      "a worker answers one when the policy asks for it")
            + "; gold answers are paid and count towards the label budget but are not task "
            "labels" + ("; methods that can use them fit them with their classes known"
                        if gold.in_inference else ""))
    if blocking is not None:
        acc = blocking.min_accuracy
        parts.append(f"a worker whose gold answers are less than {100 * acc:g} % correct after "
                     f"{num(blocking.after)} or more of them is "
                     "blocked for good")
    return "; ".join(parts)


def _who(names: Sequence[str]) -> str:
    return listed([f"*{n}*" for n in names])


def gold_rules(setup: Scenario) -> list[str]:
    """Sentences on the gold questions and blocking each arm runs with: the scenario's rule
    (for every arm, or every arm without its own), and each arm's own (the arms sharing one
    named together)."""
    shared = gold_text(setup.gold, setup.blocking)
    own: dict[str, list[str]] = {}
    for arm in setup.arms:
        if arm.gold is not None or arm.blocking is not None:
            text = gold_text(arm.gold or setup.gold, arm.blocking or setup.blocking)
            own.setdefault(text, []).append(arm.name)
    others = len(setup.arms) > sum(len(names) for names in own.values())
    sentences = []
    if shared and (others or not own):
        sentences.append(f"For every {'other ' if own else ''}arm: {shared}.")
    for text, names in own.items():
        several = len(names) > 1
        sentences.append(f"Arm{'s' if several else ''} {_who(names)} "
                         f"{'have their' if several else 'has its'} own rule: {text}.")
    if own and others and not shared:
        sentences.append("The other arms use no gold questions and block no one.")
    return sentences


def rules_text(setup: Scenario) -> list[str]:
    """The market's rules beyond the crowd, as a paragraph: prices or tiers with the fee,
    capacity, sessions, the money budget, and gold and blocking (the scenario's, then each
    arm's own)."""
    workers, budget = setup.workers, setup.budget
    sentences = [t for t in (prices_text(workers, budget),) if t]
    capacity, session = workers.capacity, workers.session_mean
    if capacity is not None:
        sentences.append(f"Each worker gives at most {num(capacity)} labels (gold answers "
                         "included), then stops for good.")
    if session is not None:
        sentences.append(f"Each worker leaves the market for good after {g(session)} "
                         "labels on average (gold included; a geometric session length).")
    budget_money = budget.money
    if budget_money is not None:
        counted = "the fee and gold" if budget.fee else "gold"
        sentences.append(f"The requester may spend at most **{g(budget_money)} in money** "
                         f"({counted} included); the run ends when no worker who may still "
                         "work can be paid.")
    sentences += gold_rules(setup)
    return [" ".join(sentences), ""] if sentences else []


def initial_graph(initial: str, budget: BudgetSpec, n_tasks: Any) -> str:
    """One initial graph in words."""
    if initial == "one-per-task":
        return (f"every task first gets one label (the {num(n_tasks)} initial labels count "
                "towards the budget)")
    if initial == "bernoulli":
        prob = budget.initial_probability
        return (f"each task–worker pair is first labelled with probability {g(prob)} (a "
                "Bernoulli graph, cut to the budget; these labels count towards it)")
    if initial == "none":
        return "no labels are given before the policy starts"
    return f"the initial graph is {initial!r}"


def initial_text(setup: Scenario) -> str:
    """The initial graph each arm starts from: one clause when every arm starts alike, else
    the graph of each group of arms (an arm's own ``initial`` or ``budget.initial``)."""
    budget, n_tasks = setup.budget, setup.tasks.count
    default = budget.initial
    groups: dict[str, list[str]] = {}
    for arm in setup.arms:
        groups.setdefault(arm.initial or default, []).append(arm.name)
    if len(groups) <= 1:
        return initial_graph(next(iter(groups), default), budget, n_tasks)
    return "the arms start from different initial graphs: " + "; ".join(
        f"{_who(names)} {'start' if len(names) > 1 else 'starts'} where "
        f"{initial_graph(initial, budget, n_tasks)}" for initial, names in groups.items())


def engine_text(setup: Scenario) -> str:
    """How the markets are simulated, when not event by event (``scenario.engine``)."""
    engine = setup.scenario.engine
    if engine == HeaderSpec.model_fields["engine"].default:
        return ""
    return (f" The markets are simulated in blocks (`engine = \"{engine}\"`): everything "
            "between two refreshes is handed out at once (the same model as label by label, "
            "with other random draws).")
