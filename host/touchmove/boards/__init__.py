"""Boards clubs already own, as inputs of ``touchmove run``: DGT, Millennium ChessLink, Chessnut Air/Pro.

Each protocol module frames and decodes the board's bytes; :mod:`touchmove.boards.adapter` turns the pieces it
reports into the recording format's records; :mod:`touchmove.boards.link` puts the two behind a port the bridge
reads as one of touchmove's own boards. Which port speaks which protocol: ``[serial] boards`` in bridge.toml
(docs/boards.md). The protocols' names are in :mod:`touchmove.board_protocols`, which the configuration
reads.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from touchmove.board_protocols import PROTOCOL_NAMES
from touchmove.clocks import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from touchmove.boards.base import Translator
    from touchmove.config import BoardPort, SerialConfig
    from touchmove.serial.link import SerialLink

__all__ = ["CHESSNUT_VID", "HIDRAW_SYS", "PROTOCOL_NAMES", "board_port_of", "find_board_ports", "open_link",
           "translator_for", "usb_ids_of"]

#: Chessnut's USB vendor id (its SDK's; the product ids are 0x80nn-0x86nn).
CHESSNUT_VID = 0x2D80
HIDRAW_SYS = "/sys/class/hidraw"


def translator_for(protocol: str, port: str, rate: float = 1.0) -> Translator:
    """Return a new translator of ``protocol`` for ``port``."""
    if protocol == "dgt":
        from touchmove.boards.dgt import DgtTranslator

        return DgtTranslator(port, rate)
    if protocol == "chesslink":
        from touchmove.boards.chesslink import ChessLinkTranslator

        return ChessLinkTranslator(port, rate)
    if protocol == "chessnut":
        from touchmove.boards.chessnut import ChessnutTranslator

        return ChessnutTranslator(port, rate)
    raise ValueError(f"unknown board protocol {protocol!r}")


def usb_ids_of(path: str) -> tuple[int, int] | None:
    """Return (vid, pid) of a serial or hidraw device from sysfs, or None."""
    name = os.path.basename(os.path.realpath(path))
    if name.startswith("hidraw"):
        try:
            with open(os.path.join(HIDRAW_SYS, name, "device", "uevent"), encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("HID_ID="):
                        _, vid, pid = line.strip().split("=", 1)[1].split(":")
                        return int(vid, 16), int(pid, 16)
        except (OSError, ValueError):
            return None
        return None
    try:
        from serial.tools import list_ports

        for info in list_ports.comports():
            if os.path.realpath(info.device) == os.path.realpath(path) and info.vid is not None:
                return int(info.vid), int(info.pid or 0)
    except Exception:
        return None
    return None


def board_port_of(path: str, cfg: SerialConfig) -> BoardPort | None:
    """Return the ``[serial] boards`` entry that serves ``path`` (None: a touchmove board)."""
    import fnmatch

    ids: tuple[int, int] | None = None
    looked = False
    for entry in cfg.boards:
        if entry.port is not None:
            if path == entry.port or fnmatch.fnmatch(path, entry.port):
                return entry
            continue
        if not looked:
            ids, looked = usb_ids_of(path), True
        if ids and (entry.vid is None or entry.vid == ids[0]) and (entry.pid is None or entry.pid == ids[1]):
            return entry
    return None


def find_board_ports(cfg: SerialConfig) -> list[str]:
    """Return the ports ``[serial] boards`` designates: its paths and globs, and serial ports or hidraw nodes
    with its USB ids."""
    found: list[str] = []
    by_usb = [e for e in cfg.boards if e.port is None]
    for entry in cfg.boards:
        if entry.port is not None:
            found += sorted(glob.glob(entry.port)) if glob.has_magic(entry.port) else [entry.port]
    if by_usb:
        candidates = sorted(glob.glob("/dev/hidraw*"))
        try:
            from serial.tools import list_ports

            candidates += [info.device for info in list_ports.comports() if info.vid is not None]
        except Exception:
            pass
        found += [p for p in candidates if board_port_of(p, cfg) is not None]
    return [p for p in dict.fromkeys(found) if os.path.exists(p)]


def open_link(path: str, cfg: SerialConfig, on_lines: Callable[[SerialLink, list[bytes | None]], None],
              on_closed: Callable[[SerialLink, str], None], clock: Clock = SYSTEM_CLOCK) -> SerialLink | None:
    """Return a link translating ``path``'s protocol when ``[serial] boards`` designates it, else None."""
    entry = board_port_of(path, cfg)
    if entry is None:
        return None
    from touchmove.boards.link import BoardLink

    return BoardLink(path, translator_for(entry.protocol, path, entry.rate), on_lines, on_closed, clock)
