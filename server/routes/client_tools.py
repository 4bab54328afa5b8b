"""``POST /api/runs/{runId}/tool-calls/{toolCallId}/result`` (SPEC §13): a page's result of a
call it ran (the model's ``python``).

The first result stands, from any tab or worker (the store holds it): the same one again is
200 with it; a different one (another tab's, or one after the deadline or a Stop ended the
call) is ``409 result_taken``. Another user's run, or a call the page was not asked to run, is
``404`` like an unknown id.
"""

from __future__ import annotations

from aiohttp import web
from pydantic import ValidationError

from app.wire.api import ToolClientResultAnswer, ToolClientResultBody
from server.contract.errors import ApiError
from server.contract.jsonio import answer_payload, read_json_body
from server.http.auth import current_user
from server.http.services import services
from server.store import runlog
from server.tools.client_tools import deliver


async def post_client_result(request: web.Request) -> web.Response:
    """``POST …/tool-calls/{toolCallId}/result`` ``{"result", "isError"}``."""
    svc, user_id = services(request), current_user(request)
    run_id, call_id = request.match_info["run_id"], request.match_info["tool_call_id"]
    try:
        body = ToolClientResultBody.model_validate(await read_json_body(request))
    except ValidationError as exc:
        raise ApiError(
            400, "invalid_body", "a result is {'result': JSON, 'isError'?: bool}"
        ) from exc
    key = runlog.run_key(user_id, run_id)
    delivered = await deliver(svc.db, svc.bell, key, call_id, body.result, body.is_error)
    if delivered is None:
        raise ApiError(404, "tool_call_not_found", f"no call {call_id!r} of this run runs here")
    if not delivered.taken_now and not delivered.same(body.result, body.is_error):
        raise ApiError(409, "result_taken", "this call's result was already taken")
    record = delivered.record
    return answer_payload(
        ToolClientResultAnswer(tool_call_id=call_id, result=record.result, is_error=record.is_error)
    )
