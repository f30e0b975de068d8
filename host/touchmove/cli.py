"""The ``touchmove`` command line: thin shells around the rules engine and the daemons.

:func:`main` is the one error boundary of every subcommand: an error is one line on standard error and a
non-zero exit status, never a traceback (``--debug`` shows it); Ctrl-C exits with 130.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sqlite3
import sys
from collections.abc import Sequence
from typing import NoReturn

from touchmove import __version__
from touchmove.errors import EXIT_BROKEN_PIPE, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE, CommandError

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_USAGE", "CommandError", "main"]

# (subcommand, module, help). Each module has ``configure(parser)``, which adds its options and sets
# ``handler`` (a function of the parsed arguments returning the exit status) with ``set_defaults``.
SUBCOMMANDS: list[tuple[str, str, str]] = [
    ("replay", "touchmove.replay", "replay a recording (JSON lines) through the rules engine"),
    ("run", "touchmove.bridge", "serve serial boards: moves and alerts to MQTT, everything to the journal"),
    ("demo", "touchmove.sim.demo", "a simulated board plays a game through firmware, bridge and MQTT"),
    ("export", "touchmove.export", "write a board's recording and PGN from the bridge's journal"),
    ("broadcast", "touchmove.broadcast.command", "live round PGN and the arbiter's dashboard"),
    ("livechess", "touchmove.livechess.command", "a LiveChess-compatible e-board API (lichess.org/dgt/play)"),
    ("broadcast-demo", "touchmove.sim.broadcast_demo", "a simulated round through a private broker, checked"),
    ("arbiters", "touchmove.broadcast.arbiter_accounts", "arbiters' accounts for the console: add, list, revoke"),
    ("init", "touchmove.samples", "write a commented sample configuration (bridge or tournament)"),
    ("board-check", "touchmove.board_check", "bring-up: a live 8x8 view of a board's sensors, what looks wrong"),
    ("doctor", "touchmove.doctor", "check a deployment (brokers, credentials, journal, ports, clocks)"),
    ("broker-auth", "touchmove.mqtt.auth", "per-service broker users and access rules (Mosquitto, NATS)"),
    ("cluster-demo", "touchmove.sim.clusterdemo", "three halls on a 3-node NATS cluster, a node killed mid-round"),
]

#: The options the ``touchmove`` command itself takes before a COMMAND.
GLOBAL_OPTIONS = ("--version", "--debug", "-h", "--help")

class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on standard error, exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise CommandError(f"{message} (see {self.prog} --help)", EXIT_USAGE)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Return the argument parser: every subcommand named, only ``command``'s module imported and its
    options added (all of them when ``command`` is None: the documentation and the tests use that)."""
    parser = OneLineParser(prog="touchmove", description="Occupancy chessboards to moves and arbiter alerts.")
    parser.add_argument("--version", action="version", version=f"touchmove {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name, help_text in SUBCOMMANDS:
        child = sub.add_parser(name, help=help_text, description=help_text)
        if command is not None and name != command:
            continue       # named for --help and for argparse's choices; its module is not imported
        importlib.import_module(module_name).configure(child)
        with contextlib.suppress(argparse.ArgumentError):      # unless the subcommand has its own --debug
            child.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                               help="show the traceback of an error")
    return parser


def command_in(argv: Sequence[str]) -> str:
    """Return the subcommand ``argv`` runs ("" for none): its first word that is not an option (the
    ``touchmove`` command's own options take no values)."""
    return next((a for a in argv if not a.startswith("-")), "")


def describe(exc: BaseException) -> str:
    """Return one line saying what went wrong, for an exception no subcommand caught."""
    if isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}" if exc.filename is not None else exc.strerror
    elif isinstance(exc, sqlite3.Error):
        text = f"database error: {exc}"
    elif isinstance(exc, CommandError | ValueError) and str(exc):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        text += " (run with --debug for the traceback)"
    return " ".join(text.split())


def _debugging(argv: Sequence[str]) -> bool:
    return "--debug" in argv or os.environ.get("TOUCHMOVE_DEBUG") == "1"


def _prog(argv: Sequence[str]) -> str:
    names = {name for name, _, _ in SUBCOMMANDS}
    command = next((a for a in argv if a in names), None)
    return f"touchmove {command}" if command else "touchmove"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (errors are reported here, on one line)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        first = next((a for a in argv if a != "--debug"), None)
        if first is not None and first.startswith("-") and first not in GLOBAL_OPTIONS:
            raise CommandError(f"unrecognized option {first}: a COMMAND comes first (see touchmove --help)",
                               EXIT_USAGE)
        args = build_parser(command_in(argv)).parse_args(argv)
        status: int = args.handler(args)
        return status
    except KeyboardInterrupt:
        print(file=sys.stderr)   # end the line the terminal echoed ^C on
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # stdout's reader is gone; point stdout at /dev/null so the interpreter's last flush stays quiet
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(f"{_prog(argv)}: {' '.join(str(exc.code).split())}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:
        if _debugging(argv):
            raise
        print(f"{_prog(argv)}: {describe(exc)}", file=sys.stderr)
        return exc.status if isinstance(exc, CommandError) else EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
