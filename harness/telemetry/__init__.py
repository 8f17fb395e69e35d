"""Device telemetry around measurements: the continuous `telemetry.tsv` (recorder), its file
format and summaries (tsv), the per-case throttle verdict (throttle), the clocks-over-time
chart of the HTML report (chart), and the per-kernel split of an op's device time from a
profiler pass (kernel_split). Vendor knowledge stays in `backends/`."""
from .recorder import TelemetryWatcher, snapshot, watch, watch_for

__all__ = ["TelemetryWatcher", "snapshot", "watch", "watch_for"]
