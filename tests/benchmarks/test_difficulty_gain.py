"""benchmarks/difficulty_gain.py: the uniform / adaptive labels-to-target ratios the docs quote
for scenarios/difficulty.toml, paired by replicate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import benchmark_script

difficulty_gain = benchmark_script("difficulty_gain")


def arm(ids: list[int], reach: dict[str, list[int | None]]) -> dict:
    return {"replicate_ids": ids, "edges_to_reach_replicates": reach}


def test_ratios_pair_replicates_and_skip_those_not_reached(tmp_path: Path) -> None:
    point = tmp_path / "points" / "p000"
    point.mkdir(parents=True)
    arms = {"uniform": arm([0, 1, 2], {"0.1": [300, 400, None], "0.05": [None, None, None]}),
            "adaptive": arm([2, 1, 0], {"0.1": [100, 200, 150], "0.05": [500, None, None]})}
    (point / "summary.json").write_text(json.dumps({"arms": arms}))
    (tmp_path / "sweep.json").write_text(json.dumps({
        "keys": ["workers.glad.sigma"],
        "rows": [{"point": "points/p000", "workers.glad.sigma": 1.0, "arm": a} for a in arms]}))
    rows = difficulty_gain.gain_rows(tmp_path)
    ten, five = rows
    # replicate 0: 300 / 150 = 2, replicate 1: 400 / 200 = 2; replicate 2 unreached by uniform
    assert ten["pairs"] == 2 and ten["ratio"] == pytest.approx(2.0)
    assert ten["workers.glad.sigma"] == 1.0 and ten["arm"] == "adaptive"
    assert five["pairs"] == 0 and five["replicates"] == 3
