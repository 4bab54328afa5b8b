"""The chat client's state: immutable, owned by the store, rendered by the view (SPEC §5, §6).

Shape (frozen dataclasses; mappings are never mutated, only replaced)::

    State
    ├── chats: {chat_id: ChatState}        every chat seen; a background run keeps writing here
    ├── chat_order: (chat_id, …)           the chat list, newest first (a chat made here joins
    │                                      it with its first event: a refused send lists nothing)
    ├── active_chat_id                     the chat on screen (None: a new, empty chat)
    ├── composer_draft                     a prompt given back after a pre-stream error
    ├── last_error: ErrorInfo | None       pre-stream / request error: code, message, status
    ├── fallback_notice                    the latest ``fallback_notice`` (a toast)
    ├── search: Search | None              a chat search: the words, the chats found
    ├── editing: Editing                   what the user is editing in place (title, a prompt)
    ├── composer: ComposerState            its files (uploading, attached, refused), its options
    └── derived: active_chat, messages, runs, is_generating, context_info, context_cache

    ChatState(chat_id, title, messages, runs, live_runs, context_info, loaded, updated_at,
              branches)
    ├── messages: (MessageState, …)        every message of every branch, in order
    ├── runs: {run_id: RunState}           every attempt of every assistant message
    └── branches: {parent: user message}   the branch chosen below each fork (see tree.py)

    MessageState(id, role, text, server_id, reply_to, run_ids, shown, after_run, attachments)
        an assistant message lists its attempts in ``run_ids`` (attempt 1 first) and shows
        ``run_ids[shown]``; attempts are never joined. A user message follows the answer of
        run ``after_run`` (``None``: it starts the chat): prompts after the same answer are
        branches (an edit adds one), and the conversation shown follows the attempt shown.

    RunState(run_id, chat_id, attempt, status, phase, parts, last_seq, reason, error,
             stop_reason, cancel, has_gap, gaps, message_id, user_message_id, retry_of_run_id,
             trace)
    └── phase: how its events are being read (one of, so no meaningless mix can exist):
        Live(contiguous)        the run's events as they come
        Resuming(after_seq)     a resume: the first event must be after_seq + 1
        GapHeld()               the terminal event came after a live gap: held for a replay
        Replaying(parts, …)     the whole log re-read from seq 1, building parts aside
        Restored()              settled from the chat history (parts read back, not folded here)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from app.state.outbox import Outbox
from app.state.trace import Gap, RunTrace
from app.wire.api import (
    AttachmentInfo,
    ContextUsage,
    ReasoningEffort,
    Role,
    UploadLimits,
    human_size,
)
from app.wire.parts import Parts, answer_text
from app.wire.protocol import ContextInfoEvent, Severity, StopReason

RunStatus = Literal[
    "connecting", "receiving", "completed", "cancelling", "cancelled", "interrupted", "failed"
]
"""The state of one run (SPEC §5).

connecting:  request sent, nothing received on this connection yet (also while resuming, and
             while a gap replay rebuilds the answer aside: ``replay`` is set).
receiving:   valid events arriving.
completed:   ``done`` with ``stop`` or ``length`` received.
cancelling:  the user pressed Stop: reader aborted, cancel sent, confirmation pending.
cancelled:   the server confirmed (``cancel == "confirmed"``), or ``done`` with
             ``cancelled``; ``cancel == "unconfirmed"`` when the deadline passed first.
