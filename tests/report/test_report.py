"""Run reports: the error-versus-budget plots, report.md, and the ``report`` subcommand."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.record.curves import CurveRow, read_curves, write_curves
from marketsim.record.summary import summarise
from marketsim.record.summary_model import Comparisons, Summary, summary_json
from marketsim.report.markdown import report_markdown
from marketsim.report.plots import PNG_NAME, SVG_NAME, arm_style, plot_error_vs_budget
from marketsim.report.render import render_report
from marketsim.report.results_text import checkpoints

ROOT = Path(__file__).resolve().parents[2]

TINY = """
[scenario]
name = "tiny report"
seed = 5
replicates = 2

[tasks]
count = 60
classes = 2
prior = [0.7, 0.3]

[workers]
count = 6

[budget]
edges = 240
batch = 30

[[arms]]
name = "uniform"
policy = "uniform"
inference = "one-coin-shifted-beta"

[[arms]]
name = "entropy"
policy = "entropy-greedy"
inference = "one-coin-shifted-beta"

[[arms]]
name = "uniform ml"
policy = "uniform"
inference = "one-coin"
"""


def in_process(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """``marketsim ARGS`` through :func:`marketsim.cli.main` in this process: the command's
    exit code and output without a second interpreter's start-up (the entry point's own tests
    are tests/cli/test_cli_commands.py's)."""
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["marketsim", *args], code, out, err)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run of the tiny scenario (made once per module; copy before changing it)."""
    base = tmp_path_factory.mktemp("tiny")
    scenario = base / "tiny.toml"
    scenario.write_text(TINY)
    out = base / "run"
    assert main(["run", str(scenario), "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture
def run_copy(tiny_run: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny run folder."""
    dst = tmp_path / "run"
    shutil.copytree(tiny_run, dst)
    return dst


def _rows(arms: dict[str, list[float]], replicates: int = 3) -> list[CurveRow]:
    """Curve rows: per arm a mean error curve, with a small spread over replicates."""
    rows = []
    for name, curve in arms.items():
        for rep in range(replicates):
            for i, err in enumerate(curve):
                wobble = 0.0 if err == 0 else 0.01 * (rep - 1) * err
                rows.append(CurveRow(100 + 50 * i, err + wobble, 0.1, float(i),
                                     arm=name, replicate=rep))
    return rows


def _is_png(path: Path) -> bool:
    return path.stat().st_size > 1000 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --- plots --------------------------------------------------------------------------------


def test_plot_one_arm_with_zero_errors(tmp_path: Path) -> None:
    arms = summarise(_rows({"only": [0.3, 0.1, 0.02, 0.0, 0.0]}))
    info = plot_error_vs_budget(tmp_path, arms, scenario_name="one arm", n_tasks=100)
    assert _is_png(tmp_path / PNG_NAME)
    svg = (tmp_path / SVG_NAME).read_text()
    assert "<svg" in svg and "one arm" in svg
    assert info.floor == pytest.approx(0.005)
    assert info.clipped_points == 2
    assert info.arms_plotted == 1


def test_plot_many_arms_all_zero_and_no_task_count(tmp_path: Path) -> None:
    curves = {f"arm {i}": [0.4 / (i + 1), 0.1 / (i + 1), 0.01, 0.0] for i in range(10)}
    curves["always right"] = [0.0, 0.0, 0.0, 0.0]
    arms = summarise(_rows(curves))
    info = plot_error_vs_budget(tmp_path, arms, scenario_name="many", partial=True)
    assert _is_png(tmp_path / PNG_NAME)
    assert (tmp_path / SVG_NAME).stat().st_size > 1000
    assert info.arms_plotted == 11
    assert 0 < info.floor < 0.01


def test_plot_empty_run(tmp_path: Path) -> None:
    info = plot_error_vs_budget(tmp_path, {}, scenario_name="nothing yet", n_tasks=10)
    assert _is_png(tmp_path / PNG_NAME)
    assert info.arms_plotted == 0


