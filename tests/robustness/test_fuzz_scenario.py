"""Fuzzing the scenario loader through the real entry point, ``marketsim.cli.main``.

Three input classes:

- *mutated scenario*: a small valid scenario with one to three hostile edits — a key set to a
  value of the wrong type, a huge or negative number, NaN/inf, an empty table, a wrong-length
  prior or one that does not sum to 1, a key deleted, an unknown key added, a table replaced by
  a scalar;
- *random document*: arbitrary nested tables and arrays under plausible and random keys;
- *raw bytes / text*: random bytes, random text, and a valid file cut or spliced at random.

TOML documents are built as dicts and written with ``marketsim.scenario.toml_out.dumps``
(``tomllib`` reads only). Every case must exit 0, or exit 2 with exactly one stderr line
``marketsim: error: FILE: ...`` that names the file and, for a validation error, a key of the
document — never a traceback, never another exit code.
"""

from __future__ import annotations

import copy
import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from marketsim.cli import main
from marketsim.scenario.toml_out import dumps

#: Generated cases per input class at full scale (2,500 in all for this loader; ``fuzz_cases``
#: in conftest.py: a tenth of them in the default test loop, all of them under ``-m slow``).
CASES = {"mutated": 1000, "random": 500, "raw": 1000}
FUZZ = settings(
    deadline=None,
    derandomize=not os.environ.get("MARKETSIM_FUZZ_RANDOM"),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much,
                           # capsys is drained before and after every case (see run_case)
                           HealthCheck.function_scoped_fixture],
)


# --- the TOML writer (``tomllib`` reads only): the one ``validate --toml`` uses ------------
def test_writer_round_trips() -> None:
    doc = {"a": 1, "b": {"c": [1.5, "x\"\\\n"], "d": {"e": float("inf")}},
           "arms": [{"name": "u", "inference": {"method": "ds"}}], "weird key": True}
    assert tomllib.loads(dumps(doc)) == doc


# --- the base scenario and its keys ------------------------------------------------------------
BASE: dict[str, Any] = {
    "scenario": {"name": "fuzz", "seed": 3, "replicates": 1},
    "tasks": {"count": 20, "classes": 2, "prior": [0.6, 0.4]},
    "workers": {
        "count": 5,
        "model": "one-coin",
        "ability": {"distribution": "shifted-beta", "alpha": 6.0, "beta": 2.0, "low": 0.1},
        "arrivals": {"rate": 1.0},
        "service": {"mean": 0.0},
    },
    "budget": {"edges": 40, "initial": "one-per-task", "batch": 10},
    "output": {"graph": True, "graphml": False},
    "arms": [
        {"name": "uniform", "policy": "uniform", "inference": "one-coin-shifted-beta"},
        {"name": "ds", "policy": {"name": "entropy-greedy"},
         "inference": {"method": "ds", "class_prior": "estimate", "max_iter": 20}},
    ],
}

#: Extra optional keys the validator knows, so mutations reach their checks too.
OPTIONAL = [
    ("workers", "confusion"), ("workers", "spammer_hammer"), ("budget", "initial_probability"),
    ("arms", 0, "initial"), ("arms", 1, "inference", "alpha"), ("arms", 1, "inference", "low"),
    ("arms", 1, "inference", "tol"), ("arms", 1, "inference", "init"),
    ("arms", 1, "inference", "warm_start"), ("sweep",), ("sweep", "workers.count"),
    ("workers", "confusion", "low"), ("workers", "confusion", "design"),
    ("workers", "dynamics"), ("workers", "dynamics", "learning"), ("workers", "dynamics", "rest"),
    ("workers", "dynamics", "fatigue"), ("workers", "dynamics", "drift"),
    ("workers", "service", "speed_spread"), ("workers", "service", "abandon"),
    ("workers", "confusion", "type_shares"), ("workers", "confusion", "type_matrices"),
]


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((*prefix, k))
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.append((*prefix, i))
            out.extend(_paths(v, (*prefix, i)))
    return out


PATHS = sorted(set(_paths(BASE)) | set(OPTIONAL), key=repr)

