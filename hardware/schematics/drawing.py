"""Schematic sheets with wires, drawn from the SKiDL circuit (schemdraw, SVG): one sheet per block.

Each sheet places a few anchor parts (ICs, connectors) in columns. Every pin of an anchor gets a wire: power
pins end in a power symbol, signal pins in the parts hung on that net (a pull-up up to its rail, a switch down
to GND, a series resistor or a sensor in line) and then in a wire to the same net's pin on the anchor in the
next column, or in a flag with the net's name where the net goes on to another sheet. Every wire is labelled
with its net's name. A sheet returns what it drew as (ref, pin) -> net, which check.py compares with the
netlist: every connection of the netlist must be drawn, on some sheet, to the right net."""

from __future__ import annotations

import builtins
import itertools
from dataclasses import dataclass, field
from typing import Any

import schemdraw
import schemdraw.elements as elm
from common import DEVKITC, DEVKITC_J1, DEVKITC_J3, PICO_PINS

schemdraw.use("svg")

GROUND = "GND"
RAILS = ("+3V3", "VBUS", "+5V_LED", "+3V3_SENS")
FONT, SMALL, TINY, TITLE = 17, 15, 12, 24
PIN_GAP = 1.4  # base distance between two pins of an anchor
HANG = 2.2  # room above (below) a pin for a part hung up to a rail (down to GND)
SLOT = 1.9  # horizontal room for one hung part along a pin's wire
BUFFER_PINS = {1: "/OE", 2: "A", 3: "GND", 4: "Y", 5: "VCC"}  # 74AHCT1G125 datasheet (KiCad's are mangled)
TWO_PIN = {"R", "C", "C_Polarized", "SW_Reed", "SW_Push", "1N4148"}


@dataclass(frozen=True)
class PinInfo:
    num: str
    name: str
    net: str | None  # None: not connected (no-connect)
    side: str  # L, R, T, B on the part's symbol
    x: float = 0.0  # the pin's place on the KiCad symbol (y up): the order along a side
    y: float = 0.0


@dataclass
class PartInfo:
    ref: str
    value: str
    kind: str  # the KiCad symbol's name
    pins: list[PinInfo]

    def pin(self, num: str) -> PinInfo:
        return next(p for p in self.pins if p.num == num)


def _side(pin: Any) -> str:
    """The side of the symbol a KiCad pin sits on (its orientation points into the body)."""
    return {"R": "L", "L": "R", "D": "T", "U": "B"}.get(str(getattr(pin, "orientation", "R")), "L")


def circuit_parts() -> dict[str, PartInfo]:
    """The current SKiDL circuit as plain data: ref -> PartInfo."""
    out = {}
    for part in builtins.default_circuit.parts:  # type: ignore[attr-defined]
        pins = []
        value = str(part.value)
        names = (PICO_PINS if value == "Raspberry Pi Pico" else BUFFER_PINS if value == "74AHCT1G125"
                 else DEVKITC_J1 if value.endswith(f"{DEVKITC} J1") else DEVKITC_J3 if value.endswith(f"{DEVKITC} J3")
                 else {})
        for p in part.pins:
            net = p.net.name if p.net is not None and p.is_connected() else None
            if net is not None and net.startswith("__NOCONNECT"):
                net = None
            name = names.get(int(p.num), str(p.name)) if names else str(p.name)
            pins.append(PinInfo(str(p.num), name, net, _side(p), float(getattr(p, "x", 0) or 0),
                                float(getattr(p, "y", 0) or 0)))
        out[part.ref] = PartInfo(part.ref, str(part.value), str(part.name), pins)
    return out


def names_of(part: PartInfo) -> bool:
    """Whether the part is a module whose pins carry names (a DevKitC header)."""
    return DEVKITC in part.value


def netlist_connections(parts: dict[str, PartInfo]) -> set[tuple[str, str, str]]:
    """Every (ref, pin number, net) of the circuit, no-connects left out."""
    return {(p.ref, pin.num, pin.net) for p in parts.values() for pin in p.pins if pin.net}


