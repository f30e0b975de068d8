"""Tournament broadcast: live round PGN from the bridges' MQTT events, and the arbiter's dashboard.

Modules: :mod:`.tournament` (the TOML model), :mod:`.bridge_topics` (the bridge's topics and payloads),
:mod:`.live_pgn` (games from events, the round PGN), :mod:`.results` (results and the kings convention),
:mod:`.broadcaster` (the state of the round), :mod:`.consumer` (MQTT), :mod:`.server` (HTTP + dashboard),
:mod:`.lichess_push` (optional push to a lichess broadcast round), :mod:`.command` (the command-line entry).
The simulated bridges and the broadcast demo are in :mod:`touchmove.sim`.
"""
