"""The repository stands alone: its code and documents cite no issue tracker entry and no working session, which a
reader of the repository cannot open."""
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CITATION = re.compile(r"\b[Ii]ssues? #?\d+|\b[Ss]ession \d+\b")

pytestmark = pytest.mark.unit


def test_no_file_cites_an_issue_or_a_session():
    # this file is left out: its own check below plants the cited forms
    files = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.toml", "*.yml", "*.j2"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    files = [name for name in files if not name.startswith("tests/data/") and name != "tests/test_stands_alone.py"]
    found = [f"{name}:{n}: {line.strip()}" for name in files
             for n, line in enumerate((ROOT / name).read_text(errors="replace").splitlines(), 1)
             if CITATION.search(line)]
    assert not found, "\n".join(found)


def test_the_scan_finds_what_it_is_for():
    for line in ("## Arm runner (issue 3)", "issues 5 and 11", "Session 3, busy machine", "see issue #12"):
        assert CITATION.search(line), line
    assert not CITATION.search("a sessions table; tissue 3")
