"""report.md's Setup section is generated from the resolved scenario, all of it: the crowd,
prices or qualification tiers, capacity, sessions, the money budget, and the gold questions
and blocking of the scenario and of each arm (issue #31, defect 1)."""

from __future__ import annotations

from pathlib import Path

from marketsim.cli import main
from marketsim.report.glossary import unlink_terms

GOLD_ARMS = """
[scenario]
name = "gold arms"
seed = 5
replicates = 2
[tasks]
count = 60
[workers]
count = 12
model = "spammer-hammer"
price = 0.5
[workers.spammer_hammer]
hammer_fraction = 0.4
[budget]
edges = 240
batch = 40
[[arms]]
name = "plain"
policy = "uniform"
inference = "one-coin"
[[arms]]
name = "checked"
policy = "uniform"
inference = "one-coin"
gold = { count = 10, rate = 0.25 }
blocking = { after = 2, min_accuracy = 0.6 }
"""

RULES = """
[scenario]
name = "rules"
seed = 6
replicates = 2
[tasks]
count = 60
[workers]
count = 12
capacity = 40
session_mean = 25
[workers.tiers]
cuts = [0.8, 0.9]
noise = 0.05
prices = [1.0, 1.5, 3.0]
[budget]
edges = 240
batch = 40
money = 500
[gold]
count = 8
rate = 0.1
in_inference = false
[[arms]]
name = "uniform"
policy = "uniform"
"""


def setup_of(tmp_path: Path, text: str) -> str:
    (tmp_path / "s.toml").write_text(text)
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "run"),
                 "--quiet", "--no-figures"]) == 0
    report = unlink_terms((tmp_path / "run" / "report.md").read_text())  # the plain words
    return report.split("## Setup", 1)[1].split("\n## ", 1)[0]


def test_setup_names_the_spammer_hammer_crowd_and_each_arms_gold_and_blocking(
        tmp_path: Path) -> None:
    setup = setup_of(tmp_path, GOLD_ARMS)
    assert "spammer-hammer" in setup and "probability 0.4" in setup
    assert "Beta(6, 2)" not in setup  # not the one-coin crowd the scenario does not have
    assert "Every label (gold answers included) costs 0.5." in setup
    assert "Arm *checked* has its own rule: 10 gold (control) questions" in setup
    assert "probability 0.25 (about one arrival in 4)" in setup
    assert "less than 60 % correct after 2 or more of them is blocked for good" in setup
    assert "The other arms use no gold questions and block no one." in setup
    assert "fit them with their classes known" in setup


def test_setup_names_tiers_prices_capacity_sessions_money_and_shared_gold(
        tmp_path: Path) -> None:
    setup = setup_of(tmp_path, RULES)
    assert "3 qualification tiers" in setup and "N(0, 0.05²)" in setup
    assert ("tier 0 (score below 0.8) 1; tier 1 (score from 0.8 to below 0.9) 1.5; "
            "tier 2 (score 0.9 or more) 3") in setup
    assert "at most 40 labels (gold answers included)" in setup
    assert "after 25 labels on average" in setup
    assert "at most **500 in money**" in setup
    assert "For every arm: 8 gold (control) questions" in setup
    assert "classes known" not in setup  # in_inference = false
    assert "blocked" not in setup


def test_setup_of_the_shipped_scenarios_names_their_rules(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2] / "scenarios"
    text = (root / "prices.toml").read_text().replace("replicates = 10", "replicates = 1")
    text = text.replace("count = 1000", "count = 100").replace("edges = 8000", "edges = 400")
    setup = setup_of(tmp_path, text)
    assert "tier 0 (score below 0.85) 1; tier 1 (score 0.85 or more) 2" in setup


CHANGING = """
[scenario]
name = "changing"
seed = 7
replicates = 1
[tasks]
count = 40
[workers]
count = 8
[workers.service]
mean = 3.0
speed_spread = 0.5
abandon = 0.2
[workers.dynamics]
learning = 1.0
learning_labels = 20
drift = 0.05
[budget]
edges = 160
batch = 40
[[arms]]
name = "uniform"
policy = "uniform"
"""


def test_setup_names_speeds_abandonment_and_dynamics(tmp_path: Path) -> None:
    setup = setup_of(tmp_path, CHANGING)
    assert "log-normal factor of mean 1 and spread 0.5" in setup
    assert "abandons a hand-out with probability 0.2 (it is not paid" in setup
    assert ("they learn (the logit of their chance of being right rises by up to 1, 63 % of "
            "it after 20 answers) and drift (a random walk of it, standard deviation 0.05 per "
            "answer).") in setup
    assert "tire" not in setup and "Workers change" in setup
    (tmp_path / "plain").mkdir()
    plain = setup_of(tmp_path / "plain", CHANGING.split("[workers.service]")[0]
                     + CHANGING.split("drift = 0.05\n")[1])
    assert "Workers change" not in plain and "abandons" not in plain
