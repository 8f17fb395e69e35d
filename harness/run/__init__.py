"""Running `zlh bench`: the option table (option_table.py) and the options record derived
from it (options.py), the plan (every input checked before device work), the
per-op run, one case, shape files, output digests, the result table and `zlh show`; the
first run.json (run_info.py), other libraries' log lines during a run (library_log.py) and a
planted change for `zlh calibrate` (plant.py)."""

__all__: list[str] = []      # its modules are imported by name; the package adds nothing
