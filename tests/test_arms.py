"""The in-process arm runner against the real embedded model: template, thinking, LoRAs, verification, imatrix.

Every llama.cpp load uses one thread (2 threads on the busy 2-core machine is ~20x slower).
"""
from __future__ import annotations

import shutil
import struct
import tomllib
from pathlib import Path

import gguf
import numpy as np
import pytest

from arms.settings import verify_settings
from core.errors import BadInput, CheckFailed
from models.backends import Generation, Request
from models.backends.llama_cpp import LlamaConfig, LlamaCppBackend, Lora
from models.files import embedded_model
from models.llama_loader import extra_buffers, load_llama
from models.lora import demo_adapter
from models.quantize import load_imatrix, quantize
from models.spec import AdapterSpec, ModelSpec, Runtime
from registration.seal import seal
from registration.spec import ArmSpec, parse_arms, parse_generation, parse_models

from conftest import ROOT, cli

THINKING_TEMPLATE = (  # ChatML with Qwen3's switch: thinking off pre-fills an empty think block
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}")
SYSTEM = "Answer the question in one or two sentences."


@pytest.fixture(scope="module")
def base() -> Path:
    return embedded_model("smollm2")


def backend(model: Path, **kw) -> LlamaCppBackend:
    return LlamaCppBackend(LlamaConfig(model_path=str(model), threads=1, **kw))


def arm(**gen) -> ArmSpec:
    return ArmSpec(name="a", model="m", quants=("source",), generation=Generation(**{"max_tokens": 16, **gen}))


def ask(b: LlamaCppBackend, text: str, **gen):
    return b.complete(Request((("user", text),), Generation(**{"max_tokens": 16, **gen})))


@pytest.mark.unit
def test_spec_parses_every_arm_field_and_names_bad_ones(tmp_path):
    doc = tomllib.loads("""
[models.m]
backend = "openai"
source = "served-name"
base_url = ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]
thinking_control = "chat_template_kwargs"
concurrency = 3
attempts = 2
[models.g]
backend = "llama-cpp"
source = "x.gguf"
sha256 = { Q8_0 = "ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789" }
chat_template = "t.jinja"
imatrix = "im.gguf"
[[arms]]
name = "a"
model = "m"
quants = ["Q8_0"]
samples = 3
generation = { temperature = 0.7, stop = "END", thinking = true, system = "Be brief." }
""")
    f = tmp_path / "prereg.toml"
    models = parse_models(doc, f)
    assert models["m"].urls() == ("http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1")
    assert (models["m"].thinking_control == "chat_template_kwargs" and models["m"].concurrency == 3
            and models["m"].attempts == 2)
    with pytest.raises(BadInput) as e:
        parse_models({"models": {"m": {"backend": "openai", "source": "x", "attempts": 0}}}, f)
    assert e.value.field == "attempts"
    assert models["g"].sha256 == {"Q8_0": "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789"}
    (a,) = parse_arms(doc, f, models, {})
    assert a.samples == 3 and a.generation.stop == ("END",) and a.generation.thinking is True
    for bad, field in (({"samples": 0}, "samples"), ({"adapter": "nope"}, "adapter"), ({"quants": []}, "quants")):
        with pytest.raises(BadInput) as e:
            parse_arms({"arms": [{"name": "a", "model": "m", "quants": ["Q8_0"], **bad}]}, f, models, {})
        assert e.value.field == field
    with pytest.raises(BadInput) as e:
        parse_generation({"thinking": "yes"}, f, "[[arms]] #1")
    assert e.value.field == "thinking"


@pytest.mark.integration
def test_backend_gives_what_bare_llama_cpp_python_gives(base):
    """Rendering the GGUF's template ourselves changes nothing: same tokens, same greedy text."""
    b = backend(base)
    bare = load_llama(base, n_ctx=2048, threads=1, use_extra_buffers=extra_buffers().use)
    try:
        for messages in ((("user", "What is a bicycle?"),), (("system", SYSTEM), ("user", "Name a colour."))):
            ours = b.complete(Request(messages, Generation(max_tokens=24)))
            theirs = bare.create_chat_completion(messages=[{"role": r, "content": c} for r, c in messages],
                                                 temperature=0.0, max_tokens=24, seed=0)
            assert ours.text == theirs["choices"][0]["message"]["content"] and ours.text
            assert ours.prompt_tokens == theirs["usage"]["prompt_tokens"]
        assert ask(b, "Count to fifty.", max_tokens=4).finish_reason == "length"  # truncation is visible
    finally:
        bare.close()
        b.close()


