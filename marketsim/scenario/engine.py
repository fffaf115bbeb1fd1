"""What the block engine (``[scenario] engine = "blocks"``) can simulate: every market mechanic
that needs the event loop, refused in one line naming its key.

The block engine (:mod:`marketsim.market.block_market`) hands out everything between two
refreshes at once, so it simulates only markets where nothing happens between refreshes but
hand-outs from a fixed ranking: answers at once, no gold, no worker rules, a policy that ranks
tasks (not one that chooses per arriving worker), answers a worker model can draw in blocks, and
no networkx graph (whose edges carry each label's own time).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marketsim.errors import InputError
from marketsim.policies.registry import POLICIES
from marketsim.scenario.arm_specs import ArmSpec
from marketsim.scenario.crowd_specs import WorkersSpec
from marketsim.scenario.validation import printable
from marketsim.workers.registry import WORKER_MODELS

#: What the block engine does not simulate, for the docs (each refused with its key; the
#: worker models it refuses are those whose facts say they do not answer in blocks, and a
#: model's options it cannot simulate, such as task effects, are the model's to name).
REFUSED = ("[replay]", "[[machines]]", "[gold] and arms' gold", "[blocking] and arms' blocking",
           "workers.capacity", "workers.session_mean", "budget.money",
           "workers.service (mean, speed_spread, abandon)", "workers.dynamics",
           "task effects (workers.confusion / workers.communities sigma, lookalike)",
           "worker models that do not answer in blocks ("
           + ", ".join(repr(n) for n, c in WORKER_MODELS.items() if not c.answers_in_blocks)
           + ")",
           "policies that choose per arriving worker (assign)", "output.graph = true")


def _refuse(key: str, what: str, source: str) -> InputError:
    what = f" {what}" if what else ""
    return InputError(f"{printable(key)}{what} is not simulated by scenario.engine = 'blocks' "
                      "(it hands out a refresh's labels at once); use engine = 'events'",
                      source=source)


def _worker_keys(workers: WorkersSpec) -> list[tuple[str, str]]:
    """(key, what) of the worker settings the block engine refuses."""
    out = []
    for key, what in (("capacity", "(a per-worker limit)"),
                      ("session_mean", "(drop-out)"), ("dynamics", "(changing workers)")):
        if getattr(workers, key) is not None:
            out.append((f"workers.{key}", what))
    service = workers.service
    for key in ("mean", "speed_spread", "abandon"):
        if getattr(service, key) > 0:
            out.append((f"workers.service.{key}", "(labelling time, abandonment)"))
    if not workers.model_class.answers_in_blocks:
        out.append(("workers.model", f"= {workers.model!r} (answers drawn one at a time)"))
    problem = workers.worker_model.block_problem()
    if problem is not None:
        out.append((f"workers.{problem[0]}", problem[1]))
    return out


def check_engine(doc: Mapping[str, Any], workers: WorkersSpec, arms: list[ArmSpec],
                 source: str) -> None:
    """Refuse, in one line naming the key, what ``engine = "blocks"`` does not simulate
    (``doc``: the scenario's tables; ``arms``: resolved)."""
    if doc["scenario"].engine != "blocks":
        return
    refused = [(name, "") for name in ("replay", "gold", "blocking") if doc[name] is not None]
    if doc["machines"]:
        refused.append(("machines", "(machine annotators)"))
    refused += _worker_keys(workers)
    if doc["budget"] is not None and doc["budget"].money is not None:
        refused.append(("budget.money", "(a money budget)"))
    if doc["output"].graph:
        refused.append(("output.graph", "= true (set it to false)"))
    for idx, arm in enumerate(arms):
        refused += [(f"arms[{idx}].{name}", "") for name in ("gold", "blocking")
                    if getattr(arm, name) is not None]
        cls = arm.policy.cls or POLICIES.get(arm.policy.name)
        if cls is not None and callable(getattr(cls, "assign", None)):
            refused.append((f"arms[{idx}].policy", f"{arm.policy.name!r} (chooses per "
                            "arriving worker)"))
    if refused:
        key, what = refused[0]
        raise _refuse(key, what, source)
