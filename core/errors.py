"""The two ways a run stops on purpose: bad input (exit 2) and a failed gate or check (exit 1).

Every stage raises one of these instead of letting a traceback reach the user; the CLIs turn
them into a one-line message and the documented exit code.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable


class BadInput(Exception):
    """Input that cannot be used as given. Names the file, line and field at fault."""

    exit_code = 2

    def __init__(self, file: str | Path, message: str, *, line: int | None = None, field: str | None = None):
        self.file, self.line, self.field, self.message = str(file), line, field, message
        where = self.file + (f":{line}" if line is not None else "")
        what = (f" field '{field}':" if field.isprintable() else f" field {field!r}:") if field else ""
        super().__init__(f"{where}:{what} {message}")


class BadRecord(BadInput):
    """A raw record (answers, blinding keys, judgments) that breaks its contract: a field missing or of the wrong
    type. Bad input for every reader, judge verify included: the file cannot be read, so nothing is compared."""


class CheckFailed(Exception):
    """A registered gate or check said no (settings differ, audit gate failed, verify mismatch)."""

    exit_code = 1


class Refused(Exception):
    """A server refused a request in a way every later call would repeat (a validation error against a
    registered setting): the run stops at the first such reply, naming the model, the setting and the
    server's message, instead of paying for each retry of each call. Exit 2: the registration is wrong
    for this server."""

    exit_code = 2


def run_cli(body: Callable[[], int | None]) -> int:
    """Run a CLI body and turn every expected failure into its message and documented exit code.

    Shared by `python -m arms`, `python -m judge` and `python -m audit`, so all three say the same
    thing the same way: bad input 2, a failed gate or check 1, never a traceback for either.
    """
    try:
        return body() or 0
    except (BadInput, Refused) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except CheckFailed as e:
        print(f"check failed: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # disk full, read-only folder, missing permissions: the environment, not the input
        print(f"error: cannot write or read {e.filename or 'a results file'}: {e.strerror or e}. Finished records "
              "are kept; fix the cause and re-run to resume.", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished records are kept; re-run to resume", file=sys.stderr)
        return 130
