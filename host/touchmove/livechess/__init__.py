"""A LiveChess-compatible e-board API (``touchmove livechess``; docs/livechess.md): the boards of every bridge on
the brokers, served as DGT LiveChess serves its e-boards, so lichess.org/dgt/play and LiveChess's programs play
on them.

Modules: :mod:`.eboards` (the boards followed from the bridges' MQTT messages, and their LiveChess JSON),
:mod:`.server` (the websocket and HTTP API; ``setup`` through the bridge's command), :mod:`.command` (the
command line).
"""