def test_arm_styles_are_distinct_without_colour() -> None:
    styles = [arm_style(i) for i in range(16)]
    assert len({(repr(s["linestyle"]), s["marker"]) for s in styles}) == 16
    assert len({(s["color"], repr(s["linestyle"]), s["marker"]) for s in styles}) == 16


# --- markdown ---------------------------------------------------------------------------


def test_checkpoints_evenly_spaced_first_and_last() -> None:
    arms = summarise(_rows({"a": [0.3] * 21, "b": [0.2] * 21}))
    cps = checkpoints(arms)
    assert cps == [100, 350, 600, 850, 1100]


def test_report_markdown_without_setup(tmp_path: Path) -> None:
    arms = summarise(_rows({"x": [0.3, 0.04, 0.005], "y": [0.3, 0.2, 0.1]}))
    info = plot_error_vs_budget(tmp_path, arms, scenario_name="s")
    summary = Summary(scenario="s", metric="error_rate", seed=1, replicates=3, complete=True,
                      units_finished=6, units_total=6, seconds=None, arms=arms,
                      comparisons=Comparisons(), cost_axes=[])
    text = report_markdown(summary, None, info)
    assert "## Error at budget checkpoints" in text
    assert "| x | 30.00 % [" in text
    assert "## Labels needed to reach 5 % / 1 % error" in text
    assert "no uniform-policy arm" in text


# --- render_report and the report subcommand ---------------------------------------------


def test_run_writes_report(tiny_run: Path) -> None:
    for name in (PNG_NAME, SVG_NAME, "report.md", "summary.json"):
        assert (tiny_run / name).stat().st_size > 0, name


def test_report_md_content(tiny_run: Path) -> None:
    """report.md as the run's render_report wrote it."""
    text = (tiny_run / "report.md").read_text()
    assert text.startswith("# tiny report")
    assert "**60 tasks**" in text and "**6 workers**" in text and "seed 5" in text
    assert "| arm \\ labels spent | 60 |" in text and "| 240 |" in text
    assert "## Labels needed to reach 5 % / 1 % error" in text
    assert "saving at 5 %" in text
    # each arm's baseline: the uniform arm with the same inference method
    assert "| entropy |" in text and text.count("(baseline)") >= 4
    assert f"]({PNG_NAME})" in text
    assert "Uniform spends each round" in text  # policy paragraph from the registry
    assert "`one-coin` — one-coin EM, maximum likelihood" in text
    assert "Partial run" not in text


def _summary_from_checkpoints(run_dir: Path, seconds: float) -> dict:
    """What ``write_run`` writes, rebuilt from the unit checkpoints with the real Scenario
    (independent of the report code, which the run also calls at its end)."""
    from marketsim.study.run_folder import build_summary, load_units, resume_scenario

    scenario = resume_scenario(run_dir)
    summary = build_summary(scenario, load_units(run_dir, scenario), seconds, True)
    return json.loads(json.dumps(summary_json(summary)))


