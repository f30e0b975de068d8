"""The console's evidence and accounts without a browser: touch timelines from the real rules engine and a real
journal, claim windows (4.8, A.5/B.3, 7.5, 9.4), arbiter tokens and their revocation, the audit log, and the
web routes' refusals."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.broadcast.broadcast_helpers import make_tournament
from touchmove import records
from touchmove.bridge.journal import Journal
from touchmove.broadcast.arbiter_book import ArbiterBook, ArbiterConfigError, file_entry, parse_env
from touchmove.broadcast.audit import AuditLog
from touchmove.broadcast.bridge_topics import BridgeMessage
from touchmove.broadcast.broadcaster import Broadcaster
from touchmove.broadcast.server import make_app
from touchmove.broadcast.timeline import (
    EventStore,
    claim_window,
    evidence_pgn,
    journal_records,
    ply_timeline,
    time_class,
)
from touchmove.broadcast.timeline import main as timeline_main
from touchmove.rules.engine import Engine

# 1. e4 e5 2. White touches the bishop on f1, puts it back, plays Nf3 (4.3.1); Black touches g8 and plays Nf6.
RECORDS = [(1000, "lift", "e2"), (1100, "place", "e4"), (1500, "clock", "white"), (2000, "lift", "e7"),
           (2100, "place", "e5"), (2500, "clock", "black"), (3000, "lift", "f1"), (3400, "place", "f1"),
           (4000, "lift", "g1"), (4200, "place", "f3"), (4600, "clock", "white"), (5000, "lift", "g8"),
           (5200, "place", "f6"), (5600, "clock", "black")]


def ts(t: int) -> str:
    return f"2026-11-29T13:00:{t // 1000:02d}.{t % 1000:03d}Z"


def engine_events() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(records, events) as the bridge journals and publishes them: the real engine, ``seq`` and ``ts`` added."""
    engine = Engine()
    recs, events = [], []
    for t, kind, value in RECORDS:
        rec = {"t": t, "type": kind, ("side" if kind == "clock" else "sq"): value}
        recs.append(rec)
        for ev in engine.feed(records.from_dict(rec)):
            events.append({**ev.to_dict(), "seq": len(events) + 1, "ts": ts(ev.t), "board": "e66"})
    return recs, events


def store_of(events: list[dict[str, Any]]) -> EventStore:
    store = EventStore()
    for e in events:
        store.add(1, e)
    return store


def test_touch_timeline_from_the_engine() -> None:
    _, events = engine_events()
    record = store_of(events).game(1)
    assert record is not None
    line = ply_timeline(record, 3, meanings={"touch_move": "a touched piece ... was not"}, timing="blitz")
    assert line["mover"] == "white" and line["move"]["san"] == "Nf3"
    assert line["first_touch"]["sq"] == "f1" and line["first_touch"]["ts"] == ts(3000)
    assert line["first_touch"]["text"] == "first touched by white: the white bishop on f1"
    assert line["obligation"] == "4.3.1: move the white bishop on f1 (first touched own piece)"
    kinds = [e["kind"] for e in line["entries"]]
    assert kinds == ["touch", "touch", "move", "alert", "clock"]
    assert [e.get("binds") for e in line["entries"][:2]] == [True, False]
    window = line["alerts"][0]["window"]
    assert window["rule"] == "4.8" and not window["open"]
    assert window["closed_at"] == ts(5000) and window["closed_by"] == "black knight on g8 touched (ply 4)"


def write_journal(path: Path, board_id: str = "e66") -> Journal:
    """A bridge journal of the scenario: the records and the engine's events, as the bridge writes them."""
    recs, events = engine_events()
    j = Journal.open(path)
    j.ensure_board(board_id)
    for rec in recs:
        j.add_entry(board_id, "record", rec["t"], json.dumps(rec), "serial", ts(rec["t"]))
    for e in events:
        j.add_event(board_id, e["seq"], {k: v for k, v in e.items() if k not in ("seq", "ts", "board")})
    j.commit()
    return j


