"""The named identity patterns a registration starts from (`[judge] scrub` adds patterns, `scrub_drop`
drops one by name), and the engine each pattern runs on. Registered here, applied by judge.judging.blinding.

A registered pattern runs on RE2 (google-re2), whose search takes time linear in the text whatever the pattern:
one with nested quantifiers (`(a+)+$`) cannot backtrack catastrophically after the calls were paid for. A pattern
RE2 cannot run (a backreference, a lookaround, `\\Z`) is refused when prereg.toml is loaded. The defaults below
run on Python's `re` (they use lookarounds, and folders already judged were scrubbed by them): each is written
here, and tests/test_scrub.py times every one on adversarial text.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import re2

# Identity patterns applied to every answer, each under a stable name so a registration can drop one
# (`[judge] scrub_drop`); registered `[judge] scrub` patterns are added to these. The rule for names that
# are also ordinary words: capitalised proper-noun forms are removed, lowercase ones only where the
# lowercase word is not English (chatgpt, qwen, claude) or carries a version (llama-3, mistral-7b).
# So "llama" the animal, "the mistral" (a wind), "google it", "anthropic principle", "meta-analysis",
# "a haiku", "a sonnet" and "magnum opus" stay; a capitalised "Llama", "Gemini" or "Claude" goes,
# even when it begins a sentence about the animal, the zodiac sign or a person.
_TAIL = r"(?:[\w.-]*\w)?"  # the rest of a model id (GPT-4o-mini, Qwen2.5-7B-Instruct), not a final "."
_VERSION = r"(?:[ -]?\d+(?:[.-]\d+)*[a-z]?)"
DEFAULT_SCRUB = {
    # a thought, also one cut off by max_tokens, or one whose opening tag was in the prompt (a chat template's)
    "think": r"(?s)<think>.*?(?:</think>|\Z)|\A(?:(?!<think>).)*?</think>",
    "openai": rf"(?i)\b(?:chat ?gpt{_TAIL}|gpt-?\d{_TAIL}|openai)\b",
    "anthropic": rf"\b(?i:claude)(?:{_VERSION}?[ -](?i:sonnet|opus|haiku|instant))?{_VERSION}?\b"
                 r"|\b(?:Anthropic|ANTHROPIC)\b",
    "google": rf"\b(?:Gemini|GEMINI)(?:{_VERSION}?(?:[ -](?:Pro|Ultra|Flash|Nano|Advanced))?)?\b"
              rf"|\b(?i:gemini)-\d{_TAIL}"
              rf"|\b(?i:gemma){_VERSION}?{_TAIL}\b|\b(?:Google(?: DeepMind)?|GOOGLE|DeepMind|PaLM(?: ?\d)?)\b",
    "meta": rf"\b(?:Llama|LLaMA|LLAMA|Code Llama)(?:{_VERSION}{_TAIL})?\b|\b(?i:llama)-?\d{_TAIL}\b"
            r"|\bMeta(?:\s+(?:AI|Platforms)\b|(?=['’]s\b|\s+(?:Llama|LLaMA)\b))"
            r"|(?:(?<=\bby )|(?<=\bfrom )|(?<=\bat ))Meta\b",
    "alibaba": rf"(?i)\b(?:qwen{_TAIL}|alibaba(?: cloud)?|tongyi(?: qianwen)?)\b",
    "deepseek": rf"(?i)\bdeep-?seek{_TAIL}\b",
    "mistral": rf"\b(?:Mistral|MISTRAL)(?: AI\b|{_VERSION}{_TAIL})?\b|\b(?i:mistral)-?\d{_TAIL}\b"
               rf"|\b(?i:mixtral|codestral|ministral|magistral|devstral){_TAIL}\b",
    "microsoft": rf"(?i)\bphi-?\d{_TAIL}\b",
    "huggingface": rf"(?i)\b(?:smol ?lm{_TAIL}|hugging ?face)\b",
    "as-an-ai": r"(?i)\bas an ai (?:language )?model\b",
}


def scrub_patterns(extra: tuple[str, ...] = (), drop: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The defaults not dropped by name, then the registered extra patterns."""
    return tuple(p for name, p in DEFAULT_SCRUB.items() if name not in drop) + tuple(extra)


DEFAULT_PATTERNS = frozenset(DEFAULT_SCRUB.values())


def _re2_options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is reported as bad input, not also logged to stderr by RE2
    return options


def refusal(pattern: str) -> str | None:
    """Why a registered pattern cannot run on RE2 (as RE2 says it), or None when it can."""
    try:
        compiled(pattern)
    except re2.error as e:
        said = e.args[0] if e.args else "refused"
        return said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)
    except UnicodeEncodeError:
        return "it holds a lone surrogate, which is no text"
    return None


@dataclass(frozen=True)
class RE2Pattern:
    """A registered pattern on RE2, replaced as `re.Pattern.subn` replaces (the replacement taken literally)."""

    regex: Any

    @property
    def pattern(self) -> str:
        return self.regex.pattern

    def subn(self, repl: str, text: str) -> tuple[str, int]:
        """`text` with each match replaced by `repl`, and the number of matches. google-re2's own subn finds an empty
        match a second time when it lies past where the search began (`a*$` on "1" twice): it is one match."""
        parts, last, n, previous = [], 0, 0, None
        for m in self.regex.finditer(text):
            if m.span() == previous:
                continue
            previous = m.span()
            parts += [text[last:m.start()], repl]
            last, n = m.end(), n + 1
        return "".join([*parts, text[last:]]), n


@functools.lru_cache(maxsize=1024)
def compiled(pattern: str) -> Any:
    """The pattern ready to run (`.subn(repl, text)`): a default on Python's re, any other (registered) on RE2."""
    return re.compile(pattern) if pattern in DEFAULT_PATTERNS else RE2Pattern(re2.compile(pattern, _re2_options()))
