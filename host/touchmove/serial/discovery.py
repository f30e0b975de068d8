"""The serial ports the configuration designates: paths, glob patterns and USB matches, each device once."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable

from touchmove.config import UsbMatch


def find_ports(patterns: Iterable[str], usb: Iterable[UsbMatch]) -> list[str]:
    """Return the port paths the configuration designates: paths and glob patterns, then USB matches."""
    found: list[str] = []
    seen: set[tuple[int, int]] = set()

    def add(path: str) -> None:
        try:
            st = os.stat(path)          # the device behind a symlink, in one system call
        except OSError:
            return
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            found.append(path)

    for pattern in patterns:
        for path in sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]:
            add(path)
    usb = list(usb)
    if usb:
        from serial.tools import list_ports

        for info in list_ports.comports():
            for m in usb:
                if ((m.vid is None or m.vid == info.vid) and (m.pid is None or m.pid == info.pid)
                        and (m.serial_number is None or m.serial_number == info.serial_number)):
                    add(info.device)
                    break
    return found
