"""Searchers: pure, synchronous, no I/O, JSON-able state. One algorithm a module."""

from shipyard.search.base import (
    Action,
    Create,
    ExitReason,
    Searcher,
    SetTarget,
    Shutdown,
    Stop,
    TrialRequest,
)
from shipyard.search.registry import SEARCHERS, make_searcher

__all__ = [
    "SEARCHERS",
    "Action",
    "Create",
    "ExitReason",
    "Searcher",
    "SetTarget",
    "Shutdown",
    "Stop",
    "TrialRequest",
    "make_searcher",
]
