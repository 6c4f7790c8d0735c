"""Write a whole file so that a reader sees the old content or the new, never half of either.

A kill between the write and the rename leaves only a stray temporary file beside the target.
"""
from __future__ import annotations

import os
from pathlib import Path


def write_text(path: Path, text: str) -> Path:
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path
