"""Device telemetry around measurements: the continuous `telemetry.tsv` (recorder), its file
format and summaries (tsv), the per-case throttle verdict (throttle), and the clocks-over-time
chart of the HTML report (chart). Vendor knowledge stays in `backends/`."""
from .recorder import TelemetryWatcher, snapshot, watch, watch_for

__all__ = ["TelemetryWatcher", "snapshot", "watch", "watch_for"]
