"""Build an assistant message's parts from its events, as they arrive.

Parts are camelCase JSON objects, in the order they first appeared:

- ``{"type": "thinking", "text"}``
- ``{"type": "text", "text"}``
- ``{"type": "tool_call", "toolCallId", "toolName", "argumentsText", "arguments", "status",
  "result", "isError"}`` with ``status`` ``streaming`` → ``completed`` → ``done`` / ``error``
- ``{"type": "image", "imageId", "toolCallId", "prompt", "status", "url", "alt", "error"}``
  with ``status`` ``pending`` → ``completed`` / ``failed``
- ``{"type": "continuation", "mode", "recovered", "reason"}``
- ``{"type": "system_event", "kind", "message"}``

# NOTE: text is kept as a list of chunks and joined only in ``snapshot()``: an answer of
# 100,000 deltas must not cost a quadratic number of copies.
"""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]


class PartsBuilder:
    """Accumulates parts from event payloads (tolerant: malformed events are ignored)."""

    def __init__(self, parts: list[JsonObject] | None = None) -> None:
        self._parts: list[JsonObject] = []
        self._chunks: dict[int, list[str]] = {}
        for part in parts or []:
            self._parts.append(dict(part))
            if part.get("type") in ("text", "thinking"):
                self._chunks[len(self._parts) - 1] = [str(part.get("text", ""))]

    def apply(self, payload: JsonObject) -> None:
        """Fold one event payload into the parts."""
        handler = _HANDLERS.get(str(payload.get("type")))
        if handler is not None:
            try:
                handler(self, payload)
            except (KeyError, TypeError, ValueError):
                return

    def snapshot(self) -> list[JsonObject]:
        """The parts as plain JSON objects."""
        result = [dict(part) for part in self._parts]
        for index, chunks in self._chunks.items():
            result[index]["text"] = "".join(chunks)
        return result

    def text(self) -> str:
        """All answer text joined (the message's plain content)."""
        return "".join(
            "".join(self._chunks[i]) for i, p in enumerate(self._parts) if p["type"] == "text"
        )

    def _append_text(self, kind: str, text: str, new_block: bool = False) -> None:
        last = len(self._parts) - 1
        if new_block or last < 0 or self._parts[last]["type"] != kind:
            self._parts.append({"type": kind, "text": ""})
            last += 1
            self._chunks[last] = []
        self._chunks[last].append(text)

    def _find(self, kind: str, key: str, value: object) -> JsonObject | None:
        for part in reversed(self._parts):
            if part["type"] == kind and part.get(key) == value:
                return part
        return None

    def _tool(self, payload: JsonObject) -> JsonObject:
        tool_id = str(payload["toolCallId"])
        part = self._find("tool_call", "toolCallId", tool_id)
        if part is None:
            part = {
                "type": "tool_call",
                "toolCallId": tool_id,
                "toolName": str(payload.get("toolName", "")),
                "argumentsText": "",
                "arguments": None,
                "status": "streaming",
                "result": None,
                "isError": False,
            }
            self._parts.append(part)
        return part


def _thinking_start(b: PartsBuilder, p: JsonObject) -> None:
    b._append_text("thinking", "", new_block=True)


def _thinking(b: PartsBuilder, p: JsonObject) -> None:
    b._append_text("thinking", str(p["text"]))


def _text(b: PartsBuilder, p: JsonObject) -> None:
    b._append_text("text", str(p["text"]))


def _tool_started(b: PartsBuilder, p: JsonObject) -> None:
    b._tool(p)


def _tool_delta(b: PartsBuilder, p: JsonObject) -> None:
    part = b._tool(p)
    part["argumentsText"] = str(part["argumentsText"]) + str(p["delta"])


def _tool_completed(b: PartsBuilder, p: JsonObject) -> None:
    part = b._tool(p)
    part.update(toolName=str(p.get("toolName", part["toolName"])), arguments=p["arguments"])
    part["status"] = "completed"


def _tool_result(b: PartsBuilder, p: JsonObject) -> None:
    part = b._tool(p)
    is_error = bool(p.get("isError", False))
    part.update(result=p.get("result"), isError=is_error, status="error" if is_error else "done")


def _image_started(b: PartsBuilder, p: JsonObject) -> None:
    b._parts.append(
        {
            "type": "image",
            "imageId": str(p["imageId"]),
            "toolCallId": p.get("toolCallId"),
            "prompt": str(p.get("prompt", "")),
            "status": "pending",
            "url": None,
            "alt": None,
            "error": None,
        }
    )


def _image_part(b: PartsBuilder, p: JsonObject) -> JsonObject:
    part = b._find("image", "imageId", str(p["imageId"]))
    if part is None:
        _image_started(b, p)
        part = b._parts[-1]
    return part


def _image_completed(b: PartsBuilder, p: JsonObject) -> None:
    _image_part(b, p).update(status="completed", url=str(p["url"]), alt=p.get("alt"))


def _image_failed(b: PartsBuilder, p: JsonObject) -> None:
    _image_part(b, p).update(status="failed", error=str(p["error"]))


def _continuation(b: PartsBuilder, p: JsonObject) -> None:
    part = b._find("continuation", "mode", p["mode"])
    fields = {"recovered": bool(p["recovered"]), "reason": p.get("reason")}
    if part is not None and not part["recovered"]:
        part.update(fields)
    else:
        b._parts.append({"type": "continuation", "mode": str(p["mode"]), **fields})


def _system_event(b: PartsBuilder, p: JsonObject) -> None:
    b._parts.append({"type": "system_event", "kind": str(p["kind"]), "message": p.get("message")})


_HANDLERS = {
    "thinking_start": _thinking_start,
    "thinking": _thinking,
    "text": _text,
    "assistant_text_delta": _text,
    "tool_call_started": _tool_started,
    "tool_call_arguments_delta": _tool_delta,
    "tool_call_completed": _tool_completed,
    "tool_result": _tool_result,
    "image_generation_started": _image_started,
    "image_generation_completed": _image_completed,
    "image_generation_failed": _image_failed,
    "continuation_transition": _continuation,
    "system_event": _system_event,
}
