"""The optional ``piece`` of a place record (boards that know their pieces)."""

from __future__ import annotations

import chess
import pytest

from touchmove import records


def test_place_with_a_piece_round_trips() -> None:
    rec = records.parse_line('{"t":5,"type":"place","sq":"e4","piece":"N"}')
    assert rec == records.Place(5, chess.E4, piece="N")
    assert records.to_line(rec) == '{"t":5,"type":"place","sq":"e4","piece":"N"}'
    assert records.to_line(records.Place(5, chess.E4)) == '{"t":5,"type":"place","sq":"e4"}'


@pytest.mark.parametrize("piece", ["x", "", 3, "NN"])
def test_a_bad_piece_is_a_clear_error(piece: object) -> None:
    with pytest.raises(records.RecordError, match="FEN piece letter"):
        records.from_dict({"t": 1, "type": "place", "sq": "e4", "piece": piece})
