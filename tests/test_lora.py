"""The demo's generated LoRA adapter, against the real embedded model (no stubs).

The adapter is an UNTRAINED seeded random perturbation (see models/lora.py). These tests prove it
is a valid llama.cpp adapter, byte-deterministic, really applied (outputs change), that the
change comes from the adapter alone (lora_scale 0 gives the base's outputs), that it loads on the
derived quants, and that a broken adapter is refused before llama.cpp can run with it.
All llama.cpp work uses one thread (2 threads on the busy 2-core machine is ~20x slower).
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import gguf
import llama_cpp
import numpy as np
import pytest

from core.errors import BadInput
from models.files import embedded_model
from models.llama_loader import extra_buffers, load_llama, loaded_model
from models.lora import DEFAULT_STRENGTH, RECIPE_KEY, TARGETS, check_adapter, demo_adapter
from models.quantize import quantize

pytestmark = pytest.mark.integration

PROMPTS = [
    "What is a bicycle?",
    "Why is the sky blue?",
    "Give me a tip for sleeping better.",
    "Explain what a computer does.",
    "Describe a cat.",
]
MAX_TOKENS = 16


@pytest.fixture(scope="module")
def cache(private_cache):
    """The session's private BLINDEVAL_CACHE (never the user's): quant files other tests derived are reused."""
    return private_cache


@pytest.fixture(scope="module")
def base(cache) -> Path:
    return embedded_model("smollm2")


@pytest.fixture(scope="module")
def adapter(base) -> Path:
    return demo_adapter(base)


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _greedy(model: Path, lora: Path | None = None, scale: float = 1.0, prompts=PROMPTS,
            max_tokens: int = MAX_TOKENS) -> list[str]:
    kw = {"lora_path": str(lora), "lora_scale": scale} if lora else {}
    llm = load_llama(model, n_ctx=512, threads=1, seed=0, use_extra_buffers=extra_buffers().use, **kw)
    try:
        if lora:
            assert llm._lora_adapter, "llama.cpp returned a NULL adapter"  # see models.lora.check_adapter
        return [llm.create_chat_completion(messages=[{"role": "user", "content": p}], temperature=0,
                                           max_tokens=max_tokens)["choices"][0]["message"]["content"]
                for p in prompts]
    finally:
        llm.close()


@pytest.fixture(scope="module")
def base_outputs(base) -> list[str]:
    return _greedy(base)


def test_adapter_is_a_valid_llama_cpp_lora_gguf(base, adapter, cache):
    assert adapter.parent == cache / "adapters"
    assert adapter.name.startswith("demo-lora-") and adapter.name.endswith(f"-r8-s0-{DEFAULT_STRENGTH}.gguf")
    reader = gguf.GGUFReader(str(adapter), "r")
    field = lambda k: reader.fields[k].contents()  # noqa: E731
    assert field("general.type") == "adapter"
    assert field("adapter.type") == "lora"
    assert field("adapter.lora.alpha") == 16.0
    assert field("general.architecture") == "llama"
    recipe = json.loads(field(RECIPE_KEY))
    assert recipe["trained"] is False and recipe["rank"] == 8 and recipe["strength"] == DEFAULT_STRENGTH

    # SmolLM2-135M: n_embd 576, 3 KV heads x 64 = 192 for attn_v; ggml order [n_in, n_out]
    base_shapes = {"attn_q": (576, 576), "attn_v": (576, 192)}
    tensors = {t.name: t for t in reader.tensors}
    n_layer = 30
    assert len(tensors) == n_layer * len(TARGETS) * 2
    for i in range(n_layer):
        for target in TARGETS:
            n_in, n_out = base_shapes[target]
            a, b = tensors[f"blk.{i}.{target}.weight.lora_a"], tensors[f"blk.{i}.{target}.weight.lora_b"]
            # ggml dimension order: a = [n_in, rank], b = [rank, n_out] (convert_lora_to_gguf.py)
            assert [int(x) for x in a.shape] == [n_in, 8]
            assert [int(x) for x in b.shape] == [8, n_out]
            assert a.tensor_type == b.tensor_type == gguf.GGMLQuantizationType.F32
            assert np.isfinite(a.data).all() and np.isfinite(b.data).all()
    check_adapter(base, adapter, extra_buffers().use)


def test_generation_is_deterministic_and_cached(base, adapter, tmp_path):
    one = demo_adapter(base, tmp_path / "one.gguf")  # a second, independent generation
    assert one != adapter and _sha(one) == _sha(adapter)
    assert not list(tmp_path.glob("*.part"))  # temp files of the atomic write are gone
    mtime = one.stat().st_mtime_ns
    assert demo_adapter(base, one) == one and one.stat().st_mtime_ns == mtime  # cache hit: not rewritten
    one.write_bytes(b"junk")  # a corrupt (or stale-recipe) cached file is rewritten, not trusted
    assert _sha(demo_adapter(base, one)) == _sha(adapter)


def test_the_demo_adapter_is_the_file_earlier_versions_wrote(adapter):
    """Its sha256 is part of the call key of every answer of the trained arms: a byte of the file changed (its
    recipe is written into it) and no earlier call of those arms matches again. The planted value is the file
    version 29af953 wrote for the embedded SmolLM2 (rank 8, seed 0, strength 0.1)."""
    assert _sha(adapter) == "ddb7edb394a09e2cccfc9b92ec778b049eb515990c37ee3ccf4ad1d3f32b4ef9"


def test_adapter_changes_greedy_outputs(base, adapter, base_outputs):
    adapted = _greedy(base, adapter)
    differing = sum(x != y for x, y in zip(base_outputs, adapted, strict=False))
    print(f"\nadapter (strength {DEFAULT_STRENGTH}) changed {differing}/{len(PROMPTS)} greedy outputs")
    for b, a in zip(base_outputs, adapted, strict=False):
        print(f"  base: {b!r}\n  lora: {a!r}")
    assert differing >= 3
    assert all(a.strip() for a in adapted)  # still writes something, not an empty reply


def test_scale_zero_gives_the_base_outputs(base, adapter, base_outputs):
    assert _greedy(base, adapter, scale=0.0) == base_outputs


@pytest.mark.parametrize("quant", ["Q8_0", "Q4_K_M"])
def test_adapter_loads_on_derived_quants(base, adapter, quant):
    qf = quantize(base, quant)
    check_adapter(Path(qf.info.path), adapter, extra_buffers().use)
    base_q = _greedy(Path(qf.info.path), prompts=PROMPTS[:2])
    lora_q = _greedy(Path(qf.info.path), adapter, prompts=PROMPTS[:2])
    assert base_q != lora_q


def _write_adapter_like(src: Path, dst: Path, *, arch: str = "llama", transpose_b: bool = False) -> Path:
    reader = gguf.GGUFReader(str(src), "r")
    writer = gguf.GGUFWriter(str(dst), arch=arch)
    writer.add_type("adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", 16.0)
    for t in reader.tensors[:2]:  # blk.0.attn_q lora_a / lora_b
        data = np.array(t.data)
        writer.add_tensor(t.name, data.T.copy() if transpose_b and t.name.endswith("lora_b") else data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return dst


@pytest.mark.parametrize("damage", ["truncated", "garbage", "wrong_shape", "wrong_arch", "missing"])
def test_broken_adapter_is_refused(base, adapter, tmp_path, damage):
    bad = tmp_path / f"{damage}.gguf"
    if damage == "truncated":
        data = adapter.read_bytes()
        bad.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        bad.write_bytes(b"this is not a GGUF file\n" * 64)
    elif damage == "wrong_shape":
        _write_adapter_like(adapter, bad, transpose_b=True)
    elif damage == "wrong_arch":
        _write_adapter_like(adapter, bad, arch="qwen2")
    with pytest.raises(BadInput) as e:
        check_adapter(base, bad, extra_buffers().use)
    assert str(bad) in str(e.value)
    if damage != "missing":  # what check_adapter relies on: the C API returns a NULL adapter
        with loaded_model(base, extra_buffers().use) as model:
            assert not llama_cpp.llama_adapter_lora_init(model, str(bad).encode())


def test_llama_cpp_python_does_not_raise_on_a_broken_adapter(base, tmp_path):
    """Canary for the llama-cpp-python 0.3.36 bug that check_adapter works around.

    Llama(lora_path=<garbage>) constructs without raising (its `is None` test never sees the NULL
    pointer) and the first generation then segfaults. Run in a subprocess so nothing here can
    crash pytest. If this starts failing, llama-cpp-python now raises by itself: keep
    check_adapter anyway (it names the file and the reason) but update its docstring.
    """
    bad = tmp_path / "garbage.gguf"
    bad.write_bytes(b"this is not a GGUF file\n" * 64)
    code = (
        "from models.llama_loader import extra_buffers, load_llama\n"
        f"llm = load_llama({str(base)!r}, n_ctx=64, threads=1, use_extra_buffers=extra_buffers().use, "
        f"lora_path={str(bad)!r})\n"
        "print('constructed', bool(llm._lora_adapter))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "constructed False"
