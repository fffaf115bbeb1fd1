"""``python -m marketsim infer`` through the real entry point.

Process start-up costs one to three seconds (numpy/scipy/scikit-learn imports), so the few
subprocess runs (JSON success paths and representative failures) are started together in one
module-scoped fixture; the other cases, including every failure, run in-process through
:func:`marketsim.cli.main`, the function the entry point calls.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def zhang_dir() -> Path:
    """Folder of Zhang et al.'s data sets (``MARKETSIM_DATA`` or ../shared/data/zhang2014)."""
    env = os.environ.get("MARKETSIM_DATA")
    if env:
        base = Path(env)
        return base / "zhang2014" if (base / "zhang2014").is_dir() else base
    return ROOT.parent / "shared" / "data" / "zhang2014"


HAVE_RTE = (zhang_dir() / "rte_crowd.txt").is_file()

TINY_LABELS = (
    "task,worker,label\n"
    "a,w1,yes\na,w2,yes\na,c,no\n"
    "b,w1,no\nb,w2,no\nb,c,yes\n"
    "c,w1,yes\nc,w2,no\n"
    "d,w1,no\nd,w2,no\nd,c,yes\n"
)
TINY_TRUTH = "task,label\na,yes\nb,no\nc,yes\nd,no\ne,yes\n"

#: (arguments, fragment expected in the one-line error). LABELS, BAD, CONFLICT are files.
FAILURES = [
    (["LABELS", "--method", "nope"], "choose one of: mv"),
    (["LABELS", "--max-iter", "-3"], "--max-iter"),
    (["LABELS", "--max-iter", "0"], "--max-iter"),
    (["LABELS", "--tol", "-1"], "--tol"),
    (["LABELS", "--tol", "nan"], "--tol"),
    (["LABELS", "--seed", "-1"], "--seed"),
    (["LABELS", "--format", "xml"], "zhang, csv"),
    (["missing.txt"], "file not found"),
    ([], "LABELS"),
    (["LABELS", "--dataset", "rte"], "not both"),
    (["--dataset", "rte"], "--data-dir"),
    (["--dataset", "rte", "--data-dir", "nowhere"], "does not exist"),
    (["--dataset", "nope", "--data-dir", "."], "bluebird, rte, dog, web"),
    (["BAD"], "already labelled"),
    (["LABELS", "--truth", "CONFLICT"], "conflicting truth"),
    (["LABELS", "--output", "."], "is a folder"),
    (["LABELS", "--max-iter", "x"], "invalid int"),
]

#: Failures also run through a real subprocess: an option value, a bad file, a usage error.
SUBPROCESS_FAILURES = (0, 13, 16)


def write_inputs(folder: Path) -> dict[str, Path]:
    """The tiny labels/truth files (worker c always wrong, task e unlabelled) and bad files."""
    files = {
        "LABELS": folder / "labels.csv",
        "TRUTH": folder / "truth.csv",
        "BAD": folder / "bad.csv",
        "CONFLICT": folder / "conflict.csv",
        "ZHANG": folder / "crowd.txt",
    }
    files["LABELS"].write_text(TINY_LABELS)
    files["TRUTH"].write_text(TINY_TRUTH)
    files["BAD"].write_text("task,worker,label\na,w,1\na,w,2\n")
    files["CONFLICT"].write_text("task,label\na,yes\na,no\n")
    files["ZHANG"].write_text("1 1 1\n1 2 1\n2 1 2\n2 2 2\n")
    return files


