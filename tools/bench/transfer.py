"""Bytes on the wire to ``html[data-ready]``, first and second visit, Riacho and the bare page.

Counted as Chromium counts them: the page's CDP session (``Network.enable``) reports, per
request, ``Network.loadingFinished.encodedDataLength``: the bytes received for it, headers
included, compressed as sent. A response from the HTTP cache (``fromDiskCache``,
``fromPrefetchCache`` or ``Network.requestServedFromCache``) counts 0, a revalidation (304)
its headers. The requests counted are those started before ``data-ready`` (the ones still
loading then are waited for, SETTLE_TIMEOUT_S at most; what is still open is listed as such
with the bytes received so far).

A page-level CDP session does not see what a dedicated worker fetches. Playwright does (it
attaches to workers): its requests that the CDP session did not report are added with
Playwright's sizes (``responseHeadersSize + responseBodySize``, which Playwright derives from
the worker session's ``encodedDataLength``, so 0 for a cache hit) and listed apart. What a
service worker fetches for itself is not counted (a warning says when one controls the page).

A visit pair runs in a persistent context on a fresh profile: the page boots, stays open
VISIT_PAUSE_S (the caches are written), closes; the same URL is opened again.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness import BenchError, boot, launch_persistent
from playwright.sync_api import BrowserContext, CDPSession, Page, Playwright, Request
from playwright.sync_api import Error as PlaywrightError

VISIT_PAUSE_S = 2.0
SETTLE_TIMEOUT_S = 15.0


@dataclass
class _CdpRequest:
    """One request as the page's CDP session reported it."""

    url: str
    before_ready: bool = True
    status: int | None = None
    cached: bool = False
    service_worker: bool = False
    encoding: str = ""
    encoded: int | None = None  # NOTE: loadingFinished's encodedDataLength; None until then
    received: int = 0  # NOTE: dataReceived's encodedDataLength, for a request still open
    redirects: int = 0  # NOTE: the bytes of the redirect responses before this one
    failed: bool = False

    @property
    def done(self) -> bool:
        return self.failed or self.encoded is not None

    @property
    def wire_bytes(self) -> int:
        if self.cached:
            return self.redirects
        return self.redirects + (self.encoded if self.encoded is not None else self.received)


@dataclass(frozen=True, slots=True)
class Fetch:
    """One counted request: where, how many bytes on the wire, how it was served."""

    path: str
    bytes: int
    how: str  # network | revalidated | cache | failed | open | service-worker | worker

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "bytes": self.bytes, "how": self.how}


@dataclass(frozen=True, slots=True)
class Visit:
    """The bytes of one visit up to ``data-ready``."""

    fetches: tuple[Fetch, ...]
    compressed: int  # bodies fetched with a Content-Encoding
    ready_ms: float

    @property
    def total(self) -> int:
        return sum(fetch.bytes for fetch in self.fetches)

    def count(self, *hows: str) -> int:
        return sum(fetch.how in hows for fetch in self.fetches)

    def as_json(self) -> dict[str, Any]:
        hows = Counter(fetch.how for fetch in self.fetches)
        return {
            "bytes": self.total,
            "requests": len(self.fetches),
            "by_how": dict(sorted(hows.items())),
            "compressed_responses": self.compressed,
            "ready_s": round(self.ready_ms / 1000, 3),
            "fetches": [fetch.as_json() for fetch in self.fetches],
        }


