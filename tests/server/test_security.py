"""Trust: who may ask, from where, with what — and that no input breaks the server."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from typing import Any

import pytest
from aiohttp import ClientSession, DummyCookieJar, FormData
from aiohttp.test_utils import TestClient, TestServer

from server.http.auth import COOKIE_NAME
from server.http.passwords import hash_password
from server.runs.registry import EARLY_CANCELS_KEPT
from server.store.users import ensure_user
from tests.server.conftest import MakeApi, StartServer, services_of
from tests.server.helpers import Api, read_events

JSON = {"Content-Type": "application/json"}


async def _client(server: TestServer) -> TestClient[Any, Any]:
    client: TestClient[Any, Any] = TestClient(server)
    await client.start_server()
    return client


# --- who is asking ------------------------------------------------------------------------------


async def test_as_switches_user_only_with_test_hooks(start_server: StartServer) -> None:
    server = await start_server(test_hooks=False)
    client = await _client(server)
    try:
        session = await (await client.get("/api/session?as=alice")).json()
        assert session["name"] != "alice" and session["name"].startswith("anon-")
    finally:
        await client.close()


async def test_test_routes_need_a_session(make_api: MakeApi) -> None:
    nobody = await make_api(None)
    response = await nobody.client.post("/__test__/reset", json={})
    assert response.status == 401


async def _password_server(start_server: StartServer) -> TestServer:
    server = await start_server(auth="password")
    db = services_of(server).db
    await ensure_user(db, "ana", hash_password("s3cret-pass"))
    await ensure_user(db, "bo", hash_password("other-pass"))
    return server


async def test_password_accounts_sign_in_rotate_and_sign_out(start_server: StartServer) -> None:
    server = await _password_server(start_server)
    client = await _client(server)
    try:
        assert (await client.get("/api/session")).status == 401
        assert (await client.get("/api/chats")).status == 401
        for name, password in (("ana", "wrong-pass"), ("nobody", "s3cret-pass")):
            refused = await client.post(
                "/api/session/sign-in", json={"name": name, "password": password}
            )
            body = await refused.json()
            assert (refused.status, body["error"]["code"]) == (401, "invalid_credentials")
        first = await client.post(
            "/api/session/sign-in", json={"name": "ana", "password": "s3cret-pass"}
        )
        assert (await first.json())["auth"] == "password"
        cookie = first.cookies[COOKIE_NAME]
        assert cookie["httponly"] and cookie["samesite"] == "Lax"
        old_token = cookie.value
        again = await client.post(
            "/api/session/sign-in", json={"name": "ana", "password": "s3cret-pass"}
        )
        new_token = again.cookies[COOKIE_NAME].value
        assert new_token != old_token, "a sign-in issues a new session"
        assert await _status_with(server, old_token) == 401, "and the old one no longer works"
        assert await _status_with(server, new_token) == 200
        assert (await client.post("/api/session/sign-out")).status == 204
        assert await _status_with(server, new_token) == 401
    finally:
        await client.close()


async def _status_with(server: TestServer, token: str) -> int:
    """``GET /api/chats`` with only this session token (a client with no cookies of its own)."""
    async with ClientSession(cookie_jar=DummyCookieJar()) as bare:
        url = server.make_url("/api/chats")
        response = await bare.get(url, headers={"Cookie": f"{COOKIE_NAME}={token}"})
        return response.status


async def test_proxy_mode_takes_the_user_from_the_trusted_header(
    start_server: StartServer,
) -> None:
    server = await start_server(auth="proxy", trusted_user_header="X-Forwarded-User")
    client = await _client(server)
    try:
        assert (await client.get("/api/chats")).status == 401
        ana = {"X-Forwarded-User": "ana"}
        chat = await (await client.post("/api/chats", json={}, headers=ana)).json()
        mine = await client.get(f"/api/chats/{chat['id']}", headers=ana)
        theirs = await client.get(f"/api/chats/{chat['id']}", headers={"X-Forwarded-User": "bo"})
        assert (mine.status, theirs.status) == (200, 404)
        odd = await client.get("/api/chats", headers={"X-Forwarded-User": "ana bo"})
        assert odd.status == 401
    finally:
        await client.close()


# --- from where ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "body", "status", "code"),
    [
        pytest.param(
            {"Origin": "https://evil.example"}, b"{}", 403, "origin_refused", id="foreign"
        ),
        pytest.param(
            {"Content-Type": "application/x-www-form-urlencoded"},
            b"title=hi",
            415,
            "unsupported_media_type",
            id="form-post",
        ),
        pytest.param(
            {"Content-Type": "text/plain"},
            b'{"title": "hi"}',
            415,
            "unsupported_media_type",
            id="text-plain-json",
        ),
    ],
)
async def test_cross_site_changes_are_refused(
    api: Api, headers: dict[str, str], body: bytes, status: int, code: str
) -> None:
    response = await api.client.post("/api/chats", data=body, headers={**JSON, **headers})
    assert (response.status, (await response.json())["error"]["code"]) == (status, code)
    assert await api.json("GET", "/api/chats") == []


async def test_the_page_s_own_origin_and_allowed_ones_may_change_things(
    start_server: StartServer, make_api: MakeApi
) -> None:
    server = await start_server(allowed_origins=("https://chat.example.org",))
    api = await make_api("alice", on=server)
    own = f"http://{server.host}:{server.port}"
    assert (await api.client.post("/api/chats", json={}, headers={"Origin": own})).status == 201
    allowed = {"Origin": "https://chat.example.org"}
    created = await api.client.post("/api/chats", json={}, headers=allowed)
    assert created.status == 201
    assert created.headers["Access-Control-Allow-Origin"] == "https://chat.example.org"
    assert created.headers["Access-Control-Allow-Credentials"] == "true"
    preflight = await api.client.options("/api/chats", headers=allowed)
    assert preflight.status == 204 and "POST" in preflight.headers["Access-Control-Allow-Methods"]
    refused = await api.client.options("/api/chats", headers={"Origin": "https://evil.example"})
    assert refused.status == 403
    page_file = await api.client.get(
        "/static/riacho.css", headers={**allowed, "Accept-Encoding": "br"}
    )
    vary = {name.strip() for name in page_file.headers["Vary"].split(",")}
    assert vary == {"Accept-Encoding", "Origin"}, "a shared cache must key on both"


ALLOWED = "https://chat.example.org"


async def test_streamed_prepared_and_error_answers_carry_cors_for_an_allowed_origin(
    start_server: StartServer, make_api: MakeApi
) -> None:
    # NOTE: each kind of response: streamed by its handler (the answer, a resume), a JSON
    # answer, an ApiError, aiohttp's own 404, and a 401 from the auth layer
    server = await start_server(allowed_origins=(ALLOWED,))
    api = await make_api("alice", on=server)
    origin = {"Origin": ALLOWED}
    body = {"chatId": "chat_cors_stream_1", "prompt": "hello", "runId": "run_cors_1"}
    streamed = await api.client.post("/api/respond/stream", json=body, headers=origin)
    assert streamed.headers["Content-Type"].startswith("text/event-stream")
    responses = [streamed]
    await streamed.read()
    for method, path in [
        ("GET", "/api/runs/run_cors_1/events?after=0"),
        ("GET", "/api/chats"),
        ("GET", "/api/runs/run_nobody_has/events"),
        ("GET", "/api/no-such-route"),
    ]:
        responses.append(await api.client.request(method, path, headers=origin))
    nobody = await make_api(None, on=server)
    responses.append(await nobody.client.get("/api/chats", headers=origin))
    assert [r.status for r in responses] == [200, 200, 200, 404, 404, 401]
    for response in responses:
        assert response.headers.get("Access-Control-Allow-Origin") == ALLOWED, response.url
        assert response.headers["Access-Control-Allow-Credentials"] == "true"
        assert "Retry-After" in response.headers["Access-Control-Expose-Headers"]
        assert "Origin" in response.headers["Vary"]


async def test_no_cors_for_other_origins_and_every_answer_varies_by_origin(
    start_server: StartServer, make_api: MakeApi
) -> None:
    server = await start_server(allowed_origins=(ALLOWED,))
    api = await make_api("alice", on=server)
    for headers in ({}, {"Origin": "https://evil.example"}):
        response = await api.client.get("/api/chats", headers=headers)
        assert "Access-Control-Allow-Origin" not in response.headers
        assert response.headers["Vary"] == "Origin", "a cache must not mix origins' answers"


@pytest.mark.parametrize("path", ["/", "/api/models", "/static/riacho.css"])
async def test_every_response_carries_the_security_headers(api: Api, path: str) -> None:
    response = await api.client.get(path)
    headers = response.headers
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"
    assert headers["Server"] == "Riacho"


@pytest.mark.parametrize(
    ("isolated", "coep"),
    [pytest.param(True, "credentialless", id="default"), pytest.param(False, None, id="off")],
)
async def test_the_page_is_cross_origin_isolated_unless_turned_off(
    start_server: StartServer, make_api: MakeApi, isolated: bool, coep: str | None
) -> None:
    server = await start_server(cross_origin_isolation=isolated)
    api = await make_api("alice", on=server)
    for path in ("/", "/static/vendor/pyodide/pyodide.mjs", "/api/models"):
        response = await api.client.get(path)
        assert response.headers.get("Cross-Origin-Embedder-Policy") == coep, path
        assert response.headers["Cross-Origin-Opener-Policy"] == "same-origin"


# --- with what: bad input is a 4xx with a code ----------------------------------------------------


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("path", "raw", "status", "code"),
    [
        pytest.param(
            "/api/chats", '{"title": ' + _nested(1000) + "}", 400, "invalid_body", id="deep"
        ),
        pytest.param(
            "/api/chats", '{"title": "\\ud800"}', 400, "invalid_body", id="lone-surrogate"
        ),
        pytest.param("/api/chats", '{"title": NaN}', 400, "invalid_body", id="nan"),
        pytest.param(
            "/__test__/scenarios",
            '{"steps": [{"event": {"type": "text", "text": "x", "seq": 99999999999999999999}}]}',
            400,
            "invalid_body",
            id="int-beyond-64-bits",
        ),
        pytest.param("/api/chats", "{" * 5, 400, "invalid_body", id="broken"),
        pytest.param(
            "/api/chats", b"\xff\xfe".decode("latin-1"), 400, "invalid_body", id="not-utf8"
        ),
    ],
)
async def test_hostile_json_is_a_400_not_a_500(
    api: Api, path: str, raw: str, status: int, code: str
) -> None:
    response = await api.client.post(
        path, data=raw.encode("latin-1" if "ÿ" in raw else "utf-8"), headers=JSON
    )
    assert (response.status, (await response.json())["error"]["code"]) == (status, code)


async def test_a_lone_surrogate_in_a_prompt_is_refused(api: Api) -> None:
    chat_id = await api.new_chat()
    raw = '{"chatId": "' + chat_id + '", "prompt": "hi \\udfff"}'
    response = await api.client.post("/api/respond/stream", data=raw, headers=JSON)
    assert response.status == 400


@pytest.mark.parametrize(
    "value",
    ["99999999999999999999", "--5", "1e3", "٣", " 7 8"],
    ids=["huge", "double-minus", "exponent", "arabic-digit", "two-numbers"],
)
async def test_a_bad_last_event_id_is_400_before_any_stream(api: Api, value: str) -> None:
    chat_id = await api.new_chat()
    await api.run_turn(chat_id, runId="run_done")
    response = await api.client.get("/api/runs/run_done/events", headers={"Last-Event-ID": value})
    assert response.status == 400
    assert (await response.json())["error"]["code"] == "invalid_body"


async def test_a_last_event_id_beyond_the_run_is_an_empty_replay(api: Api) -> None:
    chat_id = await api.new_chat()
    await api.run_turn(chat_id, runId="run_done")
    assert await api.replay("run_done", after=10**15) == []


async def test_ids_match_in_full(api: Api) -> None:
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, runId="run_ok\n")
    assert response.status == 400


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        pytest.param(
            b'--B\r\nContent-Disposition: form-data; name="file"; filename="a\x00b.txt"\r\n'
            b"Content-Type: text/plain\r\n\r\nhello\r\n--B--\r\n",
            "multipart/form-data; boundary=B",
            id="nul-in-filename",
        ),
        pytest.param(
            b'--B\r\nContent-Disposition: form-data; name="file"; filename="\xff\xfe.txt"\r\n'
            b"Content-Type: text/plain\r\n\r\nhello\r\n--B--\r\n",
            "multipart/form-data; boundary=B",
            id="invalid-utf8-filename",
        ),
        pytest.param(
            b"--B\r\nthis is not a header\r\n\r\nhello\r\n--B--\r\n",
            "multipart/form-data; boundary=B",
            id="bad-part-header",
        ),
        pytest.param(b"no boundary at all", "multipart/form-data", id="no-boundary"),
    ],
)
async def test_a_malformed_upload_is_a_400(api: Api, body: bytes, content_type: str) -> None:
    response = await api.client.post(
        "/api/attachments", data=body, headers={"Content-Type": content_type}
    )
    assert response.status == 400, await response.text()
    assert (await response.json())["error"]["code"] == "invalid_body"


# --- limits that protect other users --------------------------------------------------------------


async def test_a_prompt_over_the_limit_is_413(start_server: StartServer, make_api: MakeApi) -> None:
    api = await make_api("alice", on=await start_server(limits=_limits(prompt_max_bytes=100)))
    chat_id = await api.new_chat()
    response = await api.stream(chat_id, "é" * 51)
    assert (response.status, (await response.json())["error"]["code"]) == (413, "prompt_too_large")


async def test_a_body_over_the_limit_is_413_and_is_not_read(api: Api) -> None:
    huge = b'{"title": "' + b"x" * (2 * 1024 * 1024) + b'"}'
    response = await api.client.post("/api/chats", data=huge, headers=JSON)
    assert (response.status, (await response.json())["error"]["code"]) == (413, "body_too_large")


async def test_attachment_ids_are_capped_and_a_repeated_one_counts_once(api: Api) -> None:
    form = FormData()
    form.add_field("file", b"notes", filename="n.txt", content_type="text/plain")
    attachment = (await api.json("POST", "/api/attachments", expect=201, data=form))["attachmentId"]
    chat_id = await api.new_chat()
    too_many = await api.stream(chat_id, "x", attachmentIds=[attachment] * 11)
    assert (too_many.status, (await too_many.json())["error"]["code"]) == (
        400,
        "too_many_attachments",
    )
    await api.run_turn(chat_id, "x", attachmentIds=[attachment] * 10)
    user = (await api.json("GET", f"/api/chats/{chat_id}"))["messages"][0]
    assert [a["attachmentId"] for a in user["attachments"]] == [attachment]


async def test_a_user_s_concurrent_runs_are_capped_with_429(
    start_server: StartServer, make_api: MakeApi
) -> None:
    server = await start_server(limits=_limits(runs_per_user=1))
    api, bob = await make_api("alice", on=server), await make_api("bob", on=server)
    chat_id = await api.new_chat()
    await api.scenario([{"event": {"type": "text", "text": "busy"}}, {"hold": True}], chat_id)
    first = await api.stream(chat_id, runId="run_busy")
    await read_events(first, 1)
    second = await api.stream(chat_id, runId="run_second")
    assert (second.status, (await second.json())["error"]["code"]) == (429, "too_many_runs")
    assert second.headers["Retry-After"] == "5"
    other = await bob.new_chat()
    assert (await bob.stream(other, runId="run_bob")).status == 200, "others are not held up"
    await api.cancel("run_busy")


@pytest.mark.one_process
async def test_an_early_cancel_flood_keeps_memory_flat(api: Api, server: TestServer) -> None:
    registry = services_of(server).runs
    for n in range(300):
        await api.json("POST", f"/api/runs/run_flood_{n}/cancel")
    tracemalloc.start()
    baseline = tracemalloc.take_snapshot()
    for n in range(50_000):
        registry.note_early_cancel("usr_flood", f"run_{n}")
    grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(baseline, "filename"))
    tracemalloc.stop()
    assert len(registry._early_cancels) <= EARLY_CANCELS_KEPT
    assert grown < 1_000_000, f"{grown} bytes kept for 50,000 unknown run ids"


def _limits(**changes: Any) -> Any:
    from dataclasses import replace

    from server.config import Limits

    return replace(Limits(), **changes)


# --- no request breaks the server ---------------------------------------------------------------


async def test_no_route_answers_a_5xx_to_odd_bodies(api: Api) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    chat_id = await api.new_chat()
    await api.run_turn(chat_id, runId="run_fuzz")
    routes = [
        ("POST", "/api/chats"),
        ("POST", "/api/respond/stream"),
        ("POST", f"/api/chats/{chat_id}/compact"),
        ("POST", "/api/runs/run_fuzz/cancel"),
        ("POST", "/api/session/sign-in"),
        ("POST", "/__test__/scenarios"),
    ]
    text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=()), max_size=20)
    leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text
    values = st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
        max_leaves=30,
    )
    bodies = st.one_of(
        values,
        st.fixed_dictionaries({"chatId": st.just(chat_id) | text, "prompt": values}),
        st.fixed_dictionaries({"steps": st.lists(st.dictionaries(text, values), max_size=3)}),
        st.integers(1, 400).map(lambda depth: json.loads(_nested(min(depth, 60)))),
    )
    seen: list[tuple[str, int]] = []

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(route=st.sampled_from(routes), body=bodies)
    def check(route: tuple[str, str], body: Any) -> None:
        seen.append(
            (
                route[1],
                asyncio.run_coroutine_threadsafe(_post(api, route, body), loop).result(timeout=10),
            )
        )

    loop = asyncio.get_running_loop()
    await asyncio.to_thread(check)
    assert seen and all(status < 500 for _, status in seen), [s for s in seen if s[1] >= 500]


async def _post(api: Api, route: tuple[str, str], body: Any) -> int:
    method, path = route
    data = json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")
    response = await api.client.request(method, path, data=data, headers=JSON)
    status = response.status
    if status >= 400:
        error = (await response.json())["error"]
        assert isinstance(error["code"], str) and isinstance(error["message"], str)
    else:
        await response.read()
    return status
