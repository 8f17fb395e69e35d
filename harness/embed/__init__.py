"""Embedding zlh in other Python tools: time a callable (`timing.measure`), bench your own
cases into ordinary run directories and compare runs (`runs`), and a quick within-process
comparison of two callables (`quick`). `harness/__init__.py` exports them."""

__all__: list[str] = []      # its modules are imported by name; the package adds nothing
