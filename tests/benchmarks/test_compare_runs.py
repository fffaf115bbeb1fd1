"""benchmarks/compare_runs.py --paired: the paired comparison the docs quote when a change of
floating-point or random-draw order moves a study's curves."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.helpers import benchmark_script

compare_runs = benchmark_script("compare_runs")


def write_run(folder: Path, errors: dict[str, np.ndarray]) -> Path:
    """A run folder whose curves.csv has ``errors[arm][replicate, refresh]`` at edges 2000,
    4800, ... (one refresh per column)."""
    folder.mkdir()
    lines = ["arm,replicate,edges,error_rate"]
    for arm, table in errors.items():
        for rep, row in enumerate(table):
            lines += [f"{arm},{rep},{2000 + 2800 * i},{float(v)!r}" for i, v in enumerate(row)]
    (folder / "curves.csv").write_text("\n".join(lines) + "\n")
    return folder


def test_paired_report_flags_a_shift_and_passes_noise(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(0)
    base = rng.uniform(0.05, 0.2, (30, 3))
    old = write_run(tmp_path / "old", {"same": base, "noisy": base, "shifted": base})
    noise = rng.normal(0, 0.01, base.shape)
    noise -= noise.mean(axis=0)  # mean paired difference exactly 0 at every refresh
    new = write_run(tmp_path / "new", {"same": base, "noisy": base + noise,
                                       "shifted": base + 0.02 + noise})
    assert compare_runs.main([str(old), str(new), "--paired", "--edges", "4800"]) == 0
    out = capsys.readouterr().out
    lines = {ln.split()[0]: ln for ln in out.splitlines() if " 4800 " in ln}
    assert "excludes 0" in lines["shifted"] and "+2.000" in lines["shifted"]
    assert "excludes 0" not in lines["noisy"] and "excludes 0" not in lines["same"]
    assert "30/30" in lines["same"]
    assert "(arm, refresh) cells: 9; paired 95 % interval excludes 0 in 3" in out
    assert "arms identical in every replicate and refresh: same" in out


def test_paired_report_needs_shared_rows(tmp_path: Path) -> None:
    old = write_run(tmp_path / "old", {"a": np.full((2, 2), 0.1)})
    new = write_run(tmp_path / "new", {"b": np.full((2, 2), 0.1)})
    with pytest.raises(SystemExit, match="share no"):
        compare_runs.main([str(old), str(new), "--paired"])