interrupted: the stream ended or broke without a terminal event, or a gap could not be filled.
failed:      an ``error`` event, a protocol error or a timeout; the partial answer is kept.
"""
LIVE: Final = frozenset({"connecting", "receiving"})
SETTLED: Final = frozenset({"completed", "cancelled", "interrupted", "failed"})

CancelConfirmation = Literal["pending", "confirmed", "unconfirmed"]
EndReason = Literal[
    "eof",  # interrupted: the stream ended without a terminal event
    "network",  # interrupted: the connection broke
    "offline",  # interrupted: it broke while the device was offline; resumed when it is back
    "ended",  # interrupted: a resume brought nothing and the server says the run is over
    "gap",  # interrupted: a resume did not continue at last_seq + 1, or a gap was not filled
    "expired",  # interrupted: the event log is gone (410); only Regenerate is possible
    "resume_failed",  # interrupted: the resume request failed
    "detached",  # interrupted: loaded from history while still running; re-attached at once
    "error",  # failed: an ``error`` event
    "protocol",  # failed: the stream broke the wire contract (event_too_large)
    "timeout",  # failed: a first-event, idle or total timeout (trace.timeout_fired says which)
    "server_restarted",  # interrupted (history): the server restarted under it
    "server_shutdown",  # interrupted (history): the server stopped under it
    "orphaned",  # cancelled (history): the server stopped it, nobody was reading it
]


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """An error to show: machine ``code`` (``[data-error-code]``) and human ``message``."""

    code: str
    message: str
    status: int | None = None  # the HTTP status of a pre-stream error
    retry_after: float | None = None  # seconds, from ``Retry-After``
    retry_at: float | None = None  # when trying again makes sense (clock ms), if known


@dataclass(frozen=True, slots=True)
class ContextInfo:
    """Context window usage of a chat (drives the context ring)."""

    used_tokens: int
    max_tokens: int
    ratio: float
    severity: Severity
    compaction_recommended: bool
    # NOTE: set only by a compaction's answer (app/ui/context_ring.py says it in words); the
    # next ``context_info`` replaces it
    compacted: Compacted | None = None


@dataclass(frozen=True, slots=True)
class Compacted:
    """What a compaction did: the tokens sent before it, and the turns it summarised."""

    used_before: int
    turns: int


def context_of(usage: ContextUsage | ContextInfoEvent) -> ContextInfo:
    """The context usage of a ``context_info`` event, a chat's read or a compaction's answer."""
    return ContextInfo(
        usage.used_tokens,
        usage.max_tokens,
        usage.ratio,
        usage.severity,
        usage.compaction_recommended,
    )


@dataclass(frozen=True, slots=True)
class FallbackNotice:
    """A degraded continuation to show as a toast."""

    reason: str
    message: str
    chat_id: str
    run_id: str
    seq: int


@dataclass(frozen=True, slots=True)
class Live:
    """Reading the run's events as they come; ``contiguous`` once a gap replay caught up (a
    second gap would leave a hole, so it interrupts the run instead)."""

    contiguous: bool = False


@dataclass(frozen=True, slots=True)
class Resuming:
    """A resume asked for the events after ``after_seq``: the first must be ``after_seq + 1``.
    ``rebuild``: the parts on screen were read back from the history and the log is read from
    seq 1, so they are replaced by what it folds."""

    after_seq: int
    rebuild: bool = False


@dataclass(frozen=True, slots=True)
class GapHeld:
    """The terminal event came after a gap on the live stream: held until a replay fills it."""


@dataclass(frozen=True, slots=True)
class Replaying:
    """The run's whole event log re-read from seq 1 to fill a gap in the live copy.

    Until it reaches the run's ``last_seq`` the replayed events build ``parts`` aside and the
    gapped copy stays on screen; then its parts replace the gapped ones at once (never joined)
    and the run is ``Live(contiguous=True)``.
    """

    parts: Parts = ()
    last_seq: int = 0


@dataclass(frozen=True, slots=True)
class Restored:
    """Settled from the chat history: its parts were read back, not folded from events here."""


Phase = Live | Resuming | GapHeld | Replaying | Restored


@dataclass(frozen=True, slots=True)
class RunState:
    """One attempt at an answer: its status, parts and trace."""

    run_id: str
    chat_id: str
    attempt: int = 1
    status: RunStatus = "connecting"
    phase: Phase = Live()
    parts: Parts = ()
    last_seq: int = 0  # the highest seq seen (skipped unknown types included)
    reason: EndReason | None = None  # why it is interrupted or failed
    error: ErrorInfo | None = None  # what failed it (code + message)
    stop_reason: StopReason | None = None  # from ``done``
    cancel: CancelConfirmation | None = None  # set once Stop was pressed
    has_gap: bool = False  # a seq went missing on the live stream: text may be missing
    gaps: tuple[Gap, ...] = ()  # the live copy's holes, until a replay fills them
    message_id: str | None = None  # the server's id of this attempt's message
    user_message_id: str | None = None  # from ``user_message_id``
    retry_of_run_id: str | None = None
    trace: RunTrace = field(default_factory=lambda: RunTrace(""))
    answered_at: str | None = None  # the server's time of the answer (ISO 8601), once told
    model_id: str | None = None  # the model that wrote it, once the server said

    @property
    def text(self) -> str:
        """The answer text (for copy)."""
        return answer_text(self.parts)

    @property
    def is_live(self) -> bool:
        """Connecting or receiving: the Stop button applies."""
        return self.status in LIVE

    @property
    def is_partial(self) -> bool:
        """The answer is not known to be complete (the partial warning)."""
        return self.status != "completed" or self.has_gap

    @property
    def resuming(self) -> bool:
        """Reading a resume or a replay ("Resuming…")."""
        return isinstance(self.phase, Resuming | Replaying)

    @property
    def filling_gap(self) -> bool:
        """A replay is due or rebuilding the answer aside (the parts shown have a gap)."""
        return isinstance(self.phase, GapHeld | Replaying)

    @property
    def can_resume(self) -> bool:
        """Interrupted, with more of it possibly on the server (its log not expired, and not
        known to be over)."""
        return self.status == "interrupted" and self.reason not in ("expired", "ended")

    @property
    def can_regenerate(self) -> bool:
        """Settled: a new attempt may be asked for."""
        return self.status in SETTLED


@dataclass(frozen=True, slots=True)
class MessageState:
    """A user prompt, or an assistant answer with all its attempts."""

    id: str  # stable: the key commands and the DOM use (server id, or a local one)
    role: Role
    text: str = ""  # the prompt (user messages)
    server_id: str | None = None  # the server's id once known
    reply_to: str | None = None  # assistant: the id of the user message it answers
    run_ids: tuple[str, ...] = ()  # assistant: one run per attempt, attempt 1 first
    shown: int = 0  # assistant: index in run_ids of the attempt on screen
    after_run: str | None = None  # user: the run whose answer it follows (None: the top)
    attachments: tuple[AttachmentInfo, ...] = ()  # user: the files sent with it

    @property
    def shown_run_id(self) -> str | None:
        """The run of the attempt on screen."""
        return self.run_ids[self.shown] if self.run_ids else None


TOP: Final = ""
"""The fork above a chat's first prompts (``branches`` key, ``after_run`` ``None``)."""


