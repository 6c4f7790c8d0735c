"""Retries for HTTP backends: exponential backoff with jitter, honouring Retry-After, bounded.

What still fails after the registered number of attempts propagates to the caller, which records
an `error` row with the cause; it is never turned into an empty answer or a score.

Retried: HTTP 408/409/429/5xx/529, client timeouts (the SDKs' `APITimeoutError`; httpx/httpcore
`TimeoutException`s such as `ReadTimeout`; an attempt past its total deadline, models.deadline), lost
connections and replies cut off mid-body (the SDKs' `APIConnectionError`, wrapping httpx `RemoteProtocolError` /
`ReadError`), and the stdlib's `ConnectionError` / `TimeoutError`. Not retried: other 4xx (the request's fault),
and a complete 2xx body that is not a reply (`json.JSONDecodeError`, `MalformedReply`): the server answered, and
asking again would repeat a possibly billed call.
"""
from __future__ import annotations

import functools
import json
from typing import Any, Callable, TypeVar

from tenacity import RetryCallState, retry, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from core.text import has_surrogate, shown

T = TypeVar("T")

RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
# Classes matched by name anywhere in the exception's MRO, so the SDKs' and either httpx package's
# (`httpx`/`httpcore`, or the `httpx2`/`httpcore2` the SDKs may depend on) are all recognised.
TIMEOUTS = {"APITimeoutError", "TimeoutException", "TimeoutError"}
LOST_CONNECTIONS = {"APIConnectionError", "NetworkError", "RemoteProtocolError", "ConnectionError"}
HTTP_MODULES = {"openai", "anthropic", "httpx", "httpcore", "httpx2", "httpcore2"}


REPLY_KINDS = ("malformed_reply", "empty", "refusal")


class MalformedReply(Exception):
    """A complete 2xx reply that is not an answer: a failed call, recorded as an `error` row, never as text.

    `kind` says why: "malformed_reply" (no `choices`, no `content`, a field of the wrong type, a token count
    that is no count, text that is not Unicode), "empty" (no text: `content: null`, no text block, tool calls
    only, or only whitespace) or "refusal" (the model declined: OpenAI's `refusal`, a `content_filter` finish,
    Anthropic's `stop_reason: "refusal"`). Backends raise it instead of indexing into a reply that is not there
    (which would be a TypeError, indistinguishable from a bug); `body` keeps what the server sent.
    """

    def __init__(self, message: str, body: str | None = None, kind: str = "malformed_reply"):
        super().__init__(message)
        if kind not in REPLY_KINDS:
            raise ValueError(f"kind must be one of {REPLY_KINDS}, got {kind!r}")
        self.body = body
        self.kind = kind


TOKENS_MAX = 2**53  # JSON's exact integers (I-JSON): no reply counts as many tokens


def field(obj: Any, name: str) -> Any:
    """`obj.name` of a reply object the SDK built without validating (so it may hold a dict, a list or a number
    where the API promises an object), or None."""
    if isinstance(obj, dict):
        return obj.get(name)
    if isinstance(obj, (str, bytes, int, float, list, tuple)) or obj is None:
        return None
    return getattr(obj, name, None)


def reply_name(value: Any) -> str | None:
    """A reply's id or model name as recorded: a string (any lone surrogate escaped), else None."""
    return shown(value) if isinstance(value, str) else None


def decoded(call: Callable[..., T]) -> Callable[..., T]:
    """An SDK call whose reply body cannot be decoded raises MalformedReply (an `error` row saying why), not what
    the SDK's JSON parsing lets through: a UnicodeDecodeError (a body that is not UTF-8) or a RecursionError (JSON
    nested deeper than the parser's recursion limit)."""
    @functools.wraps(call)
    def wrapped(*args: Any, **kwargs: Any) -> T:
        try:
            return call(*args, **kwargs)
        except UnicodeDecodeError as e:
            raise MalformedReply(f"the reply body is not UTF-8: {e}") from None
        except RecursionError:
            raise MalformedReply("the reply body nests JSON too deep to parse") from None

    return wrapped


def token_count(value: Any, name: str, body: Callable[[], str]) -> int:
    """A reply's token count: absent is 0; else a JSON number of integer value in [0, 2^53) (12.0 is 12, as the
    OpenAI SDK already reads it), or the reply is malformed: a negative, fractional, textual or boolean count must
    never reach the cost table."""
    if value is None:
        return 0
    if type(value) is float and value.is_integer():
        value = int(value)
    if type(value) is not int or not 0 <= value < TOKENS_MAX:
        raise MalformedReply(f"{name} is not a token count: {shown(repr(value))[:100]}", body=body())
    return value