@pytest.mark.integration
def test_registered_template_file_switches_thinking(base, tmp_path):
    b = backend(base, chat_template=THINKING_TEMPLATE, chat_template_file=str(tmp_path / "qwen-like.jinja"))
    try:
        eff = b.effective()
        assert eff["chat_template_source"].endswith("qwen-like.jinja") and eff["thinking_switch"]
        assert eff["chat_template_sha256"] != eff["gguf_chat_template_sha256"]
        assert b.sent(Generation(thinking=True))["thinking"] is True
        off, on = ask(b, "Hi.", thinking=False), ask(b, "Hi.", thinking=True)
        assert off.prompt_tokens > on.prompt_tokens  # the empty think block really reached the prompt
        verify_settings(b, "arm 'a'", arm(thinking=True).generation, "source", ModelSpec("m", "llama-cpp", str(base)),
                        (), Runtime())
    finally:
        b.close()


@pytest.mark.integration
def test_thinking_on_without_a_template_switch_is_refused(base):
    b = backend(base)
    try:
        with pytest.raises(CheckFailed, match="thinking: registered True, the backend sends nothing"):
            verify_settings(b, "arm 'a'", arm(thinking=True, system=SYSTEM).generation, "source",
                            ModelSpec("m", "llama-cpp", str(base)), (), Runtime())
        with pytest.raises(CheckFailed, match="no enable_thinking switch"):
            ask(b, "Hi.", thinking=True)
    finally:
        b.close()


@pytest.mark.integration
def test_template_that_drops_the_system_prompt_is_caught(base, tmp_path):
    dropping = THINKING_TEMPLATE.replace("{% for m in messages %}", "{% for m in messages if m.role != 'system' %}")
    b = backend(base, chat_template=dropping, chat_template_file="drops-system.jinja")
    try:
        with pytest.raises(CheckFailed, match="system: registered 'Be brief.', the backend sends nothing"):
            verify_settings(b, "arm 'a'", arm(system="Be brief.").generation, "source",
                            ModelSpec("m", "llama-cpp", str(base)), (), Runtime())
    finally:
        b.close()


def _reseal(tmp_path: Path, edit) -> Path:
    exp = tmp_path / "demo"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    prereg = exp / "prereg.toml"
    prereg.write_text(edit(prereg.read_text()))
    seal(exp)
    return exp


@pytest.mark.integration
def test_every_silent_override_is_named_and_refused(tmp_path):
    """Five registered settings the backend would not honour: exit 1, and the message names each one."""
    def edit(text: str) -> str:
        text = text.replace('family = "smollm2"\n', 'family = "smollm2"\nsha256 = { Q8_0 = "' + "0" * 64 + '" }\n'
                            'chat_template_sha256 = "' + "1" * 64 + '"\n', 1)
        text = text.replace("scale = 1.0\n", 'scale = 1.0\nsha256 = "' + "2" * 64 + '"\n', 1)
        text = text.replace("n_ctx = 2048", "n_ctx = 1000")  # llama.cpp pads it to 1024
        return text.replace("seed = 0, system", "seed = 0, thinking = true, system")
    exp = _reseal(tmp_path, edit)
    r = cli("arms", "collect", "--exp", str(exp), "--arms", "trained", "--limit", "1", "--out", str(tmp_path / "o"),
            "--quiet")
    assert r.returncode == 1, r.stderr
    assert "5 setting(s) differ" in r.stderr
    for needle in ("thinking: registered True", "model sha256 (Q8_0): registered 000", "chat template sha256: "
                   "registered 111", "adapter demo-lora sha256: registered 222", "n_ctx: registered 1000, llama.cpp "
                   "uses 1024"):
        assert needle in r.stderr, needle
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "o" / "answers.jsonl").read_text()  # refused before the first question


@pytest.mark.integration
def test_quant_file_of_another_type_is_refused(base, tmp_path):
    q8, q4 = Path(quantize(base, "Q8_0").info.path), Path(quantize(base, "Q4_K_M").info.path)
    shutil.copyfile(q8.with_suffix(".json"), tmp_path / q8.with_suffix(".json").name)
    shutil.copyfile(q4, tmp_path / q8.name)  # the cached "Q8_0" file is now really Q4_K_M
    with pytest.raises(CheckFailed, match="asked llama.cpp for Q8_0, the file says MOSTLY_Q4_K_M"):
        quantize(base, "Q8_0", out_dir=tmp_path)


@pytest.mark.integration
def test_several_adapters_are_all_applied_with_their_scales(base):
    """0.5 + 0.5 of one adapter moves the logits as far as the adapter at 1.0; 0.5 alone does not."""
    lora = str(demo_adapter(base))
    effect, text = {}, {}
    for label, loras in (("full", (Lora(lora, 1.0),)), ("halves", (Lora(lora, 0.5), Lora(lora, 0.5))),
                         ("half", (Lora(lora, 0.5),)), ("none", ())):
        b = backend(base, loras=loras)
        try:
            text[label] = ask(b, "What is a bicycle?").text
            eff = b.effective()
            assert [lo["scale"] for lo in eff["loras"]] == [lo.scale for lo in loras]
            effect[label] = eff["lora_max_logit_change"]
        finally:
            b.close()
    assert effect["none"] is None and effect["half"] > 0.5
    assert abs(effect["halves"] - effect["full"]) < 0.02 * effect["full"]  # float summation order only
    assert effect["half"] < 0.6 * effect["full"]
    assert text["full"] != text["none"]


