"""The four sensing options as schematics in code (SKiDL). Each function builds one option into the current
circuit; GPIOs come from the firmware's pin maps (hardware/pins.json), so the drawings and the firmware
cannot disagree. Reference designators are fixed, so the netlists are stable."""

from __future__ import annotations

import json
from pathlib import Path

from common import Board, drv5053, led_square, lib, nc
from skidl import Net

PIN_MAPS = json.loads((Path(__file__).resolve().parents[1] / "pins.json").read_text())
FAMILIES = ("pico", "esp32s3")  # Raspberry Pi Pico / Pico W; ESP32-S3-DevKitC-1 (N8R8)
FILES = "abcdefgh"
I2C_PULLUP = "1k2"  # SDA/SCL pull-ups (check.py checks the rise time against UM10204 at I2C_HZ)
I2C_HZ = 400_000


def _sq(rank: int, f: int) -> str:
    return f"{FILES[f]}{rank + 1}"


def hc165(family: str = "pico") -> Board:
    """8 rank boards, each a 74HC165 with 8 reed switches and a 10 kOhm pull-up network, daisy-chained by
    6-wire cables (3V3, GND, CLK, /PL, serial data towards the Pico, GND). Rank 8's serial input is tied to
    GND: the chain's known tail byte (0x00) for the firmware's chain check; a 10 kOhm pull-up on the data
    line makes a cut wire read 0xFF."""
    b = Board(PIN_MAPS[family]["hc165"], family)
    clk, pl = Net("CLK"), Net("~PL")
    # 33 Ohm series (source) termination at the Pico: CLK and /PL run through 16 connectors to 8 loads
    for i, (net, signal, source) in enumerate(((clk, "sck", "CLK_SRC"), (pl, "load", "~PL_SRC"))):
        src = Net(source)
        src += b.gp(signal)
        rs = lib("Device", "R", f"R{2 + i}", "33", "R")
        rs[1] += src
        rs[2] += net
    mosi = b.gp("mosi")  # claimed by the SPI peripheral, not connected
    mosi += nc()
    data = Net("Q7_0")
    data += b.gp("miso")
    rpu = lib("Device", "R", "R1", "10k", "R")
    rpu[1] += b.v3
    rpu[2] += data
    # the main board's connector to rank 1
    j = lib("Connector_Generic", "Conn_01x06", "J1", "JST-XH 6p", "XH6")
    for pin, net in zip(range(1, 7), (b.v3, b.gnd, clk, pl, data, b.gnd), strict=True):
        j[pin] += net
    into = data  # the serial line the next chip drives (towards the Pico)
    for k in range(8):
        r = k + 1
        u = lib("74xx", "74HC165", f"U{100 + r}", "74HC165", "DIP16")
        u["VCC"] += b.v3
        u["GND"] += b.gnd
        u["CP"] += clk
        u["~{PL}"] += pl
        u["~{CE}"] += b.gnd
        u["Q7"] += into
        u["~{Q7}"] += nc()
        c = lib("Device", "C", f"C{100 + r}", "100n", "C")
        c[1] += b.v3
        c[2] += b.gnd
        rn = lib("Device", "R_Network08", f"RN{r}", "10k x8 SIP9", "RN")
        rn["common"] += b.v3
        jin = lib("Connector_Generic", "Conn_01x06", f"J{100 + r}", "JST-XH 6p", "XH6")
        for pin, net in zip(range(1, 7), (b.v3, b.gnd, clk, pl, into, b.gnd), strict=True):
            jin[pin] += net
        for f in range(8):
            d = Net(f"IN_{_sq(k, f).upper()}")
            u[f"D{f}"] += d
            rn[f"R{f + 1}"] += d
            sw = lib("Switch", "SW_Reed", f"SW{100 + 8 * k + f}", "reed switch", "REED")
            sw[1] += d
            sw[2] += b.gnd
        if r < 8:
            nxt = Net(f"Q7_{r}")
            u["DS"] += nxt
            jout = lib("Connector_Generic", "Conn_01x06", f"J{200 + r}", "JST-XH 6p", "XH6")
            for pin, net in zip(range(1, 7), (b.v3, b.gnd, clk, pl, nxt, b.gnd), strict=True):
                jout[pin] += net
            into = nxt
        else:
            u["DS"] += b.gnd  # the known tail: zeros after the 64 inputs
    b.buttons()
    b.leds()
    b.finish()
    return b


