"""The named identity patterns a registration starts from (`[judge] scrub` adds patterns, `scrub_drop`
drops one by name). Registered here, applied by judge.blinding."""
from __future__ import annotations

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