def _chosen(prompts: list[MessageState], chosen: str | None) -> MessageState:
    return next((m for m in prompts if m.id == chosen), prompts[-1])


@dataclass(frozen=True, slots=True)
class ChatState:
    """One chat: messages, their runs, and its cached context usage."""

    chat_id: str
    title: str = ""
    messages: tuple[MessageState, ...] = ()
    runs: Mapping[str, RunState] = field(default_factory=dict)
    live_runs: tuple[str, ...] = ()  # runs connecting, receiving or cancelling: "current"
    context_info: ContextInfo | None = None
    loaded: bool = False  # messages fetched from the server (or the chat was made here)
    updated_at: float | None = None  # the server's last activity (epoch s); None: just now
    pinned: bool = False  # the user pinned it (the server keeps it: listed first)
    branches: Mapping[str, str] = field(default_factory=dict)  # fork -> chosen prompt id
    model_id: str | None = None  # the model of its last answer, as the server read it

    @property
    def is_generating(self) -> bool:
        """A run of this chat is connecting or receiving."""
        return any(self.runs[run_id].is_live for run_id in self.live_runs)

    def shown_run(self, message: MessageState) -> RunState | None:
        """The attempt of ``message`` on screen."""
        run_id = message.shown_run_id
        return None if run_id is None else self.runs.get(run_id)

    def visible(self) -> tuple[MessageState, ...]:
        """The conversation on screen: from the top, the chosen prompt after each answer (the
        newest unless one was picked), each with its answer, following the attempt shown."""
        prompts: dict[str, list[MessageState]] = {}
        answers: dict[str, MessageState] = {}
        for message in self.messages:
            if message.role == "user":
                prompts.setdefault(message.after_run or TOP, []).append(message)
            elif message.reply_to is not None:
                answers[message.reply_to] = message
        shown: list[MessageState] = []
        fork: str | None = TOP
        while fork is not None and fork in prompts:
            prompt = _chosen(prompts[fork], self.branches.get(fork))
            shown.append(prompt)
            answer = answers.get(prompt.id)
            if answer is None:
                break
            shown.append(answer)
            fork = answer.shown_run_id
        return tuple(shown)

    def branch_of(self, prompt: MessageState) -> tuple[int, int]:
        """(index, count) of a user message among the prompts after the same answer."""
        fork = prompt.after_run or TOP
        siblings = [
            m.id for m in self.messages if m.role == "user" and (m.after_run or TOP) == fork
        ]
        return (siblings.index(prompt.id) if prompt.id in siblings else 0), len(siblings)

    def sibling(self, prompt: MessageState, index: int) -> MessageState | None:
        """The prompt at ``index`` among those after the same answer as ``prompt``."""
        fork = prompt.after_run or TOP
        siblings = [m for m in self.messages if m.role == "user" and (m.after_run or TOP) == fork]
        return siblings[index] if 0 <= index < len(siblings) else None

    def find_message(self, key: str) -> MessageState | None:
        """A message by local id, server id, or the run id / server id of one of its attempts."""
        for message in self.messages:
            if key in (message.id, message.server_id) or key in message.run_ids:
                return message
            if any(self.runs[r].message_id == key for r in message.run_ids if r in self.runs):
                return message
        return None


