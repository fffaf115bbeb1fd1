"""benchmarks/twin_replay.py's parts: the replay weighted as the twin, the twin's world answering
exactly the real file's pairs, and the table judged against ±2 points."""

from __future__ import annotations

from pathlib import Path

from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.replay import ReplaySpec, load_replay
from tests.helpers import benchmark_script

twin_replay = benchmark_script("twin_replay")


def real_file(tmp_path: Path) -> dict[str, str]:
    """12 tasks, 4 workers; worker j answered the tasks with (task + j) % 4 != 0, worker 3
    only the first six of those."""
    pairs = [(t, w) for t in range(12) for w in range(4) if (t + w) % 4 and (w < 3 or t < 6)]
    (tmp_path / "labels.csv").write_text("task,worker,label\n" + "".join(
        f"t{t},w{w},{(t * w) % 2}\n" for t, w in pairs))
    (tmp_path / "truth.csv").write_text("task,label\n" + "".join(f"t{t},{t % 2}\n"
                                                                 for t in range(12)))
    return {"labels": str(tmp_path / "labels.csv"), "truth": str(tmp_path / "truth.csv")}


def test_the_replay_arrives_like_the_twin_and_buys_k_labels_per_task(tmp_path: Path) -> None:
    real = real_file(tmp_path)
    sc = twin_replay.replay_scenario(real, 3, 2, 4, str(tmp_path / "s.toml"))
    # a deck of each worker's labels, in the order they appear (w1-w3, w0), as the twin's
    assert sc.workers.arrivals.weights == (9, 9, 4, 9) and sc.workers.arrivals.order == "deck"
    assert (sc.budget.edges, sc.budget.initial, sc.scenario.replicates) == (24, "one-per-task", 4)
    assert [arm.policy.name for arm in sc.arms] == list(twin_replay.POLICIES)


def test_the_twin_answers_exactly_the_real_pairs(tmp_path: Path) -> None:
    real = real_file(tmp_path)
    twin = parse_scenario({"scenario": {"seed": 2}, "tasks": {"count": 12},
                           "workers": {"count": 4, "model": "confusion"},
                           "budget": {"edges": 24},
                           "arms": [{"name": "u", "policy": "uniform"}]}, "twin.toml")
    table = twin_replay.twin_on_pairs(twin, real, 1, tmp_path / "pairs")
    got, was = load_replay(ReplaySpec(**table)), load_replay(ReplaySpec(**real))
    names = {(f"t{t}", f"w{w}") for t, w in zip(was.labels.tasks.tolist(),
                                              was.labels.workers.tolist(), strict=True)}
    rows = [line.split(",") for line in Path(table["labels"]).read_text().splitlines()[1:]]
    assert {(f"t{int(t[1:])}", f"w{int(w[1:])}") for t, w, _ in rows} == names
    assert got.labels.n_labels == was.labels.n_labels
    truth = twin_replay.draw_world(twin.crowd, twin_replay.world_rng(2, 1)).truth
    written = dict(line.split(",") for line in Path(table["truth"]).read_text().splitlines()[1:])
    assert [int(written[f"t{t:02d}"]) for t in range(12)] == truth.tolist()


def test_the_table_judges_each_cell_against_two_points() -> None:
    arms = len(twin_replay.POLICIES)
    res = {"replay": [[10.0, 12.0]] * arms, "twin": [[13.0, 13.0], [11.0, 11.0], [8.0, 8.0]],
           "pairs": [[12.0, 12.0]] * arms}
    text = twin_replay.table({("rte", 3): res}, 2)
    rows = [line for line in text.splitlines() if line.startswith("| rte")]
    assert rows[0].startswith("| rte | 3 | uniform | 11.00 ± 1.00 | 13.00 ± 0.00 | +2.00 ± 1.00 "
                              "| yes")
    assert "| +0.00 ± 1.00 | yes |" in rows[1]
    assert "| -3.00 ± 1.00 | **no** |" in rows[2]
