"""Evidence for disputes: the touch timeline of a ply and the time an alert can still be acted on.

The broadcaster keeps every engine event each board publishes (``touch``, ``move``, ``clock``, ``alert`` ...,
with the bridge's ``ts``). From them, for any ply of any game, :func:`ply_timeline` says what happened in
order: every piece lifted (``touch``: which piece, whose, whether the engine found it binding under 4.3), the
move made, the clock press, the alerts with their articles. Where the bridge's journal (SQLite) is readable,
:func:`journal_records` adds the raw ``lift`` and ``place`` records of the ply with their times.

:func:`claim_window` says whether an alert can still be acted on:

* a breach of 4.1-4.7 can be claimed until the claimant touches a piece with intent to move (4.8);
* in rapid and blitz an illegal move stands unless seen before the opponent's next move (A.5, B.3);
* a draw claim (9.2, 9.3) lapses once the claimant touches a piece (9.4);
* in standard play an illegal move can be corrected while the game lasts (7.5).

Everything here is a function of the events: no clock, no I/O (except :func:`journal_records`).
"""

from __future__ import annotations

import io
import json
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chess
import chess.pgn

#: Alerts about the act of moving (Article 4): the claim lapses under 4.8.
ARTICLE_4_ALERTS = frozenset({"touch_move", "castling_rook_first", "castling_obligation", "moved_after_release",
                              "touch_out_of_turn"})
#: Alerts whose offender is the player NOT having the move at the alert's ply.
OPPONENT_OFFENCES = frozenset({"touch_out_of_turn"})
EVENTS_PER_BOARD = 4_000  # about ten long games of touches, moves and clocks: a round and more
PIECE_NAMES = {"p": "pawn", "n": "knight", "b": "bishop", "r": "rook", "q": "queen", "k": "king"}
_PERIOD = re.compile(r"^(?:(\d+)/)?(\d+)(?:\+(\d+))?$")


def time_class(time_control: str) -> str:
    """``blitz``, ``rapid`` or ``standard`` for a PGN TimeControl such as ``180+2`` (FIDE: 60 moves counted).

    Unknown strings count as standard (the strictest reading for an arbiter: nothing lapses by time class).
    """
    first = time_control.strip().split(":")[0]
    m = _PERIOD.match(first)
    if m is None or m.group(1):
        return "standard"
    total = int(m.group(2)) + 60 * int(m.group(3) or 0)
    if total <= 600:
        return "blitz"
    if total < 3600:
        return "rapid"
    return "standard"


def colour_of_ply(ply: int, white_starts: bool = True) -> str:
    """The colour that makes ply ``ply`` (plies count from 1)."""
    white = (ply % 2 == 1) == white_starts
    return "white" if white else "black"


def piece_owner(symbol: str) -> str:
    return "white" if symbol.isupper() else "black"


def piece_words(symbol: str, square: str) -> str:
    """``white bishop on f1``."""
    return f"{piece_owner(symbol)} {PIECE_NAMES.get(symbol.lower(), symbol)} on {square}"


def other(colour: str) -> str:
    return "black" if colour == "white" else "white"


@dataclass
class GameEvents:
    """One game's events on one board, in arrival order (which is the board's order)."""

    game: int
    white_starts: bool = True
    events: list[dict[str, Any]] = field(default_factory=list)
    seqs: set[int] = field(default_factory=set)


class EventStore:
    """Every board's events by game, bounded per board (the oldest games go first)."""

    def __init__(self, per_board: int = EVENTS_PER_BOARD) -> None:
        self.per_board = per_board
        self.boards: dict[int, dict[int, GameEvents]] = {}
        self._counts: dict[int, int] = {}

    def add(self, board: int, event: Mapping[str, Any]) -> GameEvents | None:
        """Keep one event; return its game's events (None for events the timeline does not use)."""
        kind = event.get("type")
        game = event.get("game")
        if not isinstance(game, int) or not isinstance(kind, str):
            return None
        games = self.boards.setdefault(board, {})
        record = games.get(game)
        if record is None:
            record = games[game] = GameEvents(game)
        seq = event.get("seq")
        if isinstance(seq, int):
            if seq in record.seqs:
                return None  # a redelivery, or a replay after the bridge restarted
            record.seqs.add(seq)
        if kind == "game_start":
            fen = event.get("fen")
            try:
                record.white_starts = chess.Board(str(fen)).turn == chess.WHITE if fen else True
            except ValueError:
                record.white_starts = True
        record.events.append({k: v for k, v in event.items() if k not in ("board", "session")})
        count = self._counts.get(board, 0) + 1
        if count > self.per_board:
            oldest = min(games)
            if oldest != game:
                count -= len(games.pop(oldest).events)
            else:
                del record.events[0]
                count -= 1
        self._counts[board] = count
        return record

    def game(self, board: int, game: int | None = None) -> GameEvents | None:
        games = self.boards.get(board)
        if not games:
            return None
        return games.get(game if game is not None else max(games))


