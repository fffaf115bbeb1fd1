"""Ctrl-C at the moments a library turns it into another error: still exit 130, one line.

The signal is sent by the program itself at an exact moment (a profiler spots the call), not
by a timer that races with the machine's load.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.cli.interrupts import caused_by_interrupt
from marketsim.errors import EXIT_INTERRUPTED

ROOT = Path(__file__).resolve().parents[2]

#: A program that runs the CLI and sends itself SIGINT inside the first ``__set_name__`` call
#: of matplotlib's Axes class definition (the interrupt then comes out as ``RuntimeError``);
#: the profiler that spots the call is set only once that module starts importing.
SIGINT_IN_SET_NAME = """
import os, signal, sys
def profile(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "__set_name__":
        sys.setprofile(None)
        os.kill(os.getpid(), signal.SIGINT)
def hook(event, args):
    if event == "import" and args[0] == "matplotlib.axes._base":
        sys.setprofile(profile)
sys.addaudithook(hook)
from marketsim.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run_interrupted(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SIGINT_IN_SET_NAME, *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_interrupt_while_the_report_loads_matplotlib(small_scenario_path: Path,
                                                      tmp_path: Path) -> None:
    """The run is done and its report starts drawing: matplotlib's class definitions turned
    a Ctrl-C there into ``RuntimeError: Error calling __set_name__`` (a traceback, exit 1)."""
    out = tmp_path / "run"
    proc = run_interrupted("run", str(small_scenario_path),
                              "--out", str(out), "--quiet", "--jobs", "1")
    assert proc.returncode == EXIT_INTERRUPTED, proc.stderr
    assert "Traceback" not in proc.stderr
    assert str(out) in proc.stderr and "--resume" in proc.stderr
    assert (out / "curves.csv").is_file()


def test_interrupt_while_calibrate_loads_matplotlib(tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text("task,worker,label\n" + "".join(
        f"t{t},w{w},{(t + (w == t % 7)) % 2}\n" for t in range(40) for w in range(5)))
    proc = run_interrupted("calibrate", str(labels),
                              "--out", str(tmp_path / "twin.toml"), "--quiet")
    assert proc.returncode == EXIT_INTERRUPTED, proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_interrupt_reported_as_another_error_exits_130(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The safety net for libraries not imported ahead: the error names what happened."""
    import marketsim.cli.validate as validate

    def interrupted(_args: object) -> int:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise RuntimeError("Error calling __set_name__") from exc

    monkeypatch.setattr(validate, "execute", interrupted)
    assert main(["validate", "x.toml"]) == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert err == "marketsim: interrupted (RuntimeError: Error calling __set_name__)\n"


def test_other_errors_are_not_taken_for_interrupts() -> None:
    try:
        raise ValueError("a bug")
    except ValueError as exc:
        assert not caused_by_interrupt(exc)
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise OSError("while stopping") from None
    except OSError as exc:
        assert not caused_by_interrupt(exc)  # `from None`: the library said it is unrelated
