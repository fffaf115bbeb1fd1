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
from marketsim.policies.fixed_overlap import FixedOverlapPolicy, deal
from marketsim.policies.simple import UniformPolicy
from marketsim.scenario.specs import Scenario
from marketsim.study.deck_sampler import deck_others
from marketsim.study.seeds import generator, initial_graph_rng, world_rng
from marketsim.workers.base import World
from marketsim.workers.draws import deck_counts

#: The spawn-key purpose of the sampler's streams (one per replicate and k), far above the
#: market's purposes (:mod:`marketsim.study.seeds`), so it never meets a market's stream.
DESIGN_STREAM = 100
#: Task-by-worker keys drawn at once at most (the sampler works through the tasks in chunks
#: of this many keys: memory stays flat for a large crowd).
CHUNK_KEYS = 1 << 22
#: The stream key of the as-collected arm's labels (a design's key is its k, at least 1).
COLLECTED_KEY = 0
#: Task-by-worker keys of one draw above which Pareto order sampling (a key per task and
#: worker: 100,000 tasks of 2,000 workers would be 2·10^8 keys a draw) gives way to
#: systematic sampling (a draw per label): every shipped data set is far below it (Web
#: 2,665 tasks × 177 workers), so its draws keep their bytes.
PARETO_KEYS = 1 << 24
#: Fresh draws of a task whose systematic pick holds its initial worker.
REDRAWS = 8


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


def joining(weights: np.ndarray, more: int) -> np.ndarray:
    """``lambda_j``, worker ``j``'s chance of joining a task they did not label first, such
    that with the initial worker (drawn by share) each is among a task's ``more + 1``
    labellers with :func:`inclusion`'s chance."""
    share = weights / weights.sum()
    target = inclusion(weights, more + 1.0)
    return np.asarray(np.clip((target - share) / np.maximum(1.0 - share, 1e-300), 0.0, 1.0))


def other_workers(first: np.ndarray, weights: np.ndarray, more: int,
                  rng: np.random.Generator) -> np.ndarray:
    """``more`` distinct workers for each task besides its initial worker ``first``
    (n_tasks, more), by Pareto order sampling: key ``odds(U) / odds(lambda_j)``, the ``more``
    smallest keys win, ``lambda_j`` the chance of joining a task not first labelled by ``j``
    (:func:`joining`). A key per task and worker: above :data:`PARETO_KEYS` of them the
    workers are drawn by :func:`systematic_workers` instead, a draw per label."""
    if first.size * weights.size > PARETO_KEYS:
        return systematic_workers(first, weights, more, rng)
    return pareto_workers(first, weights, more, rng)