@dataclass
class Spec:
    """One sheet: its title, anchor columns (refs, top to bottom), the parts it may hang on anchor pins,
    a bank of decoupling capacitors drawn along the bottom, sides to flip, and pins moved to another side."""

    name: str
    title: str
    columns: list[list[str]]
    hung: set[str] = field(default_factory=set)
    bank: list[str] = field(default_factory=list)
    flip: set[str] = field(default_factory=set)
    sides: dict[str, dict[str, str]] = field(default_factory=dict)  # ref -> {pin number: side}
    companions: dict[str, list[str]] = field(default_factory=dict)  # hung part -> capacitors drawn with it
    order: dict[str, list[str]] = field(default_factory=dict)  # ref -> pin numbers top to bottom
    note: str = ""


@dataclass
class Sheet:
    name: str
    svg: str
    drawn: dict[tuple[str, str], str]
    texts: set[str]


class Canvas:
    """A schemdraw drawing that remembers which pin it wired to which net."""

    def __init__(self, parts: dict[str, PartInfo]) -> None:
        self.d = schemdraw.Drawing(show=False)
        self.d.config(fontsize=FONT, unit=2.0, lw=1.3)
        self.parts = parts
        self.drawn: dict[tuple[str, str], str] = {}
        self.texts: set[str] = set()

    def mark(self, ref: str, num: str) -> None:
        net = self.parts[ref].pin(num).net
        if net:
            self.drawn[(ref, num)] = net

    def text(self, xy: tuple[float, float], s: str, size: int = SMALL, ha: str = "center",
             va: str = "center", color: str = "black") -> None:
        self.d += elm.Label().at(xy).label(s, fontsize=size, halign=ha, valign=va, color=color)
        self.texts.update(s.split("\n"))

    def line(self, a: tuple[float, float], b: tuple[float, float], net: str | None = None) -> None:
        self.d += elm.Line().at(a).to(b)
        if net:
            self.texts.add(net)

    def dot(self, xy: tuple[float, float]) -> None:
        self.d += elm.Dot(radius=0.09).at(xy)

    def rail(self, xy: tuple[float, float], net: str, up: bool = True) -> None:
        """A power symbol: GND points down; a rail is a bar with its name."""
        if net == GROUND:
            self.d += elm.Ground().at(xy)
        else:
            sym = elm.Vdd().at(xy).label(net, fontsize=SMALL)
            self.d += sym if up else sym.down()
            self.texts.add(net)

    def flag(self, xy: tuple[float, float], net: str, direction: int) -> None:
        """A net flag at the end of a wire, pointing away from it (direction -1 left, +1 right)."""
        w = Layout.flag_width(net)
        h = 0.4
        x, y = xy
        pts = [(x, y), (x + direction * h, y + h), (x + direction * (w + h), y + h),
               (x + direction * (w + h), y - h), (x + direction * h, y - h), (x, y)]
        for a, b in itertools.pairwise(pts):
            self.d += elm.Line().at(a).to(b)
        self.text((x + direction * (h + w / 2), y - 0.02), net, SMALL)

    def two_pin(self, ref: str, a: str, b: str, start: tuple[float, float], direction: str,
                length: float = 1.8, short: bool = False) -> tuple[float, float]:
        """Draw a two-terminal part from ``start`` (its pin ``a``) in ``direction``; return pin ``b``'s end."""
        part = self.parts[ref]
        kind = part.kind
        if kind == "R" or kind.startswith("R_Network"):
            el: Any = elm.Resistor()
        elif kind == "C":
            el = elm.Capacitor()
        elif kind == "C_Polarized":
            el = elm.Capacitor(polar=True)
        elif kind == "SW_Push":
            el = elm.Button()
        elif kind == "SW_Reed":
            el = elm.Switch()
        elif kind == "1N4148":
            el = elm.Diode()
            if a == "2":  # drawn from the anode: the arrow points along the direction
                pass
            else:
                el = el.reverse()
        else:
            el = elm.Resistor()
        el = getattr(el.at(start), direction)().length(length)
        loc = "bottom" if direction in ("up", "down") else "top"
        short = short or kind.startswith("SW_")  # switches: the sheet's note says which kind
        label = f"{ref}.{a}" if kind.startswith("R_Network") else ref if short else f"{ref} {part.value}"
        el = el.label(label, loc=loc, fontsize=SMALL)
        self.d += el
        self.texts.add(ref)
        self.mark(ref, a)
        self.mark(ref, b)
        return (float(el.end[0]), float(el.end[1]))

    def svg(self) -> str:
        """The sheet as SVG, with a white margin round the drawing (text reaches past schemdraw's box)."""
        box = self.d.get_bbox()
        for xy in ((box.xmin - 2.5, box.ymin - 1.0), (box.xmax + 4.0, box.ymax + 1.0)):
            self.d += elm.Dot(radius=0.01).at(xy).color("white")
        return self.d.get_imagedata("svg").decode()


