"""Context budgets, checked before the first model call: a prompt that cannot fit is refused up front.

llama.cpp refuses a prompt of n_ctx tokens or more (a traceback after earlier calls were paid for)
and silently shortens max_tokens when prompt + max_tokens exceeds n_ctx. So for every in-process
model the prompt is rendered with the chat template and counted with the model's own tokenizer,
exactly as the backend will (a vocab-only load: no weights, no forward pass), and
prompt + max_tokens <= n_ctx is required. A glue arm's prompt is its first model call, taken by
running the glue with a call function that stops it there. HTTP models are not counted: their
tokenizer and context window are the server's, unknown here.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.errors import BadInput
from models.backends.registry import backend_info
from models.sources import chat_template, model_source
from models.spec import ModelSpec, Runtime
from registration.questions import Question
from registration.spec import ArmSpec

from .collect import plain_messages
from .glue import load_glue


@lru_cache(maxsize=8)
def tokenizer(model_path: str) -> Any:
    """The model's vocabulary alone (no weights, no context, no forward pass), through the one llama.cpp loader."""
    from models.llama_loader import load_vocab

    return load_vocab(model_path)


@dataclass(frozen=True)
class Counter:
    """Counts a chat prompt's tokens as the llama.cpp backend will send it (llama-cpp-python's chat handler
    renders the template, then tokenizes with a BOS unless the template wrote one). Every prompt of a run is
    counted here before the first call, so a chat template that fails on one (a `raise_exception`, a filter
    applied to the wrong type) is refused here, naming the template, not mid-run."""

    vocab: Any
    formatter: Any
    template: str = "the chat template"  # where the template came from, for messages

    def __call__(self, messages: list[tuple[str, str]], thinking: bool = False) -> int:
        try:
            result = self.formatter(messages=[{"role": r, "content": c} for r, c in messages],
                                    enable_thinking=thinking)
        except Exception as e:  # the template is the user's code: any failure of it is bad input
            raise BadInput(self.template, f"the chat template fails on a prompt of this run ({len(messages)} "
                           f"messages, roles {[r for r, _ in messages]}): {type(e).__name__}: {e}",
                           line=template_line(e), field="chat_template") from None
        return len(self.vocab.tokenize(result.prompt.encode("utf-8"), not result.added_special, True))


def template_line(e: BaseException) -> int | None:
    """The template line an error of a rendering jinja2 template arose at (jinja2 writes the template's lines into
    the traceback as frames of "<template>")."""
    import traceback

    lines = [f.lineno for f in traceback.extract_tb(e.__traceback__) if f.filename == "<template>"]
    return getattr(e, "lineno", None) or (lines[-1] if lines else None)


def counter(model: ModelSpec, exp_dir: Path) -> Counter | None:
    """A token counter for a llama-cpp model (the source file's vocabulary: every quant shares it); None for HTTP."""
    if not backend_info(model.backend).local:
        return None
    from jinja2 import TemplateError
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    source = model_source(model, exp_dir)
    vocab = tokenizer(str(source))
    template, where = chat_template(model, exp_dir)
    if template is None:  # the GGUF's own, as the backend reads it back
        template, where = vocab.metadata().get("tokenizer.chat_template"), f"{source} (its own chat template)"
    if template is None:
        raise BadInput(source, "the GGUF has no chat template: register one with chat_template = FILE",
                       field="chat_template")
    eos, bos = vocab.token_eos(), vocab.token_bos()

    def text(t: int) -> str:
        return vocab.detokenize([t], special=True).decode("utf-8", "replace")

    try:
        formatter = Jinja2ChatFormatter(template, eos_token=text(eos), bos_token=text(bos), stop_token_ids=[eos])
    except TemplateError as e:  # compiled as the backend compiles it: a syntax error or unknown filter stops here
        raise BadInput(where, f"the chat template does not parse: {e}", line=getattr(e, "lineno", None),
                       field="chat_template") from None
    return Counter(vocab, formatter, where)


class _FirstCall(BaseException):
    """Stops a glue at its first model call (BaseException: a glue's own `except Exception` cannot swallow it)."""

    def __init__(self, messages: list[tuple[str, str]]):
        super().__init__()
        self.messages = messages


def first_prompt(arm: ArmSpec, question: Question, exp_dir: Path) -> list[tuple[str, str]] | None:
    """The messages of the arm's first model call on this question; None when its glue answers without one."""
    if not arm.glue:
        return plain_messages(arm, question)

    def stop(messages: list[tuple[str, str]]) -> Any:
        raise _FirstCall(list(messages))

    glue = load_glue(arm.glue, exp_dir)
    try:
        glue(question, stop, exp_dir)
    except _FirstCall as call:
        return call.messages
    except Exception as e:  # the glue fails before calling a model: it would fail the same way in the run
        raise BadInput(exp_dir / "prereg.toml", f"glue {arm.glue!r} of arm {arm.name!r} fails on question "
                       f"{question.id!r} ({question.set}:{question.line}) before any model call: "
                       f"{type(e).__name__}: {e}", field="glue") from None
    return None


def check_budget(prompt: int, max_tokens: int, runtime: Runtime, question: Question, set_path: Path, what: str,
                 answer: int = 0) -> None:
    """prompt + answer + max_tokens <= n_ctx, else BadInput at the question's line. `answer` is the room a judge
    prompt keeps for the answers it will show: the arms' max_tokens (their answers are bounded by it)."""
    total = prompt + answer + max_tokens
    if total > runtime.n_ctx:
        parts = (f"the prompt is {prompt} tokens"
                 + (f" with the answer left empty, the answers up to {answer} (the arms' max_tokens)" if answer else "")
                 + f", max_tokens {max_tokens}")
        raise BadInput(set_path, f"question {question.id!r} does not fit the context of {what}: {parts}; together "
                       f"{total} > n_ctx {runtime.n_ctx} ([runtime] n_ctx in prereg.toml). Shorten the question or "
                       "raise n_ctx", line=question.line or None, field="question")


def check_arms(arms: list[ArmSpec], models: dict[str, ModelSpec], questions: list[Question], set_paths: list[Path],
               exp_dir: Path, runtime: Runtime) -> None:
    """Refuse, before any call, a question whose prompt (+ the arm's max_tokens) overflows an in-process arm's
    context."""
    paths = {p.name: p for p in set_paths}
    for arm in arms:
        if arm.glue:
            load_glue(arm.glue, exp_dir)  # an import error is refused now, whatever the backend
        count = counter(models[arm.model], exp_dir)
        if count is None:
            continue
        for q in questions:
            messages = first_prompt(arm, q, exp_dir)
            if messages is not None:
                check_budget(count(messages, arm.generation.thinking), arm.generation.max_tokens, runtime, q,
                             paths.get(q.set, Path(q.set)), f"arm {arm.name!r} (model {arm.model!r})")
