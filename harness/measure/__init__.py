"""The timing core: timers, the per-case graph fallback, the stopping rule, Measurement, and
the statistics: sample_stats.py (what one sample set says: the error of its median, suspect
samples), stats.py (comparing two sides: intervals, tests, Holm), student_t.py.

Knows the backend interface only: never an adapter, a vendor or a run directory."""

__all__: list[str] = []      # its modules are imported by name; the package adds nothing