def _pairs(part: PartInfo) -> list[tuple[str, str]]:
    """A part's two-terminal segments: (1, 2) for a resistor or capacitor, (k+1, 1) for each resistor of
    a bussed network (pin 1 common)."""
    if part.kind.startswith("R_Network"):
        return [(p.num, "1") for p in part.pins if p.num != "1"]
    if part.kind == "1N4148":
        return [("2", "1")]  # anode, cathode
    return [("1", "2")]


def _other(part: PartInfo, num: str) -> str | None:
    for a, b in _pairs(part):
        if a == num:
            return b
        if b == num:
            return a
    return None


class Layout:
    """Draws one Spec."""

    def __init__(self, parts: dict[str, PartInfo], spec: Spec) -> None:
        self.parts = parts
        self.spec = spec
        self.c = Canvas(parts)
        self.done: set[str] = set()  # hung parts already drawn
        self.done_pins: set[tuple[str, str]] = set()  # resistors of a network already drawn
        anchors = [r for col in spec.columns for r in col]
        self.col_of = {r: i for i, col in enumerate(spec.columns) for r in col}
        self.anchors = set(anchors)
        # net -> anchor pins on this sheet
        self.on_sheet: dict[str, list[tuple[str, str]]] = {}
        for r in anchors:
            for p in parts[r].pins:
                if p.net:
                    self.on_sheet.setdefault(p.net, []).append((r, p.num))

    # ---- which side and what hangs on a pin --------------------------------------------------------------
    def side(self, ref: str, pin: PinInfo) -> str:
        s = self.spec.sides.get(ref, {}).get(pin.num, pin.side)
        if ref in self.spec.flip and s in "LR":
            s = "R" if s == "L" else "L"
        return s

    def hangs(self, net: str) -> list[tuple[str, str, str]]:
        """Parts of this sheet on ``net`` not yet drawn: (ref, pin on net, kind of hang)."""
        out = []
        for ref in sorted(self.spec.hung):
            if ref in self.done or ref in self.anchors:
                continue
            part = self.parts[ref]
            for p in part.pins:
                if p.net != net or (ref, p.num) in self.done_pins:
                    continue
                other = _other(part, p.num)
                if other is None:  # a sensor or another multi-pin part: drawn in line
                    out.append((ref, p.num, "inline"))
                else:
                    onet = part.pin(other).net or ""
                    kind = "up" if onet in RAILS else "down" if onet == GROUND else "series"
                    out.append((ref, p.num, kind))
        return out

    def row_room(self, ref: str, pin: PinInfo) -> tuple[float, float]:
        """Extra room above and below a pin for the parts hung on its net."""
        if not pin.net or pin.net in RAILS or pin.net == GROUND:
            return 0.0, 0.0
        kinds = [k for _, _, k in self.hangs(pin.net)]
        up = HANG if "up" in kinds else 0.0
        lone = kinds.count("down") == 1 and not any(k in ("series", "inline") for k in kinds)
        down = HANG if "down" in kinds and not lone else 0.9 if lone else 0.0
        if "inline" in kinds:
            up, down = max(up, 1.2), max(down, 1.2)
        return up, down

    # ---- anchors ------------------------------------------------------------------------------------------
    def anchor_box(self, ref: str, x: float, ytop: float) -> tuple[dict[str, tuple[float, float, str]], float,
                                                                    float]:
        """Draw an anchor's box with ``ytop`` its top edge, ``x`` its left edge; return pin ends
        {num: (x, y, side)}, its width and height."""
        part = self.parts[ref]
        by_side: dict[str, list[PinInfo]] = {"L": [], "R": [], "T": [], "B": []}
        for p in part.pins:
            by_side[self.side(ref, p)].append(p)
        order = self.spec.order.get(ref)
        for s in "LR":
            by_side[s].sort(key=lambda p: (order.index(p.num) if order and p.num in order else 0, -p.y,
                                           int(p.num) if p.num.isdigit() else 0))
        for s in "TB":
            by_side[s].sort(key=lambda p: p.x)
        heights = {}
        offsets: dict[str, list[float]] = {}
        for s in "LR":
            y, ys = 0.8, []
            for p in by_side[s]:
                up, down = self.row_room(ref, p)
                y += up
                ys.append(y)
                y += PIN_GAP + down
            heights[s] = y
            offsets[s] = ys
        h = max(heights["L"], heights["R"], 2.4)
        longest = max([len(p.name) for p in part.pins] + [4])
        ntop = max(len(by_side["T"]), len(by_side["B"]))
        w = max(2.2 + 0.16 * longest * 2, 1.6 * ntop + 1.0, 3.0)
        module = bool(names_of(part))
        if part.kind.startswith("Conn_01") and not module:
            w = 1.4
        c = self.c
        c.line((x, ytop), (x + w, ytop))
        c.line((x + w, ytop), (x + w, ytop - h))
        c.line((x + w, ytop - h), (x, ytop - h))
        c.line((x, ytop - h), (x, ytop))
        title = f"{ref}  DevKitC-1 header {part.value[-2:]}" if names_of(part) else f"{ref}  {part.value}"
        c.text((x + w / 2, ytop + 0.45), title, FONT, color="navy")
        ends: dict[str, tuple[float, float, str]] = {}
        stub = 0.6
        show_names = module or not part.kind.startswith("Conn_01")
        for s in "LR":
            for p, dy in zip(by_side[s], offsets[s], strict=True):
                y = ytop - dy
                xe = x - stub if s == "L" else x + w + stub
                c.line((x if s == "L" else x + w, y), (xe, y))
                c.text((xe + (0.05 if s == "L" else -0.05), y + 0.25), p.num, TINY,
                       ha="left" if s == "L" else "right")
                if show_names:
                    name = p.name.replace("~{", "/").replace("}", "")
                    c.text((x + 0.15 if s == "L" else x + w - 0.15, y), name, SMALL,
                           ha="left" if s == "L" else "right")
                ends[p.num] = (xe, y, s)
        for s in "TB":
            n = len(by_side[s])
            for i, p in enumerate(by_side[s]):
                xp = x + w * (i + 1) / (n + 1)
                y0 = ytop if s == "T" else ytop - h
                ye = y0 + (stub if s == "T" else -stub)
                c.line((xp, y0), (xp, ye))
                c.text((xp + 0.1, ye + (-0.15 if s == "T" else 0.15)), p.num, TINY, ha="left")
                name = p.name.replace("~{", "/").replace("}", "")
                c.text((xp, y0 + (-0.3 if s == "T" else 0.3)), name, SMALL)
                ends[p.num] = (xp, ye, s)
        return ends, w, h

    def fan(self, ref: str, num: str, end: tuple[float, float, str]) -> tuple[float, float, str | None]:
        """Draw the pin's wire with the parts hung on its net; return the wire's far end."""
        c = self.c
        x, y, s = end
        pin = self.parts[ref].pin(num)
        net = pin.net
        if net is None:
            c.text((x + (-0.25 if s == "L" else 0.25 if s == "R" else 0), y), "x", SMALL, color="gray")
            return x, y, None
        c.mark(ref, num)
        if s in "TB":
            if net in RAILS or net == GROUND:
                c.rail((x, y), net, up=(s == "T"))
                return x, y, None
            ye = y + (0.8 if s == "T" else -0.8)
            c.line((x, y), (x, ye), net)
            c.text((x + 0.15, (y + ye) / 2), net, SMALL, ha="left")
            return x, ye, net
        d = -1 if s == "L" else 1
        if net in RAILS or net == GROUND:
            xe = x + d * 0.7
            c.line((x, y), (xe, y))
            c.rail((xe, y), net)
            return xe, y, None
        return self.chain(net, x, y, d)

    def chain(self, net: str, x: float, y: float, d: int) -> tuple[float, float, str | None]:
        """From (x, y) going in direction d: the hung parts of ``net``; return the end of the wire."""
        c = self.c
        hangs = self.hangs(net)
        ups = [h for h in hangs if h[2] == "up"]
        downs = [h for h in hangs if h[2] == "down"]
        series = [h for h in hangs if h[2] in ("series", "inline")]
        xe = x + d * max(1.0, 0.26 * len(net) + 0.5)
        c.line((x, y), (xe, y), net)
        c.text(((x + xe) / 2 + d * 0.1, y + 0.3), net, TINY)
        last_down = None
        if not series and len(downs) == 1:
            last_down = downs.pop()
        slots = max(len(ups), len(downs))
        for i in range(slots):
            for k, group in ((0, ups), (1, downs)):
                if i >= len(group):
                    continue
                ref, num, kind = group[i]
                xn = xe + d * SLOT * (2 * i + k + 0.5)
                part = self.parts[ref]
                other = _other(part, num) or ""
                c.dot((xn, y))
                tip = c.two_pin(ref, num, other, (xn, y), "up" if kind == "up" else "down", 1.7)
                c.rail(tip, part.pin(other).net or "")
                self.finish(ref, num)
        if slots:
            xn = xe + d * SLOT * 2 * slots
            c.line((xe, y), (xn, y))
            xe = xn
        if last_down:
            ref, num, _ = last_down
            part = self.parts[ref]
            other = _other(part, num) or ""
            tip = c.two_pin(ref, num, other, (xe, y), "right" if d > 0 else "left", 1.9)
            c.rail(tip, part.pin(other).net or "")
            self.done.add(ref)
            return tip[0], tip[1], None
        for ref, num, kind in series[:1]:
            self.done.add(ref)
            if kind == "inline":
                return self.inline(ref, num, xe, y, d)
            part = self.parts[ref]
            other = _other(part, num) or ""
            tip = c.two_pin(ref, num, other, (xe, y), "right" if d > 0 else "left", 1.9)
            return self.chain(part.pin(other).net or "", tip[0], tip[1], d)
        return xe, y, net

    def inline(self, ref: str, num: str, x: float, y: float, d: int) -> tuple[float, float, str | None]:
        """A small multi-pin part (a hall sensor) in line: the pin on the wire faces it, the others go to
        rails; its companion capacitors are drawn beside it between the same rails."""
        c = self.c
        part = self.parts[ref]
        others = [p for p in part.pins if p.num != num]
        w, h = 3.0, 2.0
        x0 = x if d > 0 else x - w
        xs = x0 + w if d > 0 else x0
        c.line((x0, y + h / 2), (x0 + w, y + h / 2))
        c.line((x0 + w, y + h / 2), (x0 + w, y - h / 2))
        c.line((x0 + w, y - h / 2), (x0, y - h / 2))
        c.line((x0, y - h / 2), (x0, y + h / 2))
        c.text((x0 + w / 2, y + h / 2 + 0.35), f"{ref} {part.value[:7]}", TINY, color="navy")
        c.text((x + d * 0.15, y), part.pin(num).name, TINY, ha="left" if d > 0 else "right")
        c.mark(ref, num)
        for i, p in enumerate(others):
            px = xs + d * 0.0
            py = y + (0.6 if i == 0 else -0.6)
            pe = px + d * 0.7
            c.line((px, py), (pe, py))
            c.text((px - d * 0.1, py), p.name, TINY, ha="right" if d > 0 else "left")
            c.mark(ref, p.num)
            if p.net:
                c.rail((pe, py), p.net)
        xe = xs + d * 1.2
        for cap in self.spec.companions.get(ref, []):
            cp = self.parts[cap]
            top = (xe + d * 0.9, y + 0.9)
            xe += d * 0.6
            tip = c.two_pin(cap, "1", "2", top, "down", 1.8)
            c.rail(top, cp.pin("1").net or "")
            c.rail(tip, cp.pin("2").net or "")
            self.done.add(cap)
            xe += d * 2.0
        return xe, y, None

    @staticmethod
    def flag_width(net: str) -> float:
        """The width of a net flag's box for ``net``."""
        return 0.3 * len(net) * SMALL / 12 + 0.6

    def finish(self, ref: str, num: str) -> None:
        """Mark a hung part drawn (for a resistor network: the one resistor at ``num``)."""
        if self.parts[ref].kind.startswith("R_Network"):
            self.done_pins.add((ref, num))
        else:
            self.done.add(ref)

    # ---- the sheet ----------------------------------------------------------------------------------------
    def draw(self) -> Sheet:
        c = self.c
        spec = self.spec
        x = 0.0
        col_pins: list[dict[tuple[str, str], tuple[float, float, str]]] = []
        col_right: list[float] = []
        bottom = 0.0
        # place columns: width of each column = its widest anchor + fan-out room on both sides
        for col in spec.columns:
            pins: dict[tuple[str, str], tuple[float, float, str]] = {}
            left_room = self.room(col, "L")
            xb = x + left_room
            ytop = 0.0
            right = xb
            for ref in col:
                ends, w, h = self.anchor_box(ref, xb, ytop)
                for num, e in ends.items():
                    pins[(ref, num)] = e
                right = max(right, xb + w)
                ytop -= h + 3.2
            bottom = min(bottom, ytop)
            col_pins.append(pins)
            x = right + self.room(col, "R")
            col_right.append(x)
        # fan out every pin; pins of a net on the next column's facing side are joined by a trunk
        ends: dict[tuple[str, str], tuple[float, float]] = {}
        self.on_sheet = {}
        # chips and modules first: the parts hung on a net are drawn at their pins (a series resistor at the
        # source), connectors last
        everything = [(k, e) for pins in col_pins for k, e in pins.items()]
        for (ref, num), e in sorted(everything, key=lambda kv: (kv[0][0].startswith("J"), kv[0][0], -kv[1][1])):
            ex, ey, net = self.fan(ref, num, e)
            ends[(ref, num)] = (ex, ey)
            if net:
                self.on_sheet.setdefault(net, []).append((ref, num))
        joins = []
        for net, members in sorted(self.on_sheet.items()):
            if net in RAILS or net == GROUND:
                continue
            for i in range(len(spec.columns) - 1):
                a = [m for m in members if self.col_of[m[0]] == i and col_pins[i][m][2] == "R"]
                b = [m for m in members if self.col_of[m[0]] == i + 1 and col_pins[i + 1][m][2] == "L"]
                if a and b:
                    joins.append((i, net, a, b))
        flagged = {m for _, _, a, b in joins for m in a + b}
        # trunks start right of the widest flag of the column's unjoined pins
        trunk_x: dict[int, float] = {}
        for i, pins in enumerate(col_pins):
            widths = [self.flag_width(self.parts[r].pin(n).net or "") for (r, n), e in pins.items()
                      if e[2] == "R" and (r, n) not in flagged and self.parts[r].pin(n).net not in RAILS
                      and self.parts[r].pin(n).net not in (GROUND, None)]
            right = max([ends[m][0] for m in pins if pins[m][2] == "R"] + [0.0])
            trunk_x[i] = right + 0.8 + (max(widths) + 0.6 if widths else 0.0)
        for i, net, a, b in joins:
            xt = trunk_x[i]
            trunk_x[i] = xt + 0.7
            ys = []
            for m in a + b:
                ex, ey = ends[m]
                c.line((ex, ey), (xt, ey), net)
                ys.append(ey)
                if len(a + b) > 2:
                    c.dot((xt, ey))
            c.line((xt, min(ys)), (xt, max(ys)), net)
        for net, members in sorted(self.on_sheet.items()):
            if net in RAILS or net == GROUND:
                continue
            elsewhere = self.net_elsewhere(net)
            for m in members:
                if m in flagged or (not elsewhere and len(members) == 1):
                    continue
                ex, ey = ends[m]
                side = col_pins[self.col_of[m[0]]][m][2]
                if side in "LR":
                    c.flag((ex, ey), net, -1 if side == "L" else 1)
        # the decoupling bank
        xb = 0.0
        yb = bottom - 1.0
        if spec.bank:
            c.text((xb, yb + 1.2), "decoupling: each capacitor at the pins of the part it serves", SMALL,
                   ha="left")
        for ref in spec.bank:
            part = self.parts[ref]
            top = (xb + 1.0, yb)
            tip = c.two_pin(ref, "1", "2", top, "down", 1.8)
            c.rail(top, part.pin("1").net or "")
            c.rail(tip, part.pin("2").net or "")
            self.done.add(ref)
            xb += 3.2
        c.text((0.0, 4.6), spec.title, TITLE, ha="left")
        if spec.note:
            c.text((0.0, 3.5), spec.note, SMALL, ha="left")
        return Sheet(spec.name, c.svg(), dict(c.drawn), set(c.texts))

    def room(self, col: list[str], side: str) -> float:
        """Horizontal room a column's pins on ``side`` need for their wires and hung parts."""
        need = 2.5
        for ref in col:
            for p in self.parts[ref].pins:
                if self.side(ref, p) != side or not p.net:
                    continue
                hangs = self.hangs(p.net)
                ups = sum(1 for h in hangs if h[2] == "up")
                downs = sum(1 for h in hangs if h[2] == "down")
                series = [h for h in hangs if h[2] in ("series", "inline")]
                length = 1.0 + SLOT * 2 * max(ups, downs) + 2.6 * len(series[:1])
                if series and series[0][2] == "inline":
                    length += 2.0 * len(self.spec.companions.get(series[0][0], [])) + 1.0
                    nxt = None
                else:
                    nxt = self.parts[series[0][0]].pin(_other(self.parts[series[0][0]], series[0][1])
                                                       or "").net if series else None
                if nxt:
                    length += 1.0 + SLOT * 2 * sum(1 for h in self.hangs(nxt) if h[2] in ("up", "down"))
                length += 0.3 * len(p.net) + 1.5  # the flag or the trunk
                need = max(need, length)
        return need

    def net_elsewhere(self, net: str) -> bool:
        """Whether ``net`` has connections not drawn on this sheet's anchors or hung parts."""
        for part in self.parts.values():
            if part.ref in self.anchors or part.ref in self.spec.hung:
                continue
            if any(p.net == net for p in part.pins):
                return True
        return False


def render(parts: dict[str, PartInfo], spec: Spec) -> Sheet:
    """Draw one sheet."""
    return Layout(parts, spec).draw()
