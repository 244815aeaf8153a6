"""test_surface.py — liboffcore.so exports exactly the functions include/offcore.h declares
(the version script hides every other symbol) and reports the header's versions.
"""
import os
import re
import shutil
import subprocess

import pytest

import offcore
from offcore import _lib

HEADER = os.path.join(os.path.dirname(__file__), "..", "..", "include", "offcore.h")


def declared():
    text = open(HEADER).read()
    return set(re.findall(r"^OFFCORE_EXPORT [^;]*?\b(offcore_\w+)\(", text, re.M | re.S))


def test_versions_match_the_header():
    text = open(HEADER).read()
    assert offcore.version() == re.search(r'#define OFFCORE_VERSION\s+"([^"]+)"', text).group(1)
    api = int(re.search(r"#define OFFCORE_API_VERSION\s+(\d+)", text).group(1))
    assert _lib.lib.offcore_api_version() == api == _lib.API_VERSION


def test_exports_are_the_headers_functions():
    names = declared()
    assert len(names) >= 25
    for n in names:
        assert hasattr(_lib.lib, n), n
    if not shutil.which("nm"):
        pytest.skip("nm not installed: the export list is not checked")
    out = subprocess.run(["nm", "-D", "--defined-only", _lib.lib._name], capture_output=True,
                         text=True, check=True).stdout
    exported = {line.split()[2].split("@")[0] for line in out.splitlines()
                if len(line.split()) == 3 and line.split()[1] in "TDBR"}
    assert exported - {"OFFCORE_1"} == names
