"""User functions named on the command line ("package.module:function" or "path/to/file.py:function"),
and the default parse check of `audit rewards`.

A file is run from its source, never from bytecode beside it (arms.glue.import_source); a file inside a
sealed experiment folder only from its sealed bytes, as glue is."""
from __future__ import annotations

import hashlib
import importlib
import json
import re
from pathlib import Path
from typing import Callable

from arms.glue import import_source
from core.errors import BadInput
from registration.seal import sealed_folder_of

FENCE_RE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.S)


def parse_json(text: str) -> object:
    """json.loads after stripping one ``` fence, as in docs/reward-telemetry.md; no repair
    (a raw newline in a string fails)."""
    m = FENCE_RE.match(text)
    return json.loads(m.group(1) if m else text)


def load_function(spec: str, option: str) -> Callable:
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise BadInput(option, f"expected module:function or file.py:function, got {spec!r}")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.exists():
                raise BadInput(option, f"{path} not found")
            name = f"_audit_hook_{path.stem}_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}"
            module = import_source(path.resolve(), name, sealed_folder_of(path))
        else:
            module = importlib.import_module(module_name)
    except BadInput:
        raise
    except Exception as e:  # the user's module failed to import: say which and why, no traceback
        raise BadInput(option, f"cannot import {module_name!r}: {type(e).__name__}: {e}") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise BadInput(option, f"{module_name!r} has no function {attr!r}")
    return fn
