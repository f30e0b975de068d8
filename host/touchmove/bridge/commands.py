"""Commands over MQTT: ``<base>/boards/<id>/set`` (board commands: new game, setup, promote, takeback, resync,
result, assign) and ``<base>/bridge/request/<cmd>`` (health_check, boards, snapshot, leds). Each is validated
against :mod:`touchmove.mqtt.schema` and answered on the matching ``response`` topic, with the request's
``transaction``; a board command becomes a journaled record fed to the board's engine."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import chess

from touchmove import board_ids, records
from touchmove.bridge.session import BoardSession
from touchmove.clocks import Clock
from touchmove.mqtt import wire
from touchmove.mqtt.schema import (
    BOARD_COMMANDS,
    BRIDGE_REQUESTS,
    decode_payload,
    transaction_of,
    validate,
)
from touchmove.mqtt.wire import iso_now
from touchmove.serial.commands import leds_command

log = logging.getLogger("touchmove.bridge")


class Replies(Protocol):
    def reply(self, topic: str, payload: dict[str, Any]) -> None: ...


class EntrySink(Protocol):
    def add_entry(self, board: str, kind: str, t: int, body: str | None, source: str, ts: str) -> int: ...


class CommandPipeline(Protocol):
    """What the commands need of the event pipeline: its boards, a record sink into a board's engine, the
    journal's entries, the flush, and the journal's health."""

    @property
    def boards(self) -> Mapping[str, BoardSession]: ...
    @property
    def journal(self) -> EntrySink: ...

    def feed(self, sess: BoardSession, record: records.Record, source: str) -> None: ...
    def schedule_flush(self) -> None: ...
    def journal_status(self) -> dict[str, Any]: ...


class CommandPublisher(Protocol):
    """What the commands need of the publisher: the base topic and session, a board's topics, and a board's
    retained state published again."""

    @property
    def base(self) -> str: ...
    @property
    def session(self) -> str: ...

    def topic(self, board: str, leaf: str) -> str: ...
    def publish_board_retained(self, sess: BoardSession) -> None: ...


class SnapshotAsker(Protocol):
    """What the commands need of the ports: a board asked for its occupancy."""

    def request_snapshot(self, sess: BoardSession, *, force: bool = False) -> None: ...


class BridgeCommands:
    """Answers the MQTT commands of one bridge."""

    def __init__(self, *, pipeline: CommandPipeline, publisher: CommandPublisher, ports: SnapshotAsker,
                 replies: Replies, clock: Clock, problems: Callable[[], list[dict[str, Any]]]) -> None:
        self.pipeline = pipeline
        self.publisher = publisher
        self.ports = ports
        self.replies = replies
        self.clock = clock
        #: what the operator should know about now (the bridge's problems, for ``health_check``)
        self.problems = problems

    async def on_command(self, topic: str, raw: bytes, retained: bool) -> None:
        command = wire.command_of(topic, self.publisher.base)
        if command is None:
            return
        kind, name = command
        if kind == wire.SET:
            problem = board_ids.id_problem(name)
            if problem is not None:
                # no reply: its topic would hold the id, which the broker may refuse (and drop the link)
                log.warning("command for board %s ignored: %s", board_ids.shown(name), problem)
                return
            self._board_command(name, raw, retained)
        else:
            self._bridge_request(name, raw, retained)

    def _reply(self, topic: str, transaction: Any, error: str | None = None, **extra: Any) -> None:
        payload: dict[str, Any] = {"status": "error" if error else "ok", **extra}
        if error:
            payload["error"] = error
            log.warning("%s: %s", topic, error)
        if transaction is not None:
            payload["transaction"] = transaction
        self.replies.reply(topic, payload)

    def _board_command(self, board: str, raw: bytes, retained: bool) -> None:
        reply_topic = self.publisher.topic(board, "response")
        payload, problem = decode_payload(raw)
        transaction = transaction_of(payload)
        command = payload.get("command") if isinstance(payload, dict) else None
        if retained:
            return self._reply(reply_topic, transaction, "retained commands are ignored (retain=false)")
        if problem:
            return self._reply(reply_topic, transaction, problem)
        if not isinstance(command, str) or command not in BOARD_COMMANDS:
            return self._reply(reply_topic, transaction,
                               f"unknown command {command!r}; one of {', '.join(BOARD_COMMANDS)}")
        problem = validate(payload, BOARD_COMMANDS[command], envelope=("transaction", "command"))
        if problem:
            return self._reply(reply_topic, transaction, problem, command=command)
        sess = self.pipeline.boards.get(board)
        if sess is None:
            return self._reply(reply_topic, transaction, f"unknown board {board!r}", command=command)
        t = sess.now(self.clock.monotonic())
        record: records.Record | None = None
        if command == "new_game":
            record = records.Setup(t, chess.STARTING_FEN)
        elif command == "setup":
            try:      # the record's own check, the one a replay of the journal makes
                record = records.from_dict({"t": t, "type": "setup", "fen": payload["fen"],
                                            "chess960": payload.get("chess960", False)})
            except records.RecordError as exc:
                return self._reply(reply_topic, transaction, exc.reason, command=command)
        elif command == "promote":
            record = records.from_dict({"t": t, "type": "promote", "piece": payload["piece"]})
        elif command == "takeback":
            record = records.TakebackRequest(t, payload["ply"])
        elif command == "resync":
            try:
                record = records.from_dict({"t": t, "type": "resync",
                                            **{k: payload[k] for k in ("moves", "fen") if k in payload}})
            except records.RecordError as exc:
                return self._reply(reply_topic, transaction, exc.reason, command=command)
        elif command == "result":
            try:
                record = records.from_dict({"t": t, "type": "result", "result": payload["result"],
                                            "reason": payload["reason"]})
            except records.RecordError as exc:
                return self._reply(reply_topic, transaction, exc.reason, command=command)
        elif command == "assign":
            names = {"round": "Round", "board": "Board", "white": "White", "black": "Black", "event": "Event",
                     "site": "Site"}
            headers = {names[k]: str(v) for k, v in payload.items() if k in names}
            sess.headers.update(headers)
            self.pipeline.journal.add_entry(board, "meta", sess.last_t, json.dumps(headers), "operator", iso_now())
            self.publisher.publish_board_retained(sess)
        seq = sess.event_seq
        log.info("operator command %s on board %s (transaction %r)", command, board, transaction)
        if record is not None:
            sess.arrival_t, sess.arrival_host = t, self.clock.monotonic()
            self.pipeline.feed(sess, record, "operator")
        self.pipeline.schedule_flush()
        # A resync or result the engine could not apply is answered with its reason (the event is published as well).
        rejected = [line for event_seq, line in sess.backlog if event_seq > seq
                    and (b'"resync_rejected"' in line or b'"result_rejected"' in line)]
        if rejected:
            return self._reply(reply_topic, transaction, json.loads(rejected[0])["reason"], command=command)
        self._reply(reply_topic, transaction, command=command)

    def _bridge_request(self, cmd: str, raw: bytes, retained: bool) -> None:
        reply_topic = wire.response_topic(self.publisher.base, cmd)
        payload, problem = decode_payload(raw)
        transaction = transaction_of(payload)
        if retained:
            return self._reply(reply_topic, transaction, "retained requests are ignored")
        if problem:
            return self._reply(reply_topic, transaction, problem)
        schema = BRIDGE_REQUESTS.get(cmd)
        if schema is None:
            return self._reply(reply_topic, transaction,
                               f"unknown request {cmd!r}; one of {', '.join(BRIDGE_REQUESTS)}")
        problem = validate(payload, schema)
        if problem:
            return self._reply(reply_topic, transaction, problem)
        if cmd == "health_check":
            online = sum(1 for s in self.pipeline.boards.values() if s.link is not None)
            problems = self.problems()
            return self._reply(reply_topic, transaction, data={
                "healthy": not problems, "session": self.publisher.session, "boards_online": online,
                "problems": problems, "journal": self.pipeline.journal_status(), "time": iso_now()})
        if cmd == "boards":
            data = []
            for sess in self.pipeline.boards.values():
                st = sess.engine.state()
                data.append({"board": sess.board, "online": sess.link is not None,
                             "port": sess.link.path if sess.link else None, "game": st.game, "ply": st.ply,
                             "firmware": sess.firmware})
            return self._reply(reply_topic, transaction, data={"boards": data})
        target = self.pipeline.boards.get(payload["board"])
        if target is None or target.link is None:
            return self._reply(reply_topic, transaction, f"board {payload['board']!r} is not online")
        if cmd == "snapshot":
            self.ports.request_snapshot(target, force=True)
        elif cmd == "leds":
            if payload.get("clear"):
                target.link.send({"cmd": "leds", "clear": True})
            elif "squares" in payload and "color" in payload:
                target.link.send(leds_command(payload["squares"], payload["color"]))
            else:
                return self._reply(reply_topic, transaction, "give 'squares' and 'color', or 'clear': true")
        self._reply(reply_topic, transaction, data={})
