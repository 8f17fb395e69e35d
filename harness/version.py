"""zlh's version, written once: setup.cfg reads it, and every JSON document zlh writes
carries it as `zlh_version`."""
__version__ = "0.1.0"
