"""The scenario schema declared once: docs and JSON Schema generated from it, strict types,
did-you-mean, policy options checked at validate time, names resolved once."""

from __future__ import annotations

import inspect
import json
import pickle
import tomllib
from pathlib import Path

import jsonschema
import pytest

from marketsim.aggregation.registry import METHODS
from marketsim.errors import InputError
from marketsim.policies.registry import POLICIES
from marketsim.scenario import docs
from marketsim.scenario.arm_specs import POLICY_VARIANTS
from marketsim.scenario.parser import parse_scenario
from tests.helpers import schema_validator

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "scenarios").rglob("*.toml"))
BASE = {
    "tasks": {"count": 20},
    "workers": {"count": 5},
    "budget": {"edges": 40, "batch": 10},
    "arms": [{"name": "u", "policy": "uniform"},
             {"name": "d", "policy": "entropy-greedy", "inference": {"method": "ds"}}],
}


def error(data: dict) -> str:
    with pytest.raises(InputError) as info:
        parse_scenario(data, "bad.toml")
    message = str(info.value)
    assert message.startswith("bad.toml: ") and "\n" not in message
    return message


def test_key_tables_have_one_home_the_generated_reference_page() -> None:
    """The key tables are generated into docs/reference/scenario-keys.md when the site is built
    (its marker line), and no hand-written page keeps a copy that could drift."""
    stub = (ROOT / "docs" / "reference" / "scenario-keys.md").read_text(encoding="utf-8")
    assert "<!-- generated: scenario-keys -->" in stub.splitlines()
    text = docs.markdown()
    for needle in ("| `sweep` |", "### [replay]", "| `graph` |",
                   "### random-forest policy options"):
        assert needle in text
    copies = [page for page in (ROOT / "docs").rglob("*.md") if "_build" not in page.parts
              and "### [replay]" in page.read_text(encoding="utf-8")]
    assert copies == []


def test_policy_docs_option_tables_are_generated_from_the_options_models() -> None:
    """Each policy's option table, in whichever page of docs/explanation/policies/ has its
    section, is its ``Options`` model, as generated."""
    pages = docs.policy_pages()
    assert docs.policies_texts(pages) == pages, "run: python -m marketsim.scenario.docs --write"
    every = "\n".join(pages.values())
    for name, model in docs.POLICY_OPTIONS.items():
        assert every.count(docs.options_begin(name)) == 1, name
        block = every.split(docs.options_begin(name))[1].split(docs.OPTIONS_END)[0]
        assert {line.split("`")[1] for line in block.splitlines()
                if line.startswith("| `")} == set(model.model_fields), name
    for name in POLICIES:  # every built-in policy has a section of its own in one page
        assert docs.has_section(every, name), name


def test_a_policy_options_marker_in_two_pages_is_refused() -> None:
    """A policy's option table is generated in one place: its marker in a second page (a
    section copied while splitting a page) is an error naming the policy and both pages."""
    pages = docs.policy_pages()
    marker = docs.options_begin("qasca")
    holder = next(page for page, text in pages.items() if marker in text)
    other = next(page for page in pages if page != holder)
    pages[other] += f"\n{marker}\n{docs.OPTIONS_END}\n"
    with pytest.raises(ValueError, match="'qasca'.*exactly one page") as info:
        docs.policies_texts(pages)
    assert holder.name in str(info.value) and other.name in str(info.value)


def _reachable_tables() -> set[type]:
    """Every pydantic table reachable from the scenario document (through unions, arrays and
    nested tables), found here independently of the generator, plus the policy options."""
    import types
    import typing

    from pydantic import BaseModel

    from marketsim.scenario.specs import Scenario as ScenarioDocument

    found: set[type] = set()

    def visit(annotation: object) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation not in found:
                found.add(annotation)
                for field in annotation.model_fields.values():
                    visit(field.annotation)
            return
        if typing.get_origin(annotation) in (list, tuple, typing.Union, types.UnionType):
            for arg in typing.get_args(annotation):
                visit(arg)

    visit(ScenarioDocument)
    return found | set(docs.POLICY_OPTIONS.values())


