"""``touchmove run``: serial boards in, a rules engine per board, the journal, MQTT out.

The package's modules:

| module | what |
|---|---|
| :mod:`~touchmove.bridge.daemon` | :class:`Bridge`: the parts below wired; nothing opened until ``run()`` |
| :mod:`~touchmove.bridge.pipeline` | :class:`EventPipeline`: records to the engine, timers, the journal, checkpoints |
| :mod:`~touchmove.bridge.publisher` | :class:`Publisher`: topics and retained state, on the MQTT link |
| :mod:`~touchmove.bridge.leds` | what a board's LEDs show of its events |
| :mod:`~touchmove.bridge.ports` | :class:`BoardPorts`: serial ports, lines decoded, boards bound by ``hello`` |
| :mod:`~touchmove.bridge.session` | :class:`BoardSession`: one board's state and its device-time estimate |
| :mod:`~touchmove.bridge.replay` | :func:`replay_entries`: an engine rebuilt from the journal (and its checkpoint) |
| :mod:`~touchmove.bridge.journal_faults` | what happens while the journal cannot write, and the bound |
| :mod:`~touchmove.bridge.journal_watch` | the journal's file deleted, moved or replaced while the bridge runs |
| :mod:`~touchmove.bridge.flicker` | a square flickering faster than any hand, coalesced before the journal |
| :mod:`~touchmove.bridge.identity` | board identity conflicts (an id change on a port, two ports with one id) |
| :mod:`~touchmove.bridge.commands` | the MQTT commands (board ``set``, bridge requests) |
| :mod:`~touchmove.bridge.command` | the ``touchmove run`` command line |
| :mod:`~touchmove.bridge.journal` | the journal (SQLite): records, events, checkpoints |
| :mod:`~touchmove.bridge.checkpoint` | engine checkpoints, signed with the installation's key |
| :mod:`~touchmove.bridge.mqtt_link` | :class:`BridgeLink`: a bounded outgoing queue and the commands, on MqttLinks |

The names below are imported when first used: ``touchmove export`` reads the journal and its checkpoints
without loading the daemon and its MQTT client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from touchmove.bridge.command import configure, run_command, serve
    from touchmove.bridge.daemon import CHECKPOINT_EVERY, MAX_BACKLOG, Bridge
    from touchmove.bridge.identity import IdentityConflict
    from touchmove.bridge.journal_faults import JOURNAL_RETRY_S, MAX_HELD_WRITES
    from touchmove.bridge.ports import MAX_PENDING, SNAPSHOT_INTERVAL, BoardPorts
    from touchmove.bridge.replay import replay_entries
    from touchmove.bridge.session import MAX_FORWARD_JUMP_MS, BoardSession
    from touchmove.mqtt.wire import iso_now

#: Where each name of the package lives.
_HOMES = {
    "configure": "command", "run_command": "command", "serve": "command",
    "CHECKPOINT_EVERY": "daemon", "MAX_BACKLOG": "daemon", "Bridge": "daemon",
    "IdentityConflict": "identity",
    "JOURNAL_RETRY_S": "journal_faults", "MAX_HELD_WRITES": "journal_faults",
    "MAX_PENDING": "ports", "SNAPSHOT_INTERVAL": "ports", "BoardPorts": "ports",
    "replay_entries": "replay",
    "MAX_FORWARD_JUMP_MS": "session", "BoardSession": "session",
}

__all__ = ["CHECKPOINT_EVERY", "JOURNAL_RETRY_S", "MAX_BACKLOG", "MAX_FORWARD_JUMP_MS", "MAX_HELD_WRITES",
           "MAX_PENDING", "SNAPSHOT_INTERVAL", "BoardPorts", "BoardSession", "Bridge", "IdentityConflict", "configure",
           "iso_now", "replay_entries", "run_command", "serve"]


def __getattr__(name: str) -> Any:
    if name == "iso_now":
        return importlib.import_module("touchmove.mqtt.wire").iso_now
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
