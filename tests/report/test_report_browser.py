"""The page of a synthetic 1,115-op screen root, made once for the module: it stays within
2 MB and carries every op; in a real headless browser (Debian's chromium driven by selenium
through chromium-driver) it loads without console errors in 2 s or less, sorting and filtering
change the rows, an op's detail opens; a screenshot is kept under $ZLH_ARTEFACTS (or the
test's tmp_path) and its path printed.

The browser test is skipped, with the reason, where selenium, chromium or chromedriver is
missing (apt-get install chromium chromium-driver; pip install selenium)."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

import report_roots as R
from harness.report import page
from harness.report.build import build

try:
    from selenium import webdriver
except ImportError:
    webdriver = None
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
needs_selenium = pytest.mark.skipif(webdriver is None,
                                    reason="selenium is not installed (pip install selenium)")
needs_chromium = pytest.mark.skipif(
    not (CHROMIUM and DRIVER),
    reason="no chromium or chromedriver on PATH (apt-get install chromium chromium-driver)")
LOAD_S = 2.0
LIMIT = 2 * 1024 * 1024


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    options = Options()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,1800"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def screen_page(tmp_path_factory):
    base = tmp_path_factory.mktemp("browser")
    root = R.screen_root(base / "screen", 1115)
    target = root / "report.html"
    target.write_text(page.render(build(root)), encoding="utf-8")
    return target


def test_a_1115_op_screen_page_is_under_2_mb(screen_page):
    html = screen_page.read_text(encoding="utf-8")
    size = len(html.encode("utf-8"))
    print(f"page of 1,115 ops: {size / 1024:.0f} KiB")
    assert size <= LIMIT
    blob = html.split('<script type="application/json" id="data">')[1].split("</script>")[0]
    ops = json.loads(blob.replace("<\\/", "</"))["ops"]
    assert len(ops) == 1115 and sum(1 for o in ops if o["D"]["diff"]) >= 300


def _rows(driver):
    return driver.find_elements("css selector", "#ops tbody tr.op")


def _first_ops(driver, n=5):
    return [r.find_element("css selector", "td").text for r in _rows(driver)[:n]]


@needs_selenium
@needs_chromium
def test_the_1115_op_page_in_a_browser(browser, screen_page, tmp_path):
    started = time.monotonic()
    browser.get(screen_page.as_uri())
    loaded = time.monotonic() - started
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    assert loaded <= LOAD_S, f"the page took {loaded:.2f} s to load"
    assert len(_rows(browser)) == 1115
    assert browser.find_element("id", "shown").text == "1115 of 1115 ops"

    before = _first_ops(browser)
    delta_head = browser.find_element("css selector", '#ops th[data-k="d"]')
    delta_head.click()
    ascending = _first_ops(browser)
    assert ascending != before and ascending[0] == "op0002"     # -99.9 %, the lowest
    delta_head.click()
    assert _first_ops(browser)[0] == "op0001"                    # +4.8 million %, the highest

    box = browser.find_element("id", "filter")
    box.send_keys("op011")
    assert {r.find_element("css selector", "td").text for r in _rows(browser)} == {
        f"op011{k}" for k in range(10)}
    box.clear()
    box.send_keys(" ")          # an input event with an (all but) empty filter
    browser.execute_script("document.getElementById('filter').value='';"
                           "document.getElementById('filter').dispatchEvent(new Event('input'))")
    status = browser.find_element("id", "status")
    status.find_element("css selector", 'option[value="IR_CHANGED"]').click()
    shown = [r.find_elements("css selector", "td")[1].text for r in _rows(browser)]
    assert shown and set(shown) == {"IR_CHANGED"} and len(shown) < 1115

    row = next(r for r in _rows(browser) if r.find_element("css selector", "td").text == "op0000")
    row.click()
    detail = browser.find_element("css selector", "#ops tr.detail")
    text = detail.text
    assert "measured kernels whose code changed" in text and "n_regs" in text
    assert "40 → 64" in text and "device time per kernel" in text
    assert detail.find_elements("css selector", "svg rect")               # the forest plot
    assert detail.find_elements("css selector", "table.diff")            # the TTGIR diff
    assert not [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]

    folder = Path(os.environ.get("ZLH_ARTEFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / "report_screen_1115.png"
    browser.save_screenshot(str(shot))
    print(f"page loaded in {loaded:.2f} s; screenshot: {shot}")
    assert shot.stat().st_size > 10_000
