"""A policy is one class (issue #39): its facts are typed class variables of
:class:`~marketsim.policies.base.Policy` with their defaults, the registry discovers the
policy modules, and a plug-in's facts are checked when it is imported."""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest

from marketsim.errors import InputError
from marketsim.options import F, Options
from marketsim.policies import registry
from marketsim.policies.base import Policy
from marketsim.policies.dynamic_overlap import DynamicOverlapOptions, DynamicOverlapPolicy
from marketsim.policies.fixed_overlap import FixedOverlapOptions, FixedOverlapPolicy
from marketsim.policies.registry import FACTS, POLICIES, fact_problem, facts_text, policy_class
from marketsim.policies.until_agreement import UntilAgreementOptions, UntilAgreementPolicy
from marketsim.report.arm_text import policies_section, policy_description
from marketsim.scenario import docs
from marketsim.scenario.arm_specs import ArmSpec
from marketsim.scenario.parser import parse_scenario

POLICY_DIR = Path(registry.__file__).parent


def _named_classes() -> set[str]:
    """Names given by a class-level ``name = "..."`` in the policy modules, read with ``ast``
    (independently of the registry's import-based discovery)."""
    names = set()
    for path in POLICY_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                names |= {stmt.value.value for stmt in node.body
                          if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant)
                          and any(isinstance(t, ast.Name) and t.id == "name"
                                  for t in stmt.targets)}
    return names


def test_the_registry_is_every_policy_module_s_named_classes_sorted() -> None:
    assert set(POLICIES) == _named_classes()
    assert list(POLICIES) == sorted(POLICIES)
    assert all(cls.name == name for name, cls in POLICIES.items())


@pytest.mark.parametrize("name", list(POLICIES))
def test_every_policy_s_facts_are_typed_and_consistent(name: str) -> None:
    cls = POLICIES[name]
    assert issubclass(cls, Policy) and fact_problem(cls) is None
    assert cls.description and cls.describe() == " ".join(cls.description.split())
    assert cls.describe().endswith(".")
    fields = cls.Options.model_fields
    for option in (*cls.per_task_options, *cls.tier_options):
        assert fields[option].annotation is int, option
    for option in cls.binary_only_options:
        assert fields[option].annotation is bool, option
    assert not (cls.needs_truth and not cls.name.startswith("oracle")), \
        "a policy that reads the truth is an oracle"


def test_the_facts_are_the_base_class_s_class_variables_each_documented() -> None:
    source = Path(sys.modules[Policy.__module__].__file__ or "").read_text(encoding="utf-8")
    body = source.split("class Policy(")[1].split("def describe")[0]
    for fact in FACTS:
        before = body.split(f"    {fact}: ClassVar[")[0].rstrip().splitlines()
        assert before[-1].strip().startswith("#:"), fact
    assert FACTS[0] == "name" and "unit_cost" in FACTS and "markets" in FACTS


def test_list_and_docs_word_the_market_facts() -> None:
    assert facts_text(POLICIES["uniform"]) == "class labels and continuous scores"
    assert facts_text(POLICIES["knowledge-gradient"]) == "class labels; binary tasks only"
    assert "route = true needs binary tasks" in facts_text(POLICIES["explore-exploit"])
    assert "sees the true classes" in facts_text(POLICIES["oracle-workers"])
    assert "sees the workers' true matrices" in facts_text(POLICIES["known-workers"])
    assert "worker-aware" not in facts_text(POLICIES["oracle"])


def test_presets_say_their_rule_with_the_option_values() -> None:
    assert FixedOverlapPolicy.describe(FixedOverlapOptions(overlap=5)).endswith(
        "With these options, every task gets exactly 5 labels.")
    until = UntilAgreementPolicy.describe(UntilAgreementOptions(agree=3, max_overlap=7))
    assert "until 3 of its answers agree, at most 7 labels." in until
    dyn = DynamicOverlapPolicy.describe(DynamicOverlapOptions(confidence=0.95,
                                                              weights="equal"))
    assert "reaches 0.95 (every worker weighted alike" in dyn and "at most 5 labels" in dyn
    assert "With these options" not in FixedOverlapPolicy.describe()


