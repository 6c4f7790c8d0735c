"""In-process llama.cpp through llama-cpp-python: GGUF, LoRA adapters with scales, chat template, thinking.

Thread counts are always set explicitly and recorded: on a busy 2-core machine llama.cpp with
2 threads was measured 20x slower than with 1.

The chat template (the GGUF's own, or a registered file) is rendered here rather than left to
llama-cpp-python, which may swap a GGUF template for a built-in format it guesses is the same;
rendering it ourselves is also how `enable_thinking` reaches templates that support it (Qwen3).
Every sampling knob is sent explicitly: llama-cpp-python's defaults (top_k 40, min_p 0.05,
repeat penalty 1.1 in its chat handler) would otherwise shape sampling without being registered.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import crash
from ..errors import BadInput, CheckFailed
from ..llama_loader import ExtraBuffers, check_runs, extra_buffers, load_llama
from ..models import GGUFInfo, gguf_info, sha256_file
from .base import Generation, Reply, Request

EXTRA_SAMPLING = {"top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0}  # all off: only registered settings sample
PROBE = (("system", "You are a probe."), ("user", "Say hello."))


@dataclass(frozen=True)
class Lora:
    path: str
    scale: float = 1.0


@dataclass(frozen=True)
class LlamaConfig:
    model_path: str
    threads: int = 1
    n_ctx: int = 2048
    seed: int = 0
    loras: tuple[Lora, ...] = ()
    chat_template: str | None = None  # registered template text; None = the GGUF's own
    chat_template_file: str | None = None  # where the registered template came from (for the record)
    cpu_extra_buffers: str | bool = "auto"  # as registered; decided per machine by llama_loader.decide_extra_buffers


def text_sha256(text: str | None) -> str | None:
    return hashlib.sha256(text.encode()).hexdigest() if text is not None else None


class LlamaCppBackend:
    name = "llama-cpp"

    def __init__(self, config: LlamaConfig):
        self.config = config
        self.info: GGUFInfo = gguf_info(Path(config.model_path))
        self.lora_sha256 = tuple(sha256_file(Path(lo.path)) for lo in config.loras)
        self.template_sha256 = (text_sha256(config.chat_template) if config.chat_template is not None
                                else self.info.chat_template_sha256)
        self._llm = None  # loaded on first use: a fully cached re-run never loads the model
        self._adapters: list = []
        self._lora_effect: float | None = None
        self._extra: ExtraBuffers | None = None  # decided (and probed) when the model is loaded

    @property
    def extra_buffers(self) -> ExtraBuffers:
        return self._extra or extra_buffers(self.config.cpu_extra_buffers)

    @property
    def llm(self):
        if self._llm is None:
            self._llm = self._load()
        return self._llm

    def _load(self):
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter, chat_formatter_to_chat_completion_handler

        config = self.config
        self.version = llama_cpp.__version__
        self._extra = check_runs(config.model_path, self.info.sha256, threads=config.threads, n_ctx=config.n_ctx,
                                 decision=extra_buffers(config.cpu_extra_buffers))
        try:
            llm = load_llama(config.model_path, threads=config.threads, n_ctx=config.n_ctx, seed=config.seed,
                             use_extra_buffers=self._extra.use)
        except (ValueError, RuntimeError) as e:
            raise BadInput(config.model_path, f"llama.cpp could not load it: {e}") from None
        try:
            self.gguf_template = llm.metadata.get("tokenizer.chat_template")  # read back from the loaded model
            self.template = config.chat_template if config.chat_template is not None else self.gguf_template
            if self.template is None:
                raise BadInput(config.model_path, "the GGUF has no chat template: register one with "
                               "chat_template = FILE", field="chat_template")
            eos = llm.detokenize([llm.token_eos()], special=True).decode("utf-8", "replace")
            bos = llm.detokenize([llm.token_bos()], special=True).decode("utf-8", "replace")
            self.formatter = Jinja2ChatFormatter(self.template, eos_token=eos, bos_token=bos,
                                                 stop_token_ids=[llm.token_eos()])
            self._handler = chat_formatter_to_chat_completion_handler(self.formatter)
            if config.loras:
                with crash.step(f"measuring the LoRA adapters' effect on {config.model_path}"):
                    self._apply_loras(llm)
        except BaseException:
            self._free_adapters()
            llm.close()
            raise
        return llm

    def _apply_loras(self, llm) -> None:
        """Load every adapter on the context, and measure that it changes the logits (proof it is applied)."""
        import llama_cpp

        from ..lora import check_adapter

        for lo in self.config.loras:
            check_adapter(Path(self.config.model_path), Path(lo.path), self.extra_buffers.use)  # llama-cpp-python segfaults otherwise
            handle = llama_cpp.llama_adapter_lora_init(llm.model, lo.path.encode())
            if not handle:
                raise BadInput(lo.path, "llama.cpp could not load this LoRA adapter")
            self._adapters.append(handle)
        probe = llm.tokenize(self._render(list(PROBE), False).encode(), add_bos=False, special=True)
        before = _last_logits(llm, probe)
        n = len(self._adapters)
        handles = (llama_cpp.llama_adapter_lora_p_ctypes * n)(*self._adapters)
        scales = (ctypes.c_float * n)(*(lo.scale for lo in self.config.loras))
        if llama_cpp.llama_set_adapters_lora(llm.ctx, handles, n, scales) != 0:
            raise CheckFailed(f"llama.cpp refused to set the LoRA adapters {[lo.path for lo in self.config.loras]}")
        after = _last_logits(llm, probe)
        llm.reset()  # the probe's KV cache must not be reused as a prompt prefix
        self._lora_effect = round(float(abs(after - before).max()), 6)

    def _render(self, messages: list[tuple[str, str]], thinking: bool) -> str:
        return self.formatter(messages=[{"role": r, "content": c} for r, c in messages],
                              enable_thinking=thinking).prompt

    @property
    def thinking_switch(self) -> bool:
        """Does the chat template react to `enable_thinking`? (Qwen3's does, SmolLM2's does not.)"""
        _ = self.llm
        return self._render(list(PROBE), True) != self._render(list(PROBE), False)

    def identity(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model_sha256": self.info.sha256,
            "lora_sha256": list(self.lora_sha256) or None,
            "lora_scale": [lo.scale for lo in self.config.loras] or None,
            "chat_template_sha256": self.template_sha256,
            "n_ctx": self.config.n_ctx,
            "sampler": EXTRA_SAMPLING,
            # repacked weights may round differently; left out when on, so keys made before this setting still match
            **({"cpu_extra_buffers": False} if not self.extra_buffers.use else {}),
        }

    def effective(self) -> dict[str, Any]:
        """Read back from the loaded model, not from our own config."""
        llm = self.llm
        cp = llm.context_params
        return {
            "backend": self.name,
            "llama_cpp_python": self.version,
            "model_path": self.config.model_path,
            "model_sha256": self.info.sha256,
            "file_type": self.info.file_type,
            "tensor_types": self.info.tensor_types,
            "chat_template_sha256": text_sha256(self.template),
            "chat_template_source": self.config.chat_template_file or "gguf",
            "gguf_chat_template_sha256": text_sha256(self.gguf_template),
            "thinking_switch": self.thinking_switch,
            "loras": [{"path": lo.path, "sha256": sha, "scale": lo.scale}
                      for lo, sha in zip(self.config.loras, self.lora_sha256)],
            "lora_max_logit_change": self._lora_effect,  # 0 would mean the adapters change nothing
            "n_threads": cp.n_threads,
            "n_threads_batch": cp.n_threads_batch,
            "n_ctx": llm.n_ctx(),
            "seed": self.config.seed,
            "cpu_extra_buffers": bool(llm.model_params.use_extra_bufts),  # the struct llama.cpp loaded with
            "cpu_extra_buffers_decision": self.extra_buffers.to_dict(),
            "weight_buffers": llm.weight_buffers,  # from llama.cpp's load log: where the weights really are
        }

    def sent(self, generation: Generation) -> dict[str, Any]:
        g = generation
        system = None
        if g.system is not None:  # does the template keep a system message, or silently drop it?
            system = g.system if g.system in self._render([("system", g.system), ("user", "?")], g.thinking) else None
        return {"temperature": g.temperature, "top_p": g.top_p, "max_tokens": g.max_tokens, "seed": g.seed,
                "stop": list(g.stop), "thinking": g.thinking if self.thinking_switch else None, "system": system,
                "thinking_budget": None, "effort": None, **EXTRA_SAMPLING}

    def complete(self, request: Request) -> Reply:
        g = request.generation
        llm = self.llm
        if g.thinking and not self.thinking_switch:
            raise CheckFailed(f"thinking mode is registered on, but the chat template of {self.config.model_path} "
                              "has no enable_thinking switch")
        kwargs: dict[str, Any] = {}
        if request.schema:
            kwargs["response_format"] = {"type": "json_object", "schema": json.loads(request.schema)}
        t0 = time.perf_counter()
        with crash.step(f"generating with {self.config.model_path} (llama.cpp, threads {self.config.threads}, "
                        f"CPU extra buffers {'on' if self.extra_buffers.use else 'off'})",
                        build_amx=self.extra_buffers.build_amx, cpu_amx=self.extra_buffers.cpu_amx):
            out = self._handler(
                llama=llm,
                messages=[{"role": r, "content": c} for r, c in request.messages],
                temperature=g.temperature,
                top_p=g.top_p,
                max_tokens=g.max_tokens,
                seed=g.seed,
                stop=list(g.stop),
                enable_thinking=g.thinking,
                **EXTRA_SAMPLING,
                **kwargs,
            )
        latency = time.perf_counter() - t0
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        text = choice["message"].get("content") or ""
        return Reply(
            text=text,
            finish_reason=choice.get("finish_reason") or "unknown",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=round(latency, 4),
            raw={"id": out.get("id"), "model": out.get("model"), "finish_reason": choice.get("finish_reason")},
            thinking="<think>" in text,  # templates with a thinking switch (Qwen3) open the thought with this tag
        )

    def _free_adapters(self) -> None:
        import llama_cpp

        for handle in self._adapters:
            llama_cpp.llama_adapter_lora_free(handle)
        self._adapters.clear()

    def close(self) -> None:
        if self._llm is not None:
            self._free_adapters()
            self._llm.close()
            self._llm = None


def _last_logits(llm, tokens: list[int]):
    """Logits of the next token after `tokens`, from a fresh context state."""
    import llama_cpp
    import numpy as np

    llm.reset()
    llm.eval(tokens)
    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).copy()
