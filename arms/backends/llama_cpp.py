"""In-process llama.cpp through llama-cpp-python: GGUF, optional LoRA adapter, explicit threads.

Thread counts are always set explicitly and recorded: on a busy 2-core machine llama.cpp with
2 threads was measured 20x slower than with 1.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BadInput, NotBuilt
from ..models import GGUFInfo, gguf_info, sha256_file
from .base import Reply, Request


@dataclass(frozen=True)
class LlamaConfig:
    model_path: str
    threads: int = 1
    n_ctx: int = 2048
    lora_path: str | None = None
    lora_scale: float = 1.0


class LlamaCppBackend:
    name = "llama-cpp"

    def __init__(self, config: LlamaConfig):
        self.config = config
        self.info: GGUFInfo = gguf_info(Path(config.model_path))
        self.lora_sha256 = sha256_file(Path(config.lora_path)) if config.lora_path else None
        self._llm = None  # loaded on first use: a fully cached re-run never loads the model

    @property
    def llm(self):
        if self._llm is None:
            self._llm = self._load()
        return self._llm

    def _load(self):
        import llama_cpp

        config = self.config
        self.version = llama_cpp.__version__
        if config.lora_path:
            from ..lora import check_adapter

            check_adapter(Path(config.model_path), Path(config.lora_path))  # llama-cpp-python segfaults otherwise
        try:
            return llama_cpp.Llama(
                model_path=config.model_path,
                n_ctx=config.n_ctx,
                n_threads=config.threads,
                n_threads_batch=config.threads,
                lora_path=config.lora_path,
                lora_scale=config.lora_scale,
                seed=0,
                verbose=False,
            )
        except (ValueError, RuntimeError) as e:
            raise BadInput(config.lora_path or config.model_path, f"llama.cpp could not load it: {e}") from None

    def identity(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model_sha256": self.info.sha256,
            "lora_sha256": self.lora_sha256,
            "lora_scale": self.config.lora_scale if self.config.lora_path else None,
            "chat_template_sha256": self.info.chat_template_sha256,
            "n_ctx": self.config.n_ctx,
        }

    def effective(self) -> dict[str, Any]:
        """Read back from the loaded model, not from our own config."""
        cp = self.llm.context_params
        template = self.llm.metadata.get("tokenizer.chat_template")
        return {
            "backend": self.name,
            "llama_cpp_python": self.version,
            "model_path": self.config.model_path,
            "model_sha256": self.info.sha256,
            "file_type": self.info.file_type,
            "tensor_types": self.info.tensor_types,
            "chat_template_sha256": hashlib.sha256(template.encode()).hexdigest() if template else None,
            "chat_format": self.llm.chat_format,
            "lora_path": self.llm.lora_path,
            "lora_sha256": self.lora_sha256,
            "lora_scale": self.llm.lora_scale if self.llm.lora_path else None,
            "n_threads": cp.n_threads,
            "n_threads_batch": cp.n_threads_batch,
            "n_ctx": self.llm.n_ctx(),
        }

    def complete(self, request: Request) -> Reply:
        g = request.generation
        if g.thinking:
            raise NotBuilt("thinking mode on the llama-cpp backend is not implemented yet (issue 3)")
        kwargs: dict[str, Any] = {}
        if request.schema:
            kwargs["response_format"] = {"type": "json_object", "schema": json.loads(request.schema)}
        messages = [{"role": r, "content": c} for r, c in request.messages]
        t0 = time.perf_counter()
        out = self.llm.create_chat_completion(
            messages=messages,
            temperature=g.temperature,
            top_p=g.top_p,
            max_tokens=g.max_tokens,
            seed=g.seed,
            stop=list(g.stop) or None,
            **kwargs,
        )
        latency = time.perf_counter() - t0
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Reply(
            text=choice["message"].get("content") or "",
            finish_reason=choice.get("finish_reason") or "unknown",
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=round(latency, 4),
            raw={"id": out.get("id"), "model": out.get("model"), "finish_reason": choice.get("finish_reason")},
        )

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()
            self._llm = None