def pareto_workers(first: np.ndarray, weights: np.ndarray, more: int,
                   rng: np.random.Generator) -> np.ndarray:
    """:func:`other_workers` by Pareto order sampling (in chunks of tasks of at most
    :data:`CHUNK_KEYS` keys)."""
    n_tasks, m = first.size, weights.size
    lam = joining(weights, more)
    with np.errstate(divide="ignore"):
        inverse_odds = (1.0 - lam) / lam  # 0: always in; +inf: never
    out = np.empty((n_tasks, more), dtype=np.int64)
    rows = max(1, CHUNK_KEYS // max(m, 1))
    for start in range(0, n_tasks, rows):  # chunks of tasks: bounded memory, no per-task loop
        stop = min(n_tasks, start + rows)
        u = rng.random((stop - start, m))
        # odds(U) / odds(lambda_j), in place: the order of the log-odds keys without a log
        keys = np.subtract(1.0, u)
        np.divide(u, keys, out=keys)
        with np.errstate(invalid="ignore"):
            keys *= inverse_odds
        keys[np.arange(stop - start), first[start:stop]] = np.inf
        chosen = np.argpartition(keys, more - 1, axis=1)[:, :more]
        out[start:stop] = chosen
    return out


def systematic_workers(first: np.ndarray, weights: np.ndarray, more: int,
                       rng: np.random.Generator) -> np.ndarray:
    """:func:`other_workers` for a large crowd, in time proportional to the labels drawn:
    randomised systematic sampling with inclusion probabilities ``pi_j`` (Hartley & Rao
    1962): :func:`joining`'s chances scaled to sum to ``more`` (:func:`inclusion`), laid end
    to end in a random order of the workers, and the workers under ``u, u + 1, ..., u + more
    - 1`` taken (distinct, as every ``pi_j <= 1``; each worker in with chance ``pi_j``). A new
    order every :func:`order_rows` tasks (so which workers share a task is not fixed); a task
    whose pick holds its initial worker is drawn again, up to :data:`REDRAWS` times, and a
    task still holding it (its initial worker joins nearly every task) by Pareto order
    sampling."""
    n_tasks, m = first.size, weights.size
    pi = inclusion(joining(weights, more), float(more))
    rows = order_rows(m, more)
    blocks = -(-n_tasks // rows)
    orders = np.argsort(rng.random((blocks, m)), axis=1)
    ends = np.cumsum(pi[orders], axis=1)
    ends *= more / ends[:, -1:]  # exactly ``more`` at the end of every order
    shifted = (ends + (more + 1.0) * np.arange(blocks)[:, None]).ravel()  # one sorted array
    block = np.arange(n_tasks) // rows
    out = np.empty((n_tasks, more), dtype=np.int64)
    todo = np.arange(n_tasks)
    for _ in range(REDRAWS):
        at = rng.random(todo.size)[:, None] + np.arange(more) + \
            (more + 1.0) * block[todo][:, None]
        place = np.minimum(np.searchsorted(shifted, at, side="right"), shifted.size - 1)
        out[todo] = orders.ravel()[place]
        todo = todo[(out[todo] == first[todo, None]).any(axis=1)]
        if not todo.size:
            return out
    out[todo] = pareto_workers(first[todo], weights, more, rng)
    return out


def order_rows(n_workers: int, more: int) -> int:
    """Tasks sharing one random order of the workers in :func:`systematic_workers`: about
    one order's length of labels (the orders cost no more than the labels)."""
    return max(1, n_workers // max(more, 1))


def collected_counts(scenario: Scenario) -> np.ndarray | None:
    """Each task's labels in the scenario's first arm (as collected) where the sampler can draw
    them: ``uniform`` spending ``budget.edges`` in whole even rounds (every task ``edges /
    tasks.count``; a round hands each task out once, to an arrival who has not labelled it, in
    a random order, as fixed overlap does in task order) or ``fixed-overlap`` (its ``overlap``
    or dealt ``overlaps``, all bought within ``budget.edges``), from a ``one-per-task`` initial
    graph; else ``None`` (the market's to simulate)."""
    arm, n = scenario.arms[0], scenario.tasks.count
    edges = scenario.budget.edges
    if arm.initial_graph(scenario.budget) != "one-per-task" or edges is None:
        return None
    policy = arm.policy.build(allow_imports=False, source=scenario.source)
    if type(policy) is UniformPolicy and edges % n == 0:
        return np.full(n, edges // n, dtype=np.int64)
    if type(policy) is FixedOverlapPolicy:
        options = policy.options
        per_task = (np.full(n, options.overlap, dtype=np.int64) if options.overlaps is None
                    else deal(options.overlaps, n))
        return per_task if int(per_task.sum()) <= edges else None
    return None


def design_counts(scenario: Scenario, k: int) -> np.ndarray:
    """Each task's labels at the design ``k``: ``k``, but never more than the task's own count
    as collected (:func:`collected_counts`, where the first arm's counts are known).

    Why: the real curve draws k of each task's labels, and a task the file holds fewer than k
    labels of keeps all its own (:func:`~marketsim.aggregation.design_curve.keep_k_per_task`).
    A twin that gave such a task k labels would be judged on a design the data never measured
    (a file with many short tasks, such as Rodrigues et al.'s music genres, 325 of 700 clips
    under 5 labels, looked 8 points easier at k = 5 than it is). Where every task has at least
    ``k`` labels this is exactly ``k`` everywhere."""
    full = np.full(scenario.tasks.count, k, dtype=np.int64)
    counts = collected_counts(scenario)
    return full if counts is None else np.minimum(full, counts)


def labels_at_k(scenario: Scenario, world: World, replicate: int, k: int) -> LabelSet:
    """The twin's labels at the design ``k`` in ``world`` (exactly ``k`` per task, at most the
    task's own count as collected: :func:`design_counts`): the initial graph's, then the
    other workers of each task (:func:`other_workers`) answering in one batch."""
    return labels_with_counts(scenario, world, replicate, design_counts(scenario, k), k)


def collected_labels(scenario: Scenario, world: World, replicate: int) -> LabelSet | None:
    """The labels the first arm (as collected) buys in ``world``, drawn as :func:`labels_at_k`
    draws a design with each task's own count (:func:`collected_counts`; from a stream of its
    own), or ``None`` where the market must simulate them (:func:`sampler_problem`)."""
    per_task = collected_counts(scenario)
    if per_task is None or sampler_problem(scenario, world) is not None:
        return None
    return labels_with_counts(scenario, world, replicate, per_task, COLLECTED_KEY)


def labels_with_counts(scenario: Scenario, world: World, replicate: int,
                       per_task: np.ndarray, key: int) -> LabelSet:
    """The twin's labels with ``per_task[i]`` labels of task ``i`` in ``world``: the initial
    graph's, then the others of each task (:func:`other_workers`, one draw per distinct count,
    at most one worker per pair; with arrivals from a deck, each worker's total drawn from the
    deck and dealt to the tasks: :func:`~marketsim.study.deck_sampler.deck_others`) answering
    in one batch, from the stream ``key``."""
    n, m = scenario.tasks.count, scenario.workers.count
    weights = scenario.workers.arrivals.weights
    w = np.ones(m) if weights is None else np.asarray(weights, dtype=np.float64)
    first_tasks = np.asarray(world.initial_tasks, dtype=np.int64)
    first_workers = np.asarray(world.initial_workers, dtype=np.int64)
    first = np.zeros(n, dtype=np.int64)
    first[first_tasks] = first_workers
    # distinct workers of positive weight
    more = np.minimum(np.asarray(per_task, dtype=np.int64) - 1, int((w > 0).sum()) - 1)
    rng = generator(scenario.seed, replicate, DESIGN_STREAM, key)
    task_parts, worker_parts = [], []
    if scenario.workers.arrivals.order == "deck" and weights is not None:
        first[np.setdiff1d(np.arange(n), first_tasks)] = -1
        dealt_tasks, dealt_workers = deck_others(np.maximum(more, 0), first,
                                                 deck_counts(weights),
                                                 np.bincount(first_workers, minlength=m), rng)
        task_parts, worker_parts = [dealt_tasks], [dealt_workers]
        more = more[:0]  # dealt from the deck: no Pareto draws
    for count in np.unique(more[more > 0]).tolist():  # a few distinct counts, not the tasks
        rows = np.flatnonzero(more == count)
        task_parts.append(np.repeat(rows, count))
        worker_parts.append(other_workers(first[rows], w, count, rng).ravel())
    if task_parts:
        tasks, workers = np.concatenate(task_parts), np.concatenate(worker_parts)
        answers = world.model.answers(world, scenario.tasks.classes, rng)
        labels = np.asarray(answers.answer_block(tasks, workers),  # type: ignore[attr-defined]
                            dtype=np.int64)
    else:
        tasks = workers = labels = np.zeros(0, dtype=np.int64)
    return LabelSet(np.concatenate([first_tasks, tasks]),
                    np.concatenate([first_workers, workers]),
                    np.concatenate([np.asarray(world.initial_labels, dtype=np.int64), labels]),
                    n, m, scenario.tasks.classes)
