"""A scripted HTTP peer for the official `openai` and `anthropic` SDKs: protocol and fault handling, not a model.

It answers `POST /v1/chat/completions` (OpenAI), `POST /v1/messages` (Anthropic, with a `tool_use`
block when a tool call was forced) and `GET /v1/models` on 127.0.0.1, replaying one scripted
`Step` per call: a reply text (raw newlines inside JSON strings, code fences, prose — whatever
the test needs the "model" to say), a structured verdict, a raw HTTP body (malformed JSON, empty,
any JSON shape, bytes that are not UTF-8), an HTTP error with or without Retry-After, a connection
reset, a truncated response (headers promising more body than is sent, or a chunked body without its
last chunk, then a close), a trickled response (one byte at a time, each well within any per-read timeout, the
whole lasting minutes), each after an optional delay. The script is a list consumed in order or
a function of the request. Every call is logged with its arrival time, and a call whose client hung
up before the reply (a client timeout) with the time it did, so tests can measure what a client did
(how long it waited, when it gave up, how many requests were in flight), which a patched client
could not show.

    with ScriptedServer([fail(429, retry_after=1), verdict({"score": 2})]) as server:
        OpenAI(base_url=server.openai_url, api_key="x") ...

Calls must authenticate like the real APIs, with `x-api-key` or `Authorization: Bearer` (the
anthropic SDK 2.x sends the latter for an api_key). Token counts in replies are whitespace word
counts: the server is not a tokenizer.
"""
from __future__ import annotations

import argparse
import json
import select
import signal
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import urlsplit

ROUTES = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}


TRUNCATIONS = (None, "length", "chunked")
TRICKLES = (None, "all", "body")


@dataclass(frozen=True)
class Step:
    """What the server does for one call. Build with `reply`, `verdict`, `raw_body`, `fail`, `reset` or `truncated`."""

    text: str = ""  # the model's reply (OpenAI message content; Anthropic text block)
    tool_input: dict[str, Any] | None = None  # Anthropic: answer a forced tool call with this tool_use input
    status: int = 200
    body: str | bytes | None = None  # sent verbatim instead of a well-formed reply (text as UTF-8, bytes as they are)
    retry_after: float | None = None
    reset: bool = False  # drop the connection without answering
    delay_s: float = 0.0
    truncate: str | None = None  # "length": Content-Length says more than is sent; "chunked": no last chunk
    thinking: str | None = None  # OpenAI: reasoning_content + reasoning tokens; Anthropic: a thinking block
    trickle: str | None = None  # "all": the whole response a byte at a time; "body": the headers at once, then so
    trickle_every_s: float = 0.2  # trickle: seconds between two bytes
    trickle_lasts_s: float = 120.0  # trickle: the body is padded (JSON whitespace) so the response lasts this long

    def __post_init__(self) -> None:
        if self.truncate not in TRUNCATIONS:
            raise ValueError(f"truncate must be one of {TRUNCATIONS}, got {self.truncate!r}")
        if self.trickle not in TRICKLES:
            raise ValueError(f"trickle must be one of {TRICKLES}, got {self.trickle!r}")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Step":
        return cls(**d)


def reply(text: str, delay_s: float = 0.0, thinking: str | None = None) -> Step:
    """Plain text; on the Anthropic route a text block even when a tool call was forced (as llama-server does)."""
    return Step(text=text, delay_s=delay_s, thinking=thinking)


def verdict(fields: dict[str, Any], delay_s: float = 0.0, thinking: str | None = None) -> Step:
    """A well-formed structured answer: JSON text for OpenAI, a tool_use block when Anthropic tools were offered."""
    return Step(text=json.dumps(fields), tool_input=dict(fields), delay_s=delay_s, thinking=thinking)


def raw_body(body: str | bytes, status: int = 200, delay_s: float = 0.0) -> Step:
    """A body the SDK must cope with: malformed JSON, "" for an empty one, any JSON the API never promised
    (`json.dumps` of it: a lone surrogate goes out as its escape `\\ud800`), or bytes that are not UTF-8."""
    return Step(body=body, status=status, delay_s=delay_s)


def fail(status: int, retry_after: float | None = None, delay_s: float = 0.0) -> Step:
    """An HTTP error in the route's own error format, optionally with a Retry-After header (seconds)."""
    return Step(status=status, retry_after=retry_after, delay_s=delay_s)


