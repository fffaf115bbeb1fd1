"""summary.json and run.json: the shipped JSON Schemas match their models, real run folders of
every kind of market validate against them, and an invalid file is refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import marketsim
from marketsim.cli import main
from marketsim.errors import InputError
from marketsim.record import schemas
from marketsim.record.run_model import run_json
from marketsim.record.summary_model import read_summary, summary_json
from marketsim.scenario.run_migration import read_run
from tests.helpers import schema_validator

ROOT = Path(__file__).resolve().parents[2]
SUMMARY_SCHEMA = ROOT / "marketsim" / "record" / "summary.schema.json"
RUN_SCHEMA = ROOT / "marketsim" / "record" / "run.schema.json"
#: One scenario per kind of market: class, continuous, money and gold, replay.
SCENARIOS = ["30_workers", "bad_annotators", "prices", "gold_and_blocking", "replay_rte"]
#: Tasks at most in those runs (the shipped files have up to 2,000).
SMALL_TASKS = 300


def test_schema_files_are_current() -> None:
    for path in schemas.SCHEMAS:
        assert path.read_text(encoding="utf-8") == schemas.json_text(path), (
            f"{path.name} drifted: run python -m marketsim.record.schemas --write")


def _validate_folder(folder: Path) -> None:
    """Both files validate against the shipped schemas and re-dump to the same bytes."""
    for name, schema, read, dump in (("summary.json", SUMMARY_SCHEMA, read_summary, summary_json),
                                     ("run.json", RUN_SCHEMA, read_run, run_json)):
        text = (folder / name).read_text(encoding="utf-8")
        schema_validator(json.loads(schema.read_text(encoding="utf-8"))).validate(json.loads(text))
        assert json.dumps(dump(read(folder / name)), indent=2) + "\n" == text  # type: ignore[operator]


@pytest.mark.parametrize("name", SCENARIOS)
def test_shipped_scenarios_write_valid_summaries(name: str, tmp_path: Path) -> None:
    try:
        sc = marketsim.load_scenario(ROOT / "scenarios" / f"{name}.toml")
    except InputError as exc:  # the replay's data set is not on this machine
        pytest.skip(str(exc))
    # a small market: the shape, not the numbers, is tested
    if sc.replay is None:
        tasks = min(sc.tasks.count, SMALL_TASKS)
        sc = sc.replace({"tasks.count": tasks, "budget.edges": min(sc.budget.edges, 3 * tasks)})
    else:  # the data set's tasks, twice over
        sc = sc.replace({"budget.edges": 2 * sc.tasks.count})
    marketsim.run(sc, replicates=2, jobs=1, out=tmp_path / name, figures=False)
    _validate_folder(tmp_path / name)


def test_sweep_points_write_valid_summaries(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    assert main(["run", str(ROOT / "scenarios" / "teaching" / "03_stale_posteriors.toml"),
                 "--replicates", "1", "--jobs", "1", "--quiet", "--no-figures",
                 "--out", str(out)]) == 0
    schema_validator(json.loads(RUN_SCHEMA.read_text())).validate(
        json.loads((out / "run.json").read_text()))
    points = sorted(out.glob("points/p*"))
    assert points
    for point in points:
        _validate_folder(point)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished one-replicate run of a small 30_workers market (read-only: copy it)."""
    sc = marketsim.load_scenario(ROOT / "scenarios" / "30_workers.toml")
    sc = sc.replace({"tasks.count": SMALL_TASKS, "budget.edges": 3 * SMALL_TASKS})
    folder = tmp_path_factory.mktemp("small_run") / "run"
    marketsim.run(sc, replicates=1, jobs=1, out=folder, figures=False)
    return folder


@pytest.mark.parametrize(("edit", "key"), [
    (lambda d: d["arms"][next(iter(d["arms"]))].pop("edges"), "edges: Field required"),
    (lambda d: d.update(complete="yes"), "complete: Input should be a valid boolean"),
])
def test_report_refuses_an_invalid_summary_in_one_line(
        edit: object, key: str, small_run: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "run"
    shutil.copytree(small_run, folder)
    data = json.loads((folder / "summary.json").read_text())
    edit(data)  # type: ignore[operator]
    (folder / "summary.json").write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["report", str(folder)]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(folder / "summary.json") in lines[0] and key in lines[0]
