"""Tournament broadcast: live round PGN from the bridges' MQTT events, and the arbiter's dashboard.

Modules: :mod:`.tournament` (the TOML model), :mod:`.bridge_topics` (the bridge's topics and payloads),
:mod:`.live_pgn` (games from events, the round PGN), :mod:`.results` (results and the kings convention),
:mod:`.broadcaster` (the state of the round), :mod:`.consumer` (MQTT), :mod:`.server` (HTTP + dashboard),
:mod:`.lichess_push` (optional push to a lichess broadcast round), :mod:`.simboards` (simulated bridges for
the demo, tests and benchmark), :mod:`.command` and :mod:`.demo` (the command-line entries).
"""
