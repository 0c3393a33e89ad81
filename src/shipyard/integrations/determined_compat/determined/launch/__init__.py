"""Determined's launchers (``python3 -m determined.launch.<name> ...``) on Shipyard's."""
