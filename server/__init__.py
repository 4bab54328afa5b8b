"""Riacho reference backend: demo model, persistence, runs and test scenarios (aiohttp, SQLite).

``python -m server`` (``__main__``) builds a ``Config`` (``config``) and serves
``create_app(config)`` (``app``). Requests pass ``errors`` (JSON errors) and ``auth`` (session
cookie) middlewares, then the routes: ``routes_chats``, ``routes_respond``, ``routes_runs``,
``routes_misc`` (models, attachments), ``routes_test`` (``--test-hooks`` only) and ``static``.

A turn is checked and stored by ``turns``; its run lives in ``runs`` (registry, tasks, cancel,
orphan timer) as a ``live_run``, logs through ``runlog`` (SQLite via ``db``) and builds its
message ``parts``; ``stream`` writes SSE to readers. The run's body is the ``demo`` model
(words in ``demo_text``, images from ``png``, models in ``catalog``, tokens in ``context``) or a
test scenario (``scenarios_queue`` parses and queues, ``scenario_player`` plays).
"""
