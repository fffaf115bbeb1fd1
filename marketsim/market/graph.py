"""The record of who labelled what, as a networkx bipartite graph (``output.graph``).

Task nodes are ``t<i>`` (``bipartite=0``), worker nodes ``w<j>`` (``bipartite=1``); every label
is an edge with its class ``label``, the simulated ``time`` it came in and, in markets whose
workers give scores, its ``score``. Inference never reads the graph (it runs on the
:class:`~marketsim.market.label_log.LabelLog` arrays); it is kept for users and GraphML export.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np


def label_graph(n_tasks: int, n_workers: int) -> nx.Graph:
    """An empty bipartite graph of the market's tasks and workers."""
    graph = nx.Graph()
    graph.add_nodes_from((f"t{i}" for i in range(n_tasks)), bipartite=0)
    graph.add_nodes_from((f"w{j}" for j in range(n_workers)), bipartite=1)
    return graph


def add_labels(graph: nx.Graph, tasks: np.ndarray, workers: np.ndarray, labels: np.ndarray,
               scores: np.ndarray | None, now: float) -> None:
    """Record a batch of labels (the initial graph) received at simulated time ``now``."""
    extra = (np.full(len(tasks), np.nan) if scores is None else scores).tolist()
    graph.add_edges_from(
        (f"t{i}", f"w{j}", {"label": int(z), "time": now}
         | ({} if scores is None else {"score": x}))
        for i, j, z, x in zip(tasks, workers, labels, extra, strict=True)
    )


def add_label(graph: nx.Graph, task: int, worker: int, label: int, score: float | None,
              now: float) -> None:
    """Record one label (scalar code: this runs once per label)."""
    if score is None:
        graph.add_edge(f"t{task}", f"w{worker}", label=label, time=now)
    else:
        graph.add_edge(f"t{task}", f"w{worker}", label=label, score=score, time=now)


def write_graphml(graph: nx.Graph | None, path: Any) -> None:
    """Export the graph as GraphML; a market that keeps no graph says so."""
    if graph is None:
        raise ValueError("this market does not keep its graph (output.graph = false)")
    nx.write_graphml(graph, path)
