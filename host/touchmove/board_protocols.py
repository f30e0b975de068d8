"""The vendor board protocols ``[serial] boards`` may name (bridge.toml, docs/boards.md).

Beside :mod:`touchmove.board_ids`, importing nothing: the configuration checks the names against it without
running the :mod:`touchmove.boards` package, whose links sit above the bridge's serial link, which reads the
configuration's types.
"""

PROTOCOL_NAMES = ("dgt", "chesslink", "chessnut")
