"""Lineage: walk from a candidate or a selection back to sources, runs, models and configs."""

from capsel.lineage.trace import CandidateLineage, SelectionLineage, trace

__all__ = ["CandidateLineage", "SelectionLineage", "trace"]
