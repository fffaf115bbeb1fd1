"""A twin's labels at exactly k per task without a market: the world the market would draw,
k distinct workers per task chosen as the ``fixed-overlap`` market hands them out, and every
answer drawn in one batch through the worker model's block path.

``calibrate`` judges each candidate world at k = 1, 2, 3, 5, … labels per task
(:mod:`marketsim.study.twin_curve`); a SimPy market per candidate, k and replicate made that
the costliest step of ``calibrate`` (issue #40 point 6). Under fixed overlap the market's
labels of a task are its initial graph's one label (``one-per-task``: a worker drawn by the
arrival weights) and then the next arrivals who have not labelled it; an arrival who has moves
on to the next open task, so no arrival is lost and each worker gives very nearly their
arrival share ``w_j`` of all the labels, at most one per task. The sampler keeps the world and
the initial graph exactly (same streams, same bytes as the market's) and draws the other
``k - 1`` workers of each task by **Pareto order sampling** (Rosén 1997): each worker's
inclusion probability in a task is ``pi_j = min(1, c w_j)`` with ``sum_j pi_j = k`` (the
capped workers always in), less the chance of being the task's initial worker. The
approximation: a task's workers are independent of the other tasks' (the market's frontier
couples neighbouring tasks: a heavy worker skipped on one task labels the next) and the
end of a market (the last open tasks, which some arrivals cannot take) is not reproduced.
``tests/study/test_design_sampler.py`` checks that majority vote's and Dawid–Skene's errors
agree with the market's within noise.

Only a plain crowd is sampled (:func:`sampler_problem`): capacity, drop-out, dynamics,
abandonment, blocking, a money budget, machines or a model without a block answer path
(``answer_block``) are the market's to simulate.
"""

from __future__ import annotations

import numpy as np

from marketsim.data.labels import LabelSet
from marketsim.market.worker_models import draw_world
from marketsim.scenario.specs import Scenario
from marketsim.study.seeds import generator, initial_graph_rng, world_rng
from marketsim.workers.base import World

#: The spawn-key purpose of the sampler's streams (one per replicate and k), far above the
#: market's purposes (:mod:`marketsim.study.seeds`), so it never meets a market's stream.
DESIGN_STREAM = 100
#: Task-by-worker keys drawn at once at most (the sampler works through the tasks in chunks
#: of this many keys: memory stays flat for a large crowd).
CHUNK_KEYS = 1 << 22


def sampler_problem(scenario: Scenario, world: World) -> str | None:
    """Why the sampler cannot stand in for ``scenario``'s fixed-overlap market in ``world``
    (a rule of who may work, or a worker model whose answers have no block path), else
    ``None``."""
    wk = scenario.workers
    rules = {"workers.capacity": wk.capacity is not None,
             "workers.session_mean": wk.session_mean is not None,
             "workers.dynamics": wk.dynamics is not None,
             "workers.service.abandon": wk.service.abandon > 0,
             "[blocking]": scenario.blocking is not None,
             "budget.money": scenario.budget.money is not None,
             "[[machines]]": bool(scenario.machines),
             "[replay]": scenario.replay is not None}
    found = [key for key, present in rules.items() if present]
    if found:
        return f"{', '.join(found)}: the market's rules of who may work"
    probe = world.model.answers(world, scenario.tasks.classes, np.random.default_rng(0))
    if wk.worker_model.scores or not hasattr(probe, "answer_block"):
        return f"worker model {wk.worker_model.name!r}: no answers in blocks"
    return None


def design_world(scenario: Scenario, replicate: int) -> World:
    """The world the fixed-overlap market of replicate ``replicate`` draws (a
    ``one-per-task`` initial graph from its own stream, as ``design_scenario``'s arm has)."""
    return draw_world(scenario.crowd, world_rng(scenario.seed, replicate), "one-per-task",
                      initial_graph_rng(scenario.seed, replicate, "one-per-task"))


def inclusion(weights: np.ndarray, total: float) -> np.ndarray:
    """Each worker's chance to be among a task's ``total`` labellers: ``min(1, c w_j)`` with
    ``c`` such that they sum to ``total`` (all ones when ``total`` reaches the workers of
    positive weight). A loop over capping rounds (at most one per worker capped)."""
    share = weights / weights.sum()
    capped = np.zeros(share.size, dtype=bool)
    while True:
        free = ~capped & (share > 0)
        rest = total - capped.sum()
        pi = np.where(capped, 1.0, 0.0)
        if rest <= 0 or not free.any():
            return pi
        pi[free] = rest * share[free] / share[free].sum()
        over = free & (pi > 1.0)
        if not over.any():
            return pi
        capped |= over


def other_workers(first: np.ndarray, weights: np.ndarray, more: int,
                  rng: np.random.Generator) -> np.ndarray:
    """``more`` distinct workers for each task besides its initial worker ``first``
    (n_tasks, more), by Pareto order sampling: key ``odds(U) / odds(lambda_j)``, the ``more``
    smallest keys win, ``lambda_j`` the chance of joining a task not first labelled by ``j``."""
    n_tasks, m = first.size, weights.size
    share = weights / weights.sum()
    target = inclusion(weights, more + 1.0)
    lam = np.clip((target - share) / np.maximum(1.0 - share, 1e-300), 0.0, 1.0)
    with np.errstate(divide="ignore"):
        log_odds = np.log(lam) - np.log1p(-lam)  # +inf: always in; -inf: never
    out = np.empty((n_tasks, more), dtype=np.int64)
    rows = max(1, CHUNK_KEYS // max(m, 1))
    for start in range(0, n_tasks, rows):  # chunks of tasks: bounded memory, no per-task loop
        stop = min(n_tasks, start + rows)
        u = rng.random((stop - start, m))
        with np.errstate(divide="ignore"):
            keys = np.log(u) - np.log1p(-u) - log_odds
        keys[np.arange(stop - start), first[start:stop]] = np.inf
        chosen = np.argpartition(keys, more - 1, axis=1)[:, :more]
        out[start:stop] = chosen
    return out


def labels_at_k(scenario: Scenario, world: World, replicate: int, k: int) -> LabelSet:
    """The twin's labels at exactly ``k`` per task in ``world``: the initial graph's, then
    ``k - 1`` other workers per task (:func:`other_workers`) answering in one batch."""
    n, m = scenario.tasks.count, scenario.workers.count
    weights = scenario.workers.arrivals.weights
    w = np.ones(m) if weights is None else np.asarray(weights, dtype=np.float64)
    first_tasks = np.asarray(world.initial_tasks, dtype=np.int64)
    first_workers = np.asarray(world.initial_workers, dtype=np.int64)
    first = np.zeros(n, dtype=np.int64)
    first[first_tasks] = first_workers
    more = min(k - 1, int((w > 0).sum()) - 1)  # distinct workers of positive weight
    rng = generator(scenario.seed, replicate, DESIGN_STREAM, k)
    if more > 0:
        picked = other_workers(first, w, more, rng)
        tasks = np.repeat(np.arange(n, dtype=np.int64), more)
        workers = picked.ravel()
        answers = world.model.answers(world, scenario.tasks.classes, rng)
        labels = np.asarray(answers.answer_block(tasks, workers),  # type: ignore[attr-defined]
                            dtype=np.int64)
    else:
        tasks = workers = labels = np.zeros(0, dtype=np.int64)
    return LabelSet(np.concatenate([first_tasks, tasks]),
                    np.concatenate([first_workers, workers]),
                    np.concatenate([np.asarray(world.initial_labels, dtype=np.int64), labels]),
                    n, m, scenario.tasks.classes)
