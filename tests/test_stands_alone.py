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
    files = subprocess.run(["git", "ls-files", "*.py", "*.md", "*.toml", "*.yml", "*.j2"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    found = [f"{name}:{n}: {line.strip()}" for name in files
             for n, line in enumerate((ROOT / name).read_text(errors="replace").splitlines(), 1)
             if CITATION.search(line)]
    assert not found, "\n".join(found)


def test_the_scan_finds_what_it_is_for():
    """The cited forms are built here from their words and numbers, so this file cites nothing and is scanned too."""
    issue, session = "iss" + "ue", "Sess" + "ion"
    for line in (f"## Arm runner ({issue} {3})", f"{issue}s {5} and {11}", f"{session} {3}, busy machine",
                 f"see {issue} #{12}"):
        assert CITATION.search(line), line
    assert not CITATION.search(f"a {session.lower()}s table; t{issue} {3}")
