"""What ``marketsim infer`` prints: one fit's result as a two-column table (a class method's,
with a mixed crowd's accuracy per source and per confidence bin, or a score method's)."""

from __future__ import annotations

from typing import Any

from marketsim.record.infer_result import InferResult


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.6g}"
    return str(x)


def _print_rows(title: str, rows: list[tuple[str, Any]]) -> None:
    """Print (quantity, value) rows as a two-column rich table on stdout."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_header=False)
    table.add_column("quantity", style="bold")
    table.add_column("value", justify="right", overflow="fold")
    for key, value in rows:
        table.add_row(key, _fmt(value))
    Console(soft_wrap=False).print(table)


def print_table(result: InferResult) -> None:
    """Print the result as a rich table on stdout."""
    rows: list[tuple[str, Any]] = [
        ("method", result.method),
        ("labels file", result.labels_file),
        ("tasks / workers / labels / classes",
         f"{result.n_tasks} / {result.n_workers} / {result.n_labels} / {result.n_classes}"),
        ("iterations", result.iterations),
        ("converged", "yes" if result.converged else "no"),
        ("seconds", f"{result.seconds:.3f}"),
        ("log-likelihood", result.log_likelihood),
    ]
    if result.has("n_features"):
        rows.append(("features (tasks with a row)",
                     f"{result.n_features} ({result.n_tasks_with_features} tasks)"))
    if result.has("error_rate"):
        err = result.error_rate
        rows.append((f"error rate ({result.n_tasks_with_truth} tasks with truth)",
                     "-" if err is None else f"{100 * err:.2f}%"))
    if result.has("error_rate_fractional_ties"):
        err = result.error_rate_fractional_ties
        rows.append(("error rate, fractional ties", "-" if err is None else f"{100 * err:.2f}%"))
    if result.has("model_repeats_dropped"):
        rows.append(("model repeats counted once (labels dropped)", result.model_repeats_dropped))
    rows.extend(source_rows(result))
    _print_rows(f"marketsim infer: {result.method}", rows)


def source_rows(result: InferResult) -> list[tuple[str, Any]]:
    """A mixed crowd's rows: each source's estimated accuracy (and measured, with truth), and
    ``ds-confidence``'s per (model, confidence bin)."""
    rows: list[tuple[str, Any]] = []
    for src in result.sources or []:
        value = f"{_percent(src.estimated_accuracy)} estimated"
        if src.model_fields_set >= {"accuracy_vs_truth"}:
            value += f", {_percent(src.accuracy_vs_truth)} vs truth"
        rows.append((f"accuracy: {src.source} ({src.workers} workers, {src.labels} labels)",
                     value))
    for cell in result.confidence_bins or []:
        span = ("no confidence" if cell.bin == "none" else
                f"confidence {cell.confidence_min:.3g}-{cell.confidence_max:.3g}")
        rows.append((f"accuracy: {cell.source}, bin {cell.bin} ({span}, {cell.labels} labels)",
                     f"{_percent(cell.estimated_accuracy)} estimated"))
    return rows


def _percent(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def print_score_table(result: InferResult) -> None:
    """Print the result of a score method as a rich table on stdout."""
    rows: list[tuple[str, Any]] = [
        ("method", result.method),
        ("scores file", result.labels_file),
        ("tasks / annotators / scores",
         f"{result.n_tasks} / {result.n_workers} / {result.n_scores}"),
        ("iterations", result.iterations),
        ("converged", "yes" if result.converged else "no"),
        ("seconds", f"{result.seconds:.3f}"),
        ("log-likelihood", result.log_likelihood),
        ("sigma (good annotators' noise)", result.sigma),
        ("pi = P(good)", result.pi),
        ("annotators with P(good) > 0.5", f"{result.n_good} of {result.n_workers}"),
    ]
    if result.has("rmse"):
        rows.append((f"RMSE ({result.n_tasks_with_truth} tasks with true means)", result.rmse))
        rows.append(("RMSE of the plain mean", result.rmse_plain_mean))
    _print_rows(f"marketsim infer --scores: {result.method}", rows)