def test_docs_have_a_key_table_for_every_table_of_the_schema() -> None:
    """The generated key tables (the reference's Scenario keys page) have a section whose table
    lists exactly the keys of each table the schema accepts, nested ones included ([gold],
    [blocking], [workers.tiers], an arm's)."""
    text = "\n" + docs.markdown()
    sections: dict[str, set[str]] = {}
    for block in text.split("\n### ")[1:]:
        heading, _, body = block.partition("\n")
        sections[heading.strip()] = {line.split("`")[1] for line in body.split("\n## ")[0]
                                     .splitlines() if line.startswith("| `")}
    for model in _reachable_tables():
        keys = set(model.model_fields)
        assert any(found == keys for found in sections.values()), (model.__name__, keys)
    for heading in ("[gold]", "[blocking]", "[workers.tiers]", "[[arms]]", "arms.policy",
                    "arms.inference"):
        assert heading in sections, heading
    assert "arms.gold" in text.split("### [gold]")[1].split("###")[0]


def test_json_schema_file_is_current_and_accepts_every_shipped_scenario() -> None:
    assert docs.SCHEMA_FILE.read_text(encoding="utf-8") == docs.json_text()
    validator = schema_validator(json.loads(docs.SCHEMA_FILE.read_text(encoding="utf-8")))
    for path in SHIPPED:
        validator.validate(tomllib.loads(path.read_text(encoding="utf-8")))
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({**BASE, "tasks": {"count": True}})


@pytest.mark.parametrize("name", list(POLICIES))
def test_policy_options_are_declared_once_on_the_class(name: str) -> None:
    """Each built-in policy's class carries its ``Options`` model; the constructor takes
    exactly those options, with those defaults (``get_params``), and nothing else."""
    cls = POLICIES[name]
    model = cls.Options
    assert model.__module__ == cls.__module__ or not model.model_fields
    defaults = {n: f.default for n, f in model.model_fields.items()}
    assert cls().get_params() == defaults
    assert set(inspect.signature(cls).parameters) == {"options"}
    with pytest.raises(InputError, match="not an option"):
        cls(no_such_option=1)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({k: v for k, v in BASE.items() if k != "tasks"} | {"task": {"count": 20}},
         "task is not a known key (allowed here: scenario, replay, tasks"),
        ({k: v for k, v in BASE.items() if k != "tasks"} | {"task": {"count": 20}},
         "did you mean tasks?"),
        (BASE | {"budget": {"edge": 40}}, "budget.edge is not a known key"),
        (BASE | {"budget": {"edge": 40}}, "did you mean edges?"),
        (BASE | {"arms": [{"nme": "u", "policy": "uniform"}]}, "did you mean name?"),
        (BASE | {"workers": {"count": 5, "model": "one-con"}}, "did you mean one-coin?"),
        (BASE | {"arms": [{"name": "u", "policy": "unifrom"}]}, "did you mean uniform?"),
        (BASE | {"workers": {"count": True}}, "workers.count must be an integer, got True"),
        (BASE | {"scenario": {"name": ["a"]}}, "scenario.name must be a string, got ['a']"),
        (BASE | {"workers": {"count": 5, "arrivals": {"rate": float("inf")}}},
         "workers.arrivals.rate must be a finite number, got inf"),
        (BASE | {"workers": {"count": 5, "arrivals": {"rate": 1e-308}}},
         "workers.arrivals.rate must be >= 1e-06, got 1e-308"),
        (BASE | {"arms": [BASE["arms"][0], {"name": "d", "policy": "uniform",
                                            "inference": {"method": "ds", "max_iter": 0}}]},
         "arms[1].inference.max_iter must be >= 1, got 0"),
        (BASE | {"arms": [{"name": "u", "policy": 3}]},
         "arms[0].policy must be a string or a table, got 3"),
        (BASE | {"arms": [{"name": "u", "policy": "uniform",
                           "inference": {"class_prior": "maybe"}}]},
         "arms[0].inference.class_prior must be one of true, estimate; got 'maybe'"),
    ],
)
def test_strict_types_and_did_you_mean(data: dict, needle: str) -> None:
    assert needle in error(data)


@pytest.mark.parametrize(
    ("policy", "needle"),
    [
        ({"name": "random-forest", "n_tree": 5},
         "arms[0].policy.n_tree is not an option of 'random-forest'"),
        ({"name": "random-forest", "n_tree": 5}, "did you mean n_trees?"),
        ({"name": "random-forest", "n_trees": 2.5},
         "arms[0].policy.n_trees must be an integer, got 2.5"),
        ({"name": "random-forest", "sample_fraction": 2},
         "arms[0].policy.sample_fraction must be <= 1, got 2"),
        ({"name": "random-forest", "criterion": "gin"}, "did you mean gini?"),
        ({"name": "knowledge-gradient", "a0": 0}, "arms[0].policy.a0 must be > 0, got 0"),
        ({"name": "knowledge-gradient", "optimistic": 1},
         "arms[0].policy.optimistic must be true or false"),
        ({"name": "uniform", "colour": "red"},
         "arms[0].policy.colour is not an option: policy 'uniform' takes none"),
    ],
)
def test_policy_options_are_checked_at_parse(policy: dict, needle: str) -> None:
    assert needle in error(BASE | {"arms": [{"name": "p", "policy": policy}]})