def reset(delay_s: float = 0.0) -> Step:
    """Close the connection with a TCP reset and no response."""
    return Step(reset=True, delay_s=delay_s)


def truncated(how: str = "length", text: str = "", body: str | None = None, delay_s: float = 0.0) -> Step:
    """A 200 whose body stops half way and the connection closes (FIN): the non-streaming "cut-off reply".

    "length": the headers announce the whole body's Content-Length, half of it is sent; "chunked":
    `Transfer-Encoding: chunked`, half the body in one chunk, never the terminating zero-size chunk.
    The body is the well-formed reply for `text` (or `body` verbatim), so only the HTTP framing
    tells the client that it is incomplete.
    """
    return Step(text=text, body=body, truncate=how, delay_s=delay_s)


def trickled(how: str = "all", text: str = "", every_s: float = 0.2, lasts_s: float = 120.0) -> Step:
    """A well-formed reply for `text` sent one byte every `every_s` seconds, so no single read waits long, padded
    to last `lasts_s` seconds: "all" trickles the status line and headers too, "body" sends them at once. The
    server stops when the client hangs up (logged in `abandoned`)."""
    return Step(text=text, tool_input={"text": text}, trickle=how, trickle_every_s=every_s, trickle_lasts_s=lasts_s)


@dataclass(frozen=True)
class Seen:
    """One call as the server received it."""

    index: int  # 0-based order of arrival among scripted calls
    api: str  # "openai" | "anthropic"
    model: str | None
    prompt: str  # every message's text, system first, joined by newlines: what scripts key on
    body: dict[str, Any]
    headers: dict[str, str]  # lower-cased names
    arrived: float  # time.monotonic() at arrival


Script = list[Step] | Callable[[Seen], Step]
EXHAUSTED = Step(status=500, body=json.dumps({"error": {"type": "api_error",
                                                        "message": "scripted server: script exhausted"}}))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def _prompt(api: str, body: dict[str, Any]) -> str:
    parts = [_text(body.get("system"))] if api == "anthropic" and body.get("system") else []
    parts += [_text(m.get("content")) for m in body.get("messages", []) if isinstance(m, dict)]
    return "\n".join(parts)


def _error_body(api: str, status: int, message: str) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
            429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
    if api == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "code": None, "param": None}}


def _openai_reply(seen: Seen, step: Step) -> dict[str, Any]:
    thought = len((step.thinking or "").split())
    return {
        "id": f"chatcmpl-scripted-{seen.index}", "object": "chat.completion", "created": int(time.time()),
        "model": seen.model or "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": step.text,
                                             **({"reasoning_content": step.thinking} if step.thinking else {})},
                     "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": len(seen.prompt.split()), "completion_tokens": len(step.text.split()) + thought,
                  "total_tokens": len(seen.prompt.split()) + len(step.text.split()) + thought,
                  "completion_tokens_details": {"reasoning_tokens": thought}},
    }


def _anthropic_reply(seen: Seen, step: Step) -> dict[str, Any]:
    tools = seen.body.get("tools") or []
    forced = (seen.body.get("tool_choice") or {}).get("name") or (tools[0].get("name") if tools else None)
    if tools and step.tool_input is not None:
        content = [{"type": "tool_use", "id": f"toolu_scripted_{seen.index}", "name": forced,
                    "input": step.tool_input}]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": step.text}], "end_turn"
    thought = len((step.thinking or "").split())
    if step.thinking:
        content = [{"type": "thinking", "thinking": step.thinking, "signature": "scripted"}, *content]
    return {
        "id": f"msg_scripted_{seen.index}", "type": "message", "role": "assistant",
        "model": seen.model or "scripted", "content": content, "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": len(seen.prompt.split()), "output_tokens": len(step.text.split()) + thought,
                  "output_tokens_details": {"thinking_tokens": thought}},
    }


def _bytes(body: str | bytes) -> bytes:
    return body if isinstance(body, bytes) else body.encode()


