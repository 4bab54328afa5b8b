"""The actions the reducer understands.

Chat actions change the chat list, the selection or the notices. Run actions carry the
``run_id`` they are about and ``at``, the clock time (ms) the trace records; the reducer drops
a run action unless its run is current (in its chat's ``live_runs``), except the two that make
a run current: :class:`RunStarted` and :class:`ResumeStarted`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.state.outbox import Outbox
from app.state.state import (
    ChatState,
    ComposerFile,
    ComposerOptions,
    ContextInfo,
    Editing,
    ErrorInfo,
    RunState,
)
from app.wire.api import AttachmentInfo
from app.wire.errors import TimeoutKind
from app.wire.protocol import SkippedFrame, StreamEvent

# --- chat actions ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChatSelected:
    """Show a chat (``None``: a new, unsaved chat)."""

    chat_id: str | None


@dataclass(frozen=True, slots=True)
class ChatListing:
    """A chat as the server lists it."""

    chat_id: str
    title: str
    updated_at: float | None = None  # epoch seconds
    pinned: bool = False  # listed first, under "Pinned"
    snippet: str | None = None  # a search's: the words around where its messages matched


@dataclass(frozen=True, slots=True)
class ChatsListed:
    """The server's chat list, newest first."""

    chats: tuple[ChatListing, ...]


@dataclass(frozen=True, slots=True)
class ChatCreated:
    """A new chat, named here and shown at once; it joins the list with its first event (the
    server makes it with its first answer)."""

    chat_id: str
    title: str = ""
    shown: bool = True  # NOTE: False: a chat of prompts queued before a reload, kept aside


@dataclass(frozen=True, slots=True)
class ChatRenamed:
    """A chat's title changed (here, or put back after the server refused)."""

    chat_id: str
    title: str


@dataclass(frozen=True, slots=True)
class ChatDeleted:
    """A chat is gone; if it was on screen, a new empty chat is shown."""

    chat_id: str


@dataclass(frozen=True, slots=True)
class SearchChanged:
    """The chat search's words (empty: the search is over)."""

    query: str


@dataclass(frozen=True, slots=True)
class SearchFound:
    """The server's answer to the search ``query`` (ignored if the words changed since)."""

    query: str
    chats: tuple[ChatListing, ...]


@dataclass(frozen=True, slots=True)
class EditingChanged:
    """Start or end an in-place edit (the title, a delete confirmation, a prompt)."""

    editing: Editing


@dataclass(frozen=True, slots=True)
class FileAdded:
    """A file was put in the composer: uploading, or refused (``file.error``)."""

    file: ComposerFile


@dataclass(frozen=True, slots=True)
class FileChanged:
    """An upload went on (``progress``), ended (``attachment``) or failed (``error``)."""

    key: str
    progress: float | None = None
    error: str | None = None
    attachment: AttachmentInfo | None = None


@dataclass(frozen=True, slots=True)
class FileRemoved:
    """A file left the composer (removed, or sent with its prompt)."""

    key: str


@dataclass(frozen=True, slots=True)
class OptionsChanged:
    """The composer's Thinking, effort or Tools changed."""

    options: ComposerOptions


ComposerAction = FileAdded | FileChanged | FileRemoved | OptionsChanged


@dataclass(frozen=True, slots=True)
class ChatLoaded:
    """A chat's history arrived (ignored if the chat already has messages here, unless
    ``fresher``: the server's answer after a copy kept on the device was shown offline)."""

    chat: ChatState
    fresher: bool = False


@dataclass(frozen=True, slots=True)
class ConnectionChanged:
    """The server became unreachable (``offline``: the page shows copies kept on the device),
    or answers again."""

    offline: bool


@dataclass(frozen=True, slots=True)
class OutboxChanged:
    """A prompt was queued offline, edited back, removed, sent or given back (app/state/outbox.py
    makes the new outbox)."""

    outbox: Outbox


@dataclass(frozen=True, slots=True)
class ContextMeasured:
    """A chat's context usage became known outside a run (its compaction answered)."""

    chat_id: str
    info: ContextInfo


@dataclass(frozen=True, slots=True)
class ErrorRaised:
    """A request failed outside a run; ``draft`` gives the prompt back to the composer."""

    error: ErrorInfo
    draft: str | None = None


@dataclass(frozen=True, slots=True)
class DraftGiven:
    """A prompt handed back to the composer (a queued prompt taken back to be edited)."""

    text: str


@dataclass(frozen=True, slots=True)
class ErrorDismissed:
    """The user closed the error banner."""


@dataclass(frozen=True, slots=True)
class NoticeDismissed:
    """The fallback toast went away."""


@dataclass(frozen=True, slots=True)
class AttemptShown:
    """Flip an assistant message of the active chat to attempt ``index`` (0-based)."""

    message_id: str
    index: int


@dataclass(frozen=True, slots=True)
class BranchShown:
    """Show branch ``index`` (0-based) of the prompts after the same answer as ``message_id``."""

    message_id: str
    index: int


