"""Shipyard: an open deep-learning training platform."""

__version__ = "0.1.0"