# -- claim windows ---------------------------------------------------------------------------------------
def claim_window(alert: Mapping[str, Any], events: Sequence[Mapping[str, Any]], *, white_starts: bool = True,
                 timing: str = "standard", game_over: bool = False) -> dict[str, Any] | None:
    """Whether the alert can still be acted on, from the events after it; None for alerts without a window.

    ``alert`` is the alert event (``code``, ``ply``, ``seq``); ``events`` the game's events in order.
    """
    code, ply = alert.get("code"), alert.get("ply")
    if not isinstance(ply, int):
        return None
    mover = colour_of_ply(ply, white_starts)
    if code in ARTICLE_4_ALERTS or code == "draw_claimable":
        offender = other(mover) if code in OPPONENT_OFFENCES else mover
        claimant = mover if code == "draw_claimable" else other(offender)
        if code == "draw_claimable":
            rule, text = "9.4", f"{claimant} may claim until touching a piece as in 4.3"
        else:
            rule, text = "4.8", f"{claimant} may claim until touching a piece with intent to move"
        closer = _first_after(alert, events, lambda e: _claimant_acts(e, claimant, white_starts))
    elif code == "illegal_move":
        offender = mover
        nth = sum(1 for e in events if e.get("type") == "alert" and e.get("code") == "illegal_move"
                  and isinstance(e.get("ply"), int) and colour_of_ply(e["ply"], white_starts) == offender
                  and (e is alert or _before(e, alert)))
        if timing in ("rapid", "blitz"):
            rule = "A.5" if timing == "rapid" else "B.3"
            text = f"the illegal move stands unless seen before {other(offender)}'s next move"
            closer = _first_after(alert, events, lambda e: e.get("type") == "move" and isinstance(
                e.get("ply"), int) and colour_of_ply(e["ply"], white_starts) != offender and e["ply"] > ply)
        else:
            rule, text = "7.5", "the illegal move can be corrected while the game lasts"
            closer = _first_after(alert, events, lambda e: e.get("type") == "game_end")
    else:
        return None
    out: dict[str, Any] = {"rule": rule, "open": closer is None, "text": text, "offender": offender}
    if code == "illegal_move":
        out["count"] = nth  # the offender's completed illegal moves in this game so far (7.5.5)
    if closer is not None:
        out["closed_at"] = closer.get("ts")
        out["closed_by"] = _describe(closer, white_starts)
    elif game_over and rule != "7.5":
        out["open"] = False
        out["closed_by"] = "the game is over"
    return out


