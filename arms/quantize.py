"""Derive registered quant files from a source GGUF with llama.cpp's own quantiser.

Derived files are cached outside git (keyed by the source's sha256 and the recipe), their
sha256 recorded, and their quant type read back from the file before use: a K-quant request
can silently fall back to other tensor types (SmolLM2's 576-wide tensors do), so the name you
asked for is not evidence of what you got.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .cache import cache_dir
from .errors import BadInput, CheckFailed
from .models import GGUFInfo, gguf_info, sha256_file
from .quiet import c_stderr_to

SOURCE = "source"  # a registered quant named "source" means: the source file as it is


@dataclass(frozen=True)
class QuantFile:
    quant: str
    info: GGUFInfo
    recipe: dict

    def to_dict(self) -> dict:
        return {"quant": self.quant, "recipe": self.recipe, **self.info.to_dict()}


def _ftype(quant: str) -> int:
    import llama_cpp

    attr = f"LLAMA_FTYPE_MOSTLY_{quant}"
    if not hasattr(llama_cpp, attr):
        raise BadInput("prereg.toml", f"unknown quant {quant!r} (llama.cpp has no {attr})", field="quants")
    return int(getattr(llama_cpp, attr))


def quantize(source: Path, quant: str, *, threads: int = 1, out_dir: Path | None = None) -> QuantFile:
    """Return the `quant` version of `source`, deriving and caching it on first use."""
    source = Path(source)
    src_sha = sha256_file(source)
    if quant == SOURCE:
        return QuantFile(quant, gguf_info(source), {"quantizer": "none", "source_sha256": src_sha})
    recipe = {
        "quantizer": "llama.cpp llama_model_quantize (llama-cpp-python)",
        "llama_cpp_python": _llama_version(),
        "source_sha256": src_sha,
        "ftype": f"MOSTLY_{quant}",
        "allow_requantize": True,
        "imatrix": None,
        "nthread": threads,
    }
    out_dir = Path(out_dir) if out_dir else cache_dir() / "quants" / src_sha[:16]
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{source.stem}.{quant}.gguf"
    meta = out.with_suffix(".json")
    if not (out.exists() and meta.exists() and json.loads(meta.read_text()).get("recipe") == recipe):
        _run_quantize(source, out, quant, threads)
        meta.write_text(json.dumps({"recipe": recipe}, indent=1))
    info = gguf_info(out)
    if info.file_type != f"MOSTLY_{quant}":
        raise CheckFailed(f"{out}: asked llama.cpp for {quant}, the file says {info.file_type}")
    return QuantFile(quant, info, recipe)


def _llama_version() -> str:
    import llama_cpp

    return llama_cpp.__version__


def _run_quantize(source: Path, out: Path, quant: str, threads: int) -> None:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = _ftype(quant)
    params.allow_requantize = True
    params.nthread = threads
    tmp = out.with_name(out.name + ".part")
    with c_stderr_to(out.with_suffix(".log")):
        rc = llama_cpp.llama_model_quantize(str(source).encode(), str(tmp).encode(), params)
    if rc != 0 or not tmp.exists():
        tmp.unlink(missing_ok=True)
        raise CheckFailed(f"llama_model_quantize {source} -> {quant} failed with code {rc}")
    os.replace(tmp, out)  # atomic: a kill never leaves a half-written file under the final name
