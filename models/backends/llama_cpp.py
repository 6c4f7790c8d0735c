"""In-process llama.cpp through llama-cpp-python: GGUF, LoRA adapters with scales, chat template, thinking.

Thread counts are always set explicitly and recorded: on a busy 2-core machine llama.cpp with
2 threads was measured 20x slower than with 1.

The chat template (the GGUF's own, or a registered file) is rendered here rather than left to
llama-cpp-python, which may swap a GGUF template for a built-in format it guesses is the same;
rendering it ourselves is also how `enable_thinking` reaches templates that support it (Qwen3).
Every sampling knob is sent explicitly: llama-cpp-python's defaults (top_k 40, min_p 0.05,
repeat penalty 1.1 in its chat handler) would otherwise shape sampling without being registered.
Sampling is read back from the sampler chain llama.cpp really built for a one-token probe with the
registered settings, and held with the other settings read back against the registration, in
models.backends.llama_read_back. The LoRA adapters are loaded, set and measured in models.backends.llama_adapters.

With `[runtime] batch` N > 1, calls from N threads decode together in one context of N sequences
(models.backends.llama_parallel); the prompt, sampler chain and grammar are made here as for the sequential path.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from core import crash
from core.errors import BadInput, CheckFailed

from ..files import GGUFInfo, gguf_info, sha256_file
from ..llama_loader import ExtraBuffers, check_runs, extra_buffers, load_llama
from .base import UNKNOWN, BackendInfo, Generation, Reply, Request, nothing_read_back
from .llama_adapters import Lora, apply_adapters, free_adapters
from .llama_parallel import Callers, Job, ParallelDecoder
from .llama_read_back import chain_read_back, differences

EXTRA_SAMPLING = {"top_k": 0, "min_p": 0.0, "repeat_penalty": 1.0}  # all off: only registered settings sample
PROBE = (("system", "You are a probe."), ("user", "Say hello."))


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
    gpu_layers: int = 0  # layers llama.cpp puts on a GPU (n_gpu_layers); refused on a build without GPU support
    parallel_sequences: int = 1  # decoded together (models.backends.llama_parallel); 1 = Llama.create_chat_completion
    flash_attn: bool = False  # llama.cpp's fused attention kernel (the batched context inherits it)


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
        self._decoder: ParallelDecoder | None = None  # with batch > 1: the context every call decodes in
        self._sampler_lock = threading.Lock()  # Llama._init_sampler reads the seed from the shared Llama
        self._load_lock = threading.Lock()  # with batch > 1 the first calls arrive from several threads at once
        self._callers = Callers()  # with batch > 1: the threads calling, so a step's company is not thread timing

    def callers(self, n: int) -> Callable[[], None]:
        """`n` threads will each keep one call in flight until each calls the function returned (with batch > 1
        every decode step waits for all of them: see models.backends.llama_parallel.Callers)."""
        self._callers.join(n)
        return self._callers.leave

    @property
    def extra_buffers(self) -> ExtraBuffers:
        return self._extra or extra_buffers(self.config.cpu_extra_buffers)

    @property
    def llm(self):
        if self._llm is None:
            with self._load_lock:  # one load: two threads loading one model (and its batched context) crash
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
                             use_extra_buffers=self._extra.use, gpu_layers=config.gpu_layers,
                             flash_attn=config.flash_attn)
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
            if config.loras:  # loaded, set, and measured on a probe (proof they are applied)
                with self._native_step("measuring the LoRA adapters' effect"):
                    probe = llm.tokenize(self._render(list(PROBE), False).encode(), add_bos=False, special=True)
                    self._lora_effect = apply_adapters(llm, config.loras, config.model_path, self.extra_buffers.use,
                                                       probe, self._adapters)
            if config.parallel_sequences > 1:
                with self._native_step(f"creating a llama.cpp context for {config.parallel_sequences} sequences"):
                    self._decoder = ParallelDecoder(llm, config.parallel_sequences, config.n_ctx, config.threads,
                                                    self._adapters, [lo.scale for lo in config.loras], self._decoding,
                                                    self._callers)
        except BaseException:
            free_adapters(self._adapters)
            llm.close()
            raise
        return llm

    def _native_step(self, what: str):
        return crash.step(f"{what} with {self.config.model_path} (llama.cpp, threads {self.config.threads}, "
                          f"CPU extra buffers {'on' if self.extra_buffers.use else 'off'})",
                          extra_buffers=self.extra_buffers.use, build_amx=self.extra_buffers.build_amx,
                          cpu_amx=self.extra_buffers.cpu_amx)

    def _decoding(self):
        return self._native_step(f"generating {self.config.parallel_sequences} sequences together")

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
            # batched decoding can change outputs numerically; left out at 1, so keys made before it still match
            **({"batch": self.config.parallel_sequences} if self.config.parallel_sequences > 1 else {}),
            # repacked weights may round differently; left out when on, so keys made before this setting still match
            **({"cpu_extra_buffers": False} if not self.extra_buffers.use else {}),
            **({"gpu_layers": self.config.gpu_layers} if self.config.gpu_layers else {}),  # GPU kernels round otherwise
            **({"flash_attn": True} if self.config.flash_attn else {}),  # its kernel rounds otherwise; off: old keys
        }

    def effective(self) -> dict[str, Any]:
        """Read back from the loaded model, not from our own config."""
        import llama_cpp

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
                      for lo, sha in zip(self.config.loras, self.lora_sha256, strict=False)],
            "lora_max_logit_change": self._lora_effect,  # 0 would mean the adapters change nothing
            "n_threads": cp.n_threads,
            "n_threads_batch": cp.n_threads_batch,
            "n_ctx": llm.n_ctx(),
            "batch": int(llama_cpp.llama_n_seq_max(llm.ctx)),
            # the context struct llama.cpp was created with (the batched context copies it)
            "flash_attn": llm.context_params.flash_attn_type == llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED,
            # with batch > 1 every call decodes in the batched context: its sequences, per-sequence n_ctx, threads
            **(self._decoder.read_back() if self._decoder else {}),
            "seed": self.config.seed,
            "cpu_extra_buffers": bool(llm.model_params.use_extra_bufts),  # the struct llama.cpp loaded with
            "cpu_extra_buffers_decision": self.extra_buffers.to_dict(),
            "weight_buffers": llm.weight_buffers,  # from llama.cpp's load log: where the weights really are
            "gpu_layers": int(llm.model_params.n_gpu_layers),  # the struct llama.cpp loaded with
            "gpu_layers_offloaded": llm.gpu_offloaded[0],  # from its load log: what really went to a GPU
            "gpu_layers_total": llm.gpu_offloaded[1],
        }

    def sent(self, generation: Generation) -> dict[str, Any]:
        g = generation
        system = None
        if g.system is not None:  # does the template keep a system message, or silently drop it?
            system = g.system if g.system in self._render([("system", g.system), ("user", "?")], g.thinking) else None
        return {"temperature": g.temperature, "top_p": g.top_p, "max_tokens": g.max_tokens, "seed": g.seed,
                "stop": list(g.stop), "thinking": g.thinking if self.thinking_switch else None, "system": system,
                "thinking_budget": None, "effort": None, **EXTRA_SAMPLING}

    def read_back(self, generation: Generation) -> dict[str, Any]:
        """What the sampler chain of a one-token probe with these settings really holds (see the module docstring);
        with batch > 1, the chain the batched path builds for them (the one each of its sequences samples with)."""
        if self.config.parallel_sequences > 1:
            built = self._sampler(generation, None)
            try:
                return chain_read_back(built.sampler)
            finally:
                built.close()
        self._generate(Request(PROBE, replace(generation, max_tokens=1, thinking=generation.thinking
                                              and self.thinking_switch)))
        sampler = getattr(getattr(self.llm, "_sampler", None), "sampler", None)  # the chain the probe sampled with
        self.llm.reset()  # the probe's KV cache must not be reused as a prompt prefix
        if sampler is None:
            return nothing_read_back()
        return chain_read_back(sampler)

    def _sampler(self, g: Generation, grammar):
        """A sampler chain as llama-cpp-python's `Llama.generate` builds it for these settings (its own seed)."""
        with self._sampler_lock:  # Llama._init_sampler takes the seed from the Llama object
            self.llm.set_seed(g.seed)
            return self.llm._init_sampler(temp=g.temperature, top_p=g.top_p, typical_p=1.0, frequency_penalty=0.0,
                                          presence_penalty=0.0, grammar=grammar, **EXTRA_SAMPLING)

    def _generate(self, request: Request) -> dict[str, Any]:
        g = request.generation
        llm = self.llm
        if g.thinking and not self.thinking_switch:
            raise CheckFailed(f"thinking mode is registered on, but the chat template of {self.config.model_path} "
                              "has no enable_thinking switch")
        kwargs: dict[str, Any] = {}
        if request.schema:
            kwargs["response_format"] = {"type": "json_object", "schema": json.loads(request.schema)}
        with self._native_step("generating"):
            return self._handler(
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

    def complete(self, request: Request) -> Reply:
        t0 = time.perf_counter()
        out = self._generate_batched(request) if self.config.parallel_sequences > 1 else self._generate(request)
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

    def _generate_batched(self, request: Request) -> dict[str, Any]:
        """What `_generate` returns, decoded in the batched context: the prompt, sampler chain, grammar and stop
        strings made as llama-cpp-python's chat handler makes them (see models.backends.llama_parallel)."""
        from llama_cpp.llama_chat_format import _grammar_for_response_format

        g = request.generation
        llm = self.llm
        if g.thinking and not self.thinking_switch:
            raise CheckFailed(f"thinking mode is registered on, but the chat template of {self.config.model_path} "
                              "has no enable_thinking switch")
        rendered = self.formatter(messages=[{"role": r, "content": c} for r, c in request.messages],
                                  enable_thinking=g.thinking)
        prompt = llm.tokenize(rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True)
        grammar = (_grammar_for_response_format({"type": "json_object", "schema": json.loads(request.schema)})
                   if request.schema else None)
        sampler = self._sampler(g, grammar)
        stop = [s.encode("utf-8") for s in (*g.stop, *(rendered.stop or []))]
        try:
            job = self._decoder.submit(Job(prompt, sampler, g.max_tokens, stop, order=repr(request)))
        finally:
            sampler.close()
        return {"id": f"chatcmpl-{uuid.uuid4()}", "model": self.config.model_path,
                "choices": [{"message": {"content": job.text.decode("utf-8", errors="ignore")},
                             "finish_reason": job.finish_reason}],
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(job.completion)}}

    def close(self) -> None:
        if self._decoder is not None:
            self._decoder.close()
            self._decoder = None
        if self._llm is not None:
            free_adapters(self._adapters)
            self._llm.close()
            self._llm = None


