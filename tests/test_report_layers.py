"""The report layer reads records and frozen scenario specs only: it never imports the market,
the study runner, the scenario parser or the CLI, and imports marketsim code only at the top of
a module; and no report module grows past 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import marketsim.report

REPORT = Path(marketsim.report.__file__).parent
MODULES = sorted(REPORT.glob("*.py"))
FORBIDDEN = ("marketsim.market", "marketsim.study", "marketsim.scenario.parser",
             "marketsim.scenario.sweep", "marketsim.cli")


def imports(path: Path) -> list[tuple[str, int, bool]]:
    """(module, line, inside a function) for every import in ``path``."""
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            here = inside or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, inside) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module:
                found.append((child.module, child.lineno, inside))
            visit(child, here)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_report_module_imports_only_lower_layers_at_top_level(path: Path) -> None:
    for module, line, inside in imports(path):
        assert not module.startswith(FORBIDDEN), f"{path.name}:{line} imports {module}"
        if module.startswith("marketsim"):
            assert not inside, f"{path.name}:{line} imports {module} inside a function"
        elif inside:  # only matplotlib, an optional heavy library, is imported late
            assert module.startswith("matplotlib"), f"{path.name}:{line} imports {module} late"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_report_module_is_short(path: Path) -> None:
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 400
