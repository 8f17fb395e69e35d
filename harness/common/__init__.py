"""Shared plumbing: errors and exit codes, marker lines, atomic and JSON-safe file writes,
versioned JSON (schema.py), the `zlh` logger (log.py), colour (style.py) and plugin entry
points (plugins.py)."""

__all__: list[str] = []      # its modules are imported by name; the package adds nothing