@pytest.mark.integration
def test_adapter_that_changes_nothing_is_refused(base, tmp_path):
    src = gguf.GGUFReader(str(demo_adapter(base)), "r")
    inert = tmp_path / "inert.gguf"
    w = gguf.GGUFWriter(str(inert), arch="llama")
    w.add_type("adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", 16.0)
    for t in src.tensors:
        data = np.array(t.data)
        w.add_tensor(t.name, np.zeros_like(data) if t.name.endswith("lora_b") else data)
    w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()
    b = backend(base, loras=(Lora(str(inert)),))
    try:
        with pytest.raises(CheckFailed, match=r"change no logit \(not applied\)"):
            verify_settings(b, "arm 'a'", arm().generation, "source", ModelSpec("m", "llama-cpp", str(base)),
                            (AdapterSpec("inert", str(inert)),), Runtime())
    finally:
        b.close()


def _imatrix_gguf(model: Path, path: Path, blocks: int = 2) -> dict[str, np.ndarray]:
    """A small importance matrix in llama-imatrix's GGUF layout (sums and counts), for the first blocks."""
    rng = np.random.default_rng(0)
    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_type("imatrix")
    w.add_array("imatrix.datasets", ["synthetic"])
    w.add_uint32("imatrix.chunk_count", 4)
    w.add_uint32("imatrix.chunk_size", 512)
    expected = {}
    for t in gguf.GGUFReader(str(model), "r").tensors:
        if len(t.shape) == 2 and any(t.name.startswith(f"blk.{i}.") for i in range(blocks)):
            sums = rng.gamma(1.0, 1.0, size=(1, int(t.shape[0]))).astype(np.float32) * 2048
            w.add_tensor(t.name + ".in_sum2", sums)
            w.add_tensor(t.name + ".counts", np.array([[2048.0]], dtype=np.float32))
            expected[t.name] = sums.reshape(-1) / 2048
    w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()
    return expected


@pytest.mark.integration
def test_imatrix_reaches_the_quantiser_and_is_recorded(base, tmp_path):
    expected = _imatrix_gguf(base, tmp_path / "im.gguf")
    im = load_imatrix(tmp_path / "im.gguf", base)
    assert set(im.entries) == set(expected)
    assert all(np.allclose(im.entries[k], v) for k, v in expected.items())
    legacy = tmp_path / "im.dat"  # the same matrix in the legacy .dat layout (values * ncall)
    with open(legacy, "wb") as f:
        f.write(struct.pack("<i", len(expected)))
        for name, v in expected.items():
            f.write(struct.pack("<i", len(name)) + name.encode() + struct.pack("<ii", 4, len(v)))
            f.write((v * 4).astype("<f4").tobytes())
        f.write(struct.pack("<i", 4) + struct.pack("<i", 9) + b"synthetic")
    old = load_imatrix(legacy, base)
    assert all(np.allclose(old.entries[k], v, rtol=1e-6) for k, v in expected.items())

    plain = quantize(base, "Q4_K_M")
    weighted = quantize(base, "Q4_K_M", out_dir=tmp_path, imatrix=tmp_path / "im.gguf")
    assert weighted.info.sha256 != plain.info.sha256 and weighted.info.file_type == "MOSTLY_Q4_K_M"
    assert weighted.recipe["imatrix"] == {"file": "im.gguf", "sha256": im.sha256, "entries": len(expected),
                                          "chunks": 4, "datasets": ["synthetic"]}
    meta = gguf.GGUFReader(weighted.info.path, "r").fields
    assert meta["quantize.imatrix.file"].contents() == "im.gguf"
    assert meta["quantize.imatrix.entries_count"].contents() == len(expected)


@pytest.mark.integration
def test_imatrix_for_another_model_is_bad_input(base, tmp_path):
    w = gguf.GGUFWriter(str(tmp_path / "wrong.gguf"), arch="llama")
    w.add_uint32("imatrix.chunk_count", 1)
    w.add_tensor("blk.0.attn_q.weight.in_sum2", np.ones((1, 100), dtype=np.float32))
    w.add_tensor("blk.0.attn_q.weight.counts", np.ones((1, 1), dtype=np.float32))
    w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()
    with pytest.raises(BadInput, match="has 100 values; the tensor has 576 columns"):
        load_imatrix(tmp_path / "wrong.gguf", base)
