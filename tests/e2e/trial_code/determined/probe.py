"""Which `determined` a trial imports: Shipyard's shim, Determined's own, or none."""

try:
    import determined
except ImportError:
    print("determined: none", flush=True)
else:
    shim = getattr(determined, "__shipyard_shim__", False)
    print(f"determined: {'shim' if shim else 'real'} {determined.__file__}", flush=True)