def optional_text(value: Any, name: str, body: Callable[[], str]) -> str:
    """A text field of a reply that may be absent: "" when absent, else a string of Unicode text."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedReply(f"{name} is not a string: {type(value).__name__}", body=body())
    if has_surrogate(value):
        raise MalformedReply(f"{name} is not Unicode text: it holds a lone surrogate (e.g. the escape \\ud800)",
                             body=body())
    return value


def answer_text(value: Any, name: str, body: Callable[[], str], refusal: str | None = None) -> str:
    """The text a reply answers with, or MalformedReply saying why there is none: "refusal" when the server says
    the model declined, "empty" when there is no text or only whitespace, "malformed_reply" when it is no text."""
    if refusal:
        raise MalformedReply(f"the model refused: {shown(refusal)[:300]}", body=body(), kind="refusal")
    text = optional_text(value, name, body)
    if not text.strip():
        what = "absent (null)" if value is None else "empty" if not text else "only whitespace"
        raise MalformedReply(f"no answer: {name} is {what}", body=body(), kind="empty")
    return text


class BatchFailed(Exception):
    """A call the provider's batch did not answer (its result errored, or the batch itself failed or could not be
    followed): a failed call, recorded as an `error` row and asked again by the next run, never paid for again
    synchronously in this one. `status` is the HTTP status the provider gave the request, when it gave one."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status_code = status


def reply_body(out: Any) -> str:
    """A reply object the SDK built from a body (it does not validate), back as JSON text for `MalformedReply`."""
    to_json = getattr(out, "to_json", None)
    if callable(to_json):
        try:
            return to_json(indent=None)
        except Exception:  # a half-built model: fall back to its repr
            return repr(out)
    try:
        return json.dumps(out, default=str)
    except (TypeError, ValueError):
        return repr(out)


def _names(exc: BaseException) -> set[str]:
    return {c.__name__ for c in type(exc).__mro__}


def is_timeout(exc: BaseException) -> bool:
    return bool(_names(exc) & TIMEOUTS)


def retryable(exc: BaseException) -> bool:
    """Worth another attempt: rate limits, overload, server errors, timeouts, lost or cut-off connections."""
    status = getattr(exc, "status_code", None)
    if status is not None:
        return int(status) in RETRYABLE_STATUS
    return bool(_names(exc) & (TIMEOUTS | LOST_CONNECTIONS))


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
    failures = (OSError, TimeoutError, MalformedReply, BatchFailed)
    if getattr(exc, "status_code", None) is not None or isinstance(exc, failures):
        return True
    if isinstance(exc, json.JSONDecodeError):  # the SDKs parse a reply body with json and let this through
        return True
    module = type(exc).__module__.split(".")[0]
    return module in HTTP_MODULES


def _causes(exc: BaseException) -> list[BaseException]:
    out, seen = [], {id(exc)}
    e = exc.__cause__ or exc.__context__
    while e is not None and id(e) not in seen and len(out) < 4:
        out.append(e)
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return out


def _timeout_s(exc: BaseException) -> float | None:
    """The client timeout the request was sent with (httpx records it on the request)."""
    try:
        timeout = exc.request.extensions["timeout"]  # type: ignore[attr-defined]
        return timeout.get("read") if isinstance(timeout, dict) else None
    except (AttributeError, KeyError, TypeError, RuntimeError):
        return None


def kind(exc: BaseException) -> str:
    """timeout | connection | http_status | malformed_reply | empty | refusal | batch | other: what went wrong, in
    one word."""
    if isinstance(exc, BatchFailed):
        return "batch"
    if is_timeout(exc) or any(is_timeout(c) for c in _causes(exc)):
        return "timeout"
    if getattr(exc, "status_code", None) is not None and not (200 <= int(exc.status_code) < 300):
        return "http_status"
    if isinstance(exc, MalformedReply):
        return exc.kind
    if isinstance(exc, json.JSONDecodeError) or "ValidationError" in _names(exc):
        return "malformed_reply"
    if _names(exc) & LOST_CONNECTIONS or any(_names(c) & LOST_CONNECTIONS for c in _causes(exc)):
        return "connection"
    return "other"


def describe(exc: BaseException) -> dict[str, Any]:
    """A failure as recorded in an error row: type, kind, HTTP status when there is one, message.

    The message names the underlying transport error the SDK wrapped (e.g. "ReadTimeout: timed
    out", "RemoteProtocolError: peer closed connection without sending complete message body"),
    the client timeout for a timeout, and `body` keeps the start of an unreadable reply body.
    """
    k = kind(exc)
    message = str(exc)
    causes = _causes(exc)
    if causes:  # the SDKs wrap the transport error in a generic one ("Connection error."): name it
        message += f" [{type(causes[0]).__name__}" + (f": {causes[0]}]" if str(causes[0]) else "]")
    if k == "timeout":
        passed = next((c for c in (exc, *causes) if type(c).__name__ == "DeadlinePassed"), None)  # models.deadline
        t = _timeout_s(exc)
        limit = (f" at the total deadline of {passed.seconds:g} s" if passed is not None
                 else f" after the client timeout of {t:g} s" if t is not None else "")
        message = "timed out" + limit + ": " + message
    status = getattr(exc, "status_code", None)
    out: dict[str, Any] = {"type": type(exc).__name__, "kind": k,
                           "status": status if type(status) is int else None, "message": shown(message)[:500]}
    body = getattr(exc, "body", None) if isinstance(exc, MalformedReply) else getattr(exc, "doc", None)
    if isinstance(body, str):  # a server's text may hold lone surrogates: written escaped, so the row reads back
        out["body"] = shown(body)[:2000]
    return out
