"""validate and list through the real entry point (subprocess): success and failure paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def marketsim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "marketsim", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_validate_prints_resolved_defaults() -> None:
    result = marketsim("validate", "scenarios/30_workers.toml", "--json")
    assert result.returncode == 0, result.stderr
    resolved = json.loads(result.stdout)
    assert resolved["workers"]["ability"]["alpha"] == 6.0
    assert resolved["budget"]["edges"] == 30000
    assert resolved["workers"]["service"]["mean"] == 0.0  # a default, not in the file


def test_validate_rejects_bad_file_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[tasks]\ncount = 10\n[workers]\ncount = -3\n[budget]\nedges = 20\n'
                   '[[arms]]\nname = "u"\npolicy = "uniform"\n')
    result = marketsim("validate", str(bad))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"marketsim: error: {bad}: workers.count must be >= 1, got -3"
    ]


def test_list_names_policies_methods_models_and_datasets() -> None:
    result = marketsim("list")
    assert result.returncode == 0, result.stderr
    for name in ("random-forest", "knowledge-gradient", "opt-ds", "one-coin-shifted-beta",
                 "confusion", "rte", "gaussian-scores", "uncertainty", "gaussian-em",
                 "machine annotators"):
        assert name in result.stdout


def test_list_prints_each_entry_whole_or_its_first_whole_sentence() -> None:
    """Every policy's first sentence (not cut at the period of 'et al.' or 'e.g.'), and every
    method's, worker model's and data set's description whole: brackets are words, not
    console markup, and no summary ends in '..'."""
    from marketsim.aggregation.registry import METHODS
    from marketsim.cli.list_cmd import DATASETS
    from marketsim.policies.registry import POLICIES, first_sentence
    from marketsim.workers.registry import WORKER_MODELS

    result = subprocess.run([sys.executable, "-m", "marketsim", "list"], capture_output=True,
                            text=True, cwd=ROOT, timeout=120,
                            env={**os.environ, "COLUMNS": "5000"})
    assert result.returncode == 0, result.stderr
    cells = {parts[1].strip(): parts[2].strip() for line in result.stdout.splitlines()
             if len(parts := line.split("│")) == 4 and parts[1].strip()}
    expected = {n: first_sentence(c.describe()) for n, c in POLICIES.items()}
    expected |= {n: s.description for n, s in METHODS.items()}
    expected |= {n: cls.summary for n, cls in WORKER_MODELS.items()} | DATASETS
    for name, text in expected.items():
        assert cells[name] == " ".join(text.split()), name
    for name in POLICIES:
        text = cells[name]
        assert text.endswith(".") and not text.endswith(".."), text
        assert not text.endswith((" al.", "e.g.", "i.e.")), text
        assert text.count("(") == text.count(")"), text
        assert POLICIES[name].describe().startswith(text), name
    assert cells["qasca"].startswith("QASCA (Zheng et al. 2015) gives each arriving worker")
    assert "[low, high]" in cells["confusion"]


def test_first_sentence_skips_abbreviations_and_initials() -> None:
    from marketsim.policies.registry import first_sentence

    assert first_sentence("QASCA (Zheng et al. 2015) ranks. Worker-aware.") == (
        "QASCA (Zheng et al. 2015) ranks.")
    assert first_sentence("Uses e.g. Gold and i.e. More. Then this.") == (
        "Uses e.g. Gold and i.e. More.")
    assert first_sentence("After J. Smith (2010). Second.") == "After J. Smith (2010)."
    assert first_sentence("One sentence (as qasca).") == "One sentence (as qasca)."
    assert first_sentence("Ends with a quote (see `x`). Next") == "Ends with a quote (see `x`)."
    assert first_sentence("no period at all") == "no period at all"


def test_unknown_subcommand_is_exit_2() -> None:
    result = marketsim("frobnicate")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_a_subcommand_imports_only_its_own_module() -> None:
    """``infer`` starts without the simulator (SimPy, networkx, the scenario schema): its
    start-up is half of the full parser's."""
    code = ("import sys; from marketsim.cli import build_parser; "
            "build_parser('infer').parse_args(['infer', 'x.csv']); "
            "print(sorted(m for m in ('simpy', 'networkx', 'marketsim.market', "
            "'marketsim.scenario.schema') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_version_is_printed_without_building_the_parser() -> None:
    out = subprocess.run([sys.executable, "-m", "marketsim", "--version"], capture_output=True,
                         text=True, check=True)
    assert out.stdout.startswith("marketsim ")
    code = ("import sys; from marketsim.cli import main; main(['--version']); "
            "print('marketsim.cli.run' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.splitlines()[-1] == "False"


def test_the_program_keeps_its_imported_modules_out_of_the_collectors_scans() -> None:
    """Run as a program, the modules imported at start-up are frozen (gc.freeze), so the
    cycle collector's full collections during a run do not scan them again and again; called
    from Python (argv given) nothing is frozen: a test's or a notebook's objects stay
    collectable."""
    code = ("import gc, sys; from marketsim.cli import main; sys.argv = ['marketsim', {args}]; "
            "main({argv}); print(gc.get_freeze_count())")
    for argv, frozen in (("None", True), ("sys.argv[1:]", False)):
        out = subprocess.run(
            [sys.executable, "-c", code.format(args="'list'", argv=argv)],
            capture_output=True, text=True, check=True, cwd=ROOT)
        count = int(out.stdout.splitlines()[-1])
        assert (count > 10_000) is frozen, (argv, count)
