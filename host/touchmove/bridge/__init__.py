"""``touchmove run``: serial boards in, a rules engine per board, the journal, MQTT out.

The package's modules:

| module | what |
|---|---|
| :mod:`~touchmove.bridge.daemon` | :class:`Bridge`: records to the engine, events to the journal, then to MQTT |
| :mod:`~touchmove.bridge.ports` | :class:`BoardPorts`: serial ports, lines decoded, boards bound by ``hello`` |
| :mod:`~touchmove.bridge.session` | :class:`BoardSession`: one board's state and its device-time estimate |
| :mod:`~touchmove.bridge.replay` | :func:`replay_entries`: an engine rebuilt from the journal (and its checkpoint) |
| :mod:`~touchmove.bridge.journal_faults` | what happens while the journal cannot write, and the bound |
| :mod:`~touchmove.bridge.identity` | board identity conflicts (an id change on a port, two ports with one id) |
| :mod:`~touchmove.bridge.commands` | the MQTT commands (board ``set``, bridge requests) |
| :mod:`~touchmove.bridge.command` | the ``touchmove run`` command line |
"""

from touchmove.bridge.command import configure, run_command, serve
from touchmove.bridge.daemon import CHECKPOINT_EVERY, MAX_BACKLOG, Bridge
from touchmove.bridge.identity import IdentityConflict
from touchmove.bridge.journal_faults import JOURNAL_RETRY_S, MAX_HELD_WRITES
from touchmove.bridge.ports import MAX_PENDING, SNAPSHOT_INTERVAL, BoardPorts
from touchmove.bridge.replay import replay_entries
from touchmove.bridge.session import MAX_FORWARD_JUMP_MS, BoardSession
from touchmove.journal import iso_now

__all__ = ["CHECKPOINT_EVERY", "JOURNAL_RETRY_S", "MAX_BACKLOG", "MAX_FORWARD_JUMP_MS", "MAX_HELD_WRITES",
           "MAX_PENDING", "SNAPSHOT_INTERVAL", "BoardPorts", "BoardSession", "Bridge", "IdentityConflict", "configure",
           "iso_now", "replay_entries", "run_command", "serve"]
