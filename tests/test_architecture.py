"""The package's house rules, checked on its source with ``ast`` (no extra tool).

Layers, lowest first; a module may import its own layer and the ones below, never above:

    errors/_version/options/tables < data < aggregation < policies < record < workers < scenario
    < market < study < report < cli / api

There is no import cycle between modules, no module imports ``marketsim`` code inside a
function (the usual way to hide a cycle) except the command line, which defers heavy imports
so that ``--help`` and Ctrl-C at start-up stay fast, and no module grows past the size a
newcomer can read in one sitting.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "marketsim"

LAYERS: dict[str, int] = {
    "_version": 0,
    "errors": 0,
    "options": 0,
    "tables": 0,
    "plugins": 0,
    "data": 1,
    "aggregation": 2,
    "policies": 3,
    "record": 4,
    "workers": 5,
    "machines": 5,
    "scenario": 6,
    "market": 7,
    "study": 8,
    "report": 9,
    "cli": 10,
    "api": 10,
    "widgets": 10,
    "__main__": 11,
    "__init__": 11,
}
#: Packages whose functions may import other marketsim modules lazily (start-up time): the
#: command line, and the package's own ``__init__`` (its public API is loaded on first use, so
#: ``python -m marketsim`` starts under the CLI's Ctrl-C guard).
LAZY_ALLOWED = {"cli", "__main__", "marketsim"}
MAX_LINES = 400


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return LAYERS["__init__"]
    return LAYERS[parts[1]]


def marketsim_imports(tree: ast.AST, module: str) -> list[tuple[str, int, bool]]:
    """(imported module, line, inside a function) for every import of marketsim code."""
    out: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                out.extend((a.name, child.lineno, in_function) for a in child.names
                           if a.name.split(".")[0] == "marketsim")
            elif isinstance(child, ast.ImportFrom):
                if child.level:  # relative import: resolve against this module's package
                    base = module.split(".")[: -child.level or None]
                    target = ".".join([*base, child.module] if child.module else base)
                else:
                    target = child.module or ""
                if target.split(".")[0] == "marketsim":
                    for alias in child.names:  # `from marketsim.x import submodule`
                        sub = f"{target}.{alias.name}"
                        known = (PACKAGE.parent / Path(*sub.split("."))).with_suffix(".py")
                        out.append((sub if known.exists() else target, child.lineno, in_function))
            visit(child, inside)

    visit(tree, False)
    return out


def all_modules() -> dict[str, tuple[Path, ast.AST]]:
    return {
        module_name(p): (p, ast.parse(p.read_text(encoding="utf-8"), str(p)))
        for p in sorted(PACKAGE.rglob("*.py"))
    }


MODULES = all_modules()


def test_every_package_has_a_layer() -> None:
    unknown = {m.split(".")[1] for m in MODULES if "." in m} - set(LAYERS)
    assert not unknown, f"give these packages a layer in tests/test_architecture.py: {unknown}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_run_downward_only(module: str) -> None:
    path, tree = MODULES[module]
    mine = layer_of(module)
    for target, line, in_function in marketsim_imports(tree, module):
        if target == "marketsim":
            continue  # the package itself (its __init__ is the public face)
        assert layer_of(target) <= mine, (
            f"{path.relative_to(PACKAGE.parent)}:{line} imports {target} from a higher layer"
        )
        package = module.split(".")[1] if "." in module else module
        assert not in_function or package in LAZY_ALLOWED, (
            f"{path.relative_to(PACKAGE.parent)}:{line} imports {target} inside a function; "
            "import at the top (move the shared thing down if that makes a cycle)"
        )


def test_no_import_cycles() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for module, (_, tree) in MODULES.items():
        for target, _, in_function in marketsim_imports(tree, module):
            if not in_function and target in MODULES and target != module:
                graph[module].add(target)
    # Tarjan's strongly connected components: any component of two or more is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in list(MODULES):
        if v not in index:
            strongconnect(v)
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_stay_readable(module: str) -> None:
    path, _ = MODULES[module]
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE.parent)} has {lines} lines"


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The rules above can fail: an upward and a lazy import are both found."""
    tree = ast.parse(
        "from marketsim.report.plots import x\n"
        "def f():\n    from marketsim.record import files\n"
    )
    found = marketsim_imports(tree, "marketsim.data.zhang")
    assert ("marketsim.report.plots", 1, False) in found
    assert any(t.startswith("marketsim.record") and lazy for t, _, lazy in found)
    assert layer_of("marketsim.report.plots") > layer_of("marketsim.data.zhang")


#: Most files of the package whose code names something ``continuous`` (issue #26: what kind
#: of labels a market has is a fact of its worker model, not a flag through every layer).
MAX_CONTINUOUS_FILES = 1


def continuous_names(path: Path) -> set[str]:
    """Identifiers in ``path``'s code (not comments, docstrings or strings) that contain
    ``continuous``: names, attributes, functions, classes, parameters, imported modules."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        for attr in ("id", "attr", "name", "arg", "module", "asname"):
            value = getattr(node, attr, None)
            if isinstance(value, str) and "continuous" in value.lower():
                names.add(value)
    return names


def test_worker_model_kinds_are_not_a_flag_through_the_layers() -> None:
    hits = {str(p.relative_to(PACKAGE)): sorted(n) for p in sorted(PACKAGE.rglob("*.py"))
            if (n := continuous_names(p))}
    assert len(hits) <= MAX_CONTINUOUS_FILES, hits


def test_the_continuous_counter_sees_names_not_strings(tmp_path: Path) -> None:
    code = tmp_path / "x.py"
    code.write_text('"""continuous docs."""\nx = "continuous"  # continuous\n')
    assert continuous_names(code) == set()
    code.write_text("def f(continuous: bool) -> bool:\n    return world.continuous\n")
    assert continuous_names(code) == {"continuous"}


#: Most string-key reads in the reports, the Python API and the command line (issue #39: 194
#: in 2ff353b by :func:`string_key_reads`): they read typed models (the run's recorded
#: ``Scenario``, the summary, sweep points, calibrate's fit rows), not dicts by key.
MAX_STRING_KEY_READS = 23
#: The modules whose string-key reads are counted.
READERS = sorted([*PACKAGE.glob("report/*.py"), PACKAGE / "api.py", *PACKAGE.glob("cli/*.py")])


def string_key_reads(path: Path) -> list[str]:
    """``x["key"]`` read (not assigned) and ``x.get("key")`` with a literal string key."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "get" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_reports_api_and_cli_read_typed_models() -> None:
    reads = [r for path in READERS for r in string_key_reads(path)]
    assert len(reads) <= MAX_STRING_KEY_READS, "\n".join(reads)


def test_the_string_key_counter_sees_reads_not_writes_or_lists(tmp_path: Path) -> None:
    code = tmp_path / "x.py"
    code.write_text('row["a"] = 1\nhead = ["arm"]\nx = row["b"] + row.get("c", 0) + row[k]\n')
    assert [r.split(": ", 1)[1] for r in string_key_reads(code)] == ["row['b']",
                                                                      "row.get('c', 0)"]
