"""``touchmove init tournament --from-trf FILE``: the tournament file from a pairing program's TRF.

Every round the TRF pairs becomes a ``[[rounds]]`` table with its boards in board order
(:func:`.trf.round_pairings`) and the results already known (forfeits as ``1-0f``/``0-1f``); ``round`` is
the first round with a game not played yet (the one to broadcast), else the last one. Players keep their
FIDE id, title, rating, federation, sex and birth date; the TRF's tournament records go to ``[report]``
(what the TRF export writes back). Byes (``H``, ``F``, ``U``, ``Z`` with no opponent) are
``[[rounds.byes]]``, not boards. Board ids are ``<prefix>001``, ... in board order: edit them to the ids
the bridges publish.
"""

from __future__ import annotations

import json
from typing import Any

from touchmove.broadcast.trf import TrfPlayer, TrfTournament, read_trf, round_pairings

DEFAULT_PREFIX = "board-"


def _value(value: Any) -> str:
    """A TOML value (strings as basic strings: JSON's escapes are TOML's)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def _player(p: TrfPlayer) -> str:
    fields: list[tuple[str, Any]] = [("name", p.name)]
    for key, value in (("fide_id", p.fide_id), ("title", p.title), ("elo", p.rating),
                       ("federation", p.federation), ("sex", p.sex if p.sex in ("m", "w") else None),
                       ("birth", p.birth)):
        if value:
            fields.append((key, value))
    return "{ " + ", ".join(f"{k} = {_value(v)}" for k, v in fields) + " }"


def _time_control(trf: TrfTournament) -> str:
    text = trf.time_control.replace(" ", "")
    ok = bool(text) and all(c.isascii() and (c.isdigit() or c in "+/:") for c in text)
    return text if ok else "?"


def current_round(trf: TrfTournament) -> int:
    """The round to broadcast: the first with a game not played yet, else the last paired one."""
    paired = [r for r in trf.rounds if round_pairings(trf, r)]
    if not paired:
        raise ValueError("the TRF pairs no game in any round")
    for number in paired:
        if any(g.result == "*" for g in round_pairings(trf, number)):
            return number
    return paired[-1]


def tournament_toml(text: str, *, name: str = "TRF", round_number: int | None = None,
                    prefix: str = DEFAULT_PREFIX) -> str:
    """The tournament TOML for a TRF's text (TrfError or ValueError, one line, when it cannot be made)."""
    trf = read_trf(text, name)
    number = current_round(trf) if round_number is None else round_number
    rounds = [r for r in trf.rounds if round_pairings(trf, r)]
    if number not in rounds:
        raise ValueError(f"{name}: round {number} has no pairings (rounds paired: "
                         f"{', '.join(map(str, rounds)) or 'none'})")
    lines = [
        f"# touchmove tournament file made from {name} by `touchmove init tournament --from-trf`.",
        "# Edit the board ids to those the bridges publish, then `touchmove broadcast --config <this file>`.",
        f"event = {_value(trf.name or 'Tournament')}",
        f"site = {_value(trf.city or '?')}",
        f"time_control = {_value(_time_control(trf))}",
        f"round = {number}", "",
        "[broadcast]", 'output_dir = "broadcast"', "port = 8080", "",
        "[[brokers]]", 'url = "mqtt://127.0.0.1:1883"', 'bases = ["touchmove"]', "",
        "[report]",
    ]
    report: list[tuple[str, Any]] = [("federation", trf.federation), ("chief_arbiter", trf.chief_arbiter),
                                     ("deputy_arbiters", trf.deputies), ("type", trf.kind),
                                     ("rounds", trf.rounds_total), ("allotted_time", trf.allotted_time)]
    lines += [f"{key} = {_value(value)}" for key, value in report if value]
    for r in rounds:
        lines += ["", "[[rounds]]", f"number = {r}"]
        if r in trf.round_dates:
            lines.append(f"date = {trf.round_dates[r].isoformat()}")
        for board, g in enumerate(round_pairings(trf, r), 1):
            lines += ["", "[[rounds.boards]]", f"board = {board}", f"board_id = {_value(f'{prefix}{board:03d}')}",
                      f"white = {_player(trf.players[g.white])}", f"black = {_player(trf.players[g.black])}"]
            if g.result != "*":
                lines.append(f"result = {_value(g.result + ('f' if g.forfeit else ''))}")
        for p in sorted(trf.players.values(), key=lambda p: p.start_rank):
            game = p.rounds.get(r)
            if game is not None and not game.opponent and game.result in "HFUZ":
                lines += ["", "[[rounds.byes]]", f"player = {_player(p)}", f"type = {_value(game.result)}"]
    return "\n".join(lines) + "\n"
