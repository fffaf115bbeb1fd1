"""The Python API (``docs/api.md``): scenarios built and changed in Python, ``marketsim.run``
and its ``StudyResult``, arms holding policy and estimator objects.

The policy class below is imported by the command line too (``test_api:LeastLabelled`` with
this folder on ``sys.path``), so this module must stay free of side effects.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import marketsim
from marketsim.aggregation.dawid_skene import DawidSkene
from marketsim.cli import main
from marketsim.errors import InputError, PolicyError
from marketsim.options import F, Options
from marketsim.policies.base import Policy
from marketsim.record.curves import CURVE_COLUMNS, EXTRA_COLUMNS
from marketsim.record.summary_model import summary_json

pd = pytest.importorskip("pandas")

ROOT = Path(__file__).resolve().parents[2]
TESTS = Path(__file__).resolve().parent

SMALL_TOML = """
[scenario]
name = "api small"
seed = 7
replicates = 3

[tasks]
count = 120

[workers]
count = 8

[budget]
edges = 600
batch = 60

[[arms]]
name = "uniform"
policy = "uniform"
"""


class SpreadOptions(Options):
    """``least-labelled``'s one option."""

    spread: int = F(0, "random extra count added to each task's labels (ties spread)", ge=0)


class LeastLabelled(Policy[SpreadOptions]):
    """Tasks with the fewest labels first (ties by index): a 10-line custom policy."""

    name = "least-labelled"
    Options = SpreadOptions
    n_tasks = 0

    def bind(self, info) -> None:  # noqa: ANN001 - the policy protocol
        self.n_tasks = info.n_tasks

    def rank(self, state, rng: np.random.Generator) -> np.ndarray:  # noqa: ANN001
        counts = np.bincount(state.labels.tasks, minlength=self.n_tasks)
        return np.argsort(counts + rng.integers(0, self.options.spread + 1, self.n_tasks),
                          kind="stable")


def small(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SMALL_TOML, encoding="utf-8")
    return path


