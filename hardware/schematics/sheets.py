"""The drawing's sheets for each board: one sheet per block (the Pico, the power and LED output, each rank
board / expander / multiplexer, the matrix grid), built from the SKiDL circuit by drawing.py."""

from __future__ import annotations

from drawing import GROUND, Canvas, PartInfo, Sheet, Spec, render

FILES = "abcdefgh"


def _refs(parts: dict[str, PartInfo], *prefixes: str, lo: int = 0, hi: int = 10_000) -> set[str]:
    out = set()
    for ref in parts:
        for pre in prefixes:
            num = ref[len(pre):]
            if ref.startswith(pre) and num.isdigit() and lo <= int(num) < hi:
                out.add(ref)
    return out


def _power(parts: dict[str, PartInfo], hall: bool) -> Spec:
    first = ["U2", "U3"] if hall else ["U3"]
    bank = ["C20", "C21", "C22"] + (["C2", "C3"] if hall else [])
    note = ("LEDs on their own rail +5V_LED behind a current-limited switch (soft start); data 3.3 V -> 5 V "
            "through U20, 330 Ohm at the source, to the first LED board (led_square)")
    if hall:
        note += "; U2: the hall sensors' own 3.3 V rail"
    return Spec("power", "Power and LED output", [first, ["U20"], ["J20"]], hung={"R20"}, bank=bank,
                sides={"U20": {"1": "B", "3": "B", "5": "T"}, "U3": {"5": "L", "4": "L", "3": "L"}},
                order={"U3": ["5", "4", "3"]}, note=note)


def _pico(parts: dict[str, PartInfo], hung: set[str], right: list[str] | None = None,
          left: list[str] | None = None, note: str = "") -> Spec:
    if "A1" in parts:  # an ESP32-S3-DevKitC-1: its two headers side by side as on the board, connectors left
        conns = (left or []) + (right or [])
        return Spec("module", "ESP32-S3-DevKitC-1 N8R8 (A1 = header J1, A2 = header J3, as seen from the top)",
                    ([conns] if conns else []) + [["A1"], ["A2"]], hung=hung | {"SW1", "SW2"}, bank=["C1"],
                    flip=set(conns) | {"A2"}, note=note)
    cols = ([left] if left else []) + [["U1"]] + ([right] if right else [])
    flip = set(left or [])
    return Spec("pico", "Raspberry Pi Pico (U1, pins numbered as on the module)", cols,
                hung=hung | {"SW1", "SW2"}, bank=["C1"], flip=flip, note=note)


def hc165(parts: dict[str, PartInfo]) -> list[Spec]:
    specs = [_pico(parts, {"R1", "R2", "R3"}, right=["J1"],
                   note="33 Ohm at the source on CLK and /PL; 10k on the data line: a cut wire reads 0xFF; "
                                   "SW1/SW2: clock push buttons"),
             _power(parts, False)]
    for k in range(1, 9):
        conns = [f"J{100 + k}"] + ([f"J{200 + k}"] if k < 8 else [])
        hung = {f"RN{k}"} | {f"SW{100 + 8 * (k - 1) + f}" for f in range(8)}
        order = {f"U{100 + k}": ["10", "2", "1", "15", "11", "12", "13", "14", "9", "7", "3", "4", "5", "6"]}
        sides = {f"U{100 + k}": {"3": "R", "4": "R", "5": "R", "6": "R"}}
        specs.append(Spec(f"rank{k}", f"Rank board {k} (one 74HC165 under rank {k})", [conns, [f"U{100 + k}"]],
                          hung=hung, bank=[f"C{100 + k}"], flip=set(conns), order=order,
                          sides=sides,
                          note=f"SW: reed switches; J{100 + k}: cable from "
                               + ("the Pico" if k == 1 else f"rank board {k - 1}")
                               + (f"; J{200 + k}: cable to rank board {k + 1}" if k < 8 else
                                  "; DS to GND: the chain's known tail (0x00)")))
    return specs


def mcp23017(parts: dict[str, PartInfo]) -> list[Spec]:
    specs = [_pico(parts, {"R1", "R2"}, left=["J1"],
                   note="I2C at 400 kHz: 1.2k pull-ups, t_r = 0.8473 x 1.2k x 200 pF = 203 ns (300 ns max)"),
             _power(parts, False)]
    for c in range(5):
        ref = f"U{101 + c}"
        hung = {r for r in parts if r.startswith("SW") and r[2:].isdigit() and 100 + 14 * c <= int(r[2:])
                < 100 + 14 * (c + 1)}
        if c == 0:
            hung.add("R3")
        specs.append(Spec(f"expander{c}", f"MCP23017 {ref} at 0x{0x20 + c:02x}", [[ref]], hung=hung,
                          bank=[f"C{101 + c}"], note="SW: reed switches to GND (the chip's 100k pull-ups on); "
                                                       "GPA7/GPB7 output-only, unconnected"))
    return specs


