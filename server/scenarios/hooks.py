"""The test hooks' state (``--test-hooks``): queued scenarios, run traces, and the reset.

:class:`LocalHooks` keeps it in this process. With ``--redis-url`` every worker of the
deployment must see the same state, since the scenario queued through one worker is played by
whichever worker gets the stream request, and a run's trace lives in the process that generates
it. :class:`RedisHooks` then keeps the scenarios in Redis lists and asks every worker (over a
pub/sub channel) for a trace, or to stop its runs and forget its traces on a reset.

Keys and channel (only with ``--test-hooks``):

- ``riacho:test:scenarios:C`` — a list of queued scenarios (JSON) for chat ``C``;
  ``riacho:test:scenarios:*`` for any chat.
- ``riacho:test:ask`` — a pub/sub channel of ``{"ask": "trace" | "reset", "runId"?, "reply"}``;
  every worker pushes its answer (``{"trace": … | null}``) to the list ``reply``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar

from redis.asyncio import Redis
from redis.asyncio.client import PubSub
from redis.exceptions import RedisError

from server.runs.registry import RunRegistry
from server.scenarios.steps import ScenarioQueue, Step, parse_scenario
from server.store.db import new_id

log = logging.getLogger("riacho.hooks")
PREFIX = "riacho:test"
ASK_CHANNEL = f"{PREFIX}:ask"
ANY_CHAT = "*"
ANSWER_TIMEOUT_S = 10.0
REPLY_TTL_S = 60
JsonObject = dict[str, Any]
T = TypeVar("T")


async def _sent(result: Awaitable[T] | T) -> T:
    """A command's result (redis-py types each command as awaitable or not, by client)."""
    return await result if isinstance(result, Awaitable) else result


class TestHooks(Protocol):
    """What the ``/__test__`` routes and the stream route need, wherever it is kept."""

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...

    async def push(self, chat_id: str | None, scenario: object) -> int:
        """Queue a scenario's JSON body (valid: see :func:`parse_scenario`); how many now wait
        for that chat (or for any chat)."""
        ...

    async def take(self, chat_id: str) -> list[Step] | None:
        """The next scenario for this chat, else the next one for any chat."""
        ...

    async def trace(self, run_id: str) -> JsonObject | None:
        """What the server saw of the run (``None``: no process has its trace)."""
        ...

    async def reset(self) -> None:
        """Stop every live run and forget every scenario and trace, in every process."""
        ...


class LocalHooks:
    """One process alone: the state is this process's."""

    def __init__(self, runs: RunRegistry) -> None:
        self.runs = runs
        self.queue = ScenarioQueue()

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def push(self, chat_id: str | None, scenario: object) -> int:
        return self.queue.push(chat_id, parse_scenario(scenario).steps)

    async def take(self, chat_id: str) -> list[Step] | None:
        return self.queue.take(chat_id)

    async def trace(self, run_id: str) -> JsonObject | None:
        trace = self.runs.traces.get(run_id)
        return None if trace is None else trace.to_json()

    async def reset(self) -> None:
        await self.runs.shutdown()
        self.queue.clear()
        self.runs.traces.clear()


def scenarios_key(chat_id: str | None) -> str:
    return f"{PREFIX}:scenarios:{ANY_CHAT if chat_id is None else chat_id}"


class RedisHooks:
    """Every worker on one Redis: scenarios in Redis, traces and resets asked of every worker."""

    def __init__(self, url: str, runs: RunRegistry) -> None:
        self.redis: Redis = Redis.from_url(url, decode_responses=True)
        self.runs = runs
        self._pubsub: PubSub | None = None
        self._listener: asyncio.Task[None] | None = None

    async def start(self) -> None:
        # NOTE: subscribed before the worker serves: an ask sent once it answers reaches it.
        self._pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        await self._pubsub.subscribe(ASK_CHANNEL)
        self._listener = asyncio.get_running_loop().create_task(self._listen(self._pubsub))

    async def aclose(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
        await self.redis.aclose()

    async def push(self, chat_id: str | None, scenario: object) -> int:
        return int(await _sent(self.redis.rpush(scenarios_key(chat_id), json.dumps(scenario))))

    async def take(self, chat_id: str) -> list[Step] | None:
        for key in (scenarios_key(chat_id), scenarios_key(None)):
            queued = await _sent(self.redis.lpop(key))
            if isinstance(queued, str):
                return parse_scenario(json.loads(queued)).steps
        return None

    async def trace(self, run_id: str) -> JsonObject | None:
        answers = await self._ask({"ask": "trace", "runId": run_id})
        traces = [answer["trace"] for answer in answers if answer.get("trace") is not None]
        # NOTE: only the process that generated a run keeps its trace
        return dict(traces[0]) if traces else None

    async def reset(self) -> None:
        await self._ask({"ask": "reset"})
        keys = [key async for key in self.redis.scan_iter(match=f"{PREFIX}:scenarios:*")]
        if keys:
            await self.redis.delete(*keys)

    async def _ask(self, question: JsonObject) -> list[JsonObject]:
        """Ask every worker (this one too); their answers, once each has answered."""
        reply = f"{PREFIX}:reply:{new_id('ask')}"
        message = json.dumps({**question, "reply": reply})
        workers = int(await self.redis.publish(ASK_CHANNEL, message))
        answers: list[JsonObject] = []
        try:
            async with asyncio.timeout(ANSWER_TIMEOUT_S):
                while len(answers) < workers:
                    popped = await _sent(self.redis.blpop([reply], timeout=int(ANSWER_TIMEOUT_S)))
                    if popped is not None:
                        answers.append(json.loads(popped[1]))
        except TimeoutError:
            log.warning("test hooks: %d of %d workers answered %s", len(answers), workers, question)
        finally:
            await self.redis.delete(reply)
        return answers

    async def _listen(self, pubsub: PubSub) -> None:
        async with pubsub:  # NOTE: closed when the listener is cancelled
            await self._answer_all(pubsub)

    async def _answer_all(self, pubsub: PubSub) -> None:
        while True:
            try:
                message = await pubsub.get_message(timeout=1.0)
                if message is not None and message.get("type") == "message":
                    await self._answer(json.loads(message["data"]))
            except RedisError:
                log.warning("test hooks: ask channel lost; listening again", exc_info=True)
                await asyncio.sleep(1.0)

    async def _answer(self, question: JsonObject) -> None:
        answer: JsonObject = {}
        if question["ask"] == "trace":
            trace = self.runs.traces.get(str(question["runId"]))
            answer["trace"] = None if trace is None else trace.to_json()
        elif question["ask"] == "reset":
            await self.runs.shutdown()
            self.runs.traces.clear()
        pipe = self.redis.pipeline(transaction=False)
        pipe.rpush(str(question["reply"]), json.dumps(answer))
        pipe.expire(str(question["reply"]), REPLY_TTL_S)
        await pipe.execute()


def make_hooks(redis_url: str | None, runs: RunRegistry) -> TestHooks:
    """The test hooks' state: shared through Redis when there is one, else this process's."""
    return LocalHooks(runs) if redis_url is None else RedisHooks(redis_url, runs)
