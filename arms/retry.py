"""Retries for HTTP backends: exponential backoff with jitter, honouring Retry-After, bounded.

What still fails after the registered number of attempts propagates to the caller, which records
an `error` row with the cause; it is never turned into an empty answer or a score.
"""
from __future__ import annotations

import json
from typing import Any, Callable, TypeVar

from tenacity import RetryCallState, retry, retry_if_exception, stop_after_attempt, wait_exponential_jitter

T = TypeVar("T")

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}


def retryable(exc: BaseException) -> bool:
    """Worth another attempt: rate limits, overload, server errors, timeouts, lost connections."""
    status = getattr(exc, "status_code", None)
    if status is not None:
        return int(status) in RETRYABLE_STATUS
    name = type(exc).__name__
    return name in {"APIConnectionError", "APITimeoutError", "ConnectionError", "TimeoutError"}


def _retry_after(exc: BaseException | None) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _wait(max_wait: float) -> Callable[[RetryCallState], float]:
    backoff = wait_exponential_jitter(multiplier=0.5, max=max_wait)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = _retry_after(exc)
        return min(after, max_wait) if after is not None else backoff(state)

    return wait


def with_retries(fn: Callable[..., T], *, attempts: int = 4, max_wait: float = 30.0) -> Callable[..., T]:
    """Wrap `fn` so retryable API errors are retried up to `attempts` times in all."""
    return retry(
        retry=retry_if_exception(retryable),
        stop=stop_after_attempt(attempts),
        wait=_wait(max_wait),
        reraise=True,
    )(fn)


def is_call_failure(exc: BaseException) -> bool:
    """A failure of the model call itself (HTTP status, connection, timeout, malformed reply), which
    becomes an `error` row; anything else is a bug in our code and must stop the run loudly."""
    if getattr(exc, "status_code", None) is not None or isinstance(exc, (OSError, TimeoutError)):
        return True
    if isinstance(exc, json.JSONDecodeError):  # the SDKs parse a reply body with json and let this through
        return True
    module = type(exc).__module__.split(".")[0]
    return module in {"openai", "anthropic", "httpx", "httpcore"}


def describe(exc: BaseException) -> dict[str, Any]:
    """A failure as recorded in an error row: type, HTTP status when there is one, message."""
    return {"type": type(exc).__name__, "status": getattr(exc, "status_code", None), "message": str(exc)[:500]}
