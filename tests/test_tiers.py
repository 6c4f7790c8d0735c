"""Every test belongs to exactly one tier; the suite refuses to collect a test without one, or with two."""
from __future__ import annotations

import pytest

from conftest import ROOT

pytestmark = pytest.mark.unit

pytest_plugins = ["pytester"]


@pytest.mark.parametrize("marks, ok", [("@pytest.mark.unit", True), ("", False),
                                       ("@pytest.mark.unit\n@pytest.mark.slow", False)],
                         ids=["one", "none", "two"])
def test_a_test_needs_exactly_one_tier(pytester, marks, ok):
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text())
    pytester.makepyfile(test_x=f"import pytest\n\n\n{marks}\ndef test_x():\n    assert True\n")
    r = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    if ok:
        r.assert_outcomes(passed=1)
    else:
        assert r.ret == pytest.ExitCode.USAGE_ERROR
        assert "each test needs exactly one tier marker" in "\n".join(r.errlines + r.outlines)
        assert "test_x.py::test_x" in "\n".join(r.errlines + r.outlines)
