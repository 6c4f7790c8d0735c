"""The two ways a run stops on purpose: bad input (exit 2) and a failed gate or check (exit 1).

Every stage raises one of these instead of letting a traceback reach the user; the CLIs turn
them into a one-line message and the documented exit code.
"""
from __future__ import annotations

from pathlib import Path


class BadInput(Exception):
    """Input that cannot be used as given. Names the file, line and field at fault."""

    exit_code = 2

    def __init__(self, file: str | Path, message: str, *, line: int | None = None, field: str | None = None):
        self.file, self.line, self.field, self.message = str(file), line, field, message
        where = self.file + (f":{line}" if line is not None else "")
        what = f" field '{field}':" if field else ""
        super().__init__(f"{where}:{what} {message}")


class CheckFailed(Exception):
    """A registered gate or check said no (settings differ, audit gate failed, verify mismatch)."""

    exit_code = 1


class NotBuilt(NotImplementedError):
    """A stage that is registered but not implemented yet: it refuses instead of inventing numbers."""

    exit_code = 2
