"""Plug-in policies cannot break the market.

Every call into a policy goes through :func:`call_policy`: whatever it raises (``sys.exit``
included) becomes one :class:`~marketsim.errors.PolicyError` naming the policy, with its
traceback kept as the error's details. Every ranking goes through :func:`checked_ranking`: a
1-D sequence of distinct integer task indices in range is accepted, a prefix completed by the
missing tasks in ascending index order; anything else is a ``PolicyError`` saying what was
wrong. Policies only ever see read-only arrays (:func:`read_only`), so they cannot change the
labels or estimates the market holds.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any, TypeVar

import numpy as np

from marketsim.aggregation.base import BaseAggregator
from marketsim.data.compact_labels import compact_id_dtype
from marketsim.errors import PolicyError
from marketsim.market.setup import MarketSetup
from marketsim.policies.base import AssignmentPolicy, MachineDesk, MarketInfo, policy_type
from marketsim.workers.base import World

T = TypeVar("T")


def policy_label(policy: object) -> str:
    """``policy 'name' (module:Class)``, as error messages name a policy."""
    cls = policy_type(policy)
    return f"policy {cls.name!r} ({cls.__module__}:{cls.__qualname__})"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def describe_exception(exc: BaseException) -> str:
    """What a failing call did, on one line: ``raised ValueError: ...`` or ``called
    sys.exit(3)``."""
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})"
    text = _one_line(str(exc))
    return f"raised {type(exc).__name__}" + (f": {text}" if text else "")


def policy_failure(label: str, method: str, exc: BaseException) -> PolicyError:
    """``label: method() raised ...`` with the exception's traceback as details."""
    details = "".join(traceback.format_exception(exc)).rstrip()
    return PolicyError(f"{label}: {method}() {describe_exception(exc)}", details)


def call_policy(policy: object, method: str, call: Callable[[], T]) -> T:
    """Run ``call`` (the policy's ``method``); turn any exception or ``SystemExit`` into a
    ``PolicyError`` (Ctrl-C still interrupts)."""
    try:
        return call()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a plug-in may raise anything
        raise policy_failure(policy_label(policy), method, exc) from None


def _ranking_problem(raw: Any, n_tasks: int) -> tuple[np.ndarray | None, str]:
    """The ranking as a fresh array of the tasks' compact type (int32 below 2**31 tasks, as
    the requester holds it), or ``None`` and what is wrong with it."""
    if raw is None:
        return None, "returned None"
    if isinstance(raw, (str, bytes, dict, set, frozenset)):
        return None, f"returned a {type(raw).__name__}"
    try:
        arr = np.asarray(raw)
    except Exception as exc:  # noqa: BLE001 - any object may come back
        return None, f"returned a {type(raw).__name__} that is not an array ({exc})"
    if arr.ndim != 1:
        return None, f"returned a {arr.ndim}-D {type(raw).__name__} of shape {arr.shape}"
    if arr.size == 0:
        return None, "returned no task index"
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        nan = " (with NaN)" if arr.dtype.kind in "fc" and np.isnan(arr).any() else ""
        return None, (f"returned {arr.dtype} values{nan}, not integer task indices "
                      "(return e.g. np.argsort(-score), not the scores)")
    bad = (arr < 0) | (arr >= n_tasks)
    if bad.any():
        return None, f"returned task index {arr[bad][0]}, outside [0, {n_tasks})"
    arr = arr.astype(compact_id_dtype(n_tasks))
    seen = np.zeros(n_tasks, dtype=bool)
    seen[arr] = True
    if np.count_nonzero(seen) < arr.size:  # a repeat: counted only to say which
        counts = np.bincount(arr, minlength=n_tasks)
        return None, f"returned task {int(np.argmax(counts > 1))} {int(counts.max())} times"
    return arr, ""


def checked_ranking(policy: object, raw: Any, n_tasks: int) -> np.ndarray:
    """``raw`` as a full permutation of the ``n_tasks`` tasks (int32 below 2**31 tasks): a
    prefix is followed by the tasks it leaves out, in ascending index order. Raises
    ``PolicyError`` for anything but a non-empty 1-D integer sequence of distinct indices in
    ``[0, n_tasks)``."""
    arr, problem = _ranking_problem(raw, n_tasks)
    if arr is None:
        raise PolicyError(
            f"{policy_label(policy)}: rank() {problem}; expected a 1-D integer array of distinct "
            f"task indices in [0, {n_tasks}), most wanted first (all tasks or a prefix)"
        )
    if arr.size == n_tasks:
        return arr  # a fresh array (astype copies): the policy cannot change it later
    missing = np.ones(n_tasks, dtype=bool)
    missing[arr] = False
    return np.concatenate([arr, np.flatnonzero(missing).astype(arr.dtype)])


def read_only(arr: np.ndarray | None) -> np.ndarray | None:
    """A read-only copy of ``arr`` (``None`` stays ``None``)."""
    if arr is None:
        return None
    out = np.array(arr)
    out.flags.writeable = False
    return out


def frozen_fresh(obj: T) -> T:
    """``obj`` (a dataclass whose arrays were built for this call, shared with nobody) with
    its array fields made read-only in place: :func:`frozen_arrays` without the copies."""
    kind = type(obj)
    names = _FIELD_NAMES.get(kind)
    if names is None:  # read once per class: this runs at every arrival of a worker-aware market
        names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(kind))  # type: ignore[arg-type]
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    return obj


#: The field names of each dataclass :func:`frozen_fresh` has frozen.
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def frozen_arrays(obj: T, *, skip: tuple[str, ...] = ()) -> T:
    """A copy of the frozen dataclass ``obj`` whose array fields are read-only copies."""
    changes = {
        f.name: read_only(getattr(obj, f.name))
        for f in fields(obj)  # type: ignore[arg-type]
        if f.name not in skip and isinstance(getattr(obj, f.name), np.ndarray)
    }
    return replace(obj, **changes)  # type: ignore[type-var]


def market_info(setup: MarketSetup, world: World, policy: AssignmentPolicy,
                make_estimator: Callable[[], BaseAggregator],
                machines: MachineDesk | None = None) -> MarketInfo:
    """What the policy may know before the market starts, as read-only copies (the world is
    shared by every arm); the truth only for policies whose fact ``needs_truth`` is true, the
    workers' true confusion matrices also for those whose ``needs_true_workers`` is; the
    machines it may ask (``None``: none)."""
    facts = policy_type(policy)
    ab, oracle = setup.workers.ability, facts.needs_truth
    knows_workers = oracle or facts.needs_true_workers
    return frozen_arrays(MarketInfo(
        n_tasks=setup.tasks.count, n_workers=setup.workers.count,
        n_classes=setup.tasks.classes, class_prior=np.asarray(setup.tasks.prior),
        ability_alpha=ab.alpha, ability_beta=ab.beta, ability_low=ab.low,
        inference=make_estimator, truth=world.truth if oracle else None,
        true_confusion=world.confusion if knows_workers else None,
        gold_count=0 if setup.gold is None else setup.gold.count, machines=machines,
    ))
