"""Rows of a user's table, for every reader of one: a parquet file's as plain Python values (training logs, training
data), a CSV reader's with the line each row starts at (question sets, people's labels)."""
from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import BadInput


def csv_rows(reader: Any, path: Path, refusal: str) -> Iterator[tuple[int, list[str]]]:
    """(the line a row starts at, its cells) of a `csv.reader`, blank rows included: a row the csv module cannot read
    is bad input naming the file and that line, `refusal` saying what it is not."""
    while True:
        line = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise BadInput(path, f"{refusal}: {e}", line=line) from None
        yield line, row


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
