"""A broadcaster that was away (its broker node died, it moved to another node) catches up from the retained
PGN it gets on subscribing again, even when no later event comes to show the gap (the game may be over)."""

from __future__ import annotations

from pathlib import Path

from tests.broadcast.broadcast_helpers import make_tournament
from tests.broadcast.test_broadcast_model import moves_events
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import Broadcaster

PGN_8 = '[Result "*"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 *\n'
PGN_3 = '[Result "*"]\n\n1. e4 e5 2. Nf3 *\n'


def test_retained_pgn_extending_the_game_is_taken(tmp_path: Path) -> None:
    hub = Broadcaster(make_tournament(1), output_dir=tmp_path).open()
    for e in moves_events(["e2e4", "e7e5", "g1f3", "b8c6"]):
        hub.handle(BridgeMessage("touchmove", "b01", "events", e))
    view = hub.storage.by_number[1]
    hub.handle(BridgeMessage("touchmove", "b01", "pgn", PGN_8, retained=False))   # live: no parse, no change
    assert view.game.ply == 4
    hub.handle(BridgeMessage("touchmove", "b01", "pgn", PGN_8, retained=True))    # on subscribing again
    assert [m.san for m in view.game.moves][-4:] == ["Bb5", "a6", "Ba4", "Nf6"]
    assert "4. Ba4 Nf6" in hub.outputs.round_pgn()


def test_retained_pgn_behind_or_elsewhere_changes_nothing(tmp_path: Path) -> None:
    hub = Broadcaster(make_tournament(1), output_dir=tmp_path).open()
    for e in moves_events(["e2e4", "e7e5", "g1f3", "b8c6"]):
        hub.handle(BridgeMessage("touchmove", "b01", "events", e))
    view = hub.storage.by_number[1]
    hub.handle(BridgeMessage("touchmove", "b01", "pgn", PGN_3, retained=True))    # older than the events
    assert view.game.ply == 4
    hub.handle(BridgeMessage("touchmove", "b01", "pgn", '[Result "*"]\n\n1. d4 d5 2. c4 e6 3. Nc3 *\n',
                             retained=True))                                        # not this game's moves
    assert [m.uci for m in view.game.moves] == ["e2e4", "e7e5", "g1f3", "b8c6"]


def test_a_resync_one_ply_short_catches_up_from_the_next_pgn(tmp_path: Path) -> None:
    """An event lost (the broadcaster restarting), the next one shows the gap and the resync takes the bridge's
    PGN, one ply older than that event: the bridge's state says it is ahead, so its next PGN is taken. Before,
    the game stayed a ply short until another event, and for good after the last move."""
    hub = Broadcaster(make_tournament(1), output_dir=tmp_path).open()
    ucis = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6"]
    events = moves_events(ucis)
    for e in events[:5]:                                                           # plies 1-4
        hub.handle(BridgeMessage("touchmove", "b01", "events", e))
    view = hub.storage.by_number[1]
    five = '[Result "*"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 *\n'
    six = '[Result "*"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 *\n'
    hub.handle(BridgeMessage("touchmove", "b01", "pgn", five))                      # ply 5's event is lost
    hub.handle(BridgeMessage("touchmove", "b01", "events", events[6]))              # ply 6: a gap
    assert view.game.ply == 5                                                       # resynced from the PGN of 5
    hub.handle(BridgeMessage("touchmove", "b01", "state", {"game": 1, "ply": 6, "in_sync": True}))
    hub.handle(BridgeMessage("touchmove", "b01", "pgn", six))
    assert [m.uci for m in view.game.moves] == ucis
    # the state may come after the PGN too
    hub.handle(BridgeMessage("touchmove", "b01", "pgn", '[Result "*"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 *\n'))
    assert view.game.ply == 6                                                       # live PGNs alone: not parsed
    hub.handle(BridgeMessage("touchmove", "b01", "state", {"game": 1, "ply": 7, "in_sync": True}))
    assert view.game.ply == 7 and "4. Ba4" in hub.outputs.round_pgn()
