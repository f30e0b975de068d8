"""``touchmove replay``: a recording through the rules engine, as PGN or as events (JSON lines)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

from touchmove import records
from touchmove.rules import Engine, Event
from touchmove.rules.engine import DEFAULT_SETTLE_MS


class NoRecords(ValueError):
    """The recording held no valid record: there is nothing to replay."""


def replay(lines: Iterable[str | bytes], engine: Engine, warn: TextIO | None = None) -> Iterator[Event]:
    """Yield the events of a recording, in order; skipped lines are reported on ``warn``. Raise
    :class:`NoRecords` at the end when no line was a valid record."""
    fed = 0
    for item in records.read(lines):
        if isinstance(item, records.Problem):
            if warn is not None:
                print(f"touchmove replay: line {item.lineno}: {item.message}", file=warn)
            continue
        fed += 1
        yield from engine.feed(item)
    if not fed:
        raise NoRecords("no valid record to replay")
    yield from engine.finish()


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the replay options to a parser."""
    parser.add_argument("file", nargs="?", default="-", help="recording (JSON lines); - or nothing for stdin")
    parser.add_argument("--fen", help="start position of the first game (default: the standard one)")
    parser.add_argument("--chess960", action="store_true", help="the start position is Chess960")
    parser.add_argument("--settle-ms", type=int, default=DEFAULT_SETTLE_MS, metavar="N",
                        help=f"how long a piece must rest to count as released (default {DEFAULT_SETTLE_MS})")
    out = parser.add_mutually_exclusive_group(required=True)
    out.add_argument("--pgn", action="store_true", help="print every game as PGN")
    out.add_argument("--jsonl", action="store_true", help="print every event as one JSON line")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Replay as the arguments say; return the exit status."""
    if args.settle_ms < 0:
        print("touchmove replay: --settle-ms must be >= 0", file=sys.stderr)
        return 2
    problem = None if args.fen is None else records.fen_problem(args.fen, args.chess960)
    if problem is not None:
        print(f"touchmove replay: invalid --fen: {problem}", file=sys.stderr)
        return 2
    engine = Engine(fen=args.fen, chess960=args.chess960, settle_ms=args.settle_ms)
    try:
        source = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8", errors="replace")  # noqa: SIM115
    except OSError as exc:
        print(f"touchmove replay: {exc}", file=sys.stderr)
        return 2
    name = "standard input" if args.file == "-" else args.file
    with source:
        events = replay(source, engine, warn=sys.stderr)
        try:
            if args.jsonl:
                for event in events:
                    sys.stdout.write(event.to_json() + "\n")
            else:
                for _ in events:
                    pass
                for game in engine.games:
                    sys.stdout.write(game.pgn_text({"Event": "touchmove replay", "Round": str(game.number)}))
                    sys.stdout.write("\n\n")
        except NoRecords as exc:
            print(f"touchmove replay: {name}: {exc}", file=sys.stderr)
            return 1
    return 0
