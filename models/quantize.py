"""Derive registered quant files from a source GGUF with llama.cpp's own quantiser, optionally with an imatrix.

Derived files are cached outside git (keyed by the source's sha256 and the recipe), their
sha256 recorded, and their quant type read back from the file before use: a K-quant request
can silently fall back to other tensor types (SmolLM2's 576-wide tensors do), so the name you
asked for is not evidence of what you got.

Importance matrix (docs/motivating-experiment.md, section 1: a quantiser without one cost the base about 0.2
points): the file written by llama.cpp's `llama-imatrix` (GGUF, or the legacy .dat) is read
here, normalised exactly as `llama-quantize` does, and handed to `llama_model_quantize` through
`llama_model_quantize_params.imatrix` (a NULL-terminated array of {name, data, size}, exposed
by llama-cpp-python 0.3.36). The quantiser also writes `quantize.imatrix.*` into the output's
metadata, which is read back to prove the matrix was used.
"""
from __future__ import annotations

import ctypes
import json
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.atomic import replacing, write_text
from core.errors import BadInput, CheckFailed

from .cache import cache_dir
from .files import GGUFInfo, gguf_info, sha256_file
from .quiet import c_stderr_to

SOURCE = "source"  # a registered quant named "source" means: the source file as it is


@dataclass(frozen=True)
class QuantFile:
    quant: str
    info: GGUFInfo
    recipe: dict

    def to_dict(self) -> dict:
        return {"quant": self.quant, "recipe": self.recipe, **self.info.to_dict()}


@dataclass(frozen=True)
class Imatrix:
    """Per-tensor importance (mean squared activation per input column), as llama-quantize feeds it."""

    path: str
    sha256: str
    entries: dict[str, np.ndarray]
    chunks: int
    datasets: tuple[str, ...]

    def record(self) -> dict:
        return {"file": Path(self.path).name, "sha256": self.sha256, "entries": len(self.entries),
                "chunks": self.chunks, "datasets": list(self.datasets)}


def _ftype(quant: str) -> int:
    import llama_cpp

    attr = f"LLAMA_FTYPE_MOSTLY_{quant}"
    if not hasattr(llama_cpp, attr):
        raise BadInput("prereg.toml", f"unknown quant {quant!r} (llama.cpp has no {attr})", field="quants")
    return int(getattr(llama_cpp, attr))


def quantize(source: Path, quant: str, *, threads: int = 1, out_dir: Path | None = None,
             imatrix: Path | None = None) -> QuantFile:
    """Return the `quant` version of `source`, deriving and caching it on first use."""
    source = Path(source)
    src_sha = sha256_file(source)
    if quant == SOURCE:
        return QuantFile(quant, gguf_info(source), {"quantizer": "none", "source_sha256": src_sha})
    im = load_imatrix(Path(imatrix), source) if imatrix else None
    recipe = {
        "quantizer": "llama.cpp llama_model_quantize (llama-cpp-python)",
        "llama_cpp_python": _llama_version(),
        "source_sha256": src_sha,
        "ftype": f"MOSTLY_{quant}",
        "allow_requantize": True,
        "imatrix": im.record() if im else None,
        "nthread": threads,
    }
    out_dir = Path(out_dir) if out_dir else cache_dir() / "quants" / src_sha[:16]
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / (f"{source.stem}.{quant}" + (f".imatrix-{im.sha256[:12]}" if im else "") + ".gguf")
    meta = out.with_suffix(".json")
    if not (out.exists() and meta.exists() and json.loads(meta.read_text()).get("recipe") == recipe):
        _run_quantize(source, out, quant, threads, im)
        write_text(meta, json.dumps({"recipe": recipe}, indent=1))
    info = gguf_info(out)
    if info.file_type != f"MOSTLY_{quant}":
        raise CheckFailed(f"{out}: asked llama.cpp for {quant}, the file says {info.file_type}")
    if im and info.imatrix_entries != len(im.entries):
        raise CheckFailed(f"{out}: quantised with {im.path}, but the file does not record its "
                          f"{len(im.entries)} entries")
    return QuantFile(quant, info, recipe)


def _llama_version() -> str:
    import llama_cpp

    return llama_cpp.__version__


def load_imatrix(path: Path, model: Path) -> Imatrix:
    """Read an importance matrix (GGUF or legacy .dat) and check every entry fits a tensor of `model`."""
    import gguf

    if not path.is_file():
        raise BadInput(path, "importance matrix file not found", field="imatrix")
    try:
        reader = gguf.GGUFReader(str(path), "r")
    except Exception:
        entries, chunks, datasets = _read_legacy(path)
    else:
        entries, chunks, datasets = _read_gguf(reader, path)
    if not entries:
        raise BadInput(path, "importance matrix has no entries", field="imatrix")
    columns = {t.name: int(t.shape[0]) for t in gguf.GGUFReader(str(model), "r").tensors}
    for name, values in entries.items():
        if name not in columns:
            raise BadInput(path, f"entry {name!r} names no tensor of {model.name}", field="imatrix")
        if len(values) % columns[name]:
            raise BadInput(path, f"entry {name!r} has {len(values)} values; the tensor has {columns[name]} columns",
                           field="imatrix")
        if not np.isfinite(values).all():
            raise BadInput(path, f"entry {name!r} has non-finite values", field="imatrix")
    return Imatrix(str(path), sha256_file(path), entries, chunks, datasets)