def substitute(args: list[str], files: dict[str, Path]) -> list[str]:
    return [str(files[a]) if a in files else a for a in args]


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def run_many(commands: dict[str, list[str]], cwd: Path) -> dict[str, Result]:
    """Run ``python -m marketsim infer ARGS`` for each command, a few at a time."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("MARKETSIM_DATA", None)
    env["COLUMNS"] = "120"
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")

    def one(args: list[str]) -> Result:
        proc = subprocess.run(
            [sys.executable, "-m", "marketsim", "infer", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=120,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        futures = {name: pool.submit(one, args) for name, args in commands.items()}
        return {name: fut.result() for name, fut in futures.items()}


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Result], Path]:
    """Every subprocess run of this module; returns the results and their folder."""
    folder = tmp_path_factory.mktemp("infer")
    files = write_inputs(folder)
    out = str(folder / "post.csv")
    workers = str(folder / "workers.csv")
    commands = {
        "mv": ["LABELS", "--truth", "TRUTH", "--method", "mv", "--json",
               "--output", out, "--workers", workers],
    }
    if HAVE_RTE:
        commands["rte-mv"] = ["--dataset", "rte", "--data-dir", str(zhang_dir()),
                              "--method", "mv", "--json"]
    for case in SUBPROCESS_FAILURES:
        commands[f"fail-{case}"] = FAILURES[case][0]
    return run_many({k: substitute(v, files) for k, v in commands.items()}, folder), folder


def ok_json(result: Result) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # exactly one JSON object, nothing else on stdout


def test_json_mv_on_tiny_file(cli: tuple[dict[str, Result], Path]) -> None:
    results, folder = cli
    result = ok_json(results["mv"])
    for key in ("method", "n_tasks", "n_workers", "n_labels", "n_classes", "iterations",
                "converged", "seconds", "log_likelihood", "error_rate",
                "error_rate_fractional_ties"):
        assert key in result
    assert (result["n_tasks"], result["n_workers"], result["n_labels"], result["n_classes"]) == (
        5, 3, 11, 2
    )
    assert result["log_likelihood"] is None and result["iterations"] == 0
    # task c is a 1-1 tie (half right); unlabelled task e ties between both classes (half right)
    assert result["error_rate_fractional_ties"] == pytest.approx(1 / 5)
    rows = list(csv.DictReader((folder / "post.csv").read_text().splitlines()))
    assert [r["task"] for r in rows] == ["a", "b", "c", "d", "e"]
    assert list(rows[0]) == ["task", "predicted", "truth", "p_no", "p_yes"]
    assert rows[0]["predicted"] == "yes" and float(rows[0]["p_yes"]) == pytest.approx(2 / 3)
    assert rows[4]["truth"] == "yes"
    wrows = list(csv.DictReader((folder / "workers.csv").read_text().splitlines()))
    assert [w["worker"] for w in wrows] == ["w1", "w2", "c"]
    assert float(wrows[0]["accuracy"]) == pytest.approx(1.0)
    assert float(wrows[2]["accuracy"]) == pytest.approx(0.0)


@pytest.mark.skipif(not HAVE_RTE, reason=f"reference data not found in {zhang_dir()}")
def test_rte_dataset_mv(cli: tuple[dict[str, Result], Path]) -> None:
    result = ok_json(cli[0]["rte-mv"])
    assert (result["n_tasks"], result["n_workers"], result["n_labels"]) == (800, 164, 8000)
    assert 0.09 <= result["error_rate"] <= 0.11
    # Table 3 of Zhang et al. (2014): majority vote 10.31 % with fractional ties
    assert result["error_rate_fractional_ties"] == pytest.approx(0.103125)


@pytest.mark.parametrize("case", SUBPROCESS_FAILURES)
def test_failures_exit_2_with_one_line(cli: tuple[dict[str, Result], Path], case: int) -> None:
    result = cli[0][f"fail-{case}"]
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and FAILURES[case][1] in lines[0]


def _main(args: list[str]) -> int:
    from marketsim.cli import main

    try:
        return main(["infer", *args])
    except SystemExit as exc:  # argparse usage errors
        return int(exc.code or 0)


def test_json_ds_and_workers_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = ["LABELS", "--truth", "TRUTH", "--json", "--max-iter", "50", "--tol", "0",
            "--workers", "w.csv"]
    assert _main(substitute(args, files)) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["method"] == "ds" and 1 <= result["iterations"] <= 50
    assert isinstance(result["log_likelihood"], float)
    assert 0.0 <= result["error_rate"] <= 1.0 and result["n_tasks_with_truth"] == 5
    assert "error_rate_fractional_ties" not in result
    header = next(csv.reader((tmp_path / "w.csv").read_text().splitlines()))
    assert header == ["worker", "n_labels", "accuracy",
                      "conf_no_no", "conf_no_yes", "conf_yes_no", "conf_yes_yes"]
    assert not list(tmp_path.glob(".w.csv.*"))  # no temporary file left behind


def test_table_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert _main(substitute(["LABELS", "--truth", "TRUTH", "--method", "one-coin"], files)) == 0
    out = capsys.readouterr().out
    assert "one-coin" in out and "error rate" in out


def test_zhang_file_relative_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert _main(["crowd.txt", "--method", "opt-ds", "--json", "--seed", "3"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert "error_rate" not in result
    assert (result["n_tasks"], result["n_classes"]) == (2, 2)


@pytest.mark.skipif(not HAVE_RTE, reason=f"reference data not found in {zhang_dir()}")
def test_rte_dataset_ds_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(["--dataset", "rte", "--data-dir", str(zhang_dir()), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["method"] == "ds" and result["converged"]
    assert 0.06 <= result["error_rate"] <= 0.09  # Table 3: MV-D&S 7.12 %


@pytest.mark.parametrize(("args", "fragment"), FAILURES)
def test_failures_in_process(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    fragment: str,
) -> None:
    """Every failure through ``marketsim.cli.main`` (same code path, no process start-up)."""
    files = write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MARKETSIM_DATA", raising=False)
    code = _main(substitute(args, files))
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert fragment in lines[0]
