"""A chat as a file (SPEC §14): the JSON export's shape, and the checks an import passes.

The JSON export is the chat read (:class:`app.wire.api.ChatDetail`) plus ``instructions`` and
``exportVersion``. An import is validated here, whole, before anything is stored:
:func:`check_import` answers the chat to make, or raises :class:`ImportRefused` with words that
say what is wrong (the server answers them as ``400 invalid_import``).

Decisions (``# NOTE:`` marks them in the code):

- Strict types (a number where a string belongs is refused, never coerced); unknown fields are
  ignored, so a newer export with more to say still imports.
- Bounded: :data:`MAX_IMPORT_BYTES`, :data:`MAX_IMPORT_MESSAGES`, each text and part list
  capped; the JSON's nesting too (the server's JSON reader).
- The file's ids only say how its messages link: every id is replaced when it is stored; its
  times are not read (the new chat's are now).
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.wire.api import ChatDetail, Role, ServerRunStatus
from app.wire.parts import PART_ADAPTER, Part
from app.wire.protocol import CAMEL_CONFIG, StopReason

EXPORT_VERSION: Final = 1
ExportFormat = Literal["markdown", "json"]
EXPORT_FORMATS: Final[tuple[ExportFormat, ...]] = ("markdown", "json")

MAX_IMPORT_BYTES: Final = 8 * 1024 * 1024
"""The largest chat file an import reads (8 MB)."""
MAX_IMPORT_MESSAGES: Final = 5000
MAX_PARTS: Final = 1000
MAX_TEXT: Final = 1024 * 1024
MAX_ID: Final = 200


class ChatExport(ChatDetail):
    """``GET /api/chats/{id}/export?format=json``: the chat read, with its instructions (``None``
    while chats have none) and the file's version."""

    instructions: str | None = None
    export_version: int = EXPORT_VERSION


class ImportAnswer(BaseModel):
    """``POST /api/chats/import``'s answer: the new chat's id."""

    model_config = CAMEL_CONFIG

    id: str


class ImportRefused(ValueError):
    """A file that is not a chat export; its words say why."""


Id = Annotated[str, Field(min_length=1, max_length=MAX_ID)]
Words = Annotated[str, Field(max_length=MAX_TEXT)]


class _Strict(BaseModel):
    # NOTE: strict and unknown fields ignored; see the module docstring.
    model_config = ConfigDict(**CAMEL_CONFIG, strict=True)


class ImportedAttachment(_Strict):
    attachment_id: Id
    name: Annotated[str, Field(max_length=1000)]
    size: int = Field(ge=0)
    mime_type: Annotated[str, Field(max_length=200)]


class ImportedMessage(_Strict):
    """One message of the file, as the chat read writes it."""

    id: Id
    role: Role
    text: Words = ""
    parts: list[dict[str, Any]] = Field(default_factory=list, max_length=MAX_PARTS)
    status: ServerRunStatus | None = None
    run_id: Id | None = None
    parent_id: Id | None = None
    attempt: int = Field(default=1, ge=1, le=10_000)
    partial: bool = False
    reason: Annotated[str, Field(max_length=MAX_ID)] | None = None
    error_message: Words | None = None
    stop_reason: StopReason | None = None
    model_id: Annotated[str, Field(max_length=MAX_ID)] | None = None
    attachments: list[ImportedAttachment] = Field(default_factory=list, max_length=100)


class ImportedChat(_Strict):
    """The file: a chat read with its version."""

    export_version: int
    title: Annotated[str, Field(max_length=MAX_TEXT)]
    messages: list[ImportedMessage] = Field(max_length=MAX_IMPORT_MESSAGES)
    model_id: Annotated[str, Field(max_length=MAX_ID)] | None = None
    instructions: Words | None = None


def check_import(data: object) -> tuple[ImportedChat, list[tuple[Part, ...]]]:
    """The chat a parsed file describes and each message's parts, or :class:`ImportRefused`."""
    if not isinstance(data, dict):
        raise ImportRefused("a chat file is a JSON object")
    version = data.get("exportVersion")
    if version != EXPORT_VERSION or isinstance(version, bool):
        raise ImportRefused(
            f"exportVersion is {version!r}; this server reads exportVersion {EXPORT_VERSION}"
        )
    try:
        chat = ImportedChat.model_validate(data)
    except ValidationError as error:
        raise ImportRefused(_first_problem(error)) from None
    parts = [_parts(index, message) for index, message in enumerate(chat.messages)]
    _check_tree(chat.messages)
    return chat, parts


def _first_problem(error: ValidationError) -> str:
    problem = error.errors(include_url=False)[0]
    where = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in problem["loc"])
    return f"{where.lstrip('.') or 'the file'}: {problem['msg']}"


def _parts(index: int, message: ImportedMessage) -> tuple[Part, ...]:
    try:
        return tuple(PART_ADAPTER.validate_python(part) for part in message.parts)
    except ValidationError as error:
        raise ImportRefused(f"messages[{index}].parts: {_first_problem(error)}") from None


def _check_tree(messages: list[ImportedMessage]) -> None:
    """Ids unique, every parent in the file and of the other role, answers with a run of their
    own, and no cycle."""
    by_id: dict[str, ImportedMessage] = {}
    for index, message in enumerate(messages):
        if message.id in by_id:
            raise ImportRefused(f"messages[{index}]: the id {message.id!r} is used twice")
        by_id[message.id] = message
    runs: set[str] = set()
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        parent = None if message.parent_id is None else by_id.get(message.parent_id)
        if message.parent_id is not None and parent is None:
            raise ImportRefused(f"{where}: its parent {message.parent_id!r} is not in the file")
        if parent is not None and parent.role == message.role:
            raise ImportRefused(f"{where}: a {message.role} message answers a {parent.role} one")
        if message.role == "assistant":
            _check_answer(where, message, runs)
        elif message.run_id is not None or message.status is not None:
            raise ImportRefused(f"{where}: a user message has no run")
    _check_no_cycle(messages, by_id)


def _check_no_cycle(messages: list[ImportedMessage], by_id: dict[str, ImportedMessage]) -> None:
    rooted: set[str] = set()
    for message in messages:
        path: set[str] = set()
        at: ImportedMessage | None = message
        while at is not None and at.id not in rooted:
            if at.id in path:
                raise ImportRefused(f"the message {at.id!r} is its own ancestor (a cycle)")
            path.add(at.id)
            at = None if at.parent_id is None else by_id[at.parent_id]
        rooted.update(path)


def _check_answer(where: str, message: ImportedMessage, runs: set[str]) -> None:
    if message.parent_id is None:
        raise ImportRefused(f"{where}: an answer needs the user message it answers (parentId)")
    if message.run_id is None or message.status is None:
        raise ImportRefused(f"{where}: an answer needs its runId and status")
    if message.run_id in runs:
        raise ImportRefused(f"{where}: the run {message.run_id!r} answers twice")
    runs.add(message.run_id)
