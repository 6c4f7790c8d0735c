"""Write a whole file so that a reader sees the old content or the new, never half of either.

A kill between the write and the rename leaves only a stray temporary file beside the target.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` for a writer that wants a file name (llama.cpp, gguf); it replaces
    `path` when the block ends normally and is removed when it raises."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.part")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> Path:
    path = Path(path)
    with replacing(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    return path