KEY_NAMES = ["scenario", "tasks", "workers", "budget", "arms", "output", "sweep", "count",
             "classes", "prior", "name", "seed", "replicates", "edges", "batch", "policy",
             "inference", "method", "ability", "alpha", "beta", "low", "rate", "mean",
             "class_prior", "graph", "initial", "model"]

# --- hostile values ----------------------------------------------------------------------------
HUGE = [0, -1, 1, 2, 10**9, 2**31, 2**63 - 1, 2**63, -(2**63), 2**64, 10**30, 10**400, -(10**400)]
FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 0.5, 1.0, 1.0000001, 1e-320, 1e308, -1e308, 0.1 + 0.2]),
)
SCALARS = st.one_of(
    st.integers(),
    st.sampled_from(HUGE),
    FLOATS,
    st.booleans(),
    st.text(max_size=8),
    st.sampled_from(["", " ", "uniform", "ds", "mv", "one-coin", "true", "estimate", "none",
                     "os:system", "bernoulli", "confusion", "dirichlet"]),
)
PRIORS = st.one_of(
    st.lists(st.floats(0, 1), min_size=0, max_size=5),  # wrong length, not summing to 1
    st.lists(FLOATS, min_size=1, max_size=3),
    st.lists(st.sampled_from(HUGE), min_size=1, max_size=3),
    st.just([0.5, 0.5]), st.just([1.0, 0.0]), st.just([0.3, 0.3, 0.4]),
)
VALUES = st.recursive(
    st.one_of(SCALARS, PRIORS, st.just({}), st.just([])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(KEY_NAMES) | st.text(min_size=1, max_size=5), inner,
                        max_size=3),
    ),
    max_leaves=6,
)


#: Unknown keys, including ones an error message must not let break its single line.
ODD_KEYS = st.sampled_from(["colour", "Count", "x y", "", "a\nb", "a\r\nb", "\u00e9", "a.b",
                            '"q"', "\u2028"]) | st.text(max_size=4)


def _set(doc: Any, path: tuple, value: Any) -> Any:
    """Set ``path`` in ``doc`` (creating tables on the way); replace the doc if path is ()."""
    if not path:
        return value
    obj = doc
    for part in path[:-1]:
        if isinstance(obj, dict):
            part = str(part)
            if not isinstance(obj.get(part), dict | list):
                obj[part] = {}
            obj = obj[part]
        elif isinstance(obj, list) and isinstance(part, int) and part < len(obj):
            obj = obj[part]
        else:
            return doc
    last = path[-1]
    if isinstance(obj, dict):
        obj[str(last)] = value
    elif isinstance(obj, list) and isinstance(last, int) and last < len(obj):
        obj[last] = value
    return doc


def _delete(doc: Any, path: tuple) -> Any:
    obj = doc
    for part in path[:-1]:
        try:
            obj = obj[part]
        except (KeyError, IndexError, TypeError):
            return doc
    try:
        del obj[path[-1]]
    except (KeyError, IndexError, TypeError):
        pass
    return doc


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(PATHS))
        op = draw(st.sampled_from(["set", "set", "set", "delete", "unknown", "table"]))
        if op == "set":
            value = draw(PRIORS) if path[-1] in ("prior", "class_prior") else draw(VALUES)
            doc = _set(doc, path, value)
        elif op == "delete":
            doc = _delete(doc, path)
        elif op == "unknown":
            doc = _set(doc, (*path[:-1], draw(ODD_KEYS)), draw(SCALARS))
        else:
            doc = _set(doc, path, draw(st.sampled_from([{}, {"a": 1}, [], [{}]])))
    return doc if isinstance(doc, dict) else {"value": doc}


RANDOM_DOCS = st.dictionaries(
    st.sampled_from(KEY_NAMES) | st.text(max_size=6), VALUES, max_size=6
)

# --- running one case --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scenario_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-scenario") / "case.toml"


def _doc_keys(doc: Any) -> set[str]:
    keys = {"top level"}
    for path in _paths(doc):
        for part in path:
            if isinstance(part, str):
                keys.add(part)
    return keys


