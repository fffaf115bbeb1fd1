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

import numpy as np
import pytest

from marketsim.data import datasets

ROOT = Path(__file__).resolve().parents[2]


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
#: Scores in the task,worker,label,score layout (label ignored): annotator x is far off,
#: s2 has no score for task q (empty cell), task r only an empty score.
TINY_SCORES = (
    "task,worker,label,score\n"
    "p,s1,,0.20\np,s2,,0.22\np,x,,0.95\n"
    "q,s1,,0.70\nq,s2,,\nq,x,,0.05\n"
    "r,s1,,\n"
)
TINY_MEANS = "task,value\np,0.21\nq,0.7\n"
#: Features of TINY_LABELS' tasks (e has no row: its features are missing).
TINY_FEATURES = "task,f1,f2\na,1,0\nb,0,1\nc,1,\nd,0,1\n"

#: (arguments, fragment expected in the one-line error). LABELS, BAD, CONFLICT are files.
FAILURES = [
    (["LABELS", "--method", "nope"], "choose one of: ds, ds-confidence, ds-features, "),
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
    # --scores and --features (options)
    (["SCORES", "--scores", "--method", "ds"], "with --scores choose one of: gaussian-em, "
     "gaussian-hard-em"),
    (["SCORES", "--method", "gaussian-em"], "needs continuous scores: add --scores"),
    (["LABELS", "--method", "gaussian-hard-em"],
     "choose a class method: ds, ds-confidence, ds-features, "),
    (["--dataset", "rte", "--scores", "--data-dir", "."], "--scores cannot be combined with "
     "--dataset"),
    (["SCORES", "--scores", "--format", "zhang"], "--format zhang cannot be combined"),
    (["LABELS", "--features", "FEATURES"], "only applies to methods that use task features "
     "(ds-features); got --method ds"),
    (["SCORES", "--scores", "--features", "FEATURES"], "got --method gaussian-em"),
    (["BADSCORE"], "missing column 'label' or 'answer'; found columns 'task', 'worker', 'score' "
     "(needed: task/question, worker, label/answer); a file of continuous scores needs --scores"),
    # --scores and --features (files): each names the file and line
    (["BADSCORE", "--scores"], "badscore.csv:3: score '1.2' is not a number in [0, 1]"),
    (["SCORES", "--scores", "--truth", "TRUTH"], "truth.csv:1: missing column 'mean' or "
     "'value'"),
    (["SCORES", "--scores", "--truth", "BADMEAN"], "badmean.csv:3: conflicting truth for "
     "task 'p'"),
    (["LABELS", "--method", "ds-features", "--features", "F_VALUE"], "f_value.csv:3: feature "
     "'f2': '2' is not 0 or 1"),
    (["LABELS", "--method", "ds-features", "--features", "F_DUP"], "f_dup.csv:3: task 'a' "
     "already has a feature row (first at line 2)"),
    (["LABELS", "--method", "ds-features", "--features", "F_UNKNOWN"], "f_unknown.csv:3: task "
     "'zz' is not in the labels file"),
    (["LABELS", "--method", "ds-features", "--features", "F_NOCOL"], "f_nocol.csv:1: no "
     "feature columns"),
    (["LABELS", "--method", "ds-features", "--features", "F_EMPTY"], "f_empty.csv: empty file"),
    (["LABELS", "--method", "ds-features", "--features", "F_RAGGED"], "f_ragged.csv:3: expected "
     "3 fields as in the header, found 2"),
    (["LABELS", "--method", "ds-features", "--features", "missing.csv"], "missing.csv: file "
     "not found"),
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
    texts = {
        "SCORES": TINY_SCORES,
        "MEANS": TINY_MEANS,
        "FEATURES": TINY_FEATURES,
        "BADSCORE": "task,worker,score\na,w,0.5\nb,w,1.2\n",
        "BADMEAN": "task,mean\np,0.2\np,0.3\n",
        "F_VALUE": "task,f1,f2\na,1,0\nb,0,2\n",
        "F_DUP": "task,f1\na,1\na,0\n",
        "F_UNKNOWN": "task,f1\na,1\nzz,0\n",
        "F_NOCOL": "task\na\n",
        "F_EMPTY": "",
        "F_RAGGED": "task,f1,f2\na,1,0\nb,1\n",
    }
    for key, text in texts.items():
        files[key] = folder / f"{key.lower()}.csv"
        files[key].write_text(text)
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
        "scores": ["SCORES", "--scores", "--truth", "MEANS", "--json",
                   "--output", str(folder / "means_out.csv")],
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
    # w1 agrees with the majority on a, b and d, and on c (a seeded 1-1 tie) where it won
    w1_on_c = 1.0 if rows[2]["predicted"] == "yes" else 0.0
    assert float(wrows[0]["accuracy"]) == pytest.approx((3 + w1_on_c) / 4)
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
    # no ../shared/data beside the project (nor beside tmp_path, the current folder)
    monkeypatch.setattr(datasets, "PROJECT_ROOT", tmp_path / "project")
    code = _main(substitute(args, files))
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert fragment in lines[0]


# --- continuous scores (--scores) -------------------------------------------------------------
def test_scores_subprocess_json_and_means_file(cli: tuple[dict[str, Result], Path]) -> None:
    results, folder = cli
    result = ok_json(results["scores"])
    assert result["method"] == "gaussian-em"  # the default with --scores
    assert (result["n_tasks"], result["n_workers"], result["n_labels"], result["n_scores"]) == (
        3, 3, 7, 5)
    for key in ("iterations", "converged", "seconds", "load_seconds", "log_likelihood",
                "sigma", "pi", "n_good", "rmse", "rmse_plain_mean"):
        assert key in result
    assert result["n_good"] == 2 and result["n_tasks_with_truth"] == 2
    plain_errors = np.array([(0.2 + 0.22 + 0.95) / 3 - 0.21, (0.7 + 0.05) / 2 - 0.7])
    assert result["rmse_plain_mean"] == pytest.approx(np.sqrt(np.mean(plain_errors**2)))
    assert result["rmse"] < 0.05
    rows = list(csv.DictReader((folder / "means_out.csv").read_text().splitlines()))
    assert list(rows[0]) == ["task", "mean", "plain_mean", "n_scores", "truth"]
    assert [(r["task"], r["n_scores"], r["truth"]) for r in rows] == [
        ("p", "3", "0.21"), ("q", "2", "0.7"), ("r", "0", "")]
    assert float(rows[0]["plain_mean"]) == pytest.approx((0.2 + 0.22 + 0.95) / 3)
    assert float(rows[0]["mean"]) == pytest.approx(0.21, abs=0.02)
    assert rows[2]["mean"] == rows[2]["plain_mean"] == ""  # no score: no estimate


def write_simulated(folder: Path, seed: int = 5) -> tuple[Path, Path, np.ndarray]:
    """``simulate_bad_annotators`` data as a score CSV with string ids (and true means)."""
    from marketsim.aggregation.bad_annotators import simulate_bad_annotators

    data, mu, good = simulate_bad_annotators(400, 15, 5, bad_fraction=0.4, random_state=seed)
    scores = folder / "sim_scores.csv"
    with scores.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["task", "worker", "score"])
        out.writerows((f"item-{t}", f"ann-{w}", f"{s:.8f}") for t, w, s in zip(
            data.tasks.tolist(), data.workers.tolist(), data.scores.tolist(), strict=True))
    means = folder / "sim_means.csv"
    with means.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["task", "mean"])
        out.writerows((f"item-{i}", f"{m:.8f}") for i, m in enumerate(mu.tolist()))
    return scores, means, good


