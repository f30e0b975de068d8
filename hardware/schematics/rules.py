"""Rules an ERC cannot see, checked on every board (make hardware-check): each returns a list of problems.

The numbers come from the documents cited in hardware/README.md ("Signal timing" and "Power"):
NXP UM10204 (I2C rise time and sink current), the RP2040 datasheet (pad pull-down 50-80 kOhm), the
CD74HC4067 datasheet (V_IH 0.7 x VCC), the DRV5053 datasheet (a bypass capacitor of at least 0.01 uF at each
sensor), USB 2.0
section 7.2.4.1 (10 uF at most on VBUS at attach)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from common import VDD_SPI_PINS
from drawing import PartInfo

DEVKITC_PREFIX = "ESP32-S3-DevKitC-1"


def _module(p: PartInfo) -> bool:
    return p.value == "Raspberry Pi Pico" or DEVKITC_PREFIX in p.value

KICAD_FOOTPRINTS = Path(os.environ.get("KICAD6_FOOTPRINT_DIR", "/usr/share/kicad/footprints"))
VCC = 3.3
C_BUS = 200e-12  # I2C bus capacitance to design for: five chips and board-length wiring (100-200 pF)
V_OL, I_OL = 0.4, 3e-3  # UM10204: Fast-mode outputs sink 3 mA at 0.4 V
RP2040_PULL_DOWN_MIN = 50e3  # RP2040 datasheet: pad pull-down 50-80 kOhm
VBUS_MAX_C = 10e-6  # USB 2.0 7.2.4.1: 10 uF at attach
BYPASS_MAX = 220e-9  # a sensor's bypass capacitor (DRV5053 datasheet: at least 0.01 uF; 0.1 uF used)
MULTIPLIER = {"p": 1e-12, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6}


def value(text: str) -> float:
    """A component value such as 4k7, 1k2, 100n, 22u, 330 as a number (ohms, farads)."""
    m = re.match(r"^(\d+)([pnumkM]?)(\d*)", text.strip())
    if not m:
        raise ValueError(f"not a component value: {text!r}")
    whole, unit, frac = m.groups()
    number = float(f"{whole}.{frac}" if frac else whole)
    return number * MULTIPLIER.get(unit, 1.0)


def i2c_rise_limit(hz: int) -> float:
    """UM10204's maximum rise time for a bus speed: 1000 ns (Standard), 300 ns (Fast), 120 ns (Fast-mode Plus)."""
    return 1000e-9 if hz <= 100_000 else 300e-9 if hz <= 400_000 else 120e-9


def footprints(netlist: str, own: Path) -> list[str]:
    """Footprints of the netlist that neither KiCad's libraries nor ``own`` (hardware/footprints) hold."""
    problems = []
    for fp in sorted(set(re.findall(r'\(footprint "([^"]+)"\)', netlist))):
        lib, _, name = fp.partition(":")
        found = [d / f"{lib}.pretty" / f"{name}.kicad_mod" for d in (KICAD_FOOTPRINTS, own)]
        if not any(p.exists() for p in found):
            problems.append(f"footprint {fp} is in neither {KICAD_FOOTPRINTS} nor {own}")
    return problems


def _resistors_to(parts: dict[str, PartInfo], net: str, rail: str) -> list[float]:
    """Values of the resistors between ``net`` and ``rail``."""
    out = []
    for p in parts.values():
        if p.kind == "R" and {q.net for q in p.pins} == {net, rail}:
            out.append(value(p.value))
    return out


def _nets_of(parts: dict[str, PartInfo], predicate, pin_names: set[str]) -> set[str]:
    return {q.net for p in parts.values() if predicate(p) for q in p.pins if q.name in pin_names and q.net}


