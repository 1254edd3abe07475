"""Authorship-analysis benchmark harness for PAN-style shared tasks: the framework.

The CLI, the registry (names -> import paths), parameters, the task and system protocols, the runner, results
and the typed `RunResult`, leaderboards, plots, reports, item statistics, provenance, seeding and the measures
(harness.metrics). It imports core only and never names a particular task or system (docs/architecture.md).
"""

__version__ = "0.1.0"
