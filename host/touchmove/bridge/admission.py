"""What a board's port may bring in, beyond the line format (:mod:`touchmove.serial_link`):

* a board id that breaks the rule of :mod:`touchmove.board_ids` is refused: the port stays open but bound to no
  board, its lines are not used, and ``<base>/bridge/state`` carries a ``board_id_refused`` problem naming the
  port until that port closes;
* a record only an operator may give (result, takeback, resync, setup) is refused and logged; it is
  counted in ``stats["operator_records_refused"]`` and reported as ``operator_record_refused`` (per port);
* the firmware's ``fw`` (name and version) from the ``hello`` is kept with the board and logged when it changes;
* a board whose configuration binds a USB serial number (``[boards.<id>] usb_serial``) and that says hello on a
  port with another serial number (or none) raises a ``board_serial_changed`` alert in its event stream and a
  problem on ``bridge/state`` (the game goes on: the arbiter decides).

docs/bridge-faults.md#board-admission says what the operator does.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from touchmove import board_ids
from touchmove.journal import iso_now
from touchmove.serial_link import BoardIdRefused, DecodeError, OperatorRecordRefused, SerialLink

if TYPE_CHECKING:
    from touchmove.bridge.daemon import Bridge
    from touchmove.bridge.session import BoardSession

log = logging.getLogger("touchmove.bridge")


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


class Admission:
    """The checks of this module for one bridge; ``problems()`` feeds ``bridge/state``."""

    def __init__(self, bridge: Bridge) -> None:
        self.bridge = bridge
        self.port_problems: dict[tuple[str, str], PortProblem] = {}
        self.serial_problems: dict[str, dict[str, Any]] = {}
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
            self.bridge.stats["operator_records_refused"] += 1
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
        self.bridge.publish_bridge_state()
        return True

    def port_closed(self, link: SerialLink) -> None:
        """Forget the problems of a port that closed (a new device may come on it)."""
        gone = [key for key in self.port_problems if key[0] == link.path]
        for key in gone:
            del self.port_problems[key]
        if gone:
            self.bridge.publish_bridge_state()

    def said_hello(self, link: SerialLink, sess: BoardSession, fields: dict[str, Any]) -> None:
        """Keep the firmware's identity and check the port's USB serial number against the configuration."""
        fw = fields.get("fw")
        if fw != sess.firmware:
            log.info("board %s: firmware %s on %s", sess.board, fw or "(none said)", link.path)
            sess.firmware = fw if isinstance(fw, str) else None
        wanted = self.bridge.config.board_serials.get(sess.board)
        if wanted is None:
            return
        found = self.serial_of(link.key)
        if found == wanted:
            if self.serial_problems.pop(sess.board, None) is not None:
                self.bridge.publish_bridge_state()
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
        self.bridge.emit_bridge_alert(sess, "board_serial_changed", detail)
        self.bridge.publish_bridge_state()
