"""What the compiler did: autotune record/replay, IR capture and fingerprint, and the
private compile cache each run uses."""
