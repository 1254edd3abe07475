"""Authorship-analysis benchmark harness for PAN-style shared tasks."""

__version__ = "0.1.0"