def matrix(family: str = "pico") -> Board:
    """8 x 8 reed switches, each with a 1N4148 (cathode towards the row): rows open-drain from the Pico,
    columns with 10 kOhm external pull-ups (tau = 10k x 200 pF = 2 us against the 5 us settle time)."""
    p = PIN_MAPS[family]["matrix"]
    b = Board(p, family)
    rows = []
    for r in range(8):
        n = Net(f"ROW{r + 1}")
        n += b.gp(f"rank{r + 1}")
        rows.append(n)
    cols = []
    for f in range(8):
        n = Net(f"COL_{FILES[f].upper()}")
        n += b.gp(f"file_{FILES[f]}")
        rp = lib("Device", "R", f"R{1 + f}", "10k", "R")
        rp[1] += b.v3
        rp[2] += n
        cols.append(n)
    for r in range(8):
        for f in range(8):
            i = 8 * r + f
            sw = lib("Switch", "SW_Reed", f"SW{100 + i}", "reed switch", "REED")
            d = lib("Diode", "1N4148", f"D{100 + i}", "1N4148", "D")
            sw[1] += cols[f]
            mid = Net(f"M_{_sq(r, f).upper()}")
            sw[2] += mid
            d["A"] += mid
            d["K"] += rows[r]
    b.buttons()
    b.leds()
    b.finish()
    return b


def mcp23017(family: str = "pico") -> Board:
    """5 x MCP23017 (addresses 0x20-0x24) on I2C0 at 400 kHz with 1.2 kOhm pull-ups (t_r = 0.8473 x 1.2k x
    200 pF = 203 ns, UM10204 Fast-mode limit 300 ns); 14 inputs a chip (GPA0-6,
    GPB0-6); GPA7/GPB7 unconnected (output-only since the 2022 datasheet revision)."""
    p = PIN_MAPS[family]["mcp23017"]
    b = Board(p, family)
    sda, scl = Net("SDA"), Net("SCL")
    sda += b.gp("sda")
    scl += b.gp("scl")
    for i, net in enumerate((sda, scl)):
        r = lib("Device", "R", f"R{i + 1}", I2C_PULLUP, "R")
        r[1] += b.v3
        r[2] += net
    rst = lib("Device", "R", "R3", "10k", "R")
    rst[1] += b.v3
    nreset = Net("~RESET")
    rst[2] += nreset
    j = lib("Connector_Generic", "Conn_01x04", "J1", "JST-XH 4p", "XH4")
    for pin, net in zip(range(1, 5), (b.v3, b.gnd, sda, scl), strict=True):
        j[pin] += net
    square = 0
    for c in range(5):
        u = lib("Interface_Expansion", "MCP23017_SP", f"U{101 + c}", "MCP23017-E/SP", "DIP28")
        u["VDD"] += b.v3
        u["VSS"] += b.gnd
        u["SCK"] += scl
        u["SDA"] += sda
        u["~{RESET}"] += nreset
        for bit, name in enumerate(("A0", "A1", "A2")):
            u[name] += b.v3 if (c >> bit) & 1 else b.gnd
        for name in ("INTA", "INTB", "GPA7", "GPB7"):
            u[name] += nc()
        for pin in [pin for pin in u.pins if pin.name == "NC"]:
            pin += nc()
        cap = lib("Device", "C", f"C{101 + c}", "100n", "C")
        cap[1] += b.v3
        cap[2] += b.gnd
        for port in ("GPA", "GPB"):
            for bit in range(7):
                pin = u[f"{port}{bit}"]
                if square >= 64:
                    pin += nc()
                    continue
                r, f = divmod(square, 8)
                n = Net(f"IN_{_sq(r, f).upper()}")
                pin += n
                sw = lib("Switch", "SW_Reed", f"SW{100 + square}", "reed switch", "REED")
                sw[1] += n
                sw[2] += b.gnd
                square += 1
    b.buttons()
    b.leds()
    b.finish()
    return b