def test_object_arm_with_two_jobs_equals_the_cli_import_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Acceptance 1: a policy object (jobs=2) gives the CLI's curves.csv for the same class
    given by import path with --allow-imports."""
    path = small(tmp_path)
    toml = path.read_text() + ('\n[[arms]]\nname = "least"\n'
                               'policy = { name = "test_api:LeastLabelled", spread = 2 }\n')
    path.write_text(toml, encoding="utf-8")
    # The command by main() in this process, this folder on sys.path as a plug-in's folder
    # would be (an interpreter start was half of the test's time).
    monkeypatch.syspath_prepend(str(TESTS))
    assert main(["run", str(path), "--out", str(tmp_path / "cli"), "--allow-imports",
                 "--quiet", "--no-figures"]) == 0
    sc = marketsim.scenario_from_dict({
        "scenario": {"name": "api small", "seed": 7, "replicates": 3},
        "tasks": {"count": 120}, "workers": {"count": 8},
        "budget": {"edges": 600, "batch": 60},
        "arms": [{"name": "uniform", "policy": "uniform"}],
    }).with_arms({"name": "least", "policy": LeastLabelled(spread=2)}, keep=True)
    result = marketsim.run(sc, jobs=2, progress=False)
    expected = pd.read_csv(tmp_path / "cli" / "curves.csv")
    pd.testing.assert_frame_equal(result.curves, expected)
    assert result.run_dir is None


def check_headline_result(sc: marketsim.Scenario, result: marketsim.StudyResult) -> None:
    """The study result of the headline scenario: every arm's curves in the scenario's order,
    comparisons against the first arm, labels-to-target for every arm, replicate and target."""
    assert list(result.curves.columns) == list(CURVE_COLUMNS + EXTRA_COLUMNS)
    assert result.summary.replicates == 2 and result.summary.complete
    arms = [a.name for a in sc.arms]
    assert list(result.curves["arm"].unique()) == arms
    assert set(result.comparisons["arm"]) == set(arms[1:])
    assert (result.comparisons["reference"] == arms[0]).all()
    ltt = result.labels_to_target
    assert len(ltt) == len(arms) * 2 * len(result.summary.arms[arms[0]].edges_to_reach)


@pytest.mark.slow
def test_headline_scenario_loads_and_runs(tmp_path: Path) -> None:
    """Acceptance 2: the documented call on scenarios/30_workers.toml (about a minute). The
    same call on a smaller market, test_headline_scenario_runs_scaled_down, runs by default."""
    sc = marketsim.load_scenario(ROOT / "scenarios" / "30_workers.toml")
    result = marketsim.run(sc, replicates=2, jobs=2, progress=False)
    check_headline_result(sc, result)


def test_headline_scenario_runs_scaled_down() -> None:
    """The documented call on scenarios/30_workers.toml with its five arms (the forest and
    knowledge-gradient among them) on 200 tasks instead of 2,000: the same path, a tenth of
    the market."""
    sc = marketsim.load_scenario(ROOT / "scenarios" / "30_workers.toml").replace(
        {"tasks.count": 200, "budget.edges": 1000, "budget.batch": 100})
    result = marketsim.run(sc, replicates=2, jobs=2, progress=False)
    check_headline_result(sc, result)


def test_unpicklable_policy_object_needs_one_job(tmp_path: Path) -> None:
    """Acceptance 3: a local class cannot go to worker processes: one line; jobs=1 runs."""

    class Local(LeastLabelled):
        pass

    sc = marketsim.load_scenario(small(tmp_path)).replace(replicates=2).with_arms(
        {"name": "mine", "policy": Local()}, keep=True)
    with pytest.raises(InputError) as err:
        marketsim.run(sc, jobs=2, progress=False)
    assert str(err.value) == (
        "arm 'mine': policy object of class test_unpicklable_policy_object_needs_one_job."
        "<locals>.Local cannot be pickled, so it cannot run with jobs=2; use jobs=1 or define "
        "the class at module level")
    result = marketsim.run(sc, jobs=1, progress=False)
    assert set(result.curves["arm"]) == {"uniform", "mine"}


def test_out_writes_the_cli_folder_and_no_out_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Acceptance 4: ``out=`` gives the CLI's folder (same files, same curves); without
    ``out`` neither the working directory nor HOME gets a file."""
    path = small(tmp_path)
    assert main(["run", str(path), "--out", str(tmp_path / "cli"), "--quiet"]) == 0
    result = marketsim.run(marketsim.load_scenario(path), out=tmp_path / "api", progress=False)
    assert result.run_dir == tmp_path / "api"

    def files(folder: Path) -> list[str]:
        return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())

    assert files(tmp_path / "api") == files(tmp_path / "cli")
    assert (tmp_path / "api" / "curves.csv").read_bytes() == \
        (tmp_path / "cli" / "curves.csv").read_bytes()
    api, cli_summary = (json.loads((tmp_path / d / "summary.json").read_text())
                        for d in ("api", "cli"))
    api.pop("seconds"), cli_summary.pop("seconds")
    assert api == cli_summary
    assert summary_json(result.summary)["arms"] == api["arms"]

    cwd, home = tmp_path / "cwd", tmp_path / "home"
    cwd.mkdir(), home.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(home))
    quiet = marketsim.run(marketsim.load_scenario(path), progress=False)
    quiet.plot()
    assert not any(cwd.iterdir()) and not any(home.iterdir())
    pd.testing.assert_frame_equal(quiet.curves, pd.read_csv(tmp_path / "cli" / "curves.csv"))


