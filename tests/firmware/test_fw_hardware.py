"""hardware/ and the firmware's board profiles agree: pins.json, the wiring guides' pin tables, config.py;
and the BOM is well-formed."""

from __future__ import annotations

import csv
import json
import re

import pytest
from touchmove_fw import config

from .conftest import ROOT

HARDWARE = ROOT / "hardware"
PIN_MAPS = json.loads((HARDWARE / "pins.json").read_text())
GUIDES = {"hc165": "hc165.md", "matrix": "matrix.md", "mcp23017": "mcp23017.md", "hall_mux": "hall_mux.md"}
ROW = re.compile(r"^\|\s*`(\w+)`\s*\|\s*GP(\d+)\s*\|", re.M)


def test_every_hardware_profile_has_a_pin_map() -> None:
    hw = {name for name, p in config.PROFILES.items() if p["driver"] != "sim"}
    assert hw == set(GUIDES) == {k for k in PIN_MAPS if not k.startswith("_")}


@pytest.mark.parametrize("profile", sorted(GUIDES))
def test_config_matches_pin_map(profile: str) -> None:
    assert config.get(profile, {})["pins"] == PIN_MAPS[profile]


@pytest.mark.parametrize("profile", sorted(GUIDES))
def test_guide_pin_table_matches_pin_map(profile: str) -> None:
    text = (HARDWARE / GUIDES[profile]).read_text()
    table = {name: int(gp) for name, gp in ROW.findall(text)}
    assert table == PIN_MAPS[profile]


@pytest.mark.parametrize("profile", sorted(GUIDES))
def test_pins_are_valid_rp2040_gpios(profile: str) -> None:
    pins = PIN_MAPS[profile]
    assert len(set(pins.values())) == len(pins), "a GPIO used twice"
    assert all(0 <= gp <= 22 or 26 <= gp <= 28 for gp in pins.values())  # GP23-25 are internal on a Pico
    if "sig" in pins:
        assert pins["sig"] in (26, 27, 28)  # an ADC input
    cfg = config.get(profile, {})
    for name in cfg["buttons"]:
        assert name in pins
    if cfg["leds"]:
        assert "led_data" in pins


def test_hc165_uses_spi0_pins() -> None:
    pins = PIN_MAPS["hc165"]
    # RP2040 SPI0: SCK on GP2/6/18/22, RX (MISO) on GP0/4/16/20, TX (MOSI) on GP3/7/19
    assert pins["sck"] in (2, 6, 18, 22) and pins["miso"] in (0, 4, 16, 20) and pins["mosi"] in (3, 7, 19)
    assert config.get("hc165", {})["spi_id"] == 0


def test_mcp23017_uses_i2c0_pins() -> None:
    pins = PIN_MAPS["mcp23017"]
    # RP2040 I2C0: SDA on GP0/4/8/12/16/20, SCL on GP1/5/9/13/17/21
    assert pins["sda"] % 4 == 0 and pins["scl"] % 4 == 1


def test_bom() -> None:
    with (HARDWARE / "bom.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and set(rows[0]) >= {"part", "quantity", "example_part_number"}
    for row in rows:
        assert row["part"].strip() and row["example_part_number"].strip()
        assert int(row["quantity"]) > 0
    text = " ".join(r["part"] for r in rows)
    qty = {r["part"]: int(r["quantity"]) for r in rows}
    assert "74HC165" in text and "Pico" in text
    assert next(q for p, q in qty.items() if "74HC165" in p) == 8
    assert next(q for p, q in qty.items() if p.startswith("Reed switch")) == 64