def open_llama(spec, quant: str | None, adapters: tuple, exp_dir: Path, runtime) -> LlamaCppBackend:
    """Quantise (cached) and resolve the files of a registered model; the model itself loads on first use."""
    from ..sources import adapter_file, chat_template, model_source, quant_file

    qf = quant_file(spec, quant or "source", exp_dir, runtime)
    source = model_source(spec, exp_dir)
    loras = tuple(Lora(str(adapter_file(a, source, exp_dir)), a.scale) for a in adapters)
    template, template_file = chat_template(spec, exp_dir)
    return LlamaCppBackend(LlamaConfig(model_path=qf.info.path, threads=runtime.threads, n_ctx=runtime.n_ctx,
                                       seed=runtime.seed, loras=loras, chat_template=template,
                                       chat_template_file=template_file, cpu_extra_buffers=runtime.cpu_extra_buffers,
                                       gpu_layers=runtime.gpu_layers, parallel_sequences=runtime.parallel_sequences,
                                       flash_attn=runtime.flash_attn))


def check_generation(model, g: Generation) -> list[tuple[str, str]]:
    if None in (g.temperature, g.top_p, g.seed):
        return [("generation", "llama.cpp has no provider default worth trusting (it would apply its own); "
                 "register temperature, top_p and seed")]
    return []


