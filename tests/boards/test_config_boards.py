"""``[serial] boards`` in bridge.toml: which port speaks which vendor protocol."""

from __future__ import annotations

from typing import Any

import pytest

from touchmove.boards import board_port_of, open_link
from touchmove.boards.link import BoardLink
from touchmove.config import BoardPort, ConfigError, SerialConfig, from_dict


def test_boards_entries_are_read() -> None:
    cfg = from_dict({"serial": {"boards": [{"port": "/dev/serial/by-id/usb-DGT*", "protocol": "dgt"},
                                           {"vid": 0x2D80, "protocol": "chessnut"}]}})
    assert cfg.serial.boards == (BoardPort("dgt", port="/dev/serial/by-id/usb-DGT*"),
                                 BoardPort("chessnut", vid=0x2D80))


@pytest.mark.parametrize(("entry", "message"), [
    ({"port": "/dev/ttyUSB0", "protocol": "fritz"}, "protocol must be one of"),
    ({"protocol": "dgt"}, "give a port, or USB ids"),
    ({"port": "/dev/ttyUSB0", "vid": 1, "protocol": "dgt"}, "give a port, or USB ids"),
    ({"port": "/dev/ttyUSB0", "protocol": "dgt", "speed": 3}, "unknown key"),
    ({"port": "/dev/ttyUSB0", "protocol": "dgt", "rate": 0}, "rate"),
    ("dgt", "must be tables"),
])
def test_bad_entries_are_a_clear_error(entry: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dict({"serial": {"boards": [entry]}})


def test_a_port_gets_its_protocol_and_others_stay_touchmove_boards() -> None:
    cfg = SerialConfig(boards=(BoardPort("chesslink", port="/tmp/cl*"),))
    assert board_port_of("/tmp/cl0", cfg) == cfg.boards[0]
    assert board_port_of("/dev/ttyACM0", cfg) is None
    link = open_link("/tmp/cl0", cfg, lambda link, lines: None, lambda link, why: None)
    assert isinstance(link, BoardLink) and link.translator.name == "chesslink"
    assert (link.translator.baudrate, link.translator.bytesize, link.translator.parity) == (38400, 7, "O")
    assert open_link("/dev/ttyACM0", cfg, lambda link, lines: None, lambda link, why: None) is None
