"""benchmarks/bench_calibrate.py: the synthetic file it times calibrate on reads back as the
crowd it drew (labels and truth), and its summary is each checkout's median."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from marketsim.data.load import load_labels
from tests.helpers import benchmark_script

bench_calibrate = benchmark_script("bench_calibrate")


def test_the_synthetic_file_reads_back_with_its_truth(tmp_path: Path) -> None:
    args = bench_calibrate.synthetic_files(600, 3, tmp_path)
    labels, truth_flag, truth, fmt_flag, fmt = args
    assert (truth_flag, fmt_flag, fmt) == ("--truth", "--format", "zhang")
    data, known = load_labels(labels, truth, "zhang")
    assert data.n_labels == 600 and data.n_tasks == 60 and data.n_classes <= 3
    assert known is not None and (known >= 0).all()
    assert np.bincount(data.tasks).tolist() == [10] * 60


def test_the_summary_is_each_checkouts_median_and_counts_failures() -> None:
    t = bench_calibrate.Timing
    runs = [t("a", 10.0, 9.0, 100.0, 0), t("b", 5.0, 4.0, 50.0, 0), t("a", 12.0, 11.0, 90.0, 0),
            t("b", 7.0, 6.0, 70.0, 1), t("a", 30.0, 29.0, 95.0, 0)]
    out = bench_calibrate.summary(runs)
    assert list(out) == ["a", "b"]
    assert out["a"] == {"runs": 3, "wall_s": 12.0, "cpu_s": 11.0, "peak_mib": 95.0, "failed": 0}
    assert out["b"]["wall_s"] == 6.0 and out["b"]["failed"] == 1