def electrical(parts: dict[str, PartInfo], i2c_hz: int) -> list[str]:
    """Every rule below that applies to this board, as problems found."""
    problems = []
    # I2C: a pull-up on SDA and SCL, strong enough for the rise time, weak enough for the 3 mA sink
    r_min = (VCC - V_OL) / I_OL
    r_max = i2c_rise_limit(i2c_hz) / (0.8473 * C_BUS)
    for net in sorted(_nets_of(parts, lambda p: p.kind.startswith("MCP23017"), {"SDA", "SCK"})):
        rs = _resistors_to(parts, net, "+3V3")
        if len(rs) != 1:
            problems.append(f"I2C {net}: {len(rs)} pull-ups to +3V3, want 1")
        elif not r_min <= rs[0] <= r_max:
            problems.append(f"I2C {net}: pull-up {rs[0]:.0f} Ohm outside {r_min:.0f}..{r_max:.0f} Ohm "
                            f"(t_r <= {i2c_rise_limit(i2c_hz) * 1e9:.0f} ns at {C_BUS * 1e12:.0f} pF)")
    # analog multiplexer enables: held off (high) while the RP2040's pins are inputs with pull-downs
    for net in sorted(_nets_of(parts, lambda p: p.kind.startswith("CD74HC4067"), {"~{E}"})):
        if net == "GND":
            continue
        rs = _resistors_to(parts, net, "+3V3")
        if not rs:
            problems.append(f"multiplexer enable {net}: no pull-up to +3V3")
        elif VCC * RP2040_PULL_DOWN_MIN / (RP2040_PULL_DOWN_MIN + min(rs)) < 0.7 * VCC:
            problems.append(f"multiplexer enable {net}: pull-up {min(rs):.0f} Ohm loses to the RP2040's "
                            "50 kOhm pull-down (below V_IH = 0.7 VCC)")
    # hall sensors: a capacitor each between its supply and GND
    sensors = [p for p in parts.values() if p.value.startswith("DRV5053")]
    for rail in sorted({q.net for p in sensors for q in p.pins if q.name == "VCC" and q.net}):
        n = sum(1 for p in sensors if any(q.name == "VCC" and q.net == rail for q in p.pins))
        caps = sum(1 for p in parts.values() if p.kind == "C" and {q.net for q in p.pins} == {rail, "GND"}
                   and value(p.value) <= BYPASS_MAX)  # the regulator's own 1 uF does not count
        if caps < n:
            problems.append(f"hall sensors on {rail}: {n} sensors, {caps} capacitors (one each)")
    # USB attach: capacitance straight on VBUS
    on_vbus = sum(value(p.value) for p in parts.values()
                  if p.kind.startswith("C") and {q.net for q in p.pins} == {"VBUS", "GND"})
    if on_vbus > VBUS_MAX_C:
        problems.append(f"{on_vbus * 1e6:.1f} uF straight on VBUS: USB 2.0 allows 10 uF at attach")
    # 74HC165 clock and load: through a series resistor at the Pico, never straight from its pin
    pico_nets = {q.net for p in parts.values() if _module(p) for q in p.pins if q.net}
    for net in sorted(_nets_of(parts, lambda p: p.kind == "74HC165", {"CP", "~{PL}"})):
        if net in pico_nets:
            problems.append(f"74HC165 {net}: straight from a module pin, no series resistor at the source")
        elif not any(p.kind == "R" and {q.net for q in p.pins} & pico_nets and net in {q.net for q in p.pins}
                     for p in parts.values()):
            problems.append(f"74HC165 {net}: no series resistor from the module")
    # ESP32-S3: GPIO47/48 are 1.8 V on a module with 1.8 V flash (N32R8V...): below a 3.3 V part's V_IH
    for p in parts.values():
        if DEVKITC_PREFIX in p.value and "R8V" in p.value:
            used = [q.name for q in p.pins if q.name in VDD_SPI_PINS and q.net]
            if used:
                problems.append(f"{p.ref}: {used} are 1.8 V pins on a {p.value.split()[-2]} module")
    # matrix columns: an external pull-up each
    for net in sorted(n for p in parts.values() for q in p.pins if (n := q.net) and n.startswith("COL_")):
        if not _resistors_to(parts, net, "+3V3"):
            problems.append(f"matrix column {net}: no pull-up to +3V3")
    return problems


def _without(parts: dict[str, PartInfo], *refs: str) -> dict[str, PartInfo]:
    return {r: p for r, p in parts.items() if r not in refs}


def _revalued(parts: dict[str, PartInfo], ref: str, new: str) -> dict[str, PartInfo]:
    out = dict(parts)
    p = parts[ref]
    out[ref] = PartInfo(p.ref, new, p.kind, p.pins)
    return out


# board -> faults a rule must catch: (what the fault is, how to make it from the board's parts)
FAULTS = {
    "mcp23017": [("4.7k I2C pull-up (the old design)", lambda p: _revalued(p, "R1", "4k7")),
                 ("no SCL pull-up", lambda p: _without(p, "R2"))],
    "hall_mux": [("an enable without pull-up", lambda p: _without(p, "R3")),
                 ("a sensor without its capacitor", lambda p: _without(p, "C341")),
                 ("a 47k enable pull-up (loses to the RP2040's pull-down)", lambda p: _revalued(p, "R1", "47k")),
                 ("1000 uF on VBUS (the old design)", lambda p: _revalued(p, "C22", "1000u"))],
    "hc165": [("CLK straight from the Pico (no series resistor)", lambda p: _without(p, "R2"))],
    "matrix": [("a column without pull-up", lambda p: _without(p, "R5"))],
    "matrix_esp32s3": [("GPIO47 for the LEDs on a 1.8 V N32R8V module",
                        lambda p: _revalued(p, "A2", "socket for ESP32-S3-DevKitC-1-N32R8V J3"))],
    "hc165_esp32s3": [("CLK straight from the module", lambda p: _without(p, "R2"))],
}


def self_test(board: str, parts: dict[str, PartInfo], i2c_hz: int) -> list[str]:
    """Check that every rule fires on a faulty copy of ``board``: the problems are rules that stayed quiet."""
    missed = []
    for what, make in FAULTS.get(board, []):
        if not electrical(make(parts), i2c_hz):
            missed.append(f"rule self-test: {what} was not caught")
    return missed