def hall_mux(parts: dict[str, PartInfo]) -> list[Spec]:
    joined = "R1" in parts
    specs = [_pico(parts, {"R1", "R2", "R3", "R4"} if joined else set(),
                   note="4.7k pull-ups hold every multiplexer off (/E high) until the firmware drives them"
                   if joined else "each multiplexer into its own ADC1 pin, /E tied to GND"),
             _power(parts, True)]
    for m in range(4):
        ref = f"U{101 + m}"
        hung = {f"H{100 + 16 * m + ch}" for ch in range(16)}
        comp = {f"H{100 + 16 * m + ch}": [f"C{300 + 16 * m + ch}"] for ch in range(16)}
        by_name = {p.name: p.num for p in parts[ref].pins}
        sides = {by_name[f"I{ch}"]: "L" for ch in range(8)}
        sides.update({by_name[n]: "B" for n in ("S0", "S1", "S2", "S3", "~{E}")})
        sides[by_name["COM"]] = "T"
        order = {ref: [by_name[f"I{ch}"] for ch in range(16)]}
        specs.append(Spec(f"mux{m}", f"Multiplexer {ref}: ranks {2 * m + 1}-{2 * m + 2}, a 100 nF at each "
                                     "sensor", [[ref]], hung=hung, bank=[f"C{101 + m}"], sides={ref: sides},
                          companions=comp, order=order))
    return specs


def matrix(parts: dict[str, PartInfo]) -> list[Spec]:
    return [_pico(parts, set(), note="rows open-drain (one low at a time), columns read; grid on the "
                  "next sheets"), _power(parts, False)]


def led_square(parts: dict[str, PartInfo]) -> list[Spec]:
    return [Spec("board", "Per-square LED board (64 of them, chained: DOUT of one to DIN of the next)",
                 [["J1"], ["D1"], ["J2"]], bank=["C1"], flip={"J1"},
                 note="J1 from the previous square's J2 (or the main board's J20); 100 nF at the LED")]


def matrix_grid(parts: dict[str, PartInfo], ranks: range) -> Sheet:
    """Ranks as horizontal row lines, files as vertical column lines, a reed and a 1N4148 (cathode to
    the row) at each crossing; the column pull-ups on the first sheet."""
    c = Canvas(parts)
    cw, rh = 5.2, 3.6
    top = 3.0
    first = ranks.start == 0
    bottom_y = -rh * len(ranks)
    for f in range(8):
        x = f * cw
        col = f"COL_{FILES[f].upper()}"
        pin = next(p for p in parts[f"R{1 + f}"].pins if p.net == col)
        if first:
            other = next(p for p in parts[f"R{1 + f}"].pins if p.num != pin.num)
            tip = c.two_pin(f"R{1 + f}", pin.num, other.num, (x, top), "up", 1.8)
            c.rail(tip, other.net or "")
        c.line((x, top), (x, bottom_y + 0.8), col)
        c.text((x - 0.15, top - 0.4), col, 13, ha="right")
        c.text((x, bottom_y + 0.4), col, 13)
    for i, r in enumerate(ranks):
        y = -rh * i
        row = f"ROW{r + 1}"
        c.line((-1.8, y), (7 * cw + 3.0, y), row)
        c.flag((-1.8, y), row, -1)
        for f in range(8):
            sq = f"{FILES[f]}{r + 1}"
            idx = 8 * r + f
            sw, d = f"SW{100 + idx}", f"D{100 + idx}"
            x = f * cw
            yc = y + 1.7
            c.dot((x, yc))
            end = c.two_pin(sw, "1", "2", (x, yc), "right", 1.8, short=True)
            c.line(end, (end[0] + 0.4, end[1]), f"M_{sq.upper()}")
            xd = end[0] + 0.4
            c.text((xd + 0.1, yc + 0.3), f"M_{sq.upper()}", 11, ha="left")
            dend = c.two_pin(d, "2", "1", (xd, yc), "down", 1.7, short=True)
            c.dot(dend)
    title = f"Reed matrix, ranks {ranks.start + 1}-{ranks.stop}: a reed and a 1N4148 (cathode to the row) a square"
    c.text((-1.8, top + 5.2), title, 24, ha="left")
    if first:
        c.text((-1.8, top + 4.2), "10k column pull-ups: tau = 10k x 200 pF = 2 us, settle 5 us", 15, ha="left")
    return Sheet(f"grid{ranks.start // 4 + 1}", c.svg(), dict(c.drawn), set(c.texts))


SPECS = {"hc165": hc165, "matrix": matrix, "mcp23017": mcp23017, "hall_mux": hall_mux, "led_square": led_square}
SPECS.update({f"{name}_esp32s3": fn for name, fn in list(SPECS.items()) if name != "led_square"})


def sheets(name: str, parts: dict[str, PartInfo]) -> list[Sheet]:
    """Every sheet of board ``name``, drawn."""
    out = [render(parts, spec) for spec in SPECS[name](parts)]
    if name.startswith("matrix"):
        out += [matrix_grid(parts, range(0, 4)), matrix_grid(parts, range(4, 8))]
    return out


__all__ = ["GROUND", "sheets"]