def _before(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    sa, sb = a.get("seq"), b.get("seq")
    return isinstance(sa, int) and isinstance(sb, int) and sa < sb


def _first_after(alert: Mapping[str, Any], events: Sequence[Mapping[str, Any]],
                 test: Any) -> Mapping[str, Any] | None:
    seen = False
    for e in events:
        if not seen:
            seen = e is alert or (e.get("type") == "alert" and e.get("seq") == alert.get("seq")
                                  and e.get("code") == alert.get("code"))
            continue
        if test(e):
            return e
    return None


def _claimant_acts(e: Mapping[str, Any], claimant: str, white_starts: bool) -> bool:
    """The claimant touched a piece with intent to move (he has the move), or moved."""
    kind, ply = e.get("type"), e.get("ply")
    if not isinstance(ply, int):
        return False
    if kind == "touch":
        return e.get("side") == "mover" and colour_of_ply(ply, white_starts) == claimant
    if kind == "move":
        return colour_of_ply(ply, white_starts) == claimant
    return False


def _describe(e: Mapping[str, Any], white_starts: bool) -> str:
    kind, ply = e.get("type"), e.get("ply")
    if kind == "touch":
        return f"{piece_words(str(e.get('piece', '?')), str(e.get('sq', '?')))} touched (ply {ply})"
    if kind == "move":
        return f"{colour_of_ply(int(ply or 1), white_starts)} played {e.get('san') or e.get('uci')} (ply {ply})"
    if kind == "game_end":
        return f"game over ({e.get('result')})"
    return str(kind)


# -- the timeline of one ply -----------------------------------------------------------------------------
def ply_of(e: Mapping[str, Any]) -> int | None:
    ply = e.get("ply")
    return ply if isinstance(ply, int) else None


def ply_timeline(record: GameEvents, ply: int, *, meanings: Mapping[str, str] | None = None,
                 timing: str = "standard", records: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """What happened during ply ``ply`` of one game: every entry with its time and what the engine concluded.

    ``records`` are raw ``lift``/``place`` records of that ply (from the journal), merged by device time.
    """
    meanings = meanings or {}
    ws = record.white_starts
    mover = colour_of_ply(ply, ws)
    game_over = any(e.get("type") == "game_end" for e in record.events)
    entries: list[dict[str, Any]] = []
    first_touch: dict[str, Any] | None = None
    binding: list[dict[str, Any]] = []
    alerts: list[dict[str, Any]] = []
    move: Mapping[str, Any] | None = None
    for e in record.events:
        if ply_of(e) != ply or e.get("type") == "game_start":
            continue
        kind = e.get("type")
        entry: dict[str, Any] = {"kind": kind, "ts": e.get("ts"), "t": e.get("t"), "seq": e.get("seq")}
        if kind == "touch":
            symbol, sq = str(e.get("piece", "?")), str(e.get("sq", "?"))
            toucher = mover if e.get("side") == "mover" else other(mover)
            entry.update(sq=sq, piece=symbol, whose=piece_owner(symbol), by=toucher, binds=bool(e.get("binds")),
                         text=f"{toucher} lifted the {piece_words(symbol, sq)}"
                              + (" (binds: 4.3)" if e.get("binds") else ""))
            if first_touch is None and e.get("side") == "mover":
                first_touch = entry
            if e.get("binds"):
                binding.append(entry)
        elif kind in ("move", "move_amended"):
            move = e
            entry.update(uci=e.get("uci"), san=e.get("san"),
                         text=("move amended to " if kind == "move_amended" else "move made: ") + str(e.get("san")))
        elif kind == "amendment_withdrawn":
            entry.update(uci=e.get("uci"), text=f"amendment to {e.get('withdrawn')} withdrawn: the move was "
                                                f"{e.get('uci')}" + (f" (alert {e['alert']} withdrawn)"
                                                                     if e.get("alert") else ""))
        elif kind == "clock":
            entry.update(side=e.get("side"), remaining=e.get("remaining"),
                         text=f"{e.get('side')} pressed the clock" + (
                             f" ({_clock_text(e['remaining'])} left)" if isinstance(e.get("remaining"), int) else ""))
        elif kind == "alert":
            window = claim_window(e, record.events, white_starts=ws, timing=timing, game_over=game_over)
            info = {"code": e.get("code"), "article": e.get("article"), "meaning": meanings.get(str(e.get("code")), ""),
                    "detail": e.get("detail") or {}, "ts": e.get("ts"), "window": window}
            alerts.append(info)
            entry.update(code=e.get("code"), article=e.get("article"), window=window,
                         text=f"alert {e.get('code')} (art. {e.get('article')})")
        elif kind == "takeback":
            entry["text"] = f"takeback: plies {ply} and later removed"
        elif kind == "game_end":
            entry["text"] = f"game over: {e.get('result')} ({e.get('reason')})"
        else:  # the engine's other events (resync, recovered moves, game_resumed ...): shown as they came
            extra = {k: v for k, v in e.items() if k not in ("type", "game", "t", "ply", "seq", "ts")}
            entry["text"] = f"{kind} {json.dumps(extra, separators=(',', ':'))}" if extra else str(kind)
        entries.append(entry)
    for r in records:
        entries.append({"kind": r.get("type"), "ts": r.get("ts"), "t": r.get("t"), "sq": r.get("sq"),
                        "text": f"{'lift from' if r.get('type') == 'lift' else 'place on'} {r.get('sq')}",
                        "raw": True})
    if records:
        entries.sort(key=lambda x: (x["t"] if isinstance(x.get("t"), int) else 0, 0 if x.get("raw") else 1))
    return {
        "game": record.game, "ply": ply, "mover": mover,
        "move": {"san": move.get("san"), "uci": move.get("uci"), "ts": move.get("ts")} if move else None,
        "first_touch": _touch_summary(first_touch),
        "obligation": obligation(binding, mover),
        "alerts": alerts, "entries": entries,
        "sources": ["events", "journal"] if records else ["events"],
    }


def _touch_summary(entry: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if entry is None:
        return None
    return {"sq": entry["sq"], "piece": entry["piece"], "whose": entry["whose"], "ts": entry["ts"], "t": entry["t"],
            "text": f"first touched by {entry['by']}: the {piece_words(entry['piece'], entry['sq'])}"}


def obligation(binding: Sequence[Mapping[str, Any]], mover: str) -> str | None:
    """The 4.3 duty the binding touches created (the engine decides ``binds``; this only words it)."""
    own = [b for b in binding if b["whose"] == mover and b["by"] == mover]
    theirs = [b for b in binding if b["whose"] != mover and b["by"] == mover]
    if own and theirs:
        return (f"4.3.3: capture the {piece_words(theirs[0]['piece'], theirs[0]['sq'])} with the "
                f"{piece_words(own[0]['piece'], own[0]['sq'])} if legal, otherwise move or capture the first "
                "touched piece that can be")
    if own:
        return f"4.3.1: move the {piece_words(own[0]['piece'], own[0]['sq'])} (first touched own piece)"
    if theirs:
        return f"4.3.2: capture the {piece_words(theirs[0]['piece'], theirs[0]['sq'])} (first touched opponent's piece)"
    return None


def _clock_text(ms: int) -> str:
    s = ms // 1000
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def game_plies(record: GameEvents) -> list[int]:
    """The plies of a game that have any timeline entry."""
    return sorted({p for e in record.events if (p := ply_of(e)) is not None and e.get("type") != "game_start"})


def game_evidence(record: GameEvents, *, meanings: Mapping[str, str] | None = None, timing: str = "standard",
                  journal: Mapping[int, Sequence[Mapping[str, Any]]] | None = None) -> list[dict[str, Any]]:
    """Every ply's timeline of one game."""
    journal = journal or {}
    return [ply_timeline(record, p, meanings=meanings, timing=timing, records=journal.get(p, ()))
            for p in game_plies(record)]


def evidence_pgn(pgn_text: str, plies: Iterable[Mapping[str, Any]]) -> str:
    """The game's PGN with each ply's touch evidence as a comment after its move."""
    game = chess.pgn.read_game(io.StringIO(pgn_text))
    if game is None:
        return pgn_text
    by_ply = {p["ply"]: p for p in plies}
    for ply, node in enumerate(list(game.mainline()), start=1):
        info = by_ply.get(ply)
        comment = ply_comment(info) if info is not None else ""
        if comment:
            node.comment = (node.comment + " " if node.comment else "") + comment
    game.headers["Annotator"] = "touchmove console: touch timeline"
    return str(game) + "\n"


def ply_comment(info: Mapping[str, Any]) -> str:
    """One ply's evidence in a PGN comment (no braces inside); empty when nothing was touched or alerted."""
    if not any(e["kind"] in ("touch", "lift", "place", "alert") for e in info["entries"]):
        return ""
    parts = []
    for e in info["entries"]:
        when = str(e.get("ts") or "")[11:23]
        if e["kind"] == "touch":
            parts.append(f"{when} lift {e['piece']}{e['sq']}{' binds' if e.get('binds') else ''}")
        elif e["kind"] in ("lift", "place"):
            parts.append(f"{when} {e['kind']} {e['sq']}")
        elif e["kind"] == "alert":
            w = e.get("window") or {}
            closed = str(w.get("closed_at") or "")[11:23]
            state = "" if not w else (" claim open" if w.get("open") else f" window closed {closed}")
            parts.append(f"{when} alert {e.get('code')} art. {e.get('article')}{state}")
        elif e["kind"] == "clock":
            parts.append(f"{when} clock")
    touches = sum(1 for e in info["entries"] if e["kind"] == "touch")
    if info.get("obligation") and (touches > 1 or info.get("alerts")):  # not on every plain move
        parts.append("duty " + str(info["obligation"]).split(":")[0])
    return ("touchmove: " + "; ".join(parts)).replace("{", "(").replace("}", ")")


# -- the bridge's journal ----------------------------------------------------------------------------------
def journal_records(path: Path, board_id: str, game: int) -> dict[int, list[dict[str, Any]]]:
    """The ``lift`` and ``place`` records of one game by ply, from a bridge journal (read only).

    A record belongs to the ply under way when it was read: plies are bounded by the device times of the
    journal's own ``game_start``, ``move`` and ``takeback`` events. Empty when the journal lacks the board.
    """
    uri = f"file:{path}?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True)
    except sqlite3.Error:
        return {}
    try:
        events = [json.loads(p) for (p,) in db.execute(
            "SELECT payload FROM events WHERE board = ? AND game = ? ORDER BY seq", (board_id, game))]
        if not events:
            return {}
        t0 = events[0].get("t", 0) if events[0].get("type") == "game_start" else min(e.get("t", 0) for e in events)
        t_end = _game_end_t(db, board_id, game)
        rows = db.execute("SELECT t, body, ts FROM entries WHERE board = ? AND kind = 'record' AND t >= ? "
                          "AND t <= ? ORDER BY id", (board_id, t0, t_end)).fetchall()
    except (sqlite3.Error, ValueError):
        return {}
    finally:
        db.close()
    bounds: list[tuple[int, int]] = []  # (device time, the ply under way after it)
    for e in events:
        if e.get("type") in ("move", "move_amended") and isinstance(e.get("ply"), int):
            bounds.append((int(e.get("t", 0)), e["ply"] + 1))
        elif e.get("type") == "takeback" and isinstance(e.get("ply"), int):
            bounds.append((int(e.get("t", 0)), e["ply"]))
    out: dict[int, list[dict[str, Any]]] = {}
    for t, body, ts in rows:
        try:
            rec = json.loads(body)
        except (TypeError, ValueError):
            continue
        if rec.get("type") not in ("lift", "place"):
            continue
        ply = 1
        for bt, after in bounds:
            if bt < t:
                ply = after
        out.setdefault(ply, []).append({"type": rec["type"], "sq": rec.get("sq"), "t": t, "ts": ts})
    return out


def _game_end_t(db: sqlite3.Connection, board_id: str, game: int) -> int:
    row = db.execute("SELECT payload FROM events WHERE board = ? AND game > ? ORDER BY seq LIMIT 1",
                     (board_id, game)).fetchone()
    if row is None:
        return 2**62
    try:
        return int(json.loads(row[0]).get("t", 2**62)) - 1
    except ValueError:
        return 2**62


# -- offline: the timeline from a journal alone ------------------------------------------------------------
def journal_store(path: Path, board_id: str) -> EventStore:
    """The board's events from a bridge journal, as the broadcaster would have received them."""
    store = EventStore(per_board=10**9)
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        for seq, payload in db.execute("SELECT seq, payload FROM events WHERE board = ? ORDER BY seq", (board_id,)):
            event = json.loads(payload)
            if isinstance(event, dict):
                store.add(0, {**event, "seq": seq})
    finally:
        db.close()
    return store


def format_timeline(line: Mapping[str, Any]) -> str:
    """One ply's timeline as text for a terminal."""
    move = line.get("move") or {}
    out = [f"game {line['game']} ply {line['ply']} ({line['mover']} to move)" + (f": {move['san']}" if move else "")]
    for e in line["entries"]:
        when = str(e.get("ts") or "")[11:23] or "?"
        out.append(f"  {when}  t={e.get('t')}  {e.get('text') or e.get('kind')}")
    if line.get("first_touch"):
        out.append(f"  {line['first_touch']['text']}")
    if line.get("obligation"):
        out.append(f"  obligation {line['obligation']}")
    for a in line["alerts"]:
        w = a.get("window")
        state = "" if not w else (" (can be acted on)" if w["open"] else f" (window closed: {w.get('closed_by')})")
        out.append(f"  alert {a['code']} art. {a['article']}{state}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """``python -m touchmove.broadcast.timeline JOURNAL --board ID [--game G] [--ply P] [--json]``."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m touchmove.broadcast.timeline",
                                     description="The touch timeline of a board's plies, from a bridge journal.")
    parser.add_argument("journal", type=Path)
    parser.add_argument("--board", required=True, help="the board id (as in the journal)")
    parser.add_argument("--game", type=int, help="the game number (default: the board's last game)")
    parser.add_argument("--ply", type=int, help="one ply (default: every ply with something to show)")
    parser.add_argument("--time-control", default="", help="PGN TimeControl, e.g. 180+2 (for A.5/B.3)")
    parser.add_argument("--json", action="store_true", help="JSON instead of text")
    args = parser.parse_args(argv)
    if not args.journal.is_file():
        print(f"error: no journal at {args.journal}", file=sys.stderr)
        return 1
    try:
        record = journal_store(args.journal, args.board).game(0, args.game)
    except (sqlite3.Error, ValueError) as exc:
        print(f"error: cannot read {args.journal}: {exc}", file=sys.stderr)
        return 1
    if record is None:
        print(f"error: no events of board {args.board}" + (f" game {args.game}" if args.game else ""),
              file=sys.stderr)
        return 1
    raw = journal_records(args.journal, args.board, record.game)
    timing = time_class(args.time_control)
    plies = [args.ply] if args.ply else game_plies(record)
    lines = [ply_timeline(record, p, timing=timing, records=raw.get(p, ())) for p in plies]
    if args.json:
        print(json.dumps({"board": args.board, "game": record.game, "plies": lines}, indent=1))
    else:
        print("\n".join(format_timeline(line) for line in lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