@dataclass(frozen=True, slots=True)
class ComposerFile:
    """A file in the composer: uploading (``progress`` 0-1), attached (``attachment``, the
    server's record of it), or refused (``error``)."""

    key: str
    name: str
    size: int
    mime_type: str = ""
    progress: float | None = None  # while uploading
    error: str | None = None  # why it was refused
    preview_url: str | None = None  # a local image preview
    attachment: AttachmentInfo | None = None  # once uploaded


@dataclass(frozen=True, slots=True)
class ComposerOptions:
    """The composer's send options the user sets (kept across reloads by the page)."""

    thinking: bool = False
    effort: ReasoningEffort = "medium"  # NOTE: the picker's own default (index.html)
    tools: bool = False


@dataclass(frozen=True, slots=True)
class ComposerState:
    """What the composer holds besides its text: its files and options."""

    files: tuple[ComposerFile, ...] = ()
    options: ComposerOptions = ComposerOptions()

    @property
    def uploading(self) -> bool:
        """A file is still on its way to the server."""
        return any(item.progress is not None for item in self.files)

    @property
    def refused(self) -> tuple[ComposerFile, ...]:
        """The files that cannot be sent, with why."""
        return tuple(item for item in self.files if item.error is not None)

    @property
    def attached(self) -> tuple[AttachmentInfo, ...]:
        """The files uploaded, in the order they were added."""
        return tuple(item.attachment for item in self.files if item.attachment is not None)


def options_from_kept(kept: object) -> ComposerOptions | None:
    """Options a page load kept (``{"thinking", "tools", "effort"}``), each value checked: one
    that is missing or wrong keeps its default; ``None`` when nothing usable was kept."""
    if not isinstance(kept, dict):
        return None
    defaults = ComposerOptions()
    thinking, tools, effort = kept.get("thinking"), kept.get("tools"), kept.get("effort")
    return ComposerOptions(
        thinking=thinking if isinstance(thinking, bool) else defaults.thinking,
        effort=effort if effort in ("low", "medium", "high") else defaults.effort,
        tools=tools if isinstance(tools, bool) else defaults.tools,
    )


def options_to_keep(options: ComposerOptions) -> dict[str, object]:
    """What :func:`options_from_kept` reads back."""
    return {"thinking": options.thinking, "tools": options.tools, "effort": options.effort}


