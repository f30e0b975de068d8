"""Board ids: the one rule for every id that enters the bridge (a board's ``hello``, the configuration, an MQTT
topic or request, the journal).

A board id is 1 to :data:`MAX_LEN` characters from ``A-Z a-z 0-9 _ . -``, starting with a letter or a digit.
Such an id is a valid MQTT topic level (no wildcard, no separator, no control character, plain ASCII), a valid
file name and PGN ``Site``. The firmware's ids (the hex of the chip's unique id) all pass.
"""

from __future__ import annotations

import re

#: Longest board id.
MAX_LEN = 64
#: What a board id is made of (docs/bridge.md#board-ids).
PATTERN = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.-]{{0,{MAX_LEN - 1}}}")
#: The rule in one sentence, for error messages.
RULE = f"1 to {MAX_LEN} characters from A-Z a-z 0-9 _ . -, starting with a letter or digit"


def id_problem(value: object) -> str | None:
    """Return None when ``value`` is a valid board id, else why not (one sentence without the value)."""
    if not isinstance(value, str):
        return f"a board id must be a string ({RULE})"
    if PATTERN.fullmatch(value) is None:
        return f"a board id is {RULE}"
    return None


def is_board_id(value: object) -> bool:
    """Return whether ``value`` is a valid board id."""
    return id_problem(value) is None


def shown(value: object, limit: int = 80) -> str:
    """Return ``value`` as a printable, ASCII-only, bounded text (for logs and alerts about a refused id)."""
    text = ascii(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
