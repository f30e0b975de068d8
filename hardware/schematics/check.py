"""make hardware-check: build each sensing option's schematic (designs.py), run SKiDL's ERC (no error and no
warning allowed), export the KiCad netlist and the SVG drawing, and check the BOM (hardware/bom.csv) against
the parts in each schematic.

    python hardware/schematics/check.py            check: ERC, netlists up to date, drawings present, BOM
    python hardware/schematics/check.py --write    regenerate hardware/netlists/*.net and hardware/svg/*.svg

(Drawing takes SKiDL's placer and router minutes per option, so only --write draws; the check makes sure
each committed drawing shows every part of the current schematic.)
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
import skidl  # noqa: E402
from designs import OPTIONS  # noqa: E402

VOLATILE = re.compile(r'^\s*\((date|source|tool) .*$', re.M)


def _normal(netlist: str) -> str:
    return VOLATILE.sub("", netlist)


def build(name: str, out: Path, draw: bool) -> tuple[int, int, str, list[tuple[str, str]]]:
    """Return (ERC errors, ERC warnings, netlist text, [(ref, value)]); with ``draw``, write <out>/<name>.svg."""
    skidl.reset()
    OPTIONS[name]()
    skidl.ERC()
    errors = skidl.erc_logger.error.count
    warnings = skidl.erc_logger.warning.count
    net = out / f"{name}.net"
    skidl.generate_netlist(file_=str(net))
    if draw:
        skidl.generate_svg(file_=name, filepath=str(out), flatness=1.0)
    import builtins

    parts = [(p.ref, str(p.value)) for p in builtins.default_circuit.parts]  # type: ignore[attr-defined]
    return errors, warnings, net.read_text(), parts


def read_bom() -> list[dict[str, str]]:
    with (HW / "bom.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def check_bom(name: str, parts: list[tuple[str, str]], rows: list[dict[str, str]]) -> list[str]:
    """Every schematic part value is a BOM row of this option with the same quantity, and back."""
    problems = []
    have = collections.Counter(value for _, value in parts)
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
        for col in ("part", "manufacturer", "mpn", "supplier", "supplier_pn", "unit_price_usd", "quantity"):
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
    for name in OPTIONS:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            errors, warnings, netlist, parts = build(name, out, args.write)
            committed_net = HW / "netlists" / f"{name}.net"
            committed_svg = HW / "svg" / f"{name}.svg"
            if args.write:
                committed_net.parent.mkdir(exist_ok=True)
                committed_svg.parent.mkdir(exist_ok=True)
                committed_net.write_text(netlist)
                committed_svg.write_text((out / f"{name}.svg").read_text())
            svg = committed_svg.read_text() if committed_svg.exists() else ""
            problems = []
            if errors or warnings:
                problems.append(f"{name}: ERC {errors} errors, {warnings} warnings")
            if not committed_net.exists() or _normal(committed_net.read_text()) != _normal(netlist):
                problems.append(f"{name}: hardware/netlists/{name}.net is out of date (run with --write)")
            if "<svg" not in svg[:2000]:
                problems.append(f"{name}: hardware/svg/{name}.svg missing (run with --write)")
            missing = [ref for ref, _ in parts if f">{ref}<" not in svg and ref not in svg]
            if missing:
                problems.append(f"{name}: drawing lacks {missing[:5]}")
            problems += check_bom(name, parts, rows)
            print(f"{name}: {len(parts)} parts, ERC {errors} errors / {warnings} warnings"
                  + ("" if not problems else " - " + "; ".join(problems)))
            failed += problems
    if failed:
        print(f"hardware-check: {len(failed)} problem(s)", file=sys.stderr)
        return 1
    print("hardware-check: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