def test_report_policies_section_words_a_preset_with_its_arms_options() -> None:
    policies = {"a": {"name": "fixed-overlap", "overlap": 4},
                "b": {"name": "fixed-overlap", "overlap": 4},
                "c": {"name": "until-agreement", "agree": 2},
                "d": {"name": "until-agreement", "agree": 3}}
    specs = {n: ArmSpec.model_validate({"name": n, "policy": p}) for n, p in policies.items()}
    text = "\n".join(policies_section(list(specs), specs))
    assert "With these options, every task gets exactly 4 labels." in text
    assert "until 2 of its answers agree" not in text  # the arms differ: no one rule


# --- plug-ins ---------------------------------------------------------------------------------

def _plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> str:
    """A module ``factplug_<n>`` holding ``body``, importable; its name."""
    name = f"factplug_{len(list(tmp_path.iterdir()))}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


SUBCLASS = """
    from marketsim.policies.base import Policy

    class Mine(Policy):
        '''Mine.'''
        name = "mine"
        unit_cost = 4

        def rank(self, state, rng):
            return rng.permutation(state.labels.n_tasks)
"""

BARE = """
    from marketsim.options import Options

    class Bare:
        name = "bare"
        needs_truth = False
        needs_true_workers = False
        markets = ("classes",)
        binary_only = False
        binary_only_options = ()
        per_task_options = ()
        tier_options = ()
        even_rounds = False
        unit_cost = 1.0
        description = "A bare policy."
        Options = Options

        @classmethod
        def describe(cls, options=None):
            return cls.description

        def bind(self, info):
            pass

        def rank(self, state, rng):
            return rng.permutation(state.labels.n_tasks)
"""


def test_a_plugin_subclassing_policy_gets_the_base_defaults(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cls = policy_class(f"{_plugin(tmp_path, monkeypatch, SUBCLASS)}:Mine", allow_imports=True)
    assert (cls.unit_cost, cls.markets, cls.needs_truth, cls.per_task_options) == (
        4, ("classes",), False, ())
    assert cls.describe() == "Mine."


def test_the_report_words_a_plugin_only_from_a_module_already_imported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = _plugin(tmp_path, monkeypatch, SUBCLASS)
    assert policy_description(f"{module}:Mine") == ("User policy, loaded by import path from "
                                                     "outside marketsim; no description.")
    assert module not in sys.modules  # a report never imports outside code
    policy_class(f"{module}:Mine", allow_imports=True)
    assert policy_description(f"{module}:Mine") == "User policy (loaded by import path). Mine."


def test_a_bare_plugin_declaring_every_fact_is_a_policy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cls = policy_class(f"{_plugin(tmp_path, monkeypatch, BARE)}:Bare", allow_imports=True)
    assert cls.describe() == "A bare policy."


@pytest.mark.parametrize(("change", "needle"), [
    ("markets = (\"classes\",)", "does not declare the fact 'markets'"),
    ("unit_cost = 1.0", "does not declare the fact 'unit_cost'"),
    ("Options = Options", "does not declare the fact 'Options'"),
])
def test_a_bare_plugin_missing_a_fact_is_one_line_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str, needle: str) -> None:
    assert change in BARE
    module = _plugin(tmp_path, monkeypatch, BARE.replace(change, "pass"))
    with pytest.raises(InputError) as err:
        policy_class(f"{module}:Bare", allow_imports=True)
    message = str(err.value)
    assert "\n" not in message and needle in message and "subclass" in message, message


@pytest.mark.parametrize(("line", "needle"), [
    ("unit_cost = 'cheap'", "unit_cost = 'cheap'"),
    ("unit_cost = 0", "unit_cost = 0"),
    ("unit_cost = float('inf')", "unit_cost = inf"),
    ("markets = ('labels',)", "markets = ('labels',)"),
    ("markets = ()", "markets is empty"),
    ("markets = ['classes']", "markets = ['classes']"),
    ("needs_truth = 1", "needs_truth = 1"),
    ("per_task_options = ('overlap',)", "per_task_options names 'overlap'"),
    ("description = None", "description = None"),
])
def test_a_plugin_s_facts_are_checked_against_their_types(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, needle: str) -> None:
    module = _plugin(tmp_path, monkeypatch, SUBCLASS.replace(
        "        unit_cost = 4\n", f"        unit_cost = 4\n        {line}\n"))
    with pytest.raises(InputError, match=None) as err:
        policy_class(f"{module}:Mine", allow_imports=True)
    assert needle in str(err.value) and "\n" not in str(err.value), str(err.value)