def test_journal_adds_lifts_and_places(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _, events = engine_events()
    path = tmp_path / "journal.sqlite"
    j = write_journal(path)
    by_ply = journal_records(path, "e66", 1)
    assert journal_records(path, "nope", 1) == {}
    assert timeline_main([str(path), "--board", "e66", "--ply", "3", "--time-control", "180+2"]) == 0
    text = capsys.readouterr().out
    assert "13:00:03.000  t=3000  lift from f1" in text and "obligation 4.3.1: move the white bishop" in text
    assert "window closed: black knight on g8 touched (ply 4)" in text
    assert timeline_main([str(path), "--board", "nope"]) == 1
    assert capsys.readouterr().err == "error: no events of board nope\n"
    j.close()
    assert [(r["type"], r["sq"]) for r in by_ply[3]] == [("lift", "f1"), ("place", "f1"), ("lift", "g1"),
                                                         ("place", "f3")]
    assert [(r["type"], r["sq"]) for r in by_ply[4]] == [("lift", "g8"), ("place", "f6")]
    record = store_of(events).game(1)
    assert record is not None
    line = ply_timeline(record, 3, records=by_ply[3])
    assert line["sources"] == ["events", "journal"]
    order = [(e["kind"], e.get("sq")) for e in line["entries"]][:5]
    assert order == [("lift", "f1"), ("touch", "f1"), ("place", "f1"), ("lift", "g1"), ("touch", "g1")]


def test_evidence_pgn_comments_the_disputed_ply() -> None:
    _, events = engine_events()
    record = store_of(events).game(1)
    assert record is not None
    plies = [ply_timeline(record, p) for p in (1, 2, 3, 4)]
    text = evidence_pgn("1. e4 e5 2. Nf3 Nf6 *\n", plies)
    assert "2. Nf3 { touchmove: 13:00:03.000 lift Bf1 binds; 13:00:04.000 lift Ng1;" in text
    assert "alert touch_move art. 4.3.1 window closed 13:00:05.000" in text


def test_time_classes() -> None:
    assert time_class("180+2") == "blitz" and time_class("300") == "blitz"
    assert time_class("600+5") == "rapid" and time_class("1500+10") == "rapid"
    assert time_class("5400+30") == "standard" and time_class("40/5400+30:1800+30") == "standard"
    assert time_class("?") == "standard" and time_class("") == "standard"


def ev(kind: str, ply: int, seq: int, **kw: Any) -> dict[str, Any]:
    return {"type": kind, "game": 1, "ply": ply, "seq": seq, "ts": ts(seq * 100), **kw}


def test_claim_windows() -> None:
    # an illegal move by White at ply 5: in blitz it stands once Black has moved (B.3), in rapid A.5
    illegal = ev("alert", 5, 1, code="illegal_move", article="7.5.1")
    after = [illegal, ev("move", 5, 2, san="Nf3"), ev("touch", 6, 3, side="mover", piece="n", sq="g8")]
    w = claim_window(illegal, after, timing="blitz")
    assert w is not None and w["rule"] == "B.3" and w["open"]  # White's own replacing move does not close it
    after.append(ev("move", 6, 4, san="Nf6"))
    w = claim_window(illegal, after, timing="rapid")
    assert w is not None and w["rule"] == "A.5" and not w["open"] and w["closed_at"] == ts(400)
    w = claim_window(illegal, after, timing="standard")
    assert w is not None and w["rule"] == "7.5" and w["open"]
    w = claim_window(illegal, [*after, ev("game_end", 6, 5, result="1-0")], timing="standard")
    assert w is not None and not w["open"]
    # a touch out of turn by Black during White's ply: White may claim until he touches a piece himself
    oot = ev("alert", 7, 1, code="touch_out_of_turn", article="4.2.1")
    events = [oot, ev("touch", 7, 2, side="opponent", piece="p", sq="a7")]
    assert claim_window(oot, events)["open"]  # type: ignore[index]
    events.append(ev("touch", 7, 3, side="mover", piece="N", sq="g1"))
    w = claim_window(oot, events)
    assert w is not None and not w["open"] and w["closed_by"] == "white knight on g1 touched (ply 7)"
    # a draw claim lapses once the player having the move touches a piece (9.4)
    draw = ev("alert", 30, 1, code="draw_claimable", article="9.2")
    w = claim_window(draw, [draw, ev("touch", 30, 2, side="mover", piece="R", sq="a1")], white_starts=False)
    assert w is not None and w["rule"] == "9.4" and not w["open"]
    assert claim_window(ev("alert", 3, 1, code="board_mismatch"), []) is None


@given(st.lists(st.fixed_dictionaries({
    "type": st.sampled_from(["touch", "move", "alert", "clock", "game_end", "junk"]),
    "ply": st.one_of(st.none(), st.integers(-2, 12), st.text(max_size=2)),
    "side": st.sampled_from(["mover", "opponent", None]), "piece": st.sampled_from(["P", "n", "", "?"]),
    "sq": st.sampled_from(["e4", "", "zz"]), "code": st.sampled_from(["touch_move", "illegal_move", "x", None]),
    "seq": st.integers(0, 30), "game": st.sampled_from([1, 1, 2, "x"]),
}), max_size=30), st.sampled_from(["blitz", "rapid", "standard"]))
@settings(max_examples=150, deadline=None)
def test_timelines_take_any_events(events: list[dict[str, Any]], timing: str) -> None:
    store = EventStore(per_board=20)
    for e in events:
        store.add(1, e)
    for game in (1, 2):
        record = store.game(1, game)
        if record is None:
            continue
        for ply in range(1, 6):
            line = ply_timeline(record, ply, timing=timing)
            json.dumps(line)
        for e in record.events:
            if e.get("type") == "alert":
                claim_window(e, record.events, timing=timing)


# -- arbiters and the audit log -------------------------------------------------------------------------------
def test_arbiter_tokens_are_kept_hashed_and_revoked(tmp_path: Path) -> None:
    tokens = tmp_path / "arbiters.toml"
    tokens.write_text(file_entry("Anna Chief", "chief", "tok-anna") + file_entry("Bob", "arbiter", "tok-bob"))
    assert "tok-anna" not in tokens.read_text()
    book = ArbiterBook(file=tokens, env="chief:Eve Env=tok-eve;Dan=tok-dan", shared_token="shared",
                       revoked_path=tmp_path / "revoked.json")
    assert book.authenticate("tok-bob").name == "Bob"  # type: ignore[union-attr]
    assert book.authenticate("tok-eve").chief  # type: ignore[union-attr]
    assert book.authenticate("tok-dan").role == "arbiter"  # type: ignore[union-attr]
    assert book.authenticate("shared").name == "arbiter"  # type: ignore[union-attr]
    assert book.authenticate("") is None and book.authenticate("tok-bo") is None
    assert [a.name for a in book.revoke("Bob", "Anna Chief", "now")] == ["Bob"]
    assert book.authenticate("tok-bob") is None
    again = ArbiterBook(file=tokens, revoked_path=tmp_path / "revoked.json")  # after a restart
    assert again.authenticate("tok-bob") is None and again.authenticate("tok-anna") is not None
    # a token added to the file is accepted without a restart
    with tokens.open("a") as fh:
        fh.write(file_entry("Carl", "arbiter", "tok-carl"))
    assert book.authenticate("tok-carl") is not None
    listing = {a["name"]: a for a in book.listing()}
    assert listing["Bob"]["revoked"] and listing["Bob"]["revoked_by"] == "Anna Chief"


@pytest.mark.parametrize(("text", "message"), [
    ('[[arbiter]]\nname = "A"\ntoken_sha256 = "abc"\n', "token_sha256 must be 64 hex digits"),
    ('[[arbiter]]\nrole = "chief"\n', "has no name"),
    ('[[arbiter]]\nname = "A"\nrole = "boss"\ntoken_sha256 = "' + "0" * 64 + '"\n', "role must be one of"),
    ("[[arbiter\n", "arbiters.toml"),
])
def test_bad_token_files_are_refused_clearly(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "arbiters.toml"
    path.write_text(text)
    book = ArbiterBook(file=path)              # not read yet
    with pytest.raises(ArbiterConfigError, match=message):
        ArbiterBook.read(file=path)
    with pytest.raises(ArbiterConfigError, match=message):
        book.authenticate("a token")            # read at the first question


@given(st.text(max_size=60))
def test_env_tokens_parse_or_fail_clearly(value: str) -> None:
    try:
        for a in parse_env(value):
            assert a.name and len(a.token_sha256) == 64
    except ArbiterConfigError as exc:
        assert "TOUCHMOVE_ARBITERS" in str(exc)


def test_audit_log_survives_restarts(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.record(arbiter="Anna", action="result", board=3, before={"result": "*"}, after={"result": "1-0"})
    with path.open("a") as fh:
        fh.write('{"id": 2, "arbiter": "cut by a cra')  # a crash in the middle of a line
    log2 = AuditLog.read(path)
    entry = log2.record(arbiter="Bob", action="acknowledge", board=4)
    assert [e["arbiter"] for e in log2.entries] == ["Anna", "Bob"]
    assert entry["id"] == 2 and log2.entries[0]["after"] == {"result": "1-0"}


# -- the web routes -----------------------------------------------------------------------------------------
def test_routes_refuse_and_record(tmp_path: Path) -> None:
    asyncio.run(_routes(tmp_path))


async def _routes(tmp_path: Path) -> None:
    t = make_tournament(3, out=tmp_path)
    hub = Broadcaster(t, output_dir=tmp_path).open()
    _, events = engine_events()
    for e in events:
        hub.handle(BridgeMessage("touchmove", "b01", "events", {**e, "board": "b01", "session": "s1"}))
    book = ArbiterBook(env="chief:Anna=tok-a;Bob=tok-b", revoked_path=tmp_path / "revoked.json")
    journal = write_journal(tmp_path / "journal.sqlite", "b01")
    app = make_app(hub, None, arbiters=book, audit=AuditLog(tmp_path / "audit.jsonl"),
                   journals=[tmp_path / "absent.sqlite", tmp_path / "journal.sqlite"])
    async with TestClient(TestServer(app)) as client:
        bob, anna = {"Authorization": "Bearer tok-b"}, {"Authorization": "Bearer tok-a"}
        stream = hub.streams.listen(svg=False)  # what the public event stream gets
        assert (await client.post("/api/boards/1/result", json={"result": "1-0"})).status == 401
        assert (await client.post("/api/boards/1/result", json={"result": "1-0"},
                                  headers={"Authorization": "Bearer nope"})).status == 401
        resp = await client.post("/api/boards/1/result", json={"result": "1-0"}, headers=bob)
        assert resp.status == 200
        assert (await client.post("/api/boards/1/result", json={"result": "2-0"}, headers=bob)).status == 400
        # the audit log is the arbiters': no token, a wrong one -> 401; the public stream gets only the id
        for path in ("/api/audit", "/api/audit.jsonl", "/api/audit?after=0"):
            assert (await client.get(path)).status == 401, path
            assert (await client.get(path, headers={"Authorization": "Bearer nope"})).status == 401, path
        assert [e["arbiter"] for e in (await (await client.get("/api/audit", headers=bob)).json())["entries"]] \
            == ["Bob", "Bob"]
        assert (await client.get("/api/audit?after=1", headers=bob)).status == 200
        assert [e["id"] for e in (await (await client.get("/api/audit?after=1", headers=bob)).json())["entries"]] \
            == [2]
        assert (await client.get("/api/audit?after=x", headers=bob)).status == 400
        assert "Bob" in await (await client.get("/api/audit.jsonl", headers=bob)).text()
        notified = []
        while not stream.empty():
            notified.append(stream.get_nowait())
        assert [data for kind, data in notified if kind == "audit"] == [{"id": 1}, {"id": 2}]
        assert (await client.post("/api/arbiters/Anna/revoke", headers=bob)).status == 403
        assert (await client.post("/api/arbiters/Nobody/revoke", headers=anna)).status == 404
        assert (await client.post("/api/arbiters/Bob/revoke", headers=anna)).status == 200
        assert (await client.post("/api/boards/1/result", json={"result": "*"}, headers=bob)).status == 401
        assert (await client.get("/api/arbiters")).status == 401
        # revoked without a restart: the log is closed to him at once, open to the others
        assert (await client.get("/api/audit", headers=bob)).status == 401
        assert (await client.get("/api/audit.jsonl", headers=bob)).status == 401
        assert (await client.get("/api/audit", headers=anna)).status == 200
        alert_id = hub.storage.alerts[0].id
        assert (await client.post(f"/api/alerts/{alert_id}/ack", headers=anna)).status == 200
        assert (await client.post(f"/api/alerts/{alert_id}/ack", headers=anna)).status == 200  # again: no entry
        assert (await client.post("/api/alerts/999/ack", headers=anna)).status == 404
        assert (await client.get("/api/boards/1/timeline?ply=x")).status == 400
        assert (await client.get("/api/boards/9/timeline?ply=1")).status == 404
        line = await (await client.get("/api/boards/1/timeline?ply=3")).json()
        assert line["first_touch"]["sq"] == "f1" and line["alerts"][0]["window"]["closed_by"].startswith("black")
        assert line["sources"] == ["events", "journal"]
        assert [e["text"] for e in line["entries"] if e.get("raw")] == [
            "lift from f1", "place on f1", "lift from g1", "place on f3"]
        evidence = await (await client.get("/api/boards/1/evidence.json")).json()
        assert [p["ply"] for p in evidence["plies"]] == [1, 2, 3, 4] and evidence["white"] == "White, Player 1"
        journal.close()
        detail = await (await client.get("/api/boards/1")).json()
        assert [m["san"] for m in detail["moves"]] == ["e4", "e5", "Nf3", "Nf6"] and detail["evidence_plies"]
        alert = hub.storage.alerts[0]
        assert alert.window is not None and not alert.window["open"]  # closed by the later touch, live
        assert alert.acked_by == "Anna"
        # who acknowledged is arbiter data: in answers to a valid token only
        assert "acked_by" not in detail["alerts"][0] and detail["alerts"][0]["acked"]
        state = await (await client.get("/api/state?svg=0")).json()
        assert state["alerts"] and all("acked_by" not in a for a in state["alerts"])
        with_token = await (await client.get("/api/boards/1", headers=anna)).json()
        assert with_token["alerts"][0]["acked_by"] == "Anna"
        revoked = await (await client.get("/api/boards/1", headers=bob)).json()
        assert "acked_by" not in revoked["alerts"][0]
        notified = []
        while not stream.empty():
            notified.append(stream.get_nowait())
        assert all("acked_by" not in data for kind, data in notified if kind in ("alert", "ack"))
        assert any(kind == "ack" for kind, _ in notified)
        audit = [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(a["arbiter"], a["action"], a["ok"]) for a in audit] == [
        ("Bob", "result", True), ("Bob", "result", False), ("Bob", "revoke", False), ("Anna", "revoke", True),
        ("Anna", "acknowledge", True)]
    assert audit[0]["before"]["result"] == "*" and audit[0]["after"]["result"] == "1-0"


def test_second_illegal_move_of_a_player_is_counted() -> None:
    first = ev("alert", 5, 1, code="illegal_move", article="7.5.1")
    other_side = ev("alert", 6, 3, code="illegal_move", article="7.5.1")
    second = ev("alert", 7, 5, code="illegal_move", article="7.5.1")
    events = [first, ev("move", 5, 2), other_side, ev("move", 6, 4), second]
    counts = [claim_window(a, events, timing="blitz") for a in (first, other_side, second)]
    assert [(w["offender"], w["count"]) for w in counts if w] == [("white", 1), ("black", 1), ("white", 2)]


# -- a broadcaster restart, the bridge's refusals and its own alerts ------------------------------------------
def feed(hub: Broadcaster, events: list[dict[str, Any]], board_id: str = "b01") -> None:
    for e in events:
        hub.handle(BridgeMessage("touchmove", board_id, "events", {**e, "board": board_id, "session": "s1"}))


def test_timelines_alerts_and_acks_survive_a_broadcaster_restart(tmp_path: Path) -> None:
    t = make_tournament(3, out=tmp_path)
    hub = Broadcaster(t, output_dir=tmp_path).open()
    _, events = engine_events()
    feed(hub, events)
    assert [a.code for a in hub.storage.alerts] == ["touch_move"]
    hub.actions.acknowledge(hub.storage.alerts[0].id, by="Bob")
    before = ply_timeline(hub.storage.console.events.game(1, 1), 3, timing=hub.storage.console.timing)  # type: ignore[arg-type]
    hub.storage.save_state()  # what the service does when it stops (the writer flushes every 0.1 s meanwhile)
    assert (tmp_path / "round-3-console.jsonl").is_file()

    again = Broadcaster(t, output_dir=tmp_path).open()  # the bridges send no past events to a new broadcaster
    record = again.storage.console.events.game(1, 1)
    assert record is not None
    assert ply_timeline(record, 3, timing=again.storage.console.timing) == before
    [alert] = again.storage.alerts
    assert (alert.code, alert.ply, alert.acked, alert.acked_by) == ("touch_move", 3, True, "Bob")
    assert alert.window is not None and not alert.window["open"] and alert.window["closed_by"].startswith("black")
    last_move = [e for e in events if e["type"] == "move"][-1]
    assert again.storage.by_number[1].extras["moved_at"] == last_move["ts"]  # the clocks run from it
    kept = len(record.events)
    feed(again, events)  # the same events again (a bridge replaying its journal): no new alert, no new entry
    assert len(again.storage.alerts) == 1 and len(record.events) == kept
    again.storage.save_state()
    lines = (tmp_path / "round-3-console.jsonl").read_text().splitlines()
    assert len(lines) == kept + 1  # each event once, and the acknowledgement
    (tmp_path / "round-3-console.jsonl").write_text("\n".join(lines[:-3]) + '\n{"board": 1, "ev')  # a crash
    cut = Broadcaster(t, output_dir=tmp_path).open()
    assert cut.storage.console.events.game(1, 1) is not None and [a.acked for a in cut.storage.alerts] == [False]


def test_refused_commands_and_board_identity_reach_the_queue(tmp_path: Path) -> None:
    hub = Broadcaster(make_tournament(3, out=tmp_path), output_dir=tmp_path).open()
    feed(hub, [{"type": "game_start", "game": 1, "t": 0, "seq": 1},
               {"type": "result_rejected", "game": 1, "t": 5, "seq": 2, "reason": "no game is on",
                "result": "1-0", "declared": "resignation"},
               {"type": "resync_rejected", "game": 1, "t": 6, "seq": 3, "reason": "e2e5 is illegal",
                "moves": ["e2e5"], "fen": None},
               {"type": "alert", "game": 1, "t": 7, "seq": 4, "ply": 1, "code": "board_identity", "article": "",
                "origin": "bridge", "detail": {"port": "/dev/ttyACM3", "claimed": "b01"}},
               {"type": "result_rejected", "game": 1, "t": 5, "seq": 2, "reason": "no game is on"}])  # again
    assert [(a.code, a.detail.get("reason")) for a in hub.storage.alerts] == [
        ("result_rejected", "no game is on"), ("resync_rejected", "e2e5 is illegal"), ("board_identity", None)]
    assert hub.storage.alerts[0].detail["result"] == "1-0" and hub.storage.alerts[1].detail["moves"] == ["e2e5"]
    meanings = hub.snapshot(svg=False)["meanings"]
    assert {"board_identity", "result_rejected", "resync_rejected", "changes_lost"} <= set(meanings)
    assert hub.storage.by_number[1].rejected == 0 and hub.storage.by_number[1].game.ply == 0  # the game is not touched
    feed(hub, [{"type": "result_rejected", "game": 1, "seq": 9, "reason": 5}])
    assert hub.storage.by_number[1].rejected == 1 and len(hub.storage.alerts) == 3  # a bad field: refused, logged


def test_a_board_that_restarted_by_itself_reaches_the_queue(tmp_path: Path) -> None:
    hub = Broadcaster(make_tournament(3, out=tmp_path), output_dir=tmp_path).open()
    feed(hub, [{"type": "game_start", "game": 1, "t": 0, "seq": 1},
               {"type": "alert", "game": 1, "t": 9, "seq": 2, "ply": 3, "code": "board_reset", "article": "",
                "origin": "bridge", "detail": {"cause": "watchdog", "boot": "77", "port": "/dev/ttyACM0"}}])
    assert [(a.code, a.detail.get("cause")) for a in hub.storage.alerts] == [("board_reset", "watchdog")]
    assert "watchdog" in hub.snapshot(svg=False)["meanings"]["board_reset"]


def test_a_timeline_from_the_journal_when_the_broadcaster_missed_the_events(tmp_path: Path) -> None:
    asyncio.run(_from_journal(tmp_path))


async def _from_journal(tmp_path: Path) -> None:
    hub = Broadcaster(make_tournament(3, out=tmp_path), output_dir=tmp_path).open()
    feed(hub, [{"type": "game_start", "game": 1, "t": 0, "seq": 1}])  # then it was down for the game
    hub.storage.console.events.boards.clear()
    journal = write_journal(tmp_path / "journal.sqlite", "b01")
    journal.close()
    app = make_app(hub, None, arbiters=ArbiterBook(env="Anna=tok-a"), audit=AuditLog(tmp_path / "audit.jsonl"),
                   journals=[tmp_path / "journal.sqlite"])
    async with TestClient(TestServer(app)) as client:
        line = await (await client.get("/api/boards/1/timeline?ply=3&game=1")).json()
        assert line["first_touch"]["sq"] == "f1" and line["sources"] == ["events", "journal"]
        assert (await client.get("/api/boards/2/timeline?ply=3&game=1")).status == 404


def test_evidence_of_an_earlier_game_of_the_board(tmp_path: Path) -> None:
    asyncio.run(_earlier_game(tmp_path))


async def _earlier_game(tmp_path: Path) -> None:
    hub = Broadcaster(make_tournament(3, out=tmp_path), output_dir=tmp_path).open()
    _, events = engine_events()
    feed(hub, events)
    feed(hub, [{"type": "game_end", "game": 1, "t": 9000, "seq": 100, "result": "1-0", "reason": "resignation"}])
    hub.actions.permit_game(1, "next")  # the arbiter allows a second game on the board in this round
    feed(hub, [{"type": "game_start", "game": 2, "t": 10_000, "seq": 101},
               {"type": "move", "game": 2, "t": 10_500, "seq": 102, "ply": 1, "uci": "d2d4", "san": "d4"}])
    assert hub.storage.by_number[1].game.number == 2
    app = make_app(hub, None, arbiters=ArbiterBook(env="Anna=tok-a"), audit=AuditLog(tmp_path / "audit.jsonl"),
                   journals=[])
    async with TestClient(TestServer(app)) as client:
        first = await client.get("/api/boards/1/evidence.pgn?game=1")
        assert first.status == 200
        text = await first.text()
        assert "2. Nf3 {" in text and "lift Bf1 binds" in text and '[Result "1-0"]' in text
        second = await (await client.get("/api/boards/1/evidence.pgn")).text()
        assert "1. d4" in second and '[Round "3.1.2"]' in second
        line = await (await client.get("/api/boards/1/timeline?ply=3&game=1")).json()
        assert line["fen"] == "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2"
        evidence = await (await client.get("/api/boards/1/evidence.json?game=1")).json()
        assert "1. e4" in evidence["pgn"]
