"""Send llama.cpp's C-level stderr chatter to a log file instead of the user's terminal."""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def c_stderr_to(log: Path) -> Iterator[None]:
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    with open(log, "ab") as f:
        os.dup2(f.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