def test_replace_gives_the_file_messages(tmp_path: Path) -> None:
    """A change made in Python is validated by the parser: the file's one-line message."""
    path = small(tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_text(SMALL_TOML.replace("count = 8", "count = 0"), encoding="utf-8")
    with pytest.raises(InputError) as from_file:
        marketsim.load_scenario(bad)
    sc = marketsim.load_scenario(path)
    for change in ({"workers.count": 0}, {"workers": {"count": 0}}):
        with pytest.raises(InputError) as from_python:
            sc.replace(change)
        assert from_python.value.detail == from_file.value.detail
        assert str(path) in str(from_python.value)
    changed = sc.replace({"workers.count": 9}, seed=3)
    assert (changed.workers.count, changed.seed, sc.workers.count) == (9, 3, 8)
    assert changed.source.endswith("(changed in Python)")  # out= must not copy the old file


def test_replace_reaches_an_arms_keys_as_sweep_names_them(tmp_path: Path) -> None:
    """Issue #31 point 6: ``replace`` takes the arm keys ``[sweep]`` accepts (by name or
    index), which its own error message recommends; a bad value is the file's one-line error."""
    sc = marketsim.load_scenario(small(tmp_path)).with_arms(
        {"name": "uniform", "policy": "uniform"},
        {"name": "rf", "policy": {"name": "random-forest", "n_trees": 5}})
    changed = sc.replace({"arms.uniform.gold": {"count": 5, "rate": 0.2},
                          "arms.rf.policy.n_trees": 7, "arms[1].inference.max_iter": 9})
    assert changed.arms[0].gold is not None and changed.arms[0].gold.rate == 0.2
    assert changed.arms[1].policy.options == {"n_trees": 7}
    assert changed.arms[1].inference.options.max_iter == 9
    assert changed.replace({"arms.uniform.gold.rate": 0.5}).arms[0].gold.rate == 0.5
    assert sc.arms[0].gold is None  # the original is unchanged
    with pytest.raises(InputError, match=r"arms\[0\]\.gold\.rate must be <= 1, got 2"):
        changed.replace({"arms.uniform.gold.rate": 2})
    with pytest.raises(InputError, match="names no arm 'unifrom'.*did you mean uniform"):
        sc.replace({"arms.unifrom.gold.rate": 0.5})


def test_object_arms_are_checked_copied_and_guarded(tmp_path: Path) -> None:
    """Bad objects are one-line errors; the caller's object is never mutated (each unit runs
    a deep copy); the policy guard still catches a bad ranking."""
    sc = marketsim.load_scenario(small(tmp_path)).replace(replicates=1)
    with pytest.raises(InputError, match=r"arms\[1\]\.policy must be a policy object, got the "
                       "class LeastLabelled"):
        sc.with_arms({"policy": LeastLabelled}, keep=True)
    with pytest.raises(InputError, match="does not implement bind"):
        sc.with_arms({"name": "x", "policy": object()})
    with pytest.raises(InputError, match="not an estimator object"):
        sc.with_arms({"name": "x", "policy": "uniform", "inference": object()})
    mine = LeastLabelled()
    result = marketsim.run(sc.with_arms({"policy": mine, "inference": DawidSkene()}),
                           progress=False)
    assert mine.n_tasks == 0  # bind() ran on copies
    assert result.summary.arms.keys() == {"LeastLabelled"}
    assert result.scenario.arms[0].inference.method == "DawidSkene"

    class Scores(LeastLabelled):
        def rank(self, state, rng):  # noqa: ANN001, ANN202
            return np.zeros(self.n_tasks)  # scores, not task indices

    with pytest.raises(PolicyError, match="arm 'Scores', replicate 0.*float64 values"):
        marketsim.run(sc.with_arms({"policy": Scores()}), progress=False)


def test_progress_callback_and_records_without_pandas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int, int]] = []
    sc = marketsim.load_scenario(small(tmp_path))
    result = marketsim.run(sc, replicates=1, progress=lambda u, n, total: seen.append((n, total)))
    assert seen == [(1, 1)]
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas -> ImportError
    with pytest.raises(ModuleNotFoundError, match=r'pip install "marketsim\[pandas\]"'):
        _ = result.curves
    rows = result.records()
    assert rows[0].arm == "uniform" and rows[0].edges == 120
    assert result.records(as_dicts=True)[0]["error_rate"] == rows[0].error_rate
    assert list(result.records(as_dicts=True)[0]) == list(CURVE_COLUMNS + EXTRA_COLUMNS)


