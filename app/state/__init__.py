"""State: immutable values and the pure functions that change them.

``text`` (growing text), ``parts`` (the one fold of events into an answer's parts, shared with
the server), ``trace`` (diagnostics), ``state`` (the whole page state), ``actions``, ``runs``
(one run's state machine), ``reducer``, ``store`` (the observable store), ``history`` (a chat
read back from the server).
"""