def hall_mux(family: str = "pico") -> Board:
    """64 DRV5053 linear hall sensors on their own 3.3 V rail (an AP2112K-3.3 LDO from VBUS: 64 sensors
    need up to ~230 mA, the Pico's own 3V3 is for the Pico) through four CD74HC4067 into ADC0; the
    multiplexers' enables (4.7 kOhm pull-ups: off until the firmware drives them) pick which one drives the
    shared ADC line; a 100 nF at each sensor."""
    p = PIN_MAPS[family]["hall_mux"]
    b = Board(p, family)
    vs = Net("+3V3_SENS")
    ldo = lib("Regulator_Linear", "AP2112K-3.3", "U2", "AP2112K-3.3TRG1", "SOT23-5")
    ldo["VIN"] += b.vbus
    ldo["EN"] += b.vbus
    ldo["GND"] += b.gnd
    ldo["VOUT"] += vs
    ldo["NC"] += nc()
    for i, net in enumerate((b.vbus, vs)):
        c = lib("Device", "C", f"C{2 + i}", "1u", "C")
        c[1] += net
        c[2] += b.gnd
    sel = []
    for i in range(4):
        n = Net(f"S{i}")
        n += b.gp(f"s{i}")
        sel.append(n)
    joined = "sig" in p  # RP2040: one ADC pin, enables pick the multiplexer; ESP32-S3: an ADC pin each
    if joined:
        sig = Net("ADC_SIG")
        sig += b.gp("sig")
    for m in range(4):
        mux = lib("74xx", "CD74HC4067M", f"U{101 + m}", "CD74HC4067M96", "SOIC24W")
        mux["VCC"] += b.v3
        mux["GND"] += b.gnd
        if not joined:  # its own ADC input, always enabled
            sig = Net(f"ADC_SIG{m}")
            sig += b.gp(f"sig{m}")
            mux["COM"] += sig
            mux["~{E}"] += b.gnd
        else:
            mux["COM"] += sig
            en = Net(f"~EN{m}")
            en += b.gp(f"en{m}")
            mux["~{E}"] += en
            # off while the RP2040's pins are inputs (reset pull-downs 50-80k): 3.3 V x 50k / 54.7k = 3.0 V
            rp = lib("Device", "R", f"R{1 + m}", "4k7", "R")
            rp[1] += b.v3
            rp[2] += en
        for i in range(4):
            mux[f"S{i}"] += sel[i]
        c = lib("Device", "C", f"C{101 + m}", "100n", "C")
        c[1] += b.v3
        c[2] += b.gnd
        for ch in range(16):
            j = 16 * m + ch
            r, f = divmod(j, 8)
            h = drv5053(f"H{100 + j}")
            h[1] += vs
            h[2] += b.gnd
            n = Net(f"HALL_{_sq(r, f).upper()}")
            h[3] += n
            mux[f"I{ch}"] += n
            cs = lib("Device", "C", f"C{300 + j}", "100n", "C")  # at the sensor (DRV5053 datasheet)
            cs[1] += vs
            cs[2] += b.gnd
    b.buttons()
    b.leds()
    b.finish()
    return b


OPTIONS = {"hc165": hc165, "matrix": matrix, "mcp23017": mcp23017, "hall_mux": hall_mux}
# every board with its own netlist: the four main boards and the per-square LED board (64 of it)
BOARDS = {**OPTIONS, **{f"{name}_esp32s3": (lambda fn=fn: fn("esp32s3")) for name, fn in OPTIONS.items()},
          "led_square": led_square}
