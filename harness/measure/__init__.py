"""The timing core: timers, the per-case graph fallback, the stopping rule, Measurement, and
stats.py, every statistic computed from samples (error of a median, suspect samples, A/B).

Knows the backend interface only: never an adapter, a vendor or a run directory."""

__all__: list[str] = []      # its modules are imported by name; the package adds nothing
