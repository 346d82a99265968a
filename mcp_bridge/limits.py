"""Bounds on MCP requests, checked before the SDK parses them, on stdio and streamable HTTP.

pydantic-core's JSON parser refuses input nested more than 200 levels deep, and both SDKs
(1.26 and 2.x) turn that parse failure into an exception they only log: a request nested that
deep got no answer at all, and its client waited forever. Here every request is measured
first; one larger than MAX_REQUEST_BYTES or nested deeper than nesting.MAX_DEPTH is answered
with a JSON-RPC error carrying the request's id (read without parsing the rest), and the
session goes on with the next request.
"""
from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any, BinaryIO, Optional

from hermes_cmms.common.nesting import MAX_DEPTH, levels, text_depth, too_deep

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 4 * 1024 * 1024  # mcp 2.x's own bound on an HTTP body, kept on stdio and 1.x
TAIL_BYTES = 64 * 1024  # of a request too large to read, the end is kept: mcp 1.x puts the id last
MAX_SKIPPED_BYTES = 256 * 1024 * 1024  # an HTTP body larger than this is not read to its end
INVALID_REQUEST = -32600

_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_ID_VALUE = re.compile(r'\s*:\s*("[^"\\]*(?:\\.[^"\\]*)*"|-?\d+(?![\d.eE]))')
_ID_MEMBER = re.compile(r'"id"' + _ID_VALUE.pattern)


def refusal(data: bytes, complete: bool = True) -> Optional[str]:
    """Why this request is refused, in one sentence, or None to hand it to the SDK.
    `complete` is False when only the first MAX_REQUEST_BYTES + 1 bytes were read."""
    if not complete or len(data) > MAX_REQUEST_BYTES:
        return f"The request is larger than {MAX_REQUEST_BYTES:,} bytes; nothing was done."
    if text_depth(data.decode("utf-8", "replace")) > MAX_DEPTH:
        return too_deep("The request")
    return None


def top_level_id(text: str) -> Any:
    """The `id` member at the top level of the JSON object `text` (a JSON-RPC request id),
    found without parsing the rest; None when there is none to find."""
    depth = 0
    for token in _TOKEN.finditer(text):
        found = token.group()
        if found in ("[", "{"):
            depth += 1
        elif found in ("]", "}"):
            depth -= 1
        elif depth == 1 and found == '"id"':
            value = _ID_VALUE.match(text, token.end())
            if value:
                return json.loads(value.group(1))
    return None


def closing_id(tail: str) -> Any:
    """The `id` member that closes the JSON object whose last bytes are `tail` (what is left
    of a request too large to read: mcp 1.x's client writes the id last); None if none does."""
    for member in reversed(list(_ID_MEMBER.finditer(tail))):
        rest = tail[member.end():]
        after = list(levels(rest))
        if after and after[-1] == -1 and min(after[:-1], default=0) >= 0 and rest.rstrip().endswith("}"):
            return json.loads(member.group(1))
    return None


def answer(data: bytes, reason: str, tail: bytes = b"") -> tuple[Any, bytes]:
    """(the request's id, the JSON-RPC error frame answering it). `tail` is the end of a
    request of which `data` is only the start."""
    request_id = top_level_id(data.decode("utf-8", "replace"))
    if request_id is None and tail:
        request_id = closing_id(tail.decode("utf-8", "replace"))
    log.warning("hermes-cmms: refused MCP request %r: %s", request_id, reason)
    error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": INVALID_REQUEST, "message": reason}}
    return request_id, json.dumps(error).encode()


class Wire:
    """The stdout the SDK writes its frames to (through anyio.wrap_file), shared with the
    refusals of BoundedLines: each frame is written and flushed whole under one lock."""

    def __init__(self, out: BinaryIO):
        self.out, self.lock = out, threading.Lock()

    def write(self, text: str) -> int:
        self.send(text.encode("utf-8"))
        return len(text)

    def send(self, frame: bytes) -> None:
        with self.lock:
            self.out.write(frame)
            self.out.flush()

    def flush(self) -> None:
        """Each write is flushed already."""


class BoundedLines:
    """The stdin the SDK reads lines from (through anyio.wrap_file): each line of the wire is
    measured first; a refused one is answered on the Wire and skipped."""

    def __init__(self, wire_in: BinaryIO, wire_out: Wire):
        self.wire_in, self.wire_out = wire_in, wire_out

    def readline(self) -> str:
        while True:
            line = self.wire_in.readline(MAX_REQUEST_BYTES + 1)
            if not line.strip():
                if not line:
                    return ""  # the client closed stdin
                continue
            complete = len(line) <= MAX_REQUEST_BYTES or line.endswith(b"\n")
            tail = b"" if complete else self._skip_rest()
            reason = refusal(line.rstrip(b"\r\n"), complete)
            if reason is None:
                return line.decode("utf-8", "replace")
            self.wire_out.send(answer(line, reason, tail)[1] + b"\n")

    def _skip_rest(self) -> bytes:
        """Read past the rest of an overlong line; its last TAIL_BYTES."""
        tail = b""
        while chunk := self.wire_in.readline(TAIL_BYTES):
            tail = (tail + chunk)[-TAIL_BYTES:]
            if chunk.endswith(b"\n"):
                break
        return tail


class BoundedRequests:
    """ASGI middleware in front of the SDK's streamable-HTTP app: a POSTed body is read up to
    MAX_REQUEST_BYTES and measured; a refused one is answered here, any other is handed on."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        read = await _read_body(receive)
        if read is None:  # the client went away
            return None
        body, complete, tail = read
        reason = refusal(body, complete)
        if reason is not None:
            return await _refuse(send, *answer(body, reason, tail))
        replay = [{"type": "http.request", "body": body, "more_body": False}]

        async def replayed():
            return replay.pop() if replay else await receive()

        return await self.app(scope, replayed, send)


async def _read_body(receive) -> Optional[tuple[bytes, bool, bytes]]:
    """(the body, or its first MAX_REQUEST_BYTES + 1 bytes; whether that is all of it; the
    last TAIL_BYTES of a longer body, read up to MAX_SKIPPED_BYTES), None if the client left."""
    body, tail, size = bytearray(), b"", 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if len(body) <= MAX_REQUEST_BYTES:
            body.extend(chunk)
        else:
            tail = (tail + chunk)[-TAIL_BYTES:]
        if not message.get("more_body", False) or size > MAX_SKIPPED_BYTES:
            return bytes(body[:MAX_REQUEST_BYTES + 1]), size <= MAX_REQUEST_BYTES, tail


async def _refuse(send, request_id: Any, frame: bytes) -> None:
    """A request's refusal goes out as a JSON response with status 200: mcp 1.x's client
    ends the whole session on any 4xx, and both SDKs' clients hand a JSON-RPC error with the
    request's id to the caller. Without an id there is nobody to hand it to: 400."""
    await send({"type": "http.response.start", "status": 200 if request_id is not None else 400,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(frame)).encode())]})
    await send({"type": "http.response.body", "body": frame})