def _read_gguf(reader, path: Path) -> tuple[dict[str, np.ndarray], int, tuple[str, ...]]:
    """llama-imatrix's GGUF: `<tensor>.in_sum2` and `<tensor>.counts` per tensor; value = sum / count per expert."""
    def field(key):
        f = reader.fields.get(key)
        return f.contents() if f is not None else None

    if field("imatrix.chunk_count") is None:
        raise BadInput(path, "a GGUF without imatrix.* metadata is not an importance matrix", field="imatrix")
    tensors = {t.name: np.asarray(t.data, dtype=np.float32).reshape(-1) for t in reader.tensors}
    entries = {}
    for name in sorted(n[: -len(".in_sum2")] for n in tensors if n.endswith(".in_sum2")):
        sums, counts = tensors[name + ".in_sum2"], tensors.get(name + ".counts")
        if counts is None or len(sums) % len(counts):
            raise BadInput(path, f"entry {name!r} has no matching counts tensor", field="imatrix")
        per = sums.reshape(len(counts), -1)
        entries[name] = np.where(counts[:, None] > 0, per / np.maximum(counts[:, None], 1e-30), 1.0) \
            .astype(np.float32).reshape(-1)
    datasets = field("imatrix.datasets") or []
    return entries, int(field("imatrix.chunk_count")), tuple(datasets if isinstance(datasets, list) else [datasets])


def _read_legacy(path: Path) -> tuple[dict[str, np.ndarray], int, tuple[str, ...]]:
    """The legacy .dat: n, then per entry (name, ncall, nval, float[nval]); then optional chunks and dataset."""
    data = path.read_bytes()
    pos = 0

    def take(fmt: str):
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(data):
            raise BadInput(path, "neither a GGUF nor a complete legacy .dat importance matrix", field="imatrix")
        value = struct.unpack_from(fmt, data, pos)
        pos += size
        return value

    (n,) = take("<i")
    if not 0 < n < 1_000_000:
        raise BadInput(path, "neither a GGUF nor a legacy .dat importance matrix", field="imatrix")
    entries = {}
    for _ in range(n):
        (length,) = take("<i")
        name = take(f"<{length}s")[0].decode("utf-8", "replace")
        ncall, nval = take("<ii")
        values = np.array(take(f"<{nval}f"), dtype=np.float32)
        entries[name] = values / ncall if ncall > 0 else values
    chunks, datasets = 0, ()
    if pos + 4 <= len(data):
        (chunks,) = take("<i")
        if pos + 4 <= len(data):
            (length,) = take("<i")
            datasets = (take(f"<{length}s")[0].decode("utf-8", "replace"),)
    return entries, chunks, datasets


def _run_quantize(source: Path, out: Path, quant: str, threads: int, im: Imatrix | None) -> None:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = _ftype(quant)
    params.allow_requantize = True
    params.nthread = threads
    keep = []  # ctypes buffers must outlive the call
    if im:
        names = sorted(im.entries)
        rows = (llama_cpp.llama_model_imatrix_data * (len(names) + 1))()  # zeroed last row terminates
        for i, name in enumerate(names):
            values = np.ascontiguousarray(im.entries[name], dtype=np.float32)
            keep += [values, name.encode()]
            rows[i].name, rows[i].size = keep[-1], len(values)
            rows[i].data = values.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        kv = (llama_cpp.llama_model_kv_override * 5)()  # key[0] == 0 terminates
        _kv_str(kv[0], "quantize.imatrix.file", Path(im.path).name[:127])
        _kv_int(kv[1], "quantize.imatrix.entries_count", len(names))
        _kv_int(kv[2], "quantize.imatrix.chunks_count", im.chunks)
        if im.datasets:
            _kv_str(kv[3], "quantize.imatrix.dataset", im.datasets[0][:127])
        keep += [rows, kv]
        params.imatrix = ctypes.cast(rows, ctypes.POINTER(llama_cpp.llama_model_imatrix_data))
        params.kv_overrides = ctypes.cast(kv, ctypes.POINTER(llama_cpp.llama_model_kv_override))
    with replacing(out) as tmp, c_stderr_to(out.with_suffix(".log")):
        rc = llama_cpp.llama_model_quantize(str(source).encode(), str(tmp).encode(), params)
        if rc != 0 or not tmp.exists():
            raise CheckFailed(f"llama_model_quantize {source} -> {quant} failed with code {rc} "
                              f"(log: {out.with_suffix('.log')})")


def _kv_str(kv, key: str, value: str) -> None:
    import llama_cpp

    kv.key, kv.tag = key.encode(), llama_cpp.LLAMA_KV_OVERRIDE_TYPE_STR
    kv.value.val_str = value.encode()


def _kv_int(kv, key: str, value: int) -> None:
    import llama_cpp

    kv.key, kv.tag = key.encode(), llama_cpp.LLAMA_KV_OVERRIDE_TYPE_INT
    kv.value.val_i64 = value