def test_import_path_options_checked_once_imported() -> None:
    data = BASE | {"arms": [{"name": "p", "policy": {
        "name": "marketsim.policies.knowledge_gradient:KnowledgeGradientPolicy",
        "optimistc": True}}]}
    sc = parse_scenario(data, "x.toml")  # shape only: nothing imported
    assert sc.arms[0].policy.cls is None
    with pytest.raises(InputError, match="arms\\[0\\].policy.optimistc is not an option of .*did "
                                         "you mean optimistic"):
        parse_scenario(data, "x.toml", allow_imports=True)


def test_names_resolved_once_and_specs_pickle() -> None:
    sc = parse_scenario(BASE, "x.toml")
    assert sc.arms[0].policy.cls is POLICIES["uniform"]
    assert sc.arms[1].inference.entry is METHODS["ds"]
    back = pickle.loads(pickle.dumps(sc))
    assert back == sc and back.arms[1].inference.entry is METHODS["ds"]
    assert "cls" not in sc.to_dict()["arms"][0]["policy"]
    assert "entry" not in sc.to_dict()["arms"][1]["inference"]


def test_runner_builds_from_the_specs_without_looking_names_up(monkeypatch) -> None:
    from marketsim.aggregation import registry as agg
    from marketsim.policies import registry as pol
    from marketsim.study.runner import run_unit

    sc = parse_scenario(BASE, "x.toml")

    def no_lookup(*args, **kwargs):
        raise AssertionError("a name was looked up again")

    monkeypatch.setattr(agg, "make_estimator", no_lookup)
    monkeypatch.setattr(pol, "make_policy", no_lookup)
    monkeypatch.setattr(pol, "policy_class", no_lookup)
    assert run_unit(sc, 0, 1).rows


def test_long_names_give_a_short_slug() -> None:
    sc = parse_scenario(BASE | {"scenario": {"name": "a very long name " * 20}}, "x.toml")
    assert len(sc.slug) <= 60 and not sc.slug.endswith("-") and sc.slug.startswith("a-very")


def test_huge_sweep_refused_at_once() -> None:
    data = BASE | {"sweep": {"workers": {"count": list(range(5, 106))},
                             "budget": {"batch": list(range(1, 101))}}}
    assert "sweep has more than 10,000 grid points" in error(data)


def test_the_policy_table_is_the_union_of_the_policies_variants() -> None:
    """``[arms.policy]`` parses into the built-in policy's variant (its name and its class's
    ``Options``, nothing else), an import path into the generic table; the JSON Schema has
    one branch per policy from the union, and a table that fits none is refused by it."""
    schema = docs.json_schema()
    refs = [b["$ref"].rsplit("/", 1)[-1] for b in
            schema["$defs"]["ArmSpec"]["properties"]["policy"]["anyOf"][1]["oneOf"]]
    assert refs == [*(v.__name__ for v in POLICY_VARIANTS.values()), "PolicySpec"]
    for name, variant in POLICY_VARIANTS.items():
        assert set(variant.model_fields) == {"name", *POLICIES[name].Options.model_fields}
        branch = schema["$defs"][variant.__name__]
        assert branch["properties"]["name"]["const"] == name
        assert branch["additionalProperties"] is False
    data = BASE | {"arms": [{"name": "p", "policy": {"name": "random-forest", "n_trees": 3}}]}
    policy = parse_scenario(data, "x.toml").arms[0].policy
    assert type(policy) is POLICY_VARIANTS["random-forest"]
    assert policy.options == {"n_trees": 3} and policy.cls is POLICIES["random-forest"]
    assert parse_scenario(data, "x.toml").to_dict()["arms"][0]["policy"] == {
        "name": "random-forest", "n_trees": 3}
    validator = schema_validator(schema)
    validator.validate(data)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(BASE | {"arms": [{"name": "p", "policy": {
            "name": "random-forest", "n_tree": 3}}]})
