"""Telemetry over the run as inline SVG: SM clock, temperature and power per device, one
panel each on a shared time axis, with the spans where the device reported a slowdown
reason (thermal, power brake, ...) shaded and named in their tooltip."""
from __future__ import annotations

from html import escape

PANELS = (("sm_clock_mhz", "SM clock MHz"), ("temp_c", "temperature °C"),
          ("power_w", "power W"))
DEVICE_COLOURS = ("#1565c0", "#ef6c00", "#2e7d32", "#6a1b9a", "#00838f", "#ad1457",
                  "#5d4037", "#455a64")
_W, _H, _LEFT, _GAP = 640, 90, 56, 26


def spans(points: list[dict]) -> list[tuple[float, float, str, str]]:
    """(start, end, device, reasons) of runs of consecutive samples with a slowdown."""
    out = []
    by_device: dict[str, list[dict]] = {}
    for p in points:
        by_device.setdefault(str(p["device"]), []).append(p)
    for device, pts in by_device.items():
        pts.sort(key=lambda p: p["time"])
        start, reasons = None, set()
        for i, p in enumerate(pts):
            if p.get("slow"):
                start = p["time"] if start is None else start
                reasons.update(p["slow"])
            if start is not None and (not p.get("slow") or i == len(pts) - 1):
                out.append((start, p["time"], device, ",".join(sorted(reasons))))
                start, reasons = None, set()
    return out


def chart(points: list[dict]) -> str:
    """'' without points."""
    points = [p for p in points if isinstance(p.get("time"), (int, float))]
    if not points:
        return ""
    t0 = min(p["time"] for p in points)
    t1 = max(p["time"] for p in points)
    span_s = max(t1 - t0, 1e-3)
    devices = sorted({str(p["device"]) for p in points})
    height = len(PANELS) * (_H + _GAP) + 20

    def x(t):
        return _LEFT + (t - t0) / span_s * _W

    parts = [f'<svg class="chart" width="{_LEFT + _W + 120}" height="{height}" role="img" '
             f'aria-label="telemetry over the run">']
    for k, (key, title) in enumerate(PANELS):
        top = 14 + k * (_H + _GAP)
        values = [p[key] for p in points if isinstance(p.get(key), (int, float))]
        low, high = (min(values), max(values)) if values else (0.0, 1.0)
        high = high if high > low else low + 1.0
        parts.append(f'<text x="{_LEFT}" y="{top - 3}">{title}</text>'
                     f'<rect x="{_LEFT}" y="{top}" width="{_W}" height="{_H}" fill="none" '
                     f'stroke="#ccc"/><text x="{_LEFT - 4}" y="{top + 10}" text-anchor="end">'
                     f'{high:.0f}</text><text x="{_LEFT - 4}" y="{top + _H}" '
                     f'text-anchor="end">{low:.0f}</text>')
        for start, end, device, reasons in spans(points):
            parts.append(f'<rect class="throttle" x="{x(start):.1f}" y="{top}" '
                         f'width="{max(x(end) - x(start), 2):.1f}" height="{_H}" '
                         f'fill="#c62828" fill-opacity=".18"><title>device {escape(device)}: '
                         f'{escape(reasons)}</title></rect>')
        for n, device in enumerate(devices):
            pts = [p for p in points if str(p["device"]) == device
                   and isinstance(p.get(key), (int, float))]
            coords = " ".join(
                f"{x(p['time']):.1f},{top + _H - (p[key] - low) / (high - low) * _H:.1f}"
                for p in sorted(pts, key=lambda p: p["time"]))
            if coords:
                parts.append(f'<polyline fill="none" stroke="{DEVICE_COLOURS[n % 8]}" '
                             f'stroke-width="1.2" points="{coords}"/>')
    for n, device in enumerate(devices):
        parts.append(f'<text x="{_LEFT + _W + 8}" y="{24 + n * 14}" '
                     f'fill="{DEVICE_COLOURS[n % 8]}">device {escape(device)}</text>')
    parts.append(f'<text x="{_LEFT + _W}" y="{height - 4}" text-anchor="end">{span_s:.0f} s'
                 f'</text></svg>')
    return "".join(parts)
