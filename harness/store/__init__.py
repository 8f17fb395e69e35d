"""The run directory: the only code that reads or writes run.json, results and shapes.yaml;
the caliber and the identity (versions, recorded environment) a run carries."""

__all__: list[str] = []      # its modules are imported by name; the package adds nothing