def test_bad_run_arguments_are_one_line(tmp_path: Path) -> None:
    sc = marketsim.load_scenario(small(tmp_path))
    with pytest.raises(InputError, match="replicates must be an integer >= 1, got 0"):
        marketsim.run(sc, replicates=0)
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(SMALL_TOML + "\n[sweep]\nworkers.count = [5, 8]\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"has a \[sweep\]"):
        marketsim.run(marketsim.load_scenario(sweep))
    with pytest.raises(InputError, match="sweep cannot be combined with policy"):
        marketsim.load_scenario(sweep).with_arms({"policy": LeastLabelled()})


def test_docs_api_code_blocks_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every python block of docs/api.md runs, in order, in one namespace (so the page cannot
    drift from the API)."""
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    blocks = [b.split("\n", 1)[1] for b in text.split("```")[1::2] if b.startswith("python\n")]
    assert len(blocks) >= 8
    monkeypatch.chdir(ROOT)
    namespace: dict = {"__name__": "api_doc"}
    for block in blocks:
        exec(compile(block, "docs/api.md", "exec"), namespace)  # noqa: S102 - our own docs
    assert namespace["written"].run_dir == namespace["folder"]


# seed 12: uniform reaches 1 % in 3 of 4 replicates (under its even rounds; seed 11 gave 1 of 4
# before them and none after)
TARGET_MISSED = """
[scenario]
name = "some replicates miss"
seed = 12
replicates = 4
[tasks]
count = 300
prior = [0.7, 0.3]
[workers]
count = 15
[budget]
edges = 2400
batch = 150
[[arms]]
name = "uniform"
policy = "uniform"
[[arms]]
name = "entropy-greedy"
policy = "entropy-greedy"
"""


def test_final_error_and_target_summary_are_the_means_a_student_needs(tmp_path: Path) -> None:
    """Issue #31, defect 4: ``groupby("arm")["error_rate"].last()`` is the last replicate's
    error, and averaging ``labels_to_target`` skips the replicates that missed the target. The
    summaries give the mean over every replicate, or nothing with the count that reached."""
    (tmp_path / "s.toml").write_text(TARGET_MISSED)
    result = marketsim.run(marketsim.load_scenario(tmp_path / "s.toml"), progress=False)
    curves = result.curves
    last = curves[curves["edges"] == curves.groupby("arm")["edges"].transform("max")]
    by_hand = last.groupby("arm")["error_rate"].agg(["mean", "count"])
    final = result.final_error.set_index("arm")
    assert list(final.index) == ["uniform", "entropy-greedy"]
    for arm in final.index:
        assert final.loc[arm, "mean"] == pytest.approx(by_hand.loc[arm, "mean"])
        assert final.loc[arm, "replicates"] == by_hand.loc[arm, "count"] == 4
        assert final.loc[arm, "low"] <= final.loc[arm, "mean"] <= final.loc[arm, "high"]
        assert final.loc[arm, "labels"] == 2400
    summary = result.target_summary.set_index(["arm", "target"])
    per_rep = result.labels_to_target.groupby(["arm", "target"])["labels"]
    reached = per_rep.count()
    for key, row in summary.iterrows():
        assert (row["reached"], row["of"]) == (reached[key], 4)
        if row["reached"] == 4:
            assert row["labels"] == pytest.approx(per_rep.mean()[key])
            assert row["labels_low"] <= row["labels"] <= row["labels_high"]
            assert row["time"] > 0
        else:  # no silent mean over the replicates that happened to reach it
            assert np.isnan(row["labels"]) and np.isnan(row["time"])
    assert ((summary["reached"] > 0) & (summary["reached"] < 4)).any(), summary
    assert (summary["reached"] == 4).any(), summary


def test_docs_no_longer_teach_the_last_replicate_idiom() -> None:
    api = (ROOT / "docs" / "api.md").read_text()
    tutorial = (ROOT / "docs" / "tutorial.ipynb").read_text()
    assert 'print(curves.groupby("arm")["error_rate"].last())' not in api
    assert "labels_to_target.groupby" not in tutorial
    assert "final_error" in tutorial and "target_summary" in tutorial


def test_plot_draws_on_an_axes_against_labels_money_or_time(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    (tmp_path / "s.toml").write_text(SMALL_TOML)
    result = marketsim.run(marketsim.load_scenario(tmp_path / "s.toml"), progress=False)
    fig, (left, right) = plt.subplots(1, 2)
    try:
        assert result.plot(ax=left) is left
        assert result.plot(ax=right, x="time", targets=True) is right
        assert "simulated time" in right.get_xlabel() and "labels" in left.get_xlabel()
        dashed = [ln for ln in right.get_lines() if ln.get_label() == "_target"]
        assert sorted(ln.get_ydata()[0] for ln in dashed) == [0.01, 0.05]
        own = result.plot()  # a pyplot figure: what a notebook shows and plt.show() shows
        assert own.figure in map(plt.figure, plt.get_fignums())
        assert "money" in result.plot(x="money").get_xlabel()  # one per label without prices
        with pytest.raises(InputError, match="x must be"):
            result.plot(x="edges")
    finally:
        plt.close("all")


def test_compare_overlays_runs_and_sweep_returns_the_sweep_table(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    (tmp_path / "s.toml").write_text(SMALL_TOML)
    sc = marketsim.load_scenario(tmp_path / "s.toml")
    few, many = (marketsim.run(sc.replace({"workers.count": n}), progress=False)
                 for n in (5, 16))
    try:
        ax = marketsim.compare(few, many, names=["5 workers", "16 workers"], x="time")
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels == ["5 workers: uniform (n=3)", "16 workers: uniform (n=3)"]
        assert "simulated time" in ax.get_xlabel()
        # two runs of one scenario: numbered, not merged into one curve
        twice = marketsim.compare(few, few)
        assert len([t for t in twice.get_legend().get_texts()]) == 2
    finally:
        plt.close("all")
    with pytest.raises(InputError, match="2 results and 1 names"):
        marketsim.compare(few, many, names=["x"])
    frame = marketsim.sweep(sc, {"workers.count": [5, 16]}, replicates=2)
    assert list(frame["workers.count"]) == [5, 16] and list(frame["arm"]) == ["uniform"] * 2
    assert {"metric", "final_error", "final_error_low", "edges_to_0.05_reached", "final_money",
            "time_to_0.05_mean"} <= set(frame.columns)
    assert (frame["replicates"] == 2).all()
    # the same worlds as a run of each point
    again = marketsim.run(sc.replace({"workers.count": 16}), replicates=2, progress=False)
    assert frame["final_error"].iloc[1] == again.summary.arms["uniform"].final_error_mean
    with pytest.raises(InputError, match="non-empty list"):
        marketsim.sweep(sc, {"workers.count": []})
