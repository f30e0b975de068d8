"""The check a board's line carries: ``"ck"``, the CRC-32 of the line's own bytes before it.

The touchmove firmware ends every line it writes with ``,"ck":"<8 lowercase hex digits>"}``: the CRC-32 (zlib's,
the one MicroPython's ``binascii.crc32`` computes) of every byte from the opening ``{`` up to, not including, that
``,"ck"``. A line cut and joined to another (USB buffers overwritten while the host had the port closed) still
ends with a check, but one made over other bytes: it fails, however valid the JSON it makes. Firmware older than
the check writes no ``ck``; its lines are taken as before.
"""

from __future__ import annotations

import re
import zlib
from enum import Enum

#: The end of a checked line: the check field, then the closing brace (and any trailing whitespace).
_TAIL = re.compile(rb',"ck":"([0-9a-f]{8})"\}\s*\Z')


class Check(Enum):
    """What a line's check says."""

    NONE = "none"  # the line carries no check (older firmware, a vendor board's adapter)
    GOOD = "good"  # the check matches the line's bytes
    BAD = "bad"  # a check that does not match the line's bytes


def crc_hex(body: bytes) -> str:
    """Return the check of ``body`` (the line's bytes before ``,"ck"``) as the firmware writes it."""
    return f"{zlib.crc32(body) & 0xFFFFFFFF:08x}"


def check_line(line: bytes) -> Check:
    """Return whether ``line`` (one line, without its newline) ends with a check and whether it holds (a ``ck``
    key elsewhere in the object is the decoder's to refuse)."""
    m = _TAIL.search(line)
    if m is None:
        return Check.NONE
    return Check.GOOD if crc_hex(line[: m.start()]) == m.group(1).decode() else Check.BAD


def add_check(body: str) -> str:
    """Return the line for ``body`` (a JSON object's text without its closing brace) with its check, as the
    firmware writes it (tests and simulated boards)."""
    return f'{body},"ck":"{crc_hex(body.encode())}"}}'
