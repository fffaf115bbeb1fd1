"""The worker models, one class per model in one module each (issue #39), and the machinery
they share.

A model (:class:`~marketsim.workers.base.WorkerModel`) owns its options table, its facts, its
world draw, answers, gold items and measurement, and its words; the registry
(:mod:`~marketsim.workers.registry`) discovers every module's models by name. Shared:
:mod:`~marketsim.workers.base` (the protocol, the world and the
:class:`~marketsim.workers.base.Crowd` a model reads), :mod:`~marketsim.workers.draws`
(initial graphs, one-coin matrices, features then the initial graph),
:mod:`~marketsim.workers.classes` (what class-label models share),
:mod:`~marketsim.workers.task_effects` and :mod:`~marketsim.workers.task_types` (look-alike
tasks, difficulty, task types on per-worker matrices), :mod:`~marketsim.workers.dynamics`
(``[workers.dynamics]``: learning, fatigue and drift), :mod:`~marketsim.workers.task_features`,
the measurements (:mod:`~marketsim.workers.recorder`, :mod:`~marketsim.workers.score_metrics`)
and the words they share (:mod:`~marketsim.workers.words`).

The package sits between the records and the scenario (which imports it for its registry,
validation and the ``[workers]`` union); it reads the tasks, the workers and the budget as a
:class:`~marketsim.workers.base.Crowd`, never the whole scenario.
"""
