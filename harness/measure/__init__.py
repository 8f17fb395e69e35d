"""The timing core: timers, the per-case graph fallback, the stopping rule, Measurement.

Knows the backend interface only: never an adapter, a vendor or a run directory."""