def _category(message: str) -> str:
    """A coarse name for the kind of rejection, for the outcome table."""
    for needle, name in (
        ("invalid TOML", "invalid TOML"), ("not UTF-8", "not UTF-8"),
        ("is not a known key", "unknown key"), ("is required", "missing key"),
        ("must be a table", "not a table"), ("must be a finite", "NaN/inf"),
        ("must be one of", "unknown name"), ("must have", "wrong length"),
        ("must sum to 1", "does not sum to 1"), ("must be >", "out of range"),
        ("must be <", "out of range"), ("must be an", "wrong type"), ("must be a", "wrong type"),
        ("must be true or false", "wrong type"),
    ):
        if needle in message:
            return f"rejected: {name}"
    return "rejected: other"


def run_case(path: Path, capsys: pytest.CaptureFixture[str], doc: Any = None) -> str:
    """Run ``validate`` on ``path``; check the outcome contract; return the outcome's name."""
    capsys.readouterr()
    code = main(["validate", str(path), "--json"])
    out, err = capsys.readouterr()
    if code == 0:
        json.loads(out)  # the resolved scenario is valid JSON
        return "accepted"
    assert code == 2, f"exit code {code}; stderr: {err!r}"
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), f"not one line: {err!r}"
    prefix = f"marketsim: error: {path}: "
    assert lines[0].startswith(prefix), lines[0]
    assert "Traceback" not in err
    message = lines[0][len(prefix):]
    category = _category(message)
    if doc is not None and category not in ("rejected: invalid TOML", "rejected: not UTF-8"):
        assert any(k and k in message for k in _doc_keys(doc) | _doc_keys(BASE)), (
            f"error does not name a key: {message!r}"
        )
    return category


def test_mutated_scenarios(fuzz_cases, scenario_file: Path, capsys, tally) -> None:
    @settings(FUZZ, max_examples=fuzz_cases(CASES["mutated"]))
    @given(doc=mutated())
    # Found by this test: an integer too large for a float crashed the validator (OverflowError),
    # and an unknown key holding a line break broke the one-line error.
    @example(doc={**BASE, "tasks": {"count": 10**400}})
    @example(doc={**BASE, "arms": [{"name": "a", "policy": "uniform",
                                     "inference": {"method": "ds", "tol": 10**400}}]})
    @example(doc={**BASE, "tasks": {**BASE["tasks"], "prior": [10**400, 0]}})
    @example(doc={**BASE, "tasks": {**BASE["tasks"], "a\nb": 1}})
    def check(doc: dict) -> None:
        scenario_file.write_text(dumps(doc), encoding="utf-8")
        tally.record("scenario (validate)", "mutated valid scenario",
                     run_case(scenario_file, capsys, doc))

    check()


def test_random_documents(fuzz_cases, scenario_file: Path, capsys, tally) -> None:
    @settings(FUZZ, max_examples=fuzz_cases(CASES["random"]))
    @given(doc=RANDOM_DOCS)
    def check(doc: dict) -> None:
        scenario_file.write_text(dumps(doc), encoding="utf-8")
        tally.record("scenario (validate)", "random TOML document", run_case(scenario_file, capsys,
                                                                             doc))

    check()


VALID_TEXT = dumps(BASE)


@st.composite
def raw_inputs(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["bytes", "text", "cut", "splice"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    if kind == "text":
        return draw(st.text(max_size=200)).encode("utf-8")
    data = VALID_TEXT.encode("utf-8")
    at = draw(st.integers(0, len(data)))
    if kind == "cut":
        return data[:at]
    return data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]


def test_raw_bytes_and_text(fuzz_cases, scenario_file: Path, capsys, tally) -> None:
    @settings(FUZZ, max_examples=fuzz_cases(CASES["raw"]))
    @given(data=raw_inputs())
    def check(data: bytes) -> None:
        scenario_file.write_bytes(data)
        tally.record("scenario (validate)", "raw bytes/text, cut or spliced file",
                     run_case(scenario_file, capsys))

    check()


def test_base_scenario_is_valid(scenario_file: Path, capsys) -> None:
    scenario_file.write_text(VALID_TEXT, encoding="utf-8")
    assert run_case(scenario_file, capsys, BASE) == "accepted"
