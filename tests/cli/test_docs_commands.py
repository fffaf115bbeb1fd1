"""Every command the README and docs show is a command this program accepts, and the README's
two commands work on a fresh checkout: the documentation cannot drift from the program.

Commands are read from fenced code blocks and inline code spans of README.md, docs/*.md and
reports/README.md. ``python -m marketsim ...`` lines are parsed by the real argument parser
(placeholders such as SCENARIO or RUN_DIR are just strings to it; lines with ``[optional]``
syntax are skipped); ``python benchmarks/X.py ...`` lines must name a script that defines each
option used (before a ``--``: what follows it goes to the command the script benchmarks).
"""

from __future__ import annotations

import functools
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from marketsim.cli import build_parser
from marketsim.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_IO_ERROR,
    EXIT_OK,
    EXIT_SIMULATION_ERROR,
)

ROOT = Path(__file__).resolve().parents[2]
# docs/ and its sub-folders (the site's tutorials, how-to guides and lessons).
DOCS = [ROOT / "README.md", ROOT / "reports" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _code_lines(text: str) -> list[tuple[str, bool]]:
    """Lines inside fenced blocks (continuations joined; True) and inline code spans (False)."""
    lines: list[tuple[str, bool]] = []
    fenced = False
    pending = ""
    for raw in text.splitlines():
        if raw.strip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            line = pending + raw.strip()
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            pending = ""
            lines.append((line, True))
        else:
            lines.extend((span, False) for span in re.findall(r"`([^`]+)`", raw))
    return lines


def _commands(prefix: str) -> list[tuple[str, str, bool]]:
    found: list[tuple[str, str, bool]] = []
    for doc in DOCS:
        for line, fenced in _code_lines(doc.read_text(encoding="utf-8")):
            line = line.removeprefix("$ ").strip()
            line = re.sub(r"\s+#\s.*$", "", line)  # trailing comment
            line = line.split("&&")[-1].strip()  # "install && run": the run
            line = re.sub(r"^(\w+=\S+\s+)+", "", line)  # VAR=value prefixes
            if line.startswith(prefix) and "[" not in line and "|" not in line:
                found.append((doc.relative_to(ROOT).as_posix(), line, fenced))
    return found


MARKETSIM = [c for c in _commands("python -m marketsim") if c[1].split()[2] == "marketsim"]
MODULES = [c for c in _commands("python -m marketsim.")]
BENCHMARKS = _commands("python benchmarks/")


def test_the_docs_show_commands() -> None:
    assert len(MARKETSIM) >= 20 and len(BENCHMARKS) >= 5


@pytest.mark.parametrize(("doc", "command", "fenced"), MARKETSIM,
                         ids=[c for _, c, _ in MARKETSIM])
def test_documented_marketsim_command_parses(doc: str, command: str, fenced: bool) -> None:
    """A command shown in a code block parses whole; one named in running text (e.g.
    `python -m marketsim run --out`) must name a real subcommand and real options."""
    argv = shlex.split(command)[3:]
    if argv and argv[0].endswith(".toml"):
        argv.insert(0, "run")
    if argv in ([], ["--help"]) or "--help" in argv or "-h" in argv:
        return
    parser = build_parser()
    if not fenced:
        sub = next(a for a in parser._actions if a.dest == "command")
        assert argv[0] in sub.choices, f"{doc}: no subcommand {argv[0]!r}"  # type: ignore[attr-defined]
        known = sub.choices[argv[0]]._option_string_actions  # type: ignore[attr-defined]
        for opt in (a.split("=")[0] for a in argv[1:] if a.startswith("--")):
            assert opt in known, f"{doc}: `{command}`: {argv[0]} has no option {opt}"
        return
    try:
        parser.parse_args(argv)
    except SystemExit as exc:  # pragma: no cover - the failure message is the point
        pytest.fail(f"{doc}: `{command}` is not accepted by the program (exit {exc.code})")


@functools.cache
def _module_help(module: str) -> subprocess.CompletedProcess[str]:
    """``python -m module --help``, run once per module: the docs show the same few modules'
    commands a dozen times, and each run is a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("doc", "command", "fenced"), MODULES, ids=[c for _, c, _ in MODULES])
def test_documented_module_command_runs_its_help(doc: str, command: str, fenced: bool) -> None:
    """`python -m marketsim.x ...` names a module whose --help lists the options used."""
    argv = shlex.split(command)
    proc = _module_help(argv[2])
    assert proc.returncode == 0, f"{doc}: `{command}`: {proc.stderr}"
    for opt in (a.split("=")[0] for a in argv[3:] if a.startswith("--")):
        assert opt in proc.stdout, f"{doc}: {argv[2]} has no option {opt}"


@pytest.mark.parametrize(("doc", "command", "fenced"), BENCHMARKS,
                         ids=[c for _, c, _ in BENCHMARKS])
def test_documented_benchmark_exists_with_its_options(doc: str, command: str,
                                                      fenced: bool) -> None:
    argv = shlex.split(command)
    script = ROOT / argv[1]
    assert script.is_file(), f"{doc}: `{command}` names a missing script"
    source = script.read_text(encoding="utf-8")
    own = argv[2:argv.index("--")] if "--" in argv else argv[2:]  # after --: the benchmarked
    for opt in (a.split("=")[0] for a in own if a.startswith("--")):
        assert f'"{opt}"' in source, f"{doc}: {script.name} has no option {opt}"


def test_readme_scenario_tour_matches_the_scenarios_folder() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"`(scenarios/[\w/]+\.toml)`", readme))
    shipped = {p.relative_to(ROOT).as_posix() for p in (ROOT / "scenarios").rglob("*.toml")}
    assert shipped - listed == set(), "scenarios missing from the README tour"
    assert listed - shipped == set(), "the README names scenarios that do not exist"


def test_readme_exit_codes_are_the_programs() -> None:
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    claims = dict(re.findall(r"(\d+) (success|bad input|a simulation could not finish|"
                             r"a file could not be written|interrupted)", readme))
    assert claims == {str(EXIT_OK): "success", str(EXIT_BAD_INPUT): "bad input",
                      str(EXIT_SIMULATION_ERROR): "a simulation could not finish",
                      str(EXIT_IO_ERROR): "a file could not be written",
                      str(EXIT_INTERRUPTED): "interrupted"}


def test_docs_name_papers_not_private_seed_files() -> None:
    """Users do not have the seed files or ALGORITHMS.md: the docs cite the papers."""
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        assert "ALGORITHMS.md" not in text, doc
        assert not re.search(r"\bseeds? 00\d\b", text), f"{doc} names a private seed file"


@pytest.mark.slow  # five arms of 30,000 labels, the random forest's among them
def test_readme_main_command_runs_on_a_fresh_checkout(tmp_path: Path) -> None:
    """The README's main command, from the checkout, with one replicate (CI installs the
    package as the README's test command says, so the install half is exercised there). The
    default loop checks that the command parses and its scenario validates (above and
    tests/scenario/test_scenario_cli.py) and runs small studies end to end
    (tests/report/test_report.py)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    main = next(c for d, c, _ in MARKETSIM if d == "README.md" and ".toml" in c)
    argv = shlex.split(main)[3:]
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "marketsim", *argv, "--replicates", "1", "--quiet",
         "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    for name in ("curves.csv", "summary.json", "report.md", "error_vs_budget.png"):
        assert (out / name).is_file(), name
    assert "python -m pip install -e . && python -m marketsim scenarios/" in readme