@pytest.mark.parametrize("keep_summary", [True, False])
def test_report_reproduces_summary(run_copy: Path, keep_summary: bool,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    original = json.loads((run_copy / "summary.json").read_text())
    assert original == _summary_from_checkpoints(run_copy, original["seconds"])
    for name in (PNG_NAME, SVG_NAME, "report.md"):
        (run_copy / name).unlink()
    if not keep_summary:
        (run_copy / "summary.json").unlink()
    # the figures drawn again once (the summary is what is compared)
    proc = in_process(capsys, "report", str(run_copy), *([] if keep_summary else ["--no-figures"]))
    assert proc.returncode == 0, proc.stderr
    again = json.loads((run_copy / "summary.json").read_text())
    if keep_summary:
        assert again == original
    else:
        assert again.pop("seconds") is None
        original.pop("seconds")
        assert again == original
    assert _is_png(run_copy / PNG_NAME) if keep_summary else not (run_copy / PNG_NAME).exists()
    assert (run_copy / "report.md").stat().st_size > 0


def test_partial_run(run_copy: Path) -> None:
    rows = read_curves(run_copy / "curves.csv")
    kept = [r for r in rows if not (r.arm == "entropy" and r.replicate == 1)]
    write_curves(run_copy / "curves.csv", kept)
    (run_copy / "summary.json").unlink()
    summary = render_report(run_copy, figures=False)
    assert summary.complete is False
    assert summary.units_finished == 5 and summary.units_total == 6
    assert summary.arms["entropy"].replicates == 1
    assert "**Partial run.** Only 5 of 6" in (run_copy / "report.md").read_text()


def test_report_without_scenario_files(run_copy: Path) -> None:
    for name in ("run.json", "scenario.toml", "summary.json"):
        (run_copy / name).unlink()
    summary = render_report(run_copy, figures=False)
    assert list(summary.arms) == ["uniform", "entropy", "uniform ml"]
    assert "only what `curves.csv` holds is known" in (run_copy / "report.md").read_text()


def test_report_sweep_folder_renders_points(run_copy: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    sweep = tmp_path / "sweep"
    shutil.copytree(run_copy, sweep / "points" / "p000")
    proc = in_process(capsys, "report", str(sweep), "--json", "--no-figures")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["rendered"]) == 1


def _one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_report_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_line_error(in_process(capsys, "report", str(tmp_path / "nope")))
    assert "run folder not found" in line


def test_report_folder_without_curves(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_line_error(in_process(capsys, "report", str(tmp_path)))
    assert "no curves.csv" in line


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("arm,replicate\nx,0\n", "missing columns"),
        ("arm,replicate,edges,error_rate,ability_error,sim_time\nx,0,10,abc,0.1,1\n",
         "bad value"),
        ("arm,replicate,edges,error_rate,ability_error,sim_time\nx,0,10,nan,0.1,1\n",
         "bad value"),
    ],
)
def test_report_malformed_curves(tmp_path: Path, text: str, message: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "curves.csv").write_text(text)
    line = _one_line_error(in_process(capsys, "report", str(tmp_path)))
    assert message in line and "curves.csv" in line


def test_report_unknown_arm(run_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = read_curves(run_copy / "curves.csv")
    stranger = CurveRow(60, 0.1, 0.1, 0.0, arm="stranger", replicate=0)
    write_curves(run_copy / "curves.csv", [*rows, stranger])
    line = _one_line_error(in_process(capsys, "report", str(run_copy)))
    assert "'stranger'" in line


def test_setup_text_describes_the_crowd_of_each_worker_model() -> None:
    # The one-coin Beta sentence was written for every model (a spammer-hammer crowd read as
    # "p = 0.1 + 0.9 · Beta(6, 2)").
    from marketsim.report.crowd_text import world_text
    from marketsim.scenario.parser import parse_scenario

    def crowd_text(workers: dict) -> str:
        doc = {"tasks": {"count": 10}, "workers": {"count": 3, **workers},
               "budget": {"edges": 20}, "arms": [{"name": "a", "policy": "uniform"}]}
        scenario = parse_scenario(doc, "x.toml")
        text = world_text(scenario)
        return text.split(" model: ", 1)[1]

    hammers = crowd_text({"model": "spammer-hammer",
                          "spammer_hammer": {"hammer_fraction": 0.3}})
    assert "hammer" in hammers and "0.3" in hammers and "Beta" not in hammers
    confusion = crowd_text({"model": "confusion", "confusion": {"design": "dirichlet"}})
    assert "confusion matrix" in confusion and "dirichlet" in confusion and "Beta" not in confusion
    one_coin = crowd_text({"model": "one-coin", "ability": {"alpha": 6, "beta": 2, "low": 0.1}})
    assert one_coin.startswith("each worker's accuracy") and "Beta(6, 2)" in one_coin
