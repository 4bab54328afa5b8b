"""Riacho reference backend: real models, the demo model, persistence, runs and test scenarios.

One room per concept; each room imports only its own layer and those below
(``tests/unit/test_layering.py``)::

    contract, config → store → runs → tools → turns, model, demo, scenarios → routes, http
        → cli, app

- ``contract/`` what every room may use: ``errors`` (``ApiError``, the JSON error answer) and
  ``jsonio`` (JSON read within limits). ``config/`` the settings (``providers``: each provider
  and model, from the command line or TOML; ``limits``: every limit the server enforces).
- ``store/`` all SQL (a test holds it there): ``db`` (SQLite on the loop thread or PostgreSQL
  through asyncpg, the same SQL), ``migrations/`` (Alembic, applied at start), ``chats``
  (found by their owner's name, listed, searched, renamed, deleted; compaction, summaries,
  usage), ``messages`` (the tree of a chat, a turn's rows, each answer's model steps),
  ``attachments``, ``users`` (and sessions, kept hashed), ``faults`` (which errors mean the
  storage failed), ``runlog`` (runs and their event logs, the answer
  folded with the page's own fold, ``app.wire.parts``; a run's key).
- ``runs/`` runs as they go: ``registry`` (tasks, cancel, orphan timers, how a run ends),
  ``live`` (one run's frames, readers and trace), ``readers`` (readers capped per user and
  run), ``unstored`` (a run whose storage failed mid-answer), ``drafts`` (events before the registry
  numbers them), ``coalesce`` (deltas merged per ~50 ms window), ``stream`` (SSE to readers),
  ``bus`` / ``redis_bus`` (what several processes share about runs) and ``remote`` (reading a
  run another process writes).
- What makes an answer: ``turns/`` (``start``: a request's checks and the rows it creates;
  ``context``: tokens counted; ``titles``), ``model/`` (``loop``: a real model's agentic turn
  over a ``providers/`` adapter, with ``tools``, the history of ``conversation``,
  ``continuation`` after a model switch, ``compaction``, the ``catalog`` of models, and ``turn``:
  a checked turn made into a model turn),
  ``demo/`` (the demo model: ``model`` plays a turn, ``text`` writes it) and ``scenarios/``
  (test scenarios: ``steps`` validates, ``player`` plays).
- ``routes/`` one module per resource (chats, respond, runs, misc, test_hooks), and ``http/``
  the shell around them (``auth``: sessions and sign-in, ``passwords`` and ``throttle``: sign-in
  checks off the loop and their throttle, ``peers``: the client behind a trusted proxy,
  ``hosts``: the Host allowlist, ``deadlines``: slow clients cut, ``storage``: 503 when the
  storage fails, ``security``: headers and CORS, ``static``: the page's files, ``services``:
  what every route shares). What it defends against: docs/security.md.
- ``app`` builds the application from a ``Config``; ``__main__`` is ``python -m server``;
  ``cli/`` holds ``users`` (``python -m server users …``) and ``proxy`` (the round-robin proxy
  in front of several workers).
"""
