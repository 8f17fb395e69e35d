"""Screenshots of `zlh report`'s page of a root a device run left (run where chromium is, not
on the GPU machine: the page needs no device):

    python3 tests/device/report_screenshots.py ROOT OUT [OP ...]

writes OUT/report.html (links relative to OUT), OUT/report_top.png (headline, charts,
telemetry) and OUT/report_<op>.png with the op's detail opened, for each OP (default: the
first IR_CHANGED op, and cumsum when the root has it). Prints what it wrote, and per op the
per-kernel time split's sums beside the measured latency when the run has kernel_split.tsv.
Needs chromium, chromedriver and selenium (apt-get install chromium chromium-driver; pip
install selenium).
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.report import page  # noqa: E402
from harness.report.build import build  # noqa: E402


def _driver(height: int):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    options = Options()
    options.binary_location = shutil.which("chromium") or "chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size=1300,{height}"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "chromedriver"),
                            options=options)


def main(root: str, out: str, ops: list[str]) -> None:
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    report = build(root, target)
    html = target / "report.html"
    html.write_text(page.render(report))
    print(f"{html}: {html.stat().st_size / 1024:.0f} KiB, {len(report.ops)} ops")
    if not ops:
        ops = [e.op for e in report.ops if e.status == "IR_CHANGED"][:1]
        ops += [e.op for e in report.ops if e.op == "cumsum"]
    for e in report.ops:
        if e.op in ops:
            for side, split in e.split.items():
                for case, total, idle, span, latency, beside, gap in split["sums"]:
                    print(f"{e.op} {side} {case}: kernels {total} us, idle {idle} us, span "
                          f"{span} us, measured {latency} us; gap vs {beside} {gap} %")
            for k in e.changed_kernels:
                print(f"{e.op} {k.shape} {k.kernel}: A {k.a} -> B {k.b}")
    driver = _driver(1500)
    try:
        driver.get(html.resolve().as_uri())
        driver.save_screenshot(str(target / "report_top.png"))
        print(target / "report_top.png")
        for op in ops:
            rows = [r for r in driver.find_elements("css selector", "#ops tbody tr.op")
                    if r.find_element("css selector", "td").text == op]
            if not rows:
                print(f"{op}: not in this root")
                continue
            driver.execute_script("arguments[0].click(); arguments[0].scrollIntoView();",
                                  rows[0])
            driver.save_screenshot(str(target / f"report_{op}.png"))
            print(target / f"report_{op}.png")
            driver.execute_script("arguments[0].click();", rows[0])
    finally:
        driver.quit()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
