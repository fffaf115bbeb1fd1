"""``marketsim calibrate``: a small synthetic crowd file gives a scenario that validates and runs,
the fit recovers the world that made the file, and bad input is one line with exit code 2."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from scipy.special import expit

from marketsim.aggregation.confusion_fit import fit_confusion_world
from marketsim.aggregation.crowd_stats import crowd_stats
from marketsim.aggregation.curve_choice import band
from marketsim.aggregation.pull_fit import SHORTLIST
from marketsim.cli import main
from marketsim.scenario.parser import load_scenario
from marketsim.study.runner import run_unit
from tests.calibrate.test_calibrate_types import N_WORKERS

if TYPE_CHECKING:
    from tests.calibrate._calibrated import Calibrated


def synthetic(tmp_path: Path, sigma: float, n_tasks: int = 300, per_task: int = 5,
              seed: int = 0) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    """A CSV crowd of 12 GLAD workers (the first three do over half the work) and its truth."""
    rng = np.random.default_rng(seed)
    alpha = np.linspace(0.2, 3.0, 12)
    weight = np.r_[np.full(3, 4.0), np.ones(9)]
    beta = np.exp(sigma * rng.standard_normal(n_tasks))
    truth = rng.integers(0, 2, n_tasks)
    keys = np.log(weight)[None, :] + rng.gumbel(size=(n_tasks, 12))
    workers = np.argsort(-keys, axis=1)[:, :per_task].ravel()
    tasks = np.repeat(np.arange(n_tasks), per_task)
    right = rng.random(tasks.size) < expit(alpha[workers] * beta[tasks])
    labels = np.where(right, truth[tasks], 1 - truth[tasks])
    crowd, gold = tmp_path / "crowd.csv", tmp_path / "truth.csv"
    crowd.write_text("task,worker,label\n" + "".join(
        f"t{t},w{w},{'yes' if x else 'no'}\n" for t, w, x in zip(tasks, workers, labels,
                                                                 strict=True)))
    gold.write_text("task,label\n" + "".join(f"t{t},{'yes' if x else 'no'}\n"
                                            for t, x in enumerate(truth)))
    return crowd, gold, alpha, beta


def test_calibrate_writes_a_scenario_that_validates_and_runs(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture
                                                             ) -> None:
    crowd, gold, _, _ = synthetic(tmp_path, sigma=1.0)
    out = tmp_path / "twin.toml"
    assert main(["calibrate", str(crowd), "--truth", str(gold), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "goodness of fit" in printed and "agreement rate" in printed
    assert "most labels are wrong" in printed
    text = out.read_text()
    assert text.startswith("# Written by marketsim calibrate")
    assert f"# command: python -m marketsim calibrate {crowd} --truth {gold} --out {out}" in text
    doc = tomllib.loads(text)
    assert doc["arms"][0] == {"name": "as collected", "policy": "uniform",  # 5 per task
                              "inference": {"method": "ds", "class_prior": "estimate"},
                              "initial": "one-per-task"}
    assert doc["budget"]["edges"] == 1500 and doc["tasks"]["count"] == 300
    assert doc["workers"]["model"] == "confusion"
    assert doc["workers"]["confusion"]["design"] == "per-worker"
    assert len(doc["workers"]["confusion"]["matrices"]) == 12
    assert [a["name"] for a in doc["arms"]] == ["as collected", "entropy-greedy",
                                                "explore-exploit"]
    scenario = load_scenario(out)
    assert main(["validate", str(out)]) == 0
    result = run_unit(scenario.with_overrides(replicates=1), 0, 0)
    assert result.rows[-1].edges == 1500
    fit = json.loads(out.with_suffix(".fit.json").read_text())
    bic = {c["world"]: c["bic"] for c in fit["candidates"]}
    pulls = [name for name in bic if "ambiguous tasks pulling toward one class" in name]
    crowd = [name for name in bic if name.startswith("crowd-shrunk") and name not in pulls]
    on_curve = [name for name in crowd if name.endswith("task difficulty on the design curve")]
    ambiguous = [name for name in crowd if name.endswith("share from the majority's profile")]
    restored = [name for name in crowd if name.endswith("the crowd's spread restored")]
    assert len(restored) == 1  # the look-alike world with the crowd's spread restored
    accurate = [name for name in crowd if name.endswith("per-label accuracy restored")]
    # the two look-alike worlds fitted by likelihood without difficulty restored, and each
    # with its ambiguous share fitted on the restored world (where the share moved)
    assert 2 <= len(accurate) <= 4
    # each restored world with its share, its labels following the look-alike by the
    # agreement rate, where the world agreed more than the file
    following = [name for name in crowd if name.endswith("look-alike by the agreement rate")]
    assert len(following) <= len(accurate) - 2
    assert len(crowd) == 4 + len(on_curve) + len(ambiguous) + len(accurate) + len(following)
    assert on_curve  # sigma = 1: the crowd-shrunk worlds' difficulty is found on the curve
    assert len(pulls) <= SHORTLIST  # the worlds with pulls, where the fit finds any
    # the per-worker look-alike world with its ambiguous share and per-label accuracy fitted
    # together, as the crowd-shrunk ones (and its labels following the look-alike, where so)
    per_worker = [name for name in bic if name.startswith("per-worker confusion, look-alike")
                  and name.endswith(("per-label accuracy restored", "by the agreement rate"))]
    assert per_worker and all("task difficulty" not in name for name in per_worker)
    assert len(bic) == 8 + len(crowd) + len(pulls) + len(per_worker) + 6
    assert len(fit["crowd_matrix"]) == 2 and fit["crowd_concentration"] > 0
    curve = fit["design_curve"]  # the world written is the one nearest the data's own curve,
    distance = {c["world"]: c["distance"] for c in curve["candidates"]}  # or within its noise
    assert fit["world"] == curve["world"]
    assert distance[fit["world"]] <= min(distance.values()) + band(
        2 * len(curve["labels_per_task"]), distance[fit["world"]])
    assert curve["labels_per_task"] == ["1", "2", "3", "full"] and curve["against"] == "truth"
    assert curve["real"]["runs"] == 27  # 300 tasks: as many task-runs as 10 draws of 800
    assert len(curve["twin"]["dawid_skene_error"]) == 4
    assert "design curve, error % against the truth" in printed
    assert sum("task types" in name for name in bic) == 6  # 2-4 types, shared or per class
    # sigma = 1: difficulty pays
    assert bic["one ability per worker, task difficulty"] < bic["one ability per worker"]
    # the world written follows the curve within 2 points at every design, by both methods
    # (its curve as written, arrivals from a deck, is a run of its own: the luck of the runs
    # it was chosen on is not in it), and the generating family (one ability, difficulty) is
    # within noise of it: on 300 tasks the curve cannot tell it from a world whose shared
    # errors come from ambiguous tasks instead
    for method in ("majority_vote_error", "dawid_skene_error"):
        gaps = np.subtract(curve["twin"][method], curve["real"][method])
        assert np.abs(gaps).max() <= 0.02, (method, gaps)
    assert "sigma = " not in fit["world"]
    generating = distance["one ability per worker, task difficulty"]
    assert generating <= distance[fit["world"]] + band(2 * len(curve["labels_per_task"]))
    assert out.with_suffix(".fit.png").stat().st_size > 1000


def coin_fit(tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray, truth: np.ndarray,
             m: int, difficulty: bool, lookalike: bool = False, coins: bool = True) -> Any:
    weights = np.eye(2)[truth]
    start = np.full((m, 2, 2), 0.5)
    return fit_confusion_world(tasks, workers, labels, weights, m, start, coins=coins,
                               lookalike=lookalike, difficulty=difficulty)


def glad_crowd(n: int, seed: int = 4, m: int = 10, r: int = 8
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any]:
    """``n`` tasks of log-normal difficulty (sigma 0.8), ``r`` of ``m`` GLAD workers each:
    tasks, workers, labels, truth, the abilities, and the generator for more draws."""
    rng = np.random.default_rng(seed)
    alpha = np.linspace(0.5, 3.0, m)
    beta = np.exp(0.8 * rng.standard_normal(n))
    truth = rng.integers(0, 2, n)
    tasks = np.repeat(np.arange(n), r)
    workers = np.argsort(rng.random((n, m)), axis=1)[:, :r].ravel()
    right = rng.random(tasks.size) < expit(alpha[workers] * beta[tasks])
    labels = np.where(right, truth[tasks], 1 - truth[tasks])
    return tasks, workers, labels, truth, alpha, rng


def check_difficulty_pays_only_when_tasks_differ(n: int) -> Any:
    """Fit with and without difficulty on ``glad_crowd(n)`` and on the same crowd with equal
    tasks: the spread is found (sigma 0.8 within 0.1) and BIC takes difficulty only when the
    tasks differ. Returns the fit with difficulty."""
    tasks, workers, labels, truth, alpha, rng = glad_crowd(n)
    m = alpha.size
    fit = coin_fit(tasks, workers, labels, truth, m, difficulty=True)
    flat = coin_fit(tasks, workers, labels, truth, m, difficulty=False)
    assert abs(fit.sigma - 0.8) < 0.1
    assert fit.bic < flat.bic and flat.sigma == 0.0
    # equal tasks: difficulty does not pay for its parameter
    same = rng.random(tasks.size) < expit(alpha[workers])
    labels = np.where(same, truth[tasks], 1 - truth[tasks])
    assert (coin_fit(tasks, workers, labels, truth, m, True).bic
            > coin_fit(tasks, workers, labels, truth, m, False).bic)
    return fit


@pytest.mark.slow
def test_the_fit_recovers_abilities_and_the_spread_of_difficulty() -> None:
    """At 3,000 tasks the abilities come back too (within 0.35). The same fits on 500 tasks
    run by default (test_difficulty_is_found_and_pays_only_when_tasks_differ)."""
    fit = check_difficulty_pays_only_when_tasks_differ(3000)
    fitted_alpha = np.log(fit.confusion[:, 0, 0] / fit.confusion[:, 0, 1])
    assert np.max(np.abs(fitted_alpha - glad_crowd(3000)[4])) < 0.35


def test_difficulty_is_found_and_pays_only_when_tasks_differ() -> None:
    check_difficulty_pays_only_when_tasks_differ(500)


def test_the_fit_recovers_look_alike_tasks_and_asymmetric_workers() -> None:
    """Tasks of class 1 look like class 0 to everyone with probability 0.3; workers confuse
    the classes asymmetrically. The fit finds both, and BIC prefers them."""
    rng = np.random.default_rng(6)
    n, m, r = 2000, 12, 9
    look = np.array([[0.95, 0.05], [0.3, 0.7]])
    pi = np.stack([np.array([[a, 1 - a], [1 - b, b]]) for a, b in
                   zip(np.linspace(0.6, 0.95, m), np.linspace(0.9, 0.7, m), strict=True)])
    truth = rng.integers(0, 2, n)
    seen = (rng.random(n) > look[truth, truth]).astype(int) ^ truth  # the class it looks like
    tasks = np.repeat(np.arange(n), r)
    workers = np.argsort(rng.random((n, m)), axis=1)[:, :r].ravel()
    labels = (rng.random(tasks.size) > pi[workers, seen[tasks], seen[tasks]]).astype(int) \
        ^ seen[tasks]
    fit = coin_fit(tasks, workers, labels, truth, m, False, lookalike=True, coins=False)
    plain = coin_fit(tasks, workers, labels, truth, m, False, lookalike=False, coins=False)
    assert np.allclose(fit.lookalike, look, atol=0.04), fit.lookalike
    assert np.max(np.abs(fit.confusion - pi)) < 0.12
    assert fit.bic < plain.bic


def test_crowd_stats_count_agreeing_pairs() -> None:
    tasks, workers = np.array([0, 0, 0, 1, 1]), np.array([0, 1, 2, 0, 1])
    labels = np.array([1, 1, 0, 0, 0])
    stats = crowd_stats(tasks, workers, labels, np.array([1, -1]), 2, 3, 2)
    assert stats.agreement == pytest.approx((2 + 2) / (6 + 2))  # ordered pairs
    assert list(stats.labels_per_task) == [3, 2] and list(stats.labels_per_worker) == [2, 2, 1]
    assert np.allclose(stats.worker_accuracy, [1.0, 1.0, 0.0])
    assert stats.mostly_wrong == 0.0  # task 0: 2 of 3 right; task 1 has no reference
    wrong = crowd_stats(tasks, workers, labels, np.array([0, 0]), 2, 3, 2)
    assert wrong.mostly_wrong == 0.5  # task 0: 1 of 3 right; task 1: 2 of 2 right


def test_crowd_stats_judged_on_a_partial_truth_by_its_class_mix() -> None:
    """Against Dawid-Skene's answers a task's majority is nearly always right; a partial
    truth shows the errors the whole crowd makes, and the twin is weighted to its mix."""
    tasks, workers = np.repeat(np.arange(4), 3), np.tile(np.arange(3), 4)
    labels = np.array([0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1])  # each task's majority: 0 0 0 1
    majority = np.array([0, 1, 0, 1])
    plain = crowd_stats(tasks, workers, labels, majority, 4, 3, 2)
    assert plain.mostly_wrong == 0.0 and plain.accuracy == pytest.approx(11 / 12)
    gold = np.array([0, 0, 1, -1])  # task 1 wrong by all, task 2 by two of three
    judged = crowd_stats(tasks, workers, labels, majority, 4, 3, 2, gold, (0.5, 0.5))
    assert judged.mostly_wrong == pytest.approx((1 / 2 + 1) / 2)  # class 0: 1 of 2; class 1
    assert judged.accuracy == pytest.approx((3 / 6 + 1 / 3) / 2)
    assert np.allclose(judged.worker_accuracy, plain.worker_accuracy)  # per worker: as before


@pytest.mark.parametrize(("argv", "message"), [
    (["calibrate", "--out", "x.toml"], "give either a LABELS file or --dataset"),
    (["calibrate", "nope.csv", "--out", "x.toml"], "nope.csv"),
    (["calibrate", "--dataset", "nosuch", "--out", "x.toml"], "unknown dataset 'nosuch'"),
    (["calibrate", "a.csv", "--format", "xml", "--out", "x.toml"], "unknown --format 'xml'"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], message: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_label_file_with_a_bad_line_names_it(tmp_path: Path,
                                               capsys: pytest.CaptureFixture) -> None:
    crowd = tmp_path / "crowd.csv"
    crowd.write_text("task,worker,label\nt1,w1,yes\nt2,w2\n")
    assert main(["calibrate", str(crowd), "--out", str(tmp_path / "o.toml")]) == 2
    err = capsys.readouterr().err
    assert "crowd.csv" in err and err.count("\n") == 1
    assert not (tmp_path / "o.toml").exists()


def test_without_truth_the_dawid_skene_posterior_is_the_reference(no_truth_twin: Calibrated
                                                                   ) -> None:
    """The shared run without a truth file (the held-out choice of types it makes:
    test_calibrate_held_out)."""
    out = no_truth_twin.out
    assert no_truth_twin.code == 0, no_truth_twin.stderr
    text = out.read_text()
    assert "class from the Dawid-Skene posterior (no truth file)" in text
    assert "--seed 7" in text.splitlines()[1]
    scenario = load_scenario(out)
    assert scenario.seed == 7 and scenario.workers.count == N_WORKERS
    # each worker's labels in the file are the cards of the arrival deck, the whole budget
    arrivals = scenario.workers.arrivals
    assert arrivals.order == "deck" and arrivals.weights is not None
    assert all(w == int(w) for w in arrivals.weights)
    assert sum(arrivals.weights) == scenario.budget.edges