def refusal(
    item: ComposerFile, files: tuple[ComposerFile, ...], limits: UploadLimits
) -> str | None:
    """Why ``item`` cannot join ``files`` under the server's ``limits`` (``None``: it can)."""
    if item.size > limits.attachment_max_bytes:
        return f"{human_size(limits.attachment_max_bytes)} max"
    if item.mime_type and item.mime_type not in limits.attachment_types:
        return "this kind of file is not accepted"
    if len([i for i in files if i.error is None]) >= limits.attachments_per_message:
        return f"at most {limits.attachments_per_message} files per message"
    return None


@dataclass(frozen=True, slots=True)
class Search:
    """A search of the chat list: ``chat_ids`` found on the server (``None``: still looking)."""

    query: str
    chat_ids: tuple[str, ...] | None = None
    snippets: tuple[tuple[str, str], ...] = ()  # (chat id, where its messages matched)


@dataclass(frozen=True, slots=True)
class NotEditing:
    """Nothing is being edited in place."""


@dataclass(frozen=True, slots=True)
class EditingTitle:
    """The active chat's title is a field (``refused``: an empty title was refused, in words)."""

    refused: bool = False


@dataclass(frozen=True, slots=True)
class ConfirmingDelete:
    """The active chat's delete asks "Delete this chat?"."""


@dataclass(frozen=True, slots=True)
class EditingPrompt:
    """A sent prompt is being edited (sent as a new branch)."""

    message_id: str


Editing = NotEditing | EditingTitle | ConfirmingDelete | EditingPrompt
"""What is being edited in place: one of, so no meaningless mix can exist."""


@dataclass(frozen=True, slots=True)
class State:
    """Everything the view renders (see the module docstring)."""

    chats: Mapping[str, ChatState] = field(default_factory=dict)
    chat_order: tuple[str, ...] = ()
    active_chat_id: str | None = None
    composer_draft: str = ""
    last_error: ErrorInfo | None = None
    fallback_notice: FallbackNotice | None = None
    search: Search | None = None
    editing: Editing = NotEditing()
    composer: ComposerState = ComposerState()
    offline: bool = False  # NOTE: the server unreachable: chats shown from the device's copies
    outbox: Outbox = ()  # prompts sent while offline, in order, until the server takes each

    @property
    def active_chat(self) -> ChatState | None:
        """The chat on screen, if it exists yet."""
        return None if self.active_chat_id is None else self.chats.get(self.active_chat_id)

    @property
    def messages(self) -> tuple[MessageState, ...]:
        """The active chat's messages on screen (the branch shown)."""
        chat = self.active_chat
        return () if chat is None else chat.visible()

    @property
    def runs(self) -> Mapping[str, RunState]:
        """The active chat's runs by id."""
        chat = self.active_chat
        return {} if chat is None else chat.runs

    @property
    def is_generating(self) -> bool:
        """The active chat has a run connecting or receiving (Stop enabled, Send disabled)."""
        chat = self.active_chat
        return chat is not None and chat.is_generating

    @property
    def context_info(self) -> ContextInfo | None:
        """The active chat's context usage (cached per chat, shown at once on switch)."""
        chat = self.active_chat
        return None if chat is None else chat.context_info

    @property
    def context_cache(self) -> Mapping[str, ContextInfo]:
        """Context usage of every chat that reported one."""
        return {cid: c.context_info for cid, c in self.chats.items() if c.context_info}

    def find_run(self, run_id: str) -> tuple[ChatState, RunState] | None:
        """The chat and run for ``run_id``, in any chat."""
        for chat in self.chats.values():
            run = chat.runs.get(run_id)
            if run is not None:
                return chat, run
        return None


def settled_runs(state: State, previous: State) -> list[RunState]:
    """Runs that settled between ``previous`` and ``state`` (not runs loaded from history)."""
    settled = []
    for chat_id, chat in state.chats.items():
        before = previous.chats.get(chat_id)
        if before is chat or before is None:
            continue
        for run_id, run in chat.runs.items():
            old = before.runs.get(run_id)
            if run.status in SETTLED and old is not None and old.status != run.status:
                settled.append(run)
    return settled
