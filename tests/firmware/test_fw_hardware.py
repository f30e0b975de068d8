"""hardware/ and the firmware's board profiles agree (pins.json, the wiring guides' pin tables, config.py),
and every profile is right for its board's port: each pin checked against the port's pin table
(port_pins.py, from MicroPython's and the chips' documentation)."""

from __future__ import annotations

import json
import re

import pytest
from touchmove_fw import config

from .conftest import ROOT
from .port_pins import BOARDS

HARDWARE = ROOT / "hardware"
PIN_MAPS = json.loads((HARDWARE / "pins.json").read_text())
GUIDES = {"hc165": "hc165.md", "matrix": "matrix.md", "mcp23017": "mcp23017.md", "hall_mux": "hall_mux.md"}
ROW = re.compile(r"^\|\s*`(\w+)`\s*\|\s*(?:GP(\d+)|-)\s*\|\s*(?:GPIO(\d+)|-)\s*\|", re.M)
CASES = [(b, p) for b in sorted(config.BOARDS) for p in sorted(GUIDES)]


def test_every_hardware_profile_has_pins_on_every_board() -> None:
    hw = {name for name, p in config.PROFILES.items() if p["driver"] != "sim"}
    assert hw == set(GUIDES)
    assert set(BOARDS) == set(config.BOARDS)
    for family in ("pico", "esp32s3"):
        assert set(PIN_MAPS[family]) == hw


def test_config_matches_pin_map() -> None:
    assert {k: v for k, v in PIN_MAPS.items() if not k.startswith("_")} == config.PINS


@pytest.mark.parametrize("profile", sorted(GUIDES))
def test_guide_pin_table_matches_pin_map(profile: str) -> None:
    text = (HARDWARE / GUIDES[profile]).read_text()
    rows = ROW.findall(text)
    assert {n: int(a) for n, a, _ in rows if a} == PIN_MAPS["pico"][profile]
    assert {n: int(b) for n, _, b in rows if b} == PIN_MAPS["esp32s3"][profile]


def _used(cfg: dict) -> dict[str, int]:
    return dict(cfg["pins"])


@pytest.mark.parametrize(("board", "profile"), CASES)
def test_pins_valid_for_the_port(board: str, profile: str) -> None:
    port = BOARDS[board]
    cfg = config.get(profile, {"board": board})
    assert cfg["port"] == port["port"]
    pins = _used(cfg)
    assert len(set(pins.values())) == len(pins), f"a GPIO used twice: {pins}"
    for name, gp in pins.items():
        assert gp in port["gpios"], f"{board}/{profile}: {name}=GPIO{gp} does not exist"
        assert gp not in port["avoid"], f"{board}/{profile}: {name}=GPIO{gp} is {port['avoid'].get(gp)}"
    for name in [n for n in pins if n == "sig" or re.fullmatch(r"sig\d", n)]:
        assert pins[name] in port["adc"], f"{name}=GPIO{pins[name]} has no (usable) ADC"
    if cfg["driver"] == "hc165":
        assert cfg["spi_id"] in port["spi"], f"no SPI({cfg['spi_id']}) on {board}"
        fixed = port["spi"][cfg["spi_id"]]
        if fixed:
            for sig in ("sck", "mosi", "miso"):
                assert pins[sig] in fixed[sig], f"{sig}=GP{pins[sig]} is not SPI{cfg['spi_id']} {sig}"
    if cfg["driver"] == "mcp23017":
        assert cfg["i2c_id"] in port["i2c"]
        fixed = port["i2c"][cfg["i2c_id"]]
        if fixed:
            assert pins["sda"] in fixed["sda"] and pins["scl"] in fixed["scl"]
    assert cfg["uart_id"] in port["uart"]
    fixed = port["uart"][cfg["uart_id"]]
    if fixed:
        for sig in ("uart_tx", "uart_rx"):
            assert pins[sig] in fixed[sig], f"{sig}=GP{pins[sig]} is not UART{cfg['uart_id']}"
    for name in cfg["buttons"]:
        assert name in pins
    assert "led_data" in pins
    config.check(cfg)
    config.check({**cfg, "link": "uart"})


@pytest.mark.parametrize("board", sorted(config.BOARDS))
def test_watchdog_range_per_port(board: str) -> None:
    cfg = config.get("hc165", {"board": board, "wdt": True})
    limit = BOARDS[board]["wdt_max_ms"]
    if limit is not None:
        assert cfg["wdt_max_ms"] == limit
        config.check({**cfg, "wdt_ms": limit})
        with pytest.raises(ValueError, match="wdt_ms"):
            config.check({**cfg, "wdt_ms": limit + 1})
    with pytest.raises(ValueError, match="wdt_ms"):
        config.check({**cfg, "wdt_ms": 400})  # below a USB CDC write's 500 ms wait


def test_check_names_the_missing_or_doubled_pin() -> None:
    cfg = config.get("hc165", {"board": "pico"})
    with pytest.raises(ValueError, match="needs pin 'load'"):
        config.check({**cfg, "pins": {k: v for k, v in cfg["pins"].items() if k != "load"}})
    with pytest.raises(ValueError, match="GPIO 16"):
        config.check({**cfg, "pins": {**cfg["pins"], "load": 16}})
    with pytest.raises(ValueError, match="unknown board"):
        config.get("hc165", {"board": "esp8266"})


def test_the_old_esp32_mistakes_are_caught() -> None:
    """What the issue found: SPI(0) on an ESP32, GPIO22 on an S3 (absent), GPIO19/20 (USB), GPIO26 (flash)."""
    s3 = BOARDS["esp32s3_devkitc"]
    assert 0 not in s3["spi"] and 22 not in s3["gpios"] and {19, 20, 26} <= set(s3["avoid"])
    assert 26 not in s3["adc"]
