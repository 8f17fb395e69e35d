"""The shape of the code: concerns in their folders, vendor and library names where they
belong, modules and functions of a readable size."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from conftest import ROOT

# FlagGems knowledge lives in adapters/flaggems; these names must not appear elsewhere.
BANNED = re.compile(r"flag_gems|LibTuner|LibEntry|FLAGGEMS_|GEMS_VENDOR")
# ... except in the text of the CLI's --flaggems-dir / --vllm options (and of the bench option
# table they come from).
CLI_OPTION_TEXT = re.compile(r"--flaggems-dir|envvar=\"FLAGGEMS_(VLLM_)?DIR\"|"
                             r"Env: FLAGGEMS_(VLLM_)?DIR|flag_gems is importable")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
EXPLAINED = "(long:"        # a docstring that says why a module or function must be long


def sources(*folders):
    for folder in folders:
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_no_library_names_outside_the_adapter():
    found = []
    for path in sources("harness", "backends"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if BANNED.search(line):
                in_cli = (path.parent.name == "cli" or path.name == "option_table.py") \
                    and CLI_OPTION_TEXT.search(line)
                if not in_cli:
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_every_harness_package_says_its_job():
    for package in sorted((ROOT / "harness").rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(package.read_text()))
        assert doc and doc.strip(), f"{package.relative_to(ROOT)} has no docstring"


@pytest.mark.parametrize("path", list(sources("harness", "adapters", "backends")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_and_functions_stay_readable(path):
    text = path.read_text()
    tree = ast.parse(text)
    module_doc = ast.get_docstring(tree) or ""
    lines = len(text.splitlines())
    assert lines <= MAX_MODULE_LINES or EXPLAINED in module_doc, \
        f"{path.relative_to(ROOT)}: {lines} lines"
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            doc = ast.get_docstring(node) or ""
            assert length <= MAX_FUNCTION_LINES or EXPLAINED in doc, \
                f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length} lines"
