"""What an install holds: each package imports on its own, the type-hint marker ships with
every package, the `test` extra leaves the compiler under test alone, and records print
short."""
from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

import pytest

from harness.measure.measurement import Measurement
from harness.store.results import Row

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "adapters", "backends")


def _setup() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    return config


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_imports_alone(package):
    done = subprocess.run([sys.executable, "-c", f"import {package}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("package", PACKAGES)
def test_py_typed_ships_with_every_package(package):
    assert (ROOT / package / "py.typed").is_file()
    data = _setup()["options.package_data"]
    assert "py.typed" in data.get(package, ""), f"{package}: py.typed is not package data"


def test_the_test_extra_does_not_pull_triton_and_ci_asks_for_it():
    extras = _setup()["options.extras_require"]
    test = [line.strip() for line in extras["test"].splitlines() if line.strip()]
    assert not any(line.split("[")[0].split("<")[0].split(">")[0].split("=")[0].strip()
                   == "triton" for line in test), test
    assert "triton" in extras["triton"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "'.[test,triton,ray,browser]'" in ci


def test_the_progress_library_is_a_requirement():
    requires = _setup()["options"]["install_requires"]
    assert "tqdm" in requires


def test_records_holding_raw_samples_print_short():
    samples = tuple(0.001 * (1 + i % 7) for i in range(5000))
    m = Measurement(samples, "host", undersampled=True)
    text = repr(m)
    assert len(text) < 200 and "n=5000" in text and "median_ms=" in text
    assert "timer='host'" in text and "undersampled=True" in text
    row = Row(op="add", dtype="float32", shape=[4096], shape_detail="4096", status="SUCCESS",
              torch=m, gems=m)
    assert len(repr(row)) < 500 and "add" in repr(row) and "n=5000" in repr(row)