@dataclass
class Traffic:
    """Watches one page's requests from before its navigation (``attach`` is the boot's setup)."""

    cdp: CDPSession | None = None
    requests: dict[str, _CdpRequest] = field(default_factory=dict)
    wire_status: dict[str, int] = field(default_factory=dict)  # NOTE: from ExtraInfo (304s)
    playwright_started: list[Request] = field(default_factory=list)
    playwright_done: set[int] = field(default_factory=set)  # NOTE: id() of finished / failed
    ready: bool = False

    def attach(self, page: Page) -> None:
        """Open the page's CDP session and listen (call before the page navigates)."""
        cdp = page.context.new_cdp_session(page)
        cdp.on("Network.requestWillBeSent", self._will_be_sent)
        cdp.on("Network.responseReceived", self._response)
        cdp.on("Network.responseReceivedExtraInfo", self._extra_info)
        cdp.on("Network.requestServedFromCache", self._from_cache)
        cdp.on("Network.dataReceived", self._data)
        cdp.on("Network.loadingFinished", self._finished)
        cdp.on("Network.loadingFailed", self._failed)
        cdp.send("Network.enable")
        page.on("request", self._pw_request)
        page.on("requestfinished", self._pw_done)
        page.on("requestfailed", self._pw_done)
        self.cdp = cdp

    # --- CDP events ---------------------------------------------------------------------------

    def _will_be_sent(self, event: dict[str, Any]) -> None:
        request_id = event["requestId"]
        hops = 0
        known = self.requests.get(request_id)
        if known is not None and "redirectResponse" in event:
            # NOTE: a redirect reuses the id; the hop's bytes come with its redirect response.
            hops = known.redirects + int(event["redirectResponse"].get("encodedDataLength", 0))
        self.requests[request_id] = _CdpRequest(
            event["request"]["url"], before_ready=not self.ready, redirects=hops
        )

    def _response(self, event: dict[str, Any]) -> None:
        request = self.requests.get(event["requestId"])
        if request is None:
            return
        response = event["response"]
        request.status = int(response.get("status", 0))
        request.cached = request.cached or bool(
            response.get("fromDiskCache") or response.get("fromPrefetchCache")
        )
        request.service_worker = bool(response.get("fromServiceWorker"))
        headers = {str(k).lower(): str(v) for k, v in response.get("headers", {}).items()}
        request.encoding = headers.get("content-encoding", "")

    def _extra_info(self, event: dict[str, Any]) -> None:
        self.wire_status[event["requestId"]] = int(event.get("statusCode", 0))

    def _from_cache(self, event: dict[str, Any]) -> None:
        request = self.requests.get(event["requestId"])
        if request is not None:
            request.cached = True

    def _data(self, event: dict[str, Any]) -> None:
        request = self.requests.get(event["requestId"])
        if request is not None:
            request.received += int(event.get("encodedDataLength", 0))

    def _finished(self, event: dict[str, Any]) -> None:
        request = self.requests.get(event["requestId"])
        if request is not None:
            request.encoded = int(event["encodedDataLength"])

    def _failed(self, event: dict[str, Any]) -> None:
        request = self.requests.get(event["requestId"])
        if request is not None:
            request.failed = True

    # --- Playwright events (workers included) -------------------------------------------------

    def _pw_request(self, request: Request) -> None:
        if not self.ready:
            self.playwright_started.append(request)

    def _pw_done(self, request: Request) -> None:
        self.playwright_done.add(id(request))

    # --- the visit ----------------------------------------------------------------------------

    def settle(self, page: Page) -> None:
        """Mark ``data-ready`` now; wait until what started before it has finished."""
        self.ready = True
        waited = 0.0
        while waited < SETTLE_TIMEOUT_S:
            pw_open = [r for r in self.playwright_started if id(r) not in self.playwright_done]
            finished = {_bare_url(r.url) for r in self.playwright_started} - {
                _bare_url(r.url) for r in pw_open
            }
            cdp_open = [
                r
                for r in self.requests.values()
                if r.before_ready and not r.done and _bare_url(r.url) not in finished
            ]  # NOTE: a worker's script ends in the worker's session: Playwright sees it end
            if not cdp_open and not pw_open:
                page.wait_for_timeout(100)  # NOTE: this session's last events, if any
                return
            page.wait_for_timeout(50)  # NOTE: lets Playwright deliver the pending events
            waited += 0.05

    def visit(self, ready_ms: float) -> Visit:
        """The counted requests of the visit (call after :meth:`settle`)."""
        fetches: list[Fetch] = []
        seen: Counter[str] = Counter()
        still_open: list[_CdpRequest] = []
        compressed = 0
        for request_id, request in self.requests.items():
            if not request.before_ready:
                continue
            if not request.done:  # NOTE: a worker's script ends in the worker's session
                still_open.append(request)
                continue
            seen[_bare_url(request.url)] += 1
            how = _how(request, self.wire_status.get(request_id))
            compressed += bool(request.encoding) and how == "network"
            fetches.append(Fetch(_path(request.url), request.wire_bytes, how))
        unfinished: Counter[str] = Counter()
        for other in self.playwright_started:  # NOTE: what the page's CDP session missed
            url = _bare_url(other.url)
            if seen[url] > 0:
                seen[url] -= 1
            elif id(other) in self.playwright_done:
                fetches.append(_worker_fetch(other))
            else:
                unfinished[url] += 1
        for request in still_open:  # NOTE: neither session saw these finish
            url = _bare_url(request.url)
            if unfinished[url] > 0:
                unfinished[url] -= 1
                fetches.append(Fetch(_path(url), request.wire_bytes, "open"))
        for url, count in unfinished.items():
            fetches += [Fetch(_path(url), 0, "open")] * count
        return Visit(tuple(fetches), compressed, ready_ms)


def _bare_url(url: str) -> str:
    return url.split("#", 1)[0]


def _path(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme in ("http", "https"):
        return parts.path + (f"?{parts.query}" if parts.query else "")
    return url[:60]


def _how(request: _CdpRequest, wire_status: int | None) -> str:
    if request.failed:
        return "failed"
    if request.cached:
        return "cache"
    if request.service_worker:
        return "service-worker"
    if request.encoded is None:
        return "open"
    return "revalidated" if wire_status == 304 else "network"


def _worker_fetch(request: Request) -> Fetch:
    """A finished request only Playwright saw (a worker's): its sizes, whose sum Playwright
    takes from the worker session's ``encodedDataLength`` (0 for a cache hit)."""
    if request.failure is not None:
        return Fetch(_path(request.url), 0, "failed")
    try:
        sizes = request.sizes()
    except PlaywrightError:  # NOTE: no response (aborted): nothing to count
        return Fetch(_path(request.url), 0, "failed")
    wire = sizes["responseHeadersSize"] + sizes["responseBodySize"]
    return Fetch(_path(request.url), max(wire, 0), "worker")


@dataclass(frozen=True, slots=True)
class VisitPair:
    """A first visit and a second one in the same profile."""

    first: Visit
    second: Visit


def _one_visit(context: BrowserContext, url: str) -> tuple[Page, Visit]:
    traffic = Traffic()
    page, ready_ms = boot(context, url, setup=traffic.attach)
    traffic.settle(page)
    if page.evaluate("navigator.serviceWorker && navigator.serviceWorker.controller !== null"):
        print(
            f"bench: {url} is controlled by a service worker: its own fetches are not counted",
            file=sys.stderr,
        )
    return page, traffic.visit(ready_ms)


def visit_pair(playwright: Playwright, executable: str, url: str) -> VisitPair:
    """First and second visit of ``url`` on a fresh profile."""
    with tempfile.TemporaryDirectory(prefix="riacho-bench-bytes-") as user_data:
        context = launch_persistent(playwright, executable, Path(user_data))
        try:
            page, first = _one_visit(context, url)
            page.wait_for_timeout(VISIT_PAUSE_S * 1000)
            page.close()
            page, second = _one_visit(context, url)
            page.close()
        finally:
            context.close()
    if first.total == 0:
        raise BenchError(f"{url}: no bytes counted on a first visit")
    return VisitPair(first, second)
