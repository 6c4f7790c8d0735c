"""Rows of a parquet file as plain Python values, for every reader of a user's table (training logs, training data)."""
from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import BadInput


def parquet_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number from 1, the row): an unreadable file is bad input naming it, never a traceback."""
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except ImportError as e:
        raise BadInput(path, f"reading parquet needs pyarrow (pip install pyarrow): {e}") from None
    except Exception as e:  # a corrupt file: pyarrow raises its own error types
        raise BadInput(path, f"not a readable parquet file ({type(e).__name__}: {e})") from None
    for no, rec in enumerate(frame.to_dict("records"), start=1):
        yield no, {k: plain(v) for k, v in rec.items()}


def plain(v: Any) -> Any:
    """numpy scalars and arrays, pandas NA -> plain Python values."""
    if hasattr(v, "tolist"):
        v = v.tolist()
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, float) and math.isnan(v):
        return None
    return v