SCORES = {"tasks": {"count": 20}, "workers": {"count": 5, "model": "gaussian-scores"},
          "budget": {"edges": 40, "batch": 10}}


def test_a_plugin_is_checked_against_the_market_like_a_builtin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plug-in serving class markets only (the default) is refused in a score market, one
    that declares ``markets = ("scores",)`` runs there."""
    module = _plugin(tmp_path, monkeypatch, SUBCLASS)
    doc: dict[str, Any] = {**SCORES, "arms": [{"name": "p", "policy": f"{module}:Mine",
                                               "inference": "gaussian-em"}]}
    with pytest.raises(InputError, match=r"arms\[0\]\.policy '.*:Mine' needs class labels"):
        parse_scenario(doc, "s.toml", allow_imports=True)
    scores = _plugin(tmp_path, monkeypatch, SUBCLASS.replace(
        "unit_cost = 4", "unit_cost = 4\n        markets = ('scores',)"))
    doc["arms"][0]["policy"] = f"{scores}:Mine"
    assert parse_scenario(doc, "s.toml", allow_imports=True).arms[0].policy.cls is not None


class _Plain(Policy[Options]):
    """A policy built in Python without a file of its own (class markets: the default)."""

    name = "plain"

    def rank(self, state: Any, rng: Any) -> Any:
        """Any order."""
        return rng.permutation(state.labels.n_tasks)


class _Counted(_Plain):
    """The same, with a per-task option it does not have."""

    per_task_options: ClassVar[tuple[str, ...]] = ("overlap",)


def test_a_policy_object_s_class_is_checked_like_a_plugin() -> None:
    import marketsim

    class Half:
        name = "half"
        needs_truth = False

        def bind(self, info: object) -> None:
            """Nothing."""

        def rank(self, state: Any, rng: Any) -> Any:
            return rng.permutation(state.labels.n_tasks)

    doc = {"tasks": {"count": 20}, "workers": {"count": 5},
           "budget": {"edges": 40, "batch": 10}, "arms": [{"policy": Half()}]}
    with pytest.raises(InputError, match="class Half: does not declare the fact "
                                         "'needs_true_workers'"):
        marketsim.scenario_from_dict(doc)
    doc["arms"] = [{"policy": _Counted()}]
    with pytest.raises(InputError, match="per_task_options names 'overlap'"):
        marketsim.scenario_from_dict(doc)
    scores = {**SCORES, "arms": [{"policy": _Plain(), "inference": "gaussian-em"}]}
    with pytest.raises(InputError, match=r"arms\[0\]\.policy: _Plain needs class labels"):
        marketsim.scenario_from_dict(scores)


# --- the docs ---------------------------------------------------------------------------------

class _NewOptions(Options):
    """``brand-new`` options."""

    depth: int = F(2, "how deep", ge=1)


class _New(Policy[_NewOptions]):
    name = "brand-new"
    description = "Brand-new ranks tasks somehow."
    Options = _NewOptions


def test_a_policy_without_a_docs_section_gets_a_generated_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """docs --write never breaks on a new policy: its section, words and option table are
    generated inside the block for undocumented policies, and regenerating is stable."""
    monkeypatch.setitem(POLICIES, "brand-new", _New)
    monkeypatch.setitem(docs.POLICY_OPTIONS, "brand-new", _NewOptions)
    pages = docs.policy_pages()
    once = docs.policies_texts(pages)
    block = once[docs.UNDOCUMENTED_PAGE].split(docs.UNDOCUMENTED_BEGIN)[1] \
        .split(docs.UNDOCUMENTED_END)[0]
    assert "### `brand-new`" in block and "Brand-new ranks tasks somehow." in block
    assert "*Markets:* class labels." in block
    assert "| `depth` |" in block and "### `uniform`" not in block
    assert docs.policies_texts(once) == once
