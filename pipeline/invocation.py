"""What each `judge run` did, when and where: one record appended to the results folder's invocations.jsonl, a log
outside the anchor (run.json holds nothing that changes from one invocation to the next)."""
from __future__ import annotations

import datetime as dt
import platform
import sys
from pathlib import Path
from typing import Any

from core.jsonl import Appender
from judge.results.files import INVOCATIONS
from models.backends.registry import backend_info
from models.cache import CallCache
from registration.prereg import Experiment


def versions() -> dict[str, str]:
    import jinja2
    import numpy
    import scipy

    out = {"python": sys.version.split()[0], "platform": platform.platform(), "numpy": numpy.__version__,
           "scipy": scipy.__version__, "jinja2": jinja2.__version__}
    try:
        import llama_cpp

        out["llama_cpp_python"] = llama_cpp.__version__
    except ImportError:
        pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        out["blindeval"] = version("blindeval")
    except PackageNotFoundError:
        out["blindeval"] = "source"
    return out


def local_machine(exp: Experiment) -> dict[str, Any]:
    """What decided llama.cpp's CPU extra buffers on this machine (only when a model runs in process)."""
    if not any(backend_info(m.backend).local for m in exp.models.values()):
        return {}
    from models.llama_loader import extra_buffers, gpu_offload, system_info

    return {"cpu_extra_buffers_decision": extra_buffers(exp.runtime.cpu_extra_buffers).to_dict(),
            "llama_cpp_system_info": system_info(), "llama_cpp_gpu_offload": gpu_offload()}


def log_invocation(run_dir: Path, exp: Experiment, cache: CallCache, quant_paths: dict[str, str],
                   answers: dict[str, Any], judging: dict[str, Any], digest: str | None) -> None:
    """Append this invocation's record: when it finished, on which versions and machine, with which call cache and
    quantised files, what it answered and judged, and the anchor it left."""
    with Appender(Path(run_dir) / INVOCATIONS) as log:
        log.write({"type": "invocation", "finished": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                   "versions": versions(), "call_cache": str(cache.path.resolve()), "machine": local_machine(exp),
                   "quant_paths": quant_paths, "answers": answers, "judging": judging, "anchor": digest})
