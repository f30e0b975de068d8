"""What a board's port may bring in, beyond the line format (:mod:`touchmove.serial.lines`):

* a board id that breaks the rule of :mod:`touchmove.board_ids` is refused: the port stays open but bound to no
  board, its lines are not used, and ``<base>/bridge/state`` carries a ``board_id_refused`` problem naming the
  port until that port closes;
* a record only an operator may give (result, takeback, resync, setup) is refused and logged; it is
  counted in ``stats["operator_records_refused"]`` and reported as ``operator_record_refused`` (per port);
* the firmware's ``fw`` (name and version) from the ``hello`` is kept with the board and logged when it changes;
* a board whose ``hello`` opens a new boot with ``reset`` ``watchdog`` (its firmware hung) or ``fatal`` (its firmware
  reset itself after a fatal error) raises a ``board_reset`` alert in its event stream: the game goes on (the
  bridge resyncs from the board's snapshot), the arbiter sees that the board restarted and why;
* an ``error`` record from a touchmove board (a ``board.json`` the firmware refused, sensor bus errors, commands
  that got no answer, a fatal error) raises a ``board_error`` alert with the board's sentence, once per kind of
  error (the sentence without its numbers) and boot: a board that must not scan repeats its error every 10 s,
  a sensor bus counts its errors up;
* a board whose configuration binds a USB serial number (``[boards.<id>] usb_serial``) and that says hello on a
  port with another serial number (or none) raises a ``board_serial_changed`` alert in its event stream and a
  problem on ``bridge/state`` (the game goes on: the arbiter decides).

docs/bridge-faults.md#board-admission-ids-operator-records-usb-serial-numbers says what the operator does.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from touchmove import board_ids
from touchmove.mqtt.wire import iso_now
from touchmove.serial.lines import BoardIdRefused, DecodeError, OperatorRecordRefused
from touchmove.serial.link import SerialLink

if TYPE_CHECKING:
    from touchmove.bridge.session import BoardSession

log = logging.getLogger("touchmove.bridge")

#: The ``reset`` causes of a board's ``hello`` that an arbiter hears about (``board_reset``): the firmware did not
#: choose to start again. ``power``, ``hard`` (the reset button), ``soft``, ``deepsleep`` and ``unknown`` are
#: logged only.
RESET_ALERTS = {
    "watchdog": "the board's watchdog reset it: its firmware hung",
    "fatal": "the board's firmware reset it after a fatal error",
}

#: What the arbiter or the board's maintainer does about a ``board_error``
#: (docs/bridge-faults.md#board-admission-ids-operator-records-usb-serial-numbers).
ERROR_ADVICE = ("If it says the firmware did not start, fix board.json (docs/firmware.md) or flash the board "
                "again and restart it; a sensor bus error means a chip or cable of the board; the game goes on "
                "from what the board still reports, so check its position against the real board")


def usb_serial_number(path: str) -> str | None:
    """Return the USB serial number of the device behind a port path, or None (no USB device, none found)."""
    try:
        from serial.tools import list_ports
    except ImportError:        # pragma: no cover - pyserial is a dependency
        return None
    real = os.path.realpath(path)
    for info in list_ports.comports():
        if os.path.realpath(info.device) == real:
            return info.serial_number if isinstance(info.serial_number, str) else None
    return None


@dataclass
class PortProblem:
    """Something a port brought in that the bridge refused (cleared when the port closes)."""

    code: str
    port: str
    detail: str
    since: str
    count: int = 1

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "port": self.port, "message": self.detail, "since": self.since,
                "count": self.count}


class Alerts(Protocol):
    """What the checks need of the event pipeline: its counters, and the alerts the bridge raises itself."""

    @property
    def stats(self) -> dict[str, int]: ...

    def emit_bridge_alert(self, sess: BoardSession, code: str, detail: dict[str, Any]) -> None: ...


class BridgeState(Protocol):
    """What the checks need of the publisher: ``bridge/state`` (its problems) published again."""

    def publish_bridge_state(self) -> None: ...


class Admission:
    """The checks of this module for one bridge; ``problems()`` feeds ``bridge/state``."""

    def __init__(self, board_serials: Mapping[str, str], *, alerts: Alerts, state: BridgeState) -> None:
        self.alerts = alerts
        self.state = state
        #: the USB serial number each board must be on (``[boards]`` in the configuration)
        self.board_serials = board_serials
        self.port_problems: dict[tuple[str, str], PortProblem] = {}
        self.serial_problems: dict[str, dict[str, Any]] = {}
        #: the kinds of error each board reported (per boot), each told once (:meth:`board_error`)
        self.errors_told: dict[str, set[tuple[str | None, str]]] = {}
        #: the USB serial number lookup (a function of the port path; tests give their own)
        self.serial_of = usb_serial_number

    def problems(self) -> list[dict[str, Any]]:
        return [*(p.as_dict() for p in self.port_problems.values()), *self.serial_problems.values()]

    def refused_line(self, link: SerialLink, exc: DecodeError) -> bool:
        """Handle a refused id or operator record from ``link``; return False for other decode errors."""
        if isinstance(exc, BoardIdRefused):
            code = "board_id_refused"
            detail = (f"port {link.path}: the board says id {board_ids.shown(exc.claimed)}, refused: "
                      f"{board_ids.id_problem(exc.claimed)}. Give the board a valid id (docs/bridge.md#board-ids) "
                      "and plug it in again; its lines are not used meanwhile.")
        elif isinstance(exc, OperatorRecordRefused):
            code = "operator_record_refused"
            self.alerts.stats["operator_records_refused"] += 1
            detail = (f"port {link.path} ({link.board or 'no board yet'}) sent {exc}; check what is plugged into "
                      "that board's USB line.")
        else:
            return False
        key = (link.path, code)
        known = self.port_problems.get(key)
        if known is not None:
            known.count += 1
            return True
        self.port_problems[key] = PortProblem(code, link.path, detail, iso_now())
        log.error("%s", detail)
        self.state.publish_bridge_state()
        return True

    def port_closed(self, link: SerialLink) -> None:
        """Forget the problems of a port that closed (a new device may come on it)."""
        gone = [key for key in self.port_problems if key[0] == link.path]
        for key in gone:
            del self.port_problems[key]
        if gone:
            self.state.publish_bridge_state()

    def board_error(self, port: str, sess: BoardSession, why: object) -> None:
        """A ``board_error`` alert for an ``error`` record the firmware sent (once per kind and boot)."""
        text = why if isinstance(why, str) else "(an error record without a sentence)"
        kind = (sess.boot, re.sub(r"[0-9]+", "#", text)[:120])
        if kind in self.errors_told.setdefault(sess.board, set()):
            return
        self.errors_told[sess.board].add(kind)
        message = f"board {sess.board} on {port} reports: {text[:300]}. {ERROR_ADVICE}"
        self.alerts.emit_bridge_alert(sess, "board_error", {"why": text[:300], "boot": sess.boot or "",
                                                            "port": port, "message": message})

    def check_reset(self, link: SerialLink, sess: BoardSession, fields: dict[str, Any]) -> None:
        """A ``board_reset`` alert for a new boot whose ``hello`` says the board reset itself unasked (once a boot:
        the hellos a boot sends again, at each port opening, raise nothing)."""
        cause = fields.get("reset")
        boot = str(fields.get("boot", ""))
        if boot == sess.boot or not isinstance(cause, str):
            return
        meaning = RESET_ALERTS.get(cause)
        if meaning is None:
            log.info("board %s: boot %s after a reset (%r)", sess.board, boot, cause[:16])
            return
        message = (f"board {sess.board} restarted on {link.path}: {meaning}. The game goes on from the board's "
                   "position; check the board (and tell its maintainer) if it happens again.")
        log.warning("%s", message)
        self.alerts.emit_bridge_alert(sess, "board_reset", {"cause": cause, "boot": boot, "port": link.path,
                                                            "message": message})

    def said_hello(self, link: SerialLink, sess: BoardSession, fields: dict[str, Any]) -> None:
        """Keep the firmware's identity and check the port's USB serial number against the configuration."""
        fw = fields.get("fw")
        if fw != sess.firmware:
            log.info("board %s: firmware %s on %s", sess.board, fw or "(none said)", link.path)
            sess.firmware = fw if isinstance(fw, str) else None
        self.check_reset(link, sess, fields)
        wanted = self.board_serials.get(sess.board)
        if wanted is None:
            return
        found = self.serial_of(link.key)
        if found == wanted:
            if self.serial_problems.pop(sess.board, None) is not None:
                self.state.publish_bridge_state()
            return
        detail = {"code": "board_serial_changed", "board": sess.board, "port": link.path, "expected": wanted,
                  "found": found, "since": iso_now(),
                  "message": (f"board {sess.board} said hello on {link.path}, whose USB serial number is "
                              f"{found!r}, not the {wanted!r} the configuration binds: another device may "
                              "stand in for the board. Check the board and its cable.")}
        if self.serial_problems.get(sess.board, {}).get("found", object()) == found:
            return
        self.serial_problems[sess.board] = detail
        log.error("%s", detail["message"])
        self.alerts.emit_bridge_alert(sess, "board_serial_changed", detail)
        self.state.publish_bridge_state()
