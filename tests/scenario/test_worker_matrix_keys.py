"""Hostile input for the worker-model keys a calibrated twin writes: ``[workers.confusion]``
``design = "per-worker"``, ``matrices``, ``sigma``, ``lookalike``, and the existing
``[workers.glad]`` and ``[workers.arrivals] weights``: wrong types, negative, NaN, wrong
shapes and unknown keys each give a one-line error naming the key (exit code 2 from the
command line, no traceback)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from marketsim.errors import InputError
from marketsim.scenario.parser import parse_scenario
from tests.helpers import edit_table, validate_in_process

MATRICES = [[[0.9, 0.1], [0.3, 0.7]], [[0.6, 0.4], [0.05, 0.95]], [[0.5, 0.5], [0.5, 0.5]]]
NAN = float("nan")


def scenario(model: str = "confusion", **table: Any) -> dict[str, Any]:
    workers: dict[str, Any] = {"count": 3, "model": model}
    if model == "confusion":
        workers["confusion"] = {"design": "per-worker", "matrices": MATRICES, **table}
    elif table:
        workers[model] = table
    return {"tasks": {"count": 20, "classes": 2}, "workers": workers,
            "budget": {"edges": 40},
            "arms": [{"name": "ds", "policy": "uniform", "inference": "ds"}]}


CASES = [
    ({"matrices": MATRICES[:2]}, "workers.confusion.matrices must have workers.count = 3"),
    ({"matrices": [[[0.9, 0.1]]] * 3}, "workers.confusion.matrices must hold 2×2 matrices"),
    ({"matrices": [[[0.9, 0.2], [0.3, 0.7]]] * 3}, "workers.confusion.matrices rows must sum"),
    ({"matrices": [[[1.2, -0.2], [0.3, 0.7]]] * 3}, "workers.confusion.matrices entries must "
     "be probabilities"),
    ({"matrices": [[[NAN, 0.1], [0.3, 0.7]]] * 3}, "workers.confusion.matrices"),
    ({"matrices": [[["x", 0.1], [0.3, 0.7]]] * 3}, "workers.confusion.matrices"),
    ({"matrices": 0.5}, "workers.confusion.matrices"),
    ({"matrices": None}, "workers.confusion.matrices is required with design = 'per-worker'"),
    ({"design": "diagonal-uniform"}, "workers.confusion.matrices applies only to design "
     "'per-worker'"),
    ({"sigma": -1.0}, "workers.confusion.sigma must be >= 0"),
    ({"sigma": NAN}, "workers.confusion.sigma"),
    ({"sigma": "hard"}, "workers.confusion.sigma must be a number"),
    ({"sigma": 11.0}, "workers.confusion.sigma must be <= 10"),
    ({"lookalike": [[0.9, 0.1]]}, "workers.confusion.lookalike must be 2×2"),
    ({"lookalike": [[0.9, 0.1, 0.0], [0.0, 1.0, 0.0]]}, "workers.confusion.lookalike must be "
     "2×2"),
    ({"lookalike": [[0.9, 0.2], [0.0, 1.0]]}, "workers.confusion.lookalike rows must sum to 1"),
    ({"lookalike": [[NAN, 0.1], [0.0, 1.0]]}, "workers.confusion.lookalike"),
    ({"lookalike": [[-0.1, 1.1], [0.0, 1.0]]}, "workers.confusion.lookalike entries must be "
     "probabilities"),
    ({"lookalike": "identity"}, "workers.confusion.lookalike"),
    ({"look_alike": [[1.0, 0.0], [0.0, 1.0]]}, "workers.confusion.look_alike"),
    ({"pull": [[0.9, 0.1], [0.0, 1.0]]}, "workers.confusion.pull_strengths must be given"),
    ({"pull": [[0.9, 0.1]], "pull_strengths": [0.5], "pull_weights": [1.0]},
     "workers.confusion.pull must be 2×2"),
    ({"pull": [[0.9, 0.2], [0.0, 1.0]], "pull_strengths": [0.5], "pull_weights": [1.0]},
     "workers.confusion.pull rows must sum to 1"),
    ({"pull": [[0.9, 0.1], [0.0, 1.0]], "pull_strengths": [0.5, 0.9], "pull_weights": [1.0]},
     "workers.confusion.pull_weights must have one weight per pull strength"),
    ({"pull": [[0.9, 0.1], [0.0, 1.0]], "pull_strengths": [1.5], "pull_weights": [1.0]},
     "workers.confusion.pull_strengths must be in (0, 1]"),
    ({"pull_strengths": [0.5], "pull_weights": [1.0]}, "workers.confusion.pull must be given"),
]


@pytest.mark.parametrize(("table", "message"), CASES)
def test_bad_confusion_keys_are_one_line_errors(table: dict, message: str) -> None:
    doc = scenario()
    conf = doc["workers"]["confusion"]
    edit_table(conf, table)
    with pytest.raises(InputError) as info:
        parse_scenario(doc, "x")
    assert message in str(info.value) and "\n" not in str(info.value), str(info.value)


@pytest.mark.parametrize(("model", "table", "message"), [
    ("glad", {"alpha": [1.0, NAN, 2.0]}, "workers.glad.alpha"),
    ("glad", {"alpha": ["a", 1.0, 2.0]}, "workers.glad.alpha"),
    ("glad", {"alpha": 1.0}, "workers.glad.alpha"),
    ("glad", {"sigma": NAN}, "workers.glad.sigma"),
    ("glad", {"sigma": "wide"}, "workers.glad.sigma must be a number"),
    ("glad", {"shape": -1.0, "difficulty": "gamma"}, "workers.glad.shape must be >= 0.001"),
    ("glad", {"difficulty": "uniform"}, "workers.glad.difficulty"),
    ("glad", {"alpah": [1.0, 2.0, 3.0]}, "workers.glad.alpah"),
])
def test_bad_glad_keys_are_one_line_errors(model: str, table: dict, message: str) -> None:
    with pytest.raises(InputError) as info:
        parse_scenario(scenario(model, **table), "x")
    assert message in str(info.value) and "\n" not in str(info.value), str(info.value)


@pytest.mark.parametrize(("weights", "message"), [
    ([1.0, NAN, 2.0], "workers.arrivals.weights"),
    ([1.0, -1.0, 2.0], "workers.arrivals.weights entries must be finite numbers > 0"),
    ([1.0, 2.0], "workers.arrivals.weights must have workers.count = 3 entries"),
    (["a", 1.0, 2.0], "workers.arrivals.weights"),
    (2.0, "workers.arrivals.weights"),
    ([[1.0], [2.0], [3.0]], "workers.arrivals.weights"),
])
def test_bad_weights_are_one_line_errors(weights: Any, message: str) -> None:
    doc = scenario()
    doc["workers"]["arrivals"] = {"weights": weights}
    with pytest.raises(InputError) as info:
        parse_scenario(doc, "x")
    assert message in str(info.value) and "\n" not in str(info.value), str(info.value)


@pytest.mark.parametrize(("arrivals", "message"), [
    ({"order": "deck"}, 'workers.arrivals.order = "deck" needs workers.arrivals.weights'),
    ({"order": "deck", "weights": [1.0, 2.5, 3.0]},
     'workers.arrivals.order = "deck" needs whole-number workers.arrivals.weights'),
    ({"order": "shuffled", "weights": [1, 2, 3]}, "workers.arrivals.order"),
    ({"order": "deck", "weights": [1, 2, 1e12]}, "cards; at most 33,554,432"),
])
def test_bad_deck_is_a_one_line_error(arrivals: dict[str, Any], message: str) -> None:
    doc = scenario()
    doc["workers"]["arrivals"] = arrivals
    with pytest.raises(InputError) as info:
        parse_scenario(doc, "x")
    assert message in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_a_deck_of_whole_counts_is_valid() -> None:
    doc = scenario()
    doc["workers"]["arrivals"] = {"order": "deck", "weights": [1, 2.0, 7]}
    assert parse_scenario(doc, "x").workers.arrivals.order == "deck"


def test_cli_exit_2_one_line_for_a_bad_matrix(tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[tasks]\ncount = 10\n[workers]\ncount = 2\nmodel = "confusion"\n'
        '[workers.confusion]\ndesign = "per-worker"\nmatrices = [[[0.9, 0.1], [0.2, 0.8]], '
        '[[0.7, 0.3], [0.2, 0.9]]]\n[budget]\nedges = 20\n'
        '[[arms]]\nname = "a"\npolicy = "uniform"\n')
    proc = validate_in_process(bad, capsys)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "workers.confusion.matrices rows must sum to 1" in lines[0] and str(bad) in lines[0]


def test_per_worker_design_round_trips_through_the_writer() -> None:
    import tomllib

    from marketsim.scenario.toml_out import dumps

    sc = parse_scenario(scenario(sigma=0.4, lookalike=[[0.9, 0.1], [0.2, 0.8]]), "x")
    again = parse_scenario(tomllib.loads(dumps(sc.resolved_document())), "x")
    assert again.workers == sc.workers
    assert again.workers.confusion.matrices == sc.workers.confusion.matrices
