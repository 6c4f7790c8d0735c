"""The demo's "trained" arm: the embedded base model plus a LoRA adapter generated at run time.

THIS ADAPTER IS NOT TRAINED. It is a seeded random low-rank perturbation of the base model's
attention weights. It exists so that the demo experiment's "trained" arm is a real model that
is genuinely different from the base (different weights, different greedy outputs) and goes
through exactly the code path a real fine-tune would (a GGUF LoRA adapter loaded by llama.cpp's
`llama_adapter_lora_init` on top of every registered quant of the base). It is a stand-in:

* the project may not commit model weights or download any, so a real fine-tuned adapter is not
  available; the adapter is therefore generated deterministically from (base file, rank, seed,
  strength) by this module, byte-identical on every run;
* any difference the demo's judge finds between the arms is a difference between the base and a
  randomly perturbed base. It says nothing about whether training helps; expect the perturbed arm
  to be somewhat worse, not better. Do not report demo results as a fine-tuning result.

Format (what llama.cpp's adapter loader checks): general.architecture equal to the base's,
general.type = "adapter", adapter.type = "lora", adapter.lora.alpha; for every layer i and
target t, tensors `blk.{i}.{t}.weight.lora_a` with numpy shape (rank, n_in) and
`blk.{i}.{t}.weight.lora_b` with numpy shape (n_out, rank), F32. In ggml's dimension order that
is a = [n_in, rank], b = [rank, n_out] against the base weight's [n_in, n_out], the convention of
llama.cpp's convert_lora_to_gguf.py. llama.cpp adds lora_scale * alpha / rank * B @ A @ x to
W @ x.

Loading: call check_adapter(model, adapter) before handing an adapter to llama_cpp.Llama.
llama-cpp-python 0.3.36 does not raise for a corrupt or mismatched adapter; it runs with a
NULL adapter and the first generation segfaults (details in check_adapter).

Strength: each target's delta dW = alpha / rank * B @ A is scaled so that
||dW||_F = strength * ||W||_F, where W is the base weight (dequantized from the base GGUF). So at
lora_scale 1 the perturbation's size does not depend on alpha or rank, only on `strength`.
Measured on SmolLM2-135M-Instruct Q4_1 (q and v projections of all 30 layers, rank 8, seed 0,
greedy, 10 chat prompts, 40 tokens):
  0.03, 0.05  9/10 outputs differ, but often only after the first sentence;
  0.1         10/10 differ from the first few tokens; still fluent English sentences, somewhat
              more repetitive than the base (the default);
  0.15, 0.2   10/10 differ; loops ("A computer is a computer."), echoes of the prompt;
  0.35, 0.7   incoherent fragments.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from core.atomic import replacing
from core.errors import BadInput

from .cache import cache_dir
from .files import sha256_file

TARGETS = ("attn_q", "attn_v")
DEFAULT_STRENGTH = 0.1
RECIPE_KEY = "blindeval.demo_lora.recipe"
FORMAT_VERSION = 1


def demo_adapter(base_gguf: Path, out: Path | None = None, *, rank: int = 8, alpha: float = 16.0, seed: int = 0,
                 strength: float = DEFAULT_STRENGTH) -> Path:
    """Path of the demo's seeded random LoRA adapter for `base_gguf`, writing it on first use.

    Cached (by default under cache_dir()/adapters, keyed by the base file's sha256, rank, seed and
    strength); a cached file is reused only if the recipe recorded inside it matches this call.
    Written atomically (core/atomic.py), so a kill never leaves a half-written adapter.
    """
    base_gguf = Path(base_gguf)
    if not base_gguf.exists():
        raise BadInput(base_gguf, "base model file not found")
    if rank < 1:
        raise BadInput(base_gguf, f"LoRA rank must be >= 1, got {rank}")
    if not (strength > 0 and np.isfinite(strength)):
        raise BadInput(base_gguf, f"LoRA strength must be a positive finite number, got {strength}")
    base_sha = sha256_file(base_gguf)
    if out is None:
        out = cache_dir() / "adapters" / f"demo-lora-{base_sha[:16]}-r{rank}-s{seed}-{strength}.gguf"
    out = Path(out)
    # written into the adapter, whose sha256 is in every call key of the arms that use it: kept as first written
    # (this module was arms/lora.py then), so that the calls of earlier runs still match
    recipe = {
        "trained": False,
        "what": "seeded random low-rank perturbation (a stand-in for a fine-tune), see arms/lora.py",
        "format_version": FORMAT_VERSION,
        "base_sha256": base_sha,
        "targets": list(TARGETS),
        "rank": int(rank),
        "alpha": float(alpha),
        "seed": int(seed),
        "strength": float(strength),
    }
    if out.exists() and _recorded_recipe(out) == recipe:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with replacing(out) as tmp:
        _write_adapter(base_gguf, tmp, recipe)
    return out


def check_adapter(model_gguf: Path, adapter: Path, use_extra_buffers: bool) -> None:
    """Raise BadInput unless llama.cpp can load `adapter` on top of `model_gguf`.

    Needed because llama-cpp-python 0.3.36 does not notice a failed adapter load: its binding
    declares llama_adapter_lora_init's return type as POINTER(c_void_p), so a NULL result is a
    (falsy) pointer object, never None, and `Llama(lora_path=...)`'s `is None` check passes. A
    corrupt, truncated, wrong-shape or wrong-architecture adapter then "loads" without an error
    and the context runs with a NULL adapter (measured for garbage, truncated and wrong-shape
    files: the first generation segfaults, exit code 139). This
    check loads the model and the adapter through the C API and tests the pointer itself.
    Costs one model load (about 0.1 s for SmolLM2-135M).
    """
    import contextlib
    import io

    import llama_cpp

    from .llama_loader import loaded_model

    model_gguf, adapter = Path(model_gguf), Path(adapter)
    for path, what in ((model_gguf, "model"), (adapter, "LoRA adapter")):
        if not path.is_file():
            raise BadInput(path, f"{what} file not found")
    log = io.StringIO()  # llama-cpp-python's log callback writes to whatever sys.stderr is at call time
    with contextlib.redirect_stderr(log), loaded_model(model_gguf, use_extra_buffers) as model:
        handle = llama_cpp.llama_adapter_lora_init(model, str(adapter).encode())
        ok = bool(handle)
        if ok:
            llama_cpp.llama_adapter_lora_free(handle)
    if not ok:
        why = [line.strip() for line in log.getvalue().splitlines()
               if any(w in line.lower() for w in ("fail", "error", "mismatch", "incorrect", "expect", "corrupt"))]
        raise BadInput(adapter, "llama.cpp could not load this LoRA adapter on " + model_gguf.name
                       + (": " + " | ".join(why) if why else ""))


def _recorded_recipe(path: Path) -> dict | None:
    import gguf

    try:
        field = gguf.GGUFReader(str(path), "r").fields.get(RECIPE_KEY)
        return json.loads(field.contents()) if field is not None else None
    except Exception:  # unreadable or corrupt: treat as a cache miss and rewrite it
        return None


def _write_adapter(base_gguf: Path, path: Path, recipe: dict) -> None:
    import gguf

    try:
        reader = gguf.GGUFReader(str(base_gguf), "r")
    except Exception as e:
        raise BadInput(base_gguf, f"not a readable GGUF file ({type(e).__name__}: {e})") from None
    arch_field = reader.fields.get("general.architecture")
    if arch_field is None:
        raise BadInput(base_gguf, "GGUF has no general.architecture")
    arch = str(arch_field.contents())
    n_layer_field = reader.fields.get(f"{arch}.block_count")
    if n_layer_field is None:
        raise BadInput(base_gguf, f"GGUF has no {arch}.block_count")
    n_layer = int(n_layer_field.contents())
    tensors = {t.name: t for t in reader.tensors}

    rank, alpha, seed, strength = recipe["rank"], recipe["alpha"], recipe["seed"], recipe["strength"]
    writer = gguf.GGUFWriter(str(path), arch=arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(alpha))
    writer.add_name("blindeval demo LoRA (UNTRAINED seeded random perturbation)")
    writer.add_string(RECIPE_KEY, json.dumps(recipe, sort_keys=True))
    for i in range(n_layer):
        for j, target in enumerate(TARGETS):
            name = f"blk.{i}.{target}.weight"
            if name not in tensors:
                raise BadInput(base_gguf, f"base model has no tensor {name}; cannot build the demo LoRA")
            a, b = _lora_pair(tensors[name], rank=rank, alpha=alpha, strength=strength, seed=(seed, i, j))
            writer.add_tensor(f"{name}.lora_a", a)
            writer.add_tensor(f"{name}.lora_b", b)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _lora_pair(tensor, *, rank: int, alpha: float, strength: float, seed: tuple[int, int, int]):
    """(lora_a, lora_b) as float32 arrays of numpy shape (rank, n_in), (n_out, rank).

    Scaled so ||alpha/rank * B @ A||_F = strength * ||W||_F. The scale factor is computed in
    float64 and rounded to 6 significant digits before the float32 cast, so last-bit differences
    between BLAS builds cannot change the file's bytes.
    """
    import gguf

    n_in, n_out = (int(x) for x in tensor.shape[:2])  # ggml order: ne[0] = input dim, ne[1] = output dim
    w = gguf.quants.dequantize(tensor.data, gguf.GGMLQuantizationType(tensor.tensor_type))
    w_norm = float(np.sqrt(np.sum(np.square(w, dtype=np.float64))))
    rng = np.random.default_rng(list(seed))
    a = rng.standard_normal((rank, n_in)) / np.sqrt(n_in)
    b = rng.standard_normal((n_out, rank)) / np.sqrt(rank)
    delta_norm = float(np.linalg.norm((alpha / rank) * (b @ a)))
    scale = float(f"{strength * w_norm / delta_norm:.6g}")
    return a.astype(np.float32), (b * scale).astype(np.float32)