def _model_info(model: str, thinking_types: tuple[str, ...]) -> dict[str, Any]:
    """Anthropic's `GET /v1/models/{id}` with the capabilities the backend reads back."""
    types = {k: {"supported": k in thinking_types} for k in ("adaptive", "between_tools", "disabled", "enabled")}
    return {"type": "model", "id": model, "display_name": model, "created_at": "2026-01-01T00:00:00Z",
            "capabilities": {"thinking": {"supported": bool(thinking_types), "types": types}}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    disable_nagle_algorithm = True  # headers and body go out in two writes: Nagle + delayed ACK cost 40 ms each
    server: "_Server"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the call log is `ScriptedServer.seen`

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), headers)

    def _send_truncated(self, how: str, body: bytes) -> None:
        part = body[:max(1, len(body) // 2)]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if how == "length":
            self.send_header("Content-Length", str(len(body)))
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.write(part if how == "length" else b"%x\r\n%s\r\n" % (len(part), part))
        self.wfile.flush()
        self.close_connection = True  # finish() then closes: the client reads EOF in the middle of the body

    def _send_trickled(self, step: Step, body: bytes) -> bool:
        """A 200 for `body` a byte at a time (see `trickled`); False as soon as the client hangs up."""
        body += b" " * max(0, int(step.trickle_lasts_s / step.trickle_every_s) - len(body))
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                "\r\n").encode()
        if step.trickle == "body":
            self.connection.sendall(head)
        for i in range(len(data := body if step.trickle == "body" else head + body)):
            self.connection.sendall(data[i:i + 1])
            if not self._wait(step.trickle_every_s):
                return False
        return True

    def _wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, watching the connection; False as soon as the client hangs up (reads EOF)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([self.connection], [], [], left)
            if not readable:
                continue
            try:
                data = self.connection.recv(1, socket.MSG_PEEK)
            except OSError:  # reset by the client
                return False
            if not data:
                return False
            time.sleep(left)  # the client sent more (a pipelined request): nothing to watch for
            break
        return True

    def do_GET(self) -> None:
        path, owner = urlsplit(self.path).path, self.server.owner
        model = path.removeprefix("/v1/models/")
        if owner.thinking_types is not None and model != path and model in owner.models:
            return self._json(200, _model_info(model, owner.thinking_types))
        if path != "/v1/models":
            return self._json(404, _error_body("openai", 404, f"no route GET {self.path}"))
        self._json(200, {"object": "list", "data": [{"id": m, "object": "model", "created": 0, "owned_by": "scripted"}
                                                    for m in self.server.owner.models]})

    def do_POST(self) -> None:
        owner = self.server.owner
        arrived = time.monotonic()
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        api = ROUTES.get(urlsplit(self.path).path)
        if api is None:
            return self._json(404, _error_body("openai", 404, f"no route POST {self.path}"))
        headers = {k.lower(): v for k, v in self.headers.items()}
        if not (headers.get("authorization", "").startswith("Bearer ") or headers.get("x-api-key")):
            return self._json(401, _error_body(api, 401, "missing x-api-key or Authorization: Bearer header"))
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            return self._json(400, _error_body(api, 400, f"request body is not JSON: {e}"))
        step, seen = owner._next(api, body, headers, arrived)
        with owner._lock:
            owner._inflight += 1
            owner.max_inflight = max(owner.max_inflight, owner._inflight)
        try:
            self._play(api, seen, step)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up while we were writing
            owner._hung_up(seen)
            self.close_connection = True
        finally:
            with owner._lock:
                owner._inflight -= 1

    def _play(self, api: str, seen: Seen, step: Step) -> None:
        if step.delay_s > 0 and not self._wait(step.delay_s):
            self.server.owner._hung_up(seen)  # a client timeout: nobody is left to answer
            self.close_connection = True
            return
        if step.reset:
            # linger 0: the kernel answers with RST when the last reference (rfile, closed in finish()) goes
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if step.trickle:
            full = json.dumps((_openai_reply if api == "openai" else _anthropic_reply)(seen, step)).encode()
            if not self._send_trickled(step, full):
                self.server.owner._hung_up(seen)
                self.close_connection = True
            return
        if step.truncate:
            full = step.body if step.body is not None else json.dumps(
                (_openai_reply if api == "openai" else _anthropic_reply)(seen, step))
            return self._send_truncated(step.truncate, _bytes(full))
        if step.body is not None:
            return self._send(step.status, _bytes(step.body))
        if step.status != 200:
            headers = {"Retry-After": f"{step.retry_after:g}"} if step.retry_after is not None else None
            return self._json(step.status, _error_body(api, step.status, f"scripted HTTP {step.status}"), headers)
        self._json(200, (_openai_reply if api == "openai" else _anthropic_reply)(seen, step))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # kept-alive client connections must not hold up close()
    request_queue_size = 128  # the default 5 drops SYNs when 16 clients connect at once (1 s retransmit)
    owner: "ScriptedServer"


@dataclass
class ScriptedServer:
    """The server; a context manager. `seen` logs every scripted call; `max_inflight` is the peak concurrency;
    `abandoned` maps a call's index to the seconds after its arrival at which the client hung up unanswered."""

    script: Script
    default: Step | None = None  # what a list script answers once exhausted; None: HTTP 500 saying so
    models: tuple[str, ...] = ("scripted",)  # what GET /v1/models lists
    thinking_types: tuple[str, ...] | None = None  # Anthropic GET /v1/models/{id} capabilities; None: no such route
    port: int = 0
    seen: list[Seen] = field(default_factory=list, init=False)
    max_inflight: int = field(default=0, init=False)
    abandoned: dict[int, float] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._inflight = 0
        self._steps = list(self.script) if isinstance(self.script, list) else None
        self._httpd: _Server | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def openai_url(self) -> str:
        """base_url for the openai SDK (it appends /chat/completions)."""
        return self.url + "/v1"

    @property
    def anthropic_url(self) -> str:
        """base_url for the anthropic SDK (it appends /v1/messages)."""
        return self.url

    @property
    def count(self) -> int:
        return len(self.seen)

    def gaps(self) -> list[float]:
        """Seconds between consecutive arrivals: how long a client waited before retrying."""
        return [b.arrived - a.arrived for a, b in zip(self.seen, self.seen[1:], strict=False)]

    def _hung_up(self, seen: Seen) -> None:
        with self._lock:
            self.abandoned.setdefault(seen.index, time.monotonic() - seen.arrived)

    def _next(self, api: str, body: dict[str, Any], headers: dict[str, str], arrived: float) -> tuple[Step, Seen]:
        with self._lock:
            seen = Seen(len(self.seen), api, body.get("model"), _prompt(api, body), body, headers, arrived)
            self.seen.append(seen)
            if self._steps is not None:
                return (self._steps.pop(0) if self._steps else self.default or EXHAUSTED), seen
        return self.script(seen), seen  # a function of the request runs outside the lock: it may be slow

    def start(self) -> "ScriptedServer":
        self._httpd = _Server(("127.0.0.1", self.port), _Handler)
        self._httpd.owner = self
        # poll every 50 ms (default 500): stop() returns that much sooner, in every test that uses a server
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="scripted-server", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


GOOD_VERDICT = {"rationale": "Agrees with the reference.", "score": 2, "harmful": False}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python tests/support/scripted_server.py",
                                description="Serve scripted OpenAI/Anthropic replies on 127.0.0.1 (a test peer, "
                                            "not a model). Prints the base URL, serves until interrupted or "
                                            "terminated, then "
                                            'prints {"calls": N, "max_inflight": M, "abandoned": K} to stderr '
                                            "(K: calls whose client hung up before the reply, e.g. timed out).")
    p.add_argument("--port", type=int, default=0, help="0 (default): any free port")
    p.add_argument("--latency", type=float, default=0.0, help="seconds to wait before every default reply")
    p.add_argument("--reply", help="text of every default reply (default: a valid correctness verdict, also as "
                                   "a tool_use block for forced Anthropic tool calls)")
    p.add_argument("--script", help="JSON file: a list of steps replayed in order before the default, e.g. "
                                    '[{"status": 429, "retry_after": 1}, {"body": "{not json"}, {"reset": true}, '
                                    '{"delay_s": 5}, {"truncate": "length"}, {"truncate": "chunked"}, '
                                    '{"trickle": "all", "trickle_every_s": 0.2, "trickle_lasts_s": 120}]')
    p.add_argument("--models", default="scripted", help="comma-separated names GET /v1/models lists")
    a = p.parse_args(argv)
    default = reply(a.reply, a.latency) if a.reply is not None else verdict(GOOD_VERDICT, a.latency)
    steps = []
    if a.script:
        with open(a.script, encoding="utf-8") as f:
            steps = [Step.from_dict(d) for d in json.load(f)]
    server = ScriptedServer(steps, default=default, models=tuple(a.models.split(",")), port=a.port).start()
    print(server.url, flush=True)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # terminate() stops it as cleanly as Ctrl-C
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        print(json.dumps({"calls": server.count, "max_inflight": server.max_inflight,
                          "abandoned": len(server.abandoned)}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
