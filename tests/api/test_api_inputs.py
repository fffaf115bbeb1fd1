"""Every input form ``docs/api.md`` documents is accepted, and ``report.md`` of a study run
from Python names only files its folder holds, with a re-run line that works."""

from __future__ import annotations

import json
import re
import types
from pathlib import Path

import numpy as np
import pytest

import marketsim
from marketsim.aggregation.dawid_skene import DawidSkene
from marketsim.policies.base import Policy

ROOT = Path(__file__).resolve().parents[2]

TINY = {
    "scenario": {"name": "tiny", "seed": 3, "replicates": 2},
    "tasks": {"count": 20},
    "workers": {"count": 5},
    "budget": {"edges": 60, "batch": 20},
    "arms": [{"name": "uniform", "policy": "uniform"},
             {"name": "entropy", "policy": "entropy-greedy", "inference": "ds"}],
}


class FewestLabels(Policy):
    """Tasks with the fewest labels first: a policy object."""

    name = "fewest-labels"

    def bind(self, info) -> None:  # noqa: ANN001 - the policy protocol
        self.n_tasks = info.n_tasks

    def rank(self, state, rng: np.random.Generator) -> np.ndarray:  # noqa: ANN001
        return np.argsort(np.bincount(state.labels.tasks, minlength=self.n_tasks),
                          kind="stable")


def test_every_documented_input_form_is_accepted(tmp_path: Path) -> None:
    """load_scenario: a str or a Path, data_dir a str or a Path; scenario_from_dict: any
    mapping, arms a list or tuple of tables; policy a name, a table or an object; inference
    a name, a table or an estimator object; replace with dotted keys or tables; with_arms with
    and without keep; run: replicates, seed and jobs as Python or numpy integers, out a str
    or a Path, progress a bool or a function."""
    for path in ("scenarios/30_workers.toml", ROOT / "scenarios" / "30_workers.toml"):
        assert marketsim.load_scenario(path if isinstance(path, Path) else str(ROOT / path))
    data = tmp_path / "data"
    data.mkdir()
    (data / "rte_crowd.txt").write_text("".join(f"{t} {w} {1 + (t + w) % 2}\n" for t in
                                                range(1, 801) for w in range(1, 11)))
    (data / "rte_truth.txt").write_text("".join(f"{t} {1 + t % 2}\n" for t in range(1, 801)))
    for data_dir in (str(data), data):
        replay = marketsim.load_scenario(ROOT / "scenarios" / "replay_rte.toml",
                                         data_dir=data_dir)
        assert replay.replay is not None and replay.replay.data_dir == str(data)
    for data in (TINY, types.MappingProxyType(TINY), {**TINY, "arms": tuple(TINY["arms"])}):
        assert [a.name for a in marketsim.scenario_from_dict(data).arms] == [
            "uniform", "entropy"]
    sc = marketsim.scenario_from_dict(TINY)
    arms = sc.with_arms(
        {"name": "table", "policy": {"name": "random-forest"}, "inference": {"method": "ds"}},
        {"policy": FewestLabels(), "inference": DawidSkene()}, keep=True)
    assert [a.name for a in arms.arms] == ["uniform", "entropy", "table", "FewestLabels"]
    assert len(sc.with_arms({"name": "u", "policy": "uniform"}).arms) == 1
    changed = sc.replace({"workers.count": 6}, seed=5).replace(workers={"ability": {"alpha": 7}})
    assert (changed.workers.count, changed.seed, changed.workers.ability.alpha) == (6, 5, 7)
    seen: list[int] = []
    for out, progress in ((str(tmp_path / "a"), False),
                          (tmp_path / "b", lambda unit, n, total: seen.append(n))):
        result = marketsim.run(arms, replicates=np.int64(1), seed=np.int32(2),
                               jobs=np.int64(1), out=out, progress=progress, figures=False)
        assert result.run_dir == Path(out) and (Path(out) / "curves.csv").is_file()
        assert result.summary.replicates == 1 and result.summary.seed == 2
    assert seen == [1, 2, 3, 4]
    assert marketsim.run(sc, replicates=1, progress=True).summary.replicates == 1


def _files_named(report: str) -> list[str]:
    """The file names (no folders) that the report's "Files and reproduction" part names."""
    part = report.split("## Files and reproduction")[1].replace("no `scenario.toml`", "")
    return [m for m in re.findall(r"[`'\"]([\w.-]+\.(?:csv|json|png|svg|toml|md))[`'\"]", part)]


@pytest.mark.parametrize("how", ["file", "dict", "objects"])
def test_report_names_only_files_its_folder_holds(how: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A study run from a file names its scenario.toml copy; one built in Python has none and
    says so, and its re-run line, run in the folder, gives the same curves (from run.json's
    document), or, with objects in its arms, says to run the scenario object again."""
    if how == "file":
        toml = tmp_path / "tiny.toml"
        toml.write_text(
            '[scenario]\nname = "tiny"\nseed = 3\nreplicates = 2\n[tasks]\ncount = 20\n'
            '[workers]\ncount = 5\n[budget]\nedges = 60\nbatch = 20\n'
            '[[arms]]\nname = "uniform"\npolicy = "uniform"\n', encoding="utf-8")
        sc = marketsim.load_scenario(toml)
    else:
        sc = marketsim.scenario_from_dict(TINY)
        if how == "objects":
            sc = sc.with_arms({"policy": FewestLabels(), "inference": DawidSkene()}, keep=True)
    folder = tmp_path / "run"
    first = marketsim.run(sc, out=folder, progress=False)
    report = (folder / "report.md").read_text(encoding="utf-8")
    named = _files_named(report)
    assert "curves.csv" in named and "run.json" in named
    for name in named:
        if name != "README.md":  # reports/README.md, in the repository
            assert (folder / name).is_file(), (name, report.split("## Files")[1])
    rerun = next(line for line in report.splitlines() if line.startswith("- re-run"))
    if how == "file":
        assert "scenario.toml" in named and "marketsim run scenario.toml" in rerun
        return
    assert "scenario.toml" not in named and "no `scenario.toml`" in rerun
    if how == "objects":
        assert "DawidSkene" in rerun and "FewestLabels" in rerun
        assert "marketsim.run(scenario, seed=3, replicates=2)" in rerun
        return
    code = re.search(r"`(marketsim\.run\(.*\))`", rerun)
    assert code is not None, rerun
    monkeypatch.chdir(folder)
    again = eval(code.group(1), {"marketsim": marketsim, "json": json, "Path": Path})  # noqa: S307
    assert again.records() == first.records()
