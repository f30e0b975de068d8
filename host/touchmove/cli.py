"""The ``touchmove`` command line: thin shells around the rules engine and the daemons."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# (subcommand, module, help). Each module has ``configure(parser)``, which adds its options and sets
# ``handler`` (a function of the parsed arguments returning the exit status) with ``set_defaults``.
SUBCOMMANDS: list[tuple[str, str, str]] = [
    ("replay", "touchmove.replay", "replay a recording (JSON lines) through the rules engine"),
    ("run", "touchmove.bridge", "serve serial boards: moves and alerts to MQTT, everything to the journal"),
    ("demo", "touchmove.demo", "a simulated board plays a game through firmware, bridge and MQTT"),
    ("export", "touchmove.export", "write a board's recording and PGN from the bridge's journal"),
    ("broadcast", "touchmove.broadcast.command", "live round PGN and the arbiter's dashboard"),
    ("broadcast-demo", "touchmove.broadcast.demo", "a simulated round through Mosquitto, checked"),
    ("doctor", "touchmove.doctor", "check a deployment (brokers, credentials, journal, ports, clocks)"),
    ("broker-auth", "touchmove.brokerauth", "per-service broker users and access rules (Mosquitto, NATS)"),
    ("cluster-demo", "touchmove.clusterdemo", "three halls on a 3-node NATS cluster, a node killed mid-round"),
]


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="touchmove", description="Occupancy chessboards to moves and arbiter alerts."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name, help_text in SUBCOMMANDS:
        module = importlib.import_module(module_name)
        module.configure(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = build_parser().parse_args(argv)
    status: int = args.handler(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