# --- run actions -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A new run: a send (new user + assistant message) or a regenerate (new attempt)."""

    run_id: str
    at: float
    chat_id: str
    message_id: str  # the assistant message (existing for a regenerate)
    prompt: str
    user_message_id: str | None = None  # the new user message of a send; None: regenerate
    attempt: int = 1
    retry_of_run_id: str | None = None
    after_run: str | None = None  # a send: the run whose answer the prompt follows
    attachments: tuple[AttachmentInfo, ...] = ()  # a send: the files sent with the prompt
    model_id: str | None = None  # the model asked (None: the server's choice)
    queued: bool = False  # a prompt queued offline, sent now: the composer is not its


@dataclass(frozen=True, slots=True)
class PreStreamFailed:
    """The request failed before the stream started: the run is withdrawn (``queued``: its
    prompt waits in the outbox instead of going back to the composer with the error)."""

    run_id: str
    at: float
    error: ErrorInfo
    queued: bool = False


@dataclass(frozen=True, slots=True)
class BytesReceived:
    """Bytes arrived; ``keepalives`` is the comment count of this connection so far."""

    run_id: str
    at: float
    keepalives: int = 0


@dataclass(frozen=True, slots=True)
class EventReceived:
    """A valid stream event was read for this run."""

    run_id: str
    at: float
    event: StreamEvent


@dataclass(frozen=True, slots=True)
class EventsReceived:
    """Valid stream events read together (one network read) for this run, in order: the same
    as one ``EventReceived`` each, applied in one step (one render notice, not one per event)."""

    run_id: str
    at: float
    events: tuple[StreamEvent, ...]


@dataclass(frozen=True, slots=True)
class FrameSkipped:
    """A frame was skipped as a protocol issue (its seq may still count as seen)."""

    run_id: str
    at: float
    frame: SkippedFrame


@dataclass(frozen=True, slots=True)
class IssuesRecorded:
    """The SSE decoder ignored malformed input (recorded in the trace)."""

    run_id: str
    at: float
    issues: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StreamEnded:
    """The connection ended without a terminal event."""

    run_id: str
    at: float
    reason: Literal["eof", "network", "offline"]  # offline: the device was, when it ended
    detail: str = ""


@dataclass(frozen=True, slots=True)
class RunFoundEnded:
    """A resume brought nothing more, and the server says the run is over: what arrived is
    all there is (no Resume; Regenerate)."""

    run_id: str
    at: float


@dataclass(frozen=True, slots=True)
class StreamFailed:
    """The client gave up on the stream: a protocol error or a timeout."""

    run_id: str
    at: float
    reason: Literal["protocol", "timeout"]
    error: ErrorInfo
    timeout: TimeoutKind | None = None


@dataclass(frozen=True, slots=True)
class ResumeStarted:
    """Read the run's events again after its last seq (``recovering``: after a lost cancel).

    An answer with a gap is read again from seq 1 instead: a gap replay (see ``state.Replay``).
    """

    run_id: str
    at: float
    automatic: bool = False
    recovering: bool = False


@dataclass(frozen=True, slots=True)
class ReplayStarted:
    """The stream reached its terminal event after a gap: re-read the whole log from seq 1."""

    run_id: str
    at: float


ResumeFailure = Literal["expired", "resume_failed"]
"""Why a resume request failed: ``expired`` (410: the event log is gone), or not."""


@dataclass(frozen=True, slots=True)
class ResumeFailed:
    """The resume request failed (``expired``: 410, only Regenerate remains)."""

    run_id: str
    at: float
    reason: ResumeFailure
    error: ErrorInfo


@dataclass(frozen=True, slots=True)
class StopRequested:
    """The user pressed Stop: the reader is aborted, a cancel goes to the server."""

    run_id: str
    at: float


@dataclass(frozen=True, slots=True)
class CancelSettled:
    """The cancel ended: confirmed by the server, or not before the deadline."""

    run_id: str
    at: float
    confirmation: Literal["confirmed", "unconfirmed"]


@dataclass(frozen=True, slots=True)
class RunRestored:
    """The server's persisted record of a settled run replaces the local copy."""

    run_id: str
    at: float
    run: RunState


ChatAction = (
    ChatSelected
    | ChatsListed
    | ChatCreated
    | ChatLoaded
    | ConnectionChanged
    | OutboxChanged
    | ContextMeasured
    | ChatRenamed
    | ChatDeleted
    | SearchChanged
    | SearchFound
    | EditingChanged
    | ComposerAction
    | ErrorRaised
    | DraftGiven
    | ErrorDismissed
    | NoticeDismissed
    | AttemptShown
    | BranchShown
)
RunUpdate = (
    BytesReceived
    | FrameSkipped
    | IssuesRecorded
    | StreamEnded
    | StreamFailed
    | ReplayStarted
    | ResumeFailed
    | StopRequested
    | CancelSettled
)
"""Run actions that change only the run itself (see ``runs.reduce_run``)."""
RunAction = PreStreamFailed | EventReceived | EventsReceived | RunUpdate
"""Run actions applied only to a current run."""
Action = ChatAction | RunStarted | ResumeStarted | RunRestored | RunFoundEnded | RunAction