@pytest.mark.parametrize("method", ["gaussian-em", "gaussian-hard-em"])
def test_scores_simulated_em_beats_plain_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], method: str
) -> None:
    scores, means, good = write_simulated(tmp_path)
    workers = tmp_path / "ann.csv"
    code = _main([str(scores), "--scores", "--method", method, "--truth", str(means), "--json",
                  "--workers", str(workers)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    result = json.loads(captured.out)
    assert result["method"] == method and result["converged"]
    assert (result["n_tasks"], result["n_workers"], result["n_scores"]) == (400, 15, 2000)
    assert result["n_good"] == int(good.sum()) == 9
    assert result["rmse"] < 0.5 * result["rmse_plain_mean"]
    assert result["sigma"] == pytest.approx(0.05, rel=0.3)
    assert result["pi"] == pytest.approx(9 / 15, abs=0.05)
    rows = list(csv.DictReader(workers.read_text().splitlines()))
    in_file = [r["worker"] for r in csv.DictReader(scores.read_text().splitlines())]
    assert [r["worker"] for r in rows] == list(dict.fromkeys(in_file))  # original ids, in order
    assert sum(int(r["n_scores"]) for r in rows) == 2000
    believed_good = {r["worker"] for r in rows if float(r["p_good"]) > 0.5}
    assert believed_good == {f"ann-{j}" for j in np.flatnonzero(good).tolist()}


def test_scores_table_and_missing_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert _main(substitute(["SCORES", "--scores", "--truth", "MEANS",
                             "--workers", "w.csv"], files)) == 0
    out = capsys.readouterr().out
    assert "gaussian-em" in out and "RMSE of the plain mean" in out and "2 of 3" in out
    rows = {r["worker"]: r for r in csv.DictReader((tmp_path / "w.csv").read_text().splitlines())}
    assert float(rows["x"]["p_good"]) < 0.5 < float(rows["s1"]["p_good"])
    assert (rows["s1"]["n_scores"], rows["s2"]["n_scores"]) == ("2", "1")


# --- binary task features (--features) ---------------------------------------------------------
def write_feature_problem(folder: Path) -> tuple[Path, Path, Path]:
    """Three weak labels per task (accuracy 0.55-0.7) and three informative binary features."""
    rng = np.random.default_rng(3)
    n, n_workers = 400, 20
    truth = rng.integers(0, 2, n)
    phi = np.array([[0.85, 0.15, 0.8], [0.15, 0.85, 0.2]])
    x = (rng.random((n, 3)) < phi[truth]).astype(int)
    accuracy = rng.uniform(0.55, 0.7, n_workers)
    workers = np.argsort(rng.random((n, n_workers)), axis=1)[:, :3]
    tasks = np.repeat(np.arange(n), 3)
    correct = rng.random(tasks.size) < accuracy[workers.ravel()]
    labels = np.where(correct, truth[tasks], 1 - truth[tasks])
    names = np.array(["no", "yes"])
    paths = folder / "fl.csv", folder / "ft.csv", folder / "ff.csv"
    paths[0].write_text("task,worker,label\n" + "".join(
        f"t{t},w{w},{names[lab]}\n" for t, w, lab in zip(tasks.tolist(), workers.ravel().tolist(),
                                                         labels.tolist(), strict=True)))
    paths[1].write_text("task,label\n" + "".join(f"t{i},{names[c]}\n"
                                                 for i, c in enumerate(truth.tolist())))
    paths[2].write_text("task,f1,f2,f3\n" + "".join(
        f"t{i},{','.join(map(str, row))}\n" for i, row in enumerate(x.tolist())))
    return paths


def test_features_change_the_ds_features_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels, truth, features = write_feature_problem(tmp_path)
    runs = {}
    for name, extra in (("without", []), ("with", ["--features", str(features)])):
        out = tmp_path / f"post_{name}.csv"
        code = _main([str(labels), "--truth", str(truth), "--method", "ds-features", "--json",
                      "--output", str(out), *extra])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        runs[name] = (json.loads(captured.out), out.read_text())
    without, with_features = runs["without"][0], runs["with"][0]
    assert "n_features" not in without
    assert (with_features["n_features"], with_features["n_tasks_with_features"]) == (3, 400)
    assert with_features["error_rate"] < without["error_rate"] - 0.1
    assert with_features["error_rate"] < 0.15
    assert runs["with"][1] != runs["without"][1]


def test_features_missing_tasks_are_noted_and_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files = write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = ["LABELS", "--truth", "TRUTH", "--method", "ds-features", "--features", "FEATURES"]
    assert _main(substitute(args + ["--json"], files)) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert (result["n_tasks"], result["n_features"], result["n_tasks_with_features"]) == (5, 2, 4)
    assert result["features_file"] == str(files["FEATURES"])
    assert captured.err == (f"marketsim: note: 1 of 5 tasks have no row in {files['FEATURES']}; "
                            "their features count as missing\n")
    assert _main(substitute(args, files)) == 0
    assert "features (tasks with a row)" in capsys.readouterr().out


def test_features_with_zhang_integer_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "zf.csv").write_text("task,f\n01,1\n2,0\n")
    assert _main(["crowd.txt", "--method", "ds-features", "--features", "zf.csv",
                  "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_tasks_with_features"] == 2
