"""`[runtime] flash_attn`: llama.cpp's fused attention kernel, registered, sent, read back, verified, recorded.

It is off by default, so the call keys and outputs of registrations made before it exist are unchanged; on, it
makes local decoding faster on this CPU (BENCHMARKS.md) and rounds attention otherwise, so it is part of the call
key."""
from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest

from arms.collect import plain_messages
from core import jsonl
from core.errors import BadInput
from models.backends.base import Generation, Request
from models.backends.llama_cpp import LlamaConfig, LlamaCppBackend, differences
from models.files import embedded_model
from models.load import open_backend
from models.spec import ModelSpec, Runtime
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.seal import seal
from registration.spec import parse_runtime

from conftest import ROOT, cli

DEMO = ROOT / "sealed" / "demo"
EFFECTIVE = {"file_type": "MOSTLY_Q8_0", "model_sha256": "x", "chat_template_sha256": "t", "loras": [],
             "lora_max_logit_change": None, "n_threads": 1, "n_threads_batch": 1, "n_ctx": 2048}
MODEL = ModelSpec(name="m", backend="llama-cpp", source="embedded:smollm2")


@pytest.mark.unit
@pytest.mark.parametrize("value", ["yes", 1, "true"])
def test_a_bad_flash_attn_is_refused_naming_the_field(value):
    with pytest.raises(BadInput) as e:
        parse_runtime({"runtime": {"flash_attn": value}}, "prereg.toml")
    assert e.value.field == "flash_attn" and "true or false" in str(e.value)


@pytest.mark.unit
def test_flash_attn_defaults_to_off():
    assert parse_runtime({}, "prereg.toml").flash_attn is False
    assert parse_runtime({"runtime": {"flash_attn": True}}, "prereg.toml").flash_attn is True


@pytest.mark.unit
@pytest.mark.parametrize("registered, read_back, differs", [
    (False, None, False),   # a row written before the setting existed: it was off
    (False, False, False),
    (True, True, False),
    (True, False, True),    # registered, but the context was created without it
    (False, True, True),
    (True, None, True),     # an old row cannot stand for a registration that turns it on
])
def test_verification_compares_registered_with_the_context(registered, read_back, differs):
    eff = {**EFFECTIVE, **({} if read_back is None else {"flash_attn": read_back})}
    found = [d for d in differences(Generation(), eff, "Q8_0", MODEL, (), Runtime(flash_attn=registered))
             if d.startswith("flash_attn")]
    assert bool(found) == differs, found


@pytest.mark.unit
def test_flash_attn_enters_the_call_key_only_when_on():
    path = str(embedded_model("smollm2"))
    assert "flash_attn" not in LlamaCppBackend(LlamaConfig(model_path=path)).identity()  # old keys unchanged
    assert LlamaCppBackend(LlamaConfig(model_path=path, flash_attn=True)).identity()["flash_attn"] is True


@pytest.mark.integration
def test_the_context_is_created_with_it_sequential_and_batched():
    """Read back from llama.cpp's context struct; the batched context copies it, and a request decoded alone
    there gives the sequential text with flash attention too."""
    exp = load_experiment(DEMO)
    question = load_questions(exp.set_paths())[0]
    arm = exp.arm("base")
    request = Request(tuple(plain_messages(arm, question)), replace(arm.generation, max_tokens=16))
    texts = {}
    for batch in (1, 2):
        b = open_backend(exp.models["smollm2-135m"], "Q8_0", (), exp.dir,
                         replace(exp.runtime, flash_attn=True, parallel_sequences=batch))
        try:
            reply = b.complete(request)
            eff = b.effective()
            assert eff["flash_attn"] is True and b.identity()["flash_attn"] is True
            assert differences(arm.generation, eff, "Q8_0", exp.models["smollm2-135m"], (),
                               replace(exp.runtime, flash_attn=True, parallel_sequences=batch)) == []
            if batch > 1:  # the batched context was created from the sequential one's struct
                assert b._decoder is not None and b.llm.context_params.flash_attn_type == 1
            texts[batch] = reply.text
        finally:
            b.close()
    assert texts[1] == texts[2] and texts[1]


@pytest.mark.integration
def test_judge_run_records_and_verifies_it(tmp_path):
    exp = tmp_path / "exp"
    shutil.copytree(DEMO, exp)
    toml = (exp / "prereg.toml").read_text()
    (exp / "prereg.toml").write_text(toml.replace("n_ctx = 2048\n", "n_ctx = 2048\nflash_attn = true\n", 1))
    seal(exp)
    out = tmp_path / "out"
    r = cli("judge", "run", "--exp", str(exp), "--arms", "base", "--limit", "2", "--out", str(out), "--quiet",
            timeout=600)
    assert r.returncode == 0, r.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["runtime"]["flash_attn"] is True
    assert all(eff["flash_attn"] is True for eff in run["effective_settings"].values())
    assert all(a["effective"]["flash_attn"] is True for _, a in jsonl.read(out / "answers.jsonl"))
    assert run["judge"]["identity"]["flash_attn"] is True
    assert cli("judge", "verify", str(out)).returncode == 0