def expected_identity(spec, adapters: tuple, runtime, eff: dict[str, Any]) -> dict[str, Any]:
    """identity() as the registration and the settings read back from the model (`eff`) give it: what verify
    re-derives a call key from without loading the model."""
    loras = eff.get("loras")
    cpu = eff.get("cpu_extra_buffers", UNKNOWN)
    return {"backend": LlamaCppBackend.name, "model_sha256": eff.get("model_sha256", UNKNOWN),
            "lora_sha256": UNKNOWN if loras is None else [lo.get("sha256") for lo in loras] or None,
            "lora_scale": [a.scale for a in adapters] or None,
            "chat_template_sha256": eff.get("chat_template_sha256", UNKNOWN), "n_ctx": runtime.n_ctx,
            "sampler": EXTRA_SAMPLING,
            **({"batch": runtime.parallel_sequences} if runtime.parallel_sequences > 1 else {}),
            **({"cpu_extra_buffers": cpu} if cpu is not True else {}),
            **({"gpu_layers": runtime.gpu_layers} if runtime.gpu_layers else {}),
            **({"flash_attn": True} if runtime.flash_attn else {})}


INFO = BackendInfo(name=LlamaCppBackend.name, open=open_llama, serial=True, parallel_decoding=True, local=True,
                   check_generation=check_generation, differences=differences, expected_identity=expected_identity)
