"""Determined's `determined` module for Shipyard trials (docs/determined.md).

This directory goes first on every trial's PYTHONPATH (shipyard/common/determined_shim.py),
so a Determined user's `import determined` is the package beside this file: Determined's
documented training-side API, written anew on `shipyard.core`. Nothing imports it from here.
"""
