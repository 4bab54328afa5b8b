"""Riacho reference backend: real models, the demo model, persistence, runs and test scenarios.

``python -m server`` (``__main__``) builds a ``Config`` (``config``, provider settings from
``providers.settings``) and serves ``create_app(config)`` (``app``). Requests pass ``errors``
(JSON errors) and ``auth`` (session cookie) middlewares, then the routes (``routes/``: chats,
respond, runs, misc — models and attachments — and, with ``--test-hooks``, test_hooks) and
``static``.

A turn is checked and stored by ``turns`` against the models of ``catalog``. Its run lives in
``runs/``: the ``registry`` (tasks, cancel, orphan timers, how a run ends), ``live`` (one run's
frames, readers and trace), ``log`` (SQLite persistence and the answer folded with the page's
own fold, ``app.state.parts``) and ``stream`` (SSE to readers). A run's events come from:

- a real model: ``model_turn`` (the agentic loop) over a ``providers/`` adapter, with ``tools``,
  the history of ``conversation`` and, on request, ``compaction``;
- the demo: ``demo/`` (``model`` plays a turn, ``text`` writes it, ``png`` paints images);
- a test scenario: ``scenarios/`` (``steps`` validates and queues, ``player`` plays).

``drafts`` makes events before the registry numbers them; ``context`` counts tokens.
"""
