"""What the compiler did: autotune record/replay, IR capture and fingerprint, and the
private compile cache each run uses."""

__all__: list[str] = []      # its modules are imported by name; the package adds nothing
