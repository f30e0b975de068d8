"""make hardware-check: build each board's schematic (designs.py), run SKiDL's ERC (no error and no warning
allowed), export the KiCad netlist, draw its sheets (sheets.py), and check:

- the committed netlists and drawings are current (hardware/netlists/<board>.net, hardware/svg/<board>/*.svg);
- every connection of the netlist is drawn with a wire to the right net, and every net's name is on a sheet;
- every footprint resolves in KiCad's libraries (Debian's kicad-footprints) or hardware/footprints/;
- electrical rules ERC cannot see: I2C pull-ups within UM10204's rise time at the bus speed, a pull-up on
  every analog multiplexer enable, one capacitor per hall sensor, at most 10 uF straight on VBUS (USB 2.0
  7.2.4.1), a series resistor between the Pico and every 74HC165 clock / load input, a pull-up on every
  matrix column;
  each rule is also run on faulty copies of the boards (rules.FAULTS: the old 4.7k pull-ups, 1000 uF on VBUS,
  a missing pull-up or capacitor...) and must catch every one;
- hardware/bom.csv lists exactly the parts of each schematic, each row complete (part numbers, price, date).

    python hardware/schematics/check.py            check
    python hardware/schematics/check.py --write    regenerate hardware/netlists/*.net and hardware/svg/
"""

from __future__ import annotations

import argparse
import collections
import csv
import logging
import os
import re
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
HW = HERE.parent
sys.path.insert(0, str(HERE))
_WORK = tempfile.TemporaryDirectory()
os.chdir(_WORK.name)  # SKiDL writes its logs and a parts backup into the current directory: not the repo

import common  # noqa: E402,F401  (sets up the KiCad library paths)
import rules  # noqa: E402
import skidl  # noqa: E402
from designs import BOARDS, I2C_HZ  # noqa: E402
from drawing import circuit_parts, netlist_connections  # noqa: E402
from sheets import sheets  # noqa: E402

BOARD_COUNT = {"led_square": 64}  # boards of this kind in one chessboard
VOLATILE = re.compile(r'^\s*\((date|source|tool) .*$', re.M)


def _normal(netlist: str) -> str:
    return VOLATILE.sub("", netlist)


def build(name: str, out: Path) -> tuple[int, int, str, list[tuple[str, str]]]:
    """Return (ERC errors, ERC warnings, netlist text, [(ref, value)]) of board ``name``; the circuit stays
    SKiDL's current one."""
    skidl.reset()
    BOARDS[name]()
    skidl.ERC()
    errors = skidl.erc_logger.error.count
    warnings = skidl.erc_logger.warning.count
    net = out / f"{name}.net"
    skidl.generate_netlist(file_=str(net))
    import builtins

    parts = [(p.ref, str(p.value)) for p in builtins.default_circuit.parts]  # type: ignore[attr-defined]
    return errors, warnings, net.read_text(), parts


def check_drawing(name: str, write: bool) -> list[str]:
    """Draw the current circuit's sheets; with ``write`` store them; compare with the committed ones and
    check every netlist connection is drawn."""
    parts = circuit_parts()
    drawn: dict[tuple[str, str], str] = {}
    texts: set[str] = set()
    folder = HW / "svg" / name
    problems = []
    fresh = sheets(name, parts)
    if write:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.svg"):
            old.unlink()
    for sheet in fresh:
        drawn.update(sheet.drawn)
        texts |= sheet.texts
        path = folder / f"{sheet.name}.svg"
        if write:
            path.write_text(sheet.svg)
        if not path.exists() or path.read_text() != sheet.svg:
            problems.append(f"{name}: hardware/svg/{name}/{sheet.name}.svg is out of date (run with --write)")
    stale = {p.stem for p in folder.glob("*.svg")} - {s.name for s in fresh}
    problems += [f"{name}: hardware/svg/{name}/{s}.svg is no sheet of the design" for s in sorted(stale)]
    want = netlist_connections(parts)
    missing = sorted(f"{r}.{p}->{n}" for r, p, n in want if drawn.get((r, p)) != n)
    if missing:
        problems.append(f"{name}: {len(missing)} connections not drawn, e.g. {missing[:4]}")
    unnamed = sorted({n for _, _, n in want} - texts - {"GND"})
    if unnamed:
        problems.append(f"{name}: nets without their name on a sheet: {unnamed[:6]}")
    return problems


def read_bom() -> list[dict[str, str]]:
    with (HW / "bom.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def check_bom(name: str, parts: list[tuple[str, str]], rows: list[dict[str, str]]) -> list[str]:
    """Every schematic part value is a BOM row of this board with the same quantity for a 64-square board
    (the per-square LED board counts 64 times), and back; every row complete."""
    problems = []
    per_board = collections.Counter(value for _, value in parts)
    have = collections.Counter({v: n * BOARD_COUNT.get(name, 1) for v, n in per_board.items()})
    want: dict[str, int] = {}
    for row in rows:
        if row["option"] not in (name, "all") or not row["schematic_value"]:
            continue
        want[row["schematic_value"]] = want.get(row["schematic_value"], 0) + int(row["quantity"])
    for value, n in sorted(have.items()):
        if want.get(value) != n:
            problems.append(f"{name}: schematic has {n} x {value!r}, BOM {want.get(value, 0)}")
    for value, n in sorted(want.items()):
        if value not in have:
            problems.append(f"{name}: BOM lists {n} x {value!r}, not in the schematic")
    for row in rows:
        for col in ("part", "manufacturer", "mpn", "supplier", "supplier_pn", "unit_price_usd", "price_date",
                    "price_source", "quantity"):
            if not row[col].strip():
                problems.append(f"bom.csv: {row['part']!r} has no {col}")
        float(row["unit_price_usd"])
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="regenerate the committed netlists and drawings")
    args = ap.parse_args(argv)
    logging.getLogger("skidl").setLevel(logging.ERROR)
    rows = read_bom()
    failed = []
    for name in BOARDS:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            errors, warnings, netlist, parts = build(name, out)
            committed_net = HW / "netlists" / f"{name}.net"
            if args.write:
                committed_net.parent.mkdir(exist_ok=True)
                committed_net.write_text(netlist)
            problems = []
            if errors or warnings:
                problems.append(f"{name}: ERC {errors} errors, {warnings} warnings")
            if not committed_net.exists() or _normal(committed_net.read_text()) != _normal(netlist):
                problems.append(f"{name}: hardware/netlists/{name}.net is out of date (run with --write)")
            problems += check_drawing(name, args.write)
            circuit = circuit_parts()
            problems += [f"{name}: {p}" for p in rules.footprints(netlist, HW / "footprints")]
            problems += [f"{name}: {p}" for p in rules.electrical(circuit, I2C_HZ)]
            problems += [f"{name}: {p}" for p in rules.self_test(name, circuit, I2C_HZ)]
            problems += check_bom(name, parts, rows)
            print(f"{name}: {len(parts)} parts, ERC {errors} errors / {warnings} warnings"
                  + ("" if not problems else " - " + "; ".join(problems)))
            failed += problems
    if failed:
        print(f"hardware-check: {len(failed)} problem(s)", file=sys.stderr)
        return 1
    print("hardware-check: ok (ERC, netlists, drawings, footprints, electrical rules, BOM)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
