"""``touchmove broadcast --config tournament.toml``: live round PGN and the arbiter's dashboard."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import sys
from pathlib import Path

from touchmove.broadcast.arbiter_book import accounts_summary, book_for
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import TournamentError, load_tournament
from touchmove.mqtt.connection import tame_late_acknowledgements
from touchmove.stop_signals import StopSignals


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", required=True, type=Path, help="the tournament TOML file")
    parser.add_argument("--round", type=int, help="broadcast this round instead of the file's `round`")
    parser.add_argument("--host", help="HTTP address to listen on (default from the file, 127.0.0.1)")
    parser.add_argument("--port", type=int, help="HTTP port (default from the file, 8080; 0 = any free one)")
    parser.add_argument("--output-dir", type=Path, help="where round-N.pgn goes (default from the file)")
    parser.add_argument("--take-retained", action="store_true",
                        help="a round opened here for the first time takes the games the bridges show as its "
                             "own (started after the round began); else they are held for the arbiter")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.set_defaults(handler=run)


async def serve(svc: BroadcastService, stop: asyncio.Event) -> None:
    await svc.start(wait_mqtt=None)
    print(f"touchmove broadcast: {svc.tournament.event}, round {svc.hub.storage.round.number}, "
          f"{len(svc.hub.storage.round.pairings)} boards", flush=True)
    print(f"  dashboard  {svc.url}/", flush=True)
    print(f"  round PGN  {svc.pgn_url}  (file {svc.hub.outputs.pgn_path})", flush=True)
    print(f"  {arbiters_line(svc)}", flush=True)
    if svc.pusher is not None:
        print(f"  {push_line(svc)}", flush=True)
    if svc.hub.outputs.delay > 0:
        print(f"  public outputs delayed by {svc.hub.outputs.delay / 60:g} min (the dashboard is live; MQTT viewers "
              "see live play: docs/security.md)", flush=True)
    try:
        await stop.wait()
    finally:
        await svc.stop()


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    tame_late_acknowledgements()
    try:
        tournament = load_tournament(args.config)
        if args.round is not None:
            if args.round not in tournament.rounds:
                raise TournamentError(f"round {args.round} has no pairings in {args.config}")
            tournament = dataclasses.replace(tournament, round=args.round)
        if args.output_dir is not None:
            settings = dataclasses.replace(tournament.settings, output_dir=args.output_dir)
            tournament = dataclasses.replace(tournament, settings=settings)
        if args.port is not None and not 0 <= args.port <= 65535:
            raise TournamentError(f"--port must be between 0 and 65535, not {args.port}")
        svc = BroadcastService(tournament, host=args.host, port=args.port, take_retained=args.take_retained)
    except (OSError, TournamentError, ValueError) as exc:
        print(f"touchmove broadcast: {_one_line(exc)}", file=sys.stderr)
        return 2

    async def main() -> int:
        stop = asyncio.Event()
        signals = StopSignals(asyncio.get_running_loop(), stop.set)
        await serve(svc, stop)
        return signals.status

    try:
        return asyncio.run(main())
    except (OSError, TournamentError) as exc:
        print(f"touchmove broadcast: {_one_line(exc)}", file=sys.stderr)
        return 2


def arbiters_line(svc: BroadcastService) -> str:
    """Return the banner's line on who may act in the console (the accounts the console itself accepts)."""
    book = book_for(svc.hub.storage.output_dir, svc.token)
    summary = accounts_summary(book)
    if summary is not None:
        return f"arbiters   {summary}"
    return (f"arbiter actions are off: add accounts with `touchmove arbiters add {book.file} NAME` "
            "(or set [broadcast] token / TOUCHMOVE_ARBITER_TOKEN)")


def push_line(svc: BroadcastService) -> str:
    """Return the banner's line on the lichess push of the round being broadcast (its rounds, read from the
    tournament file: the pushers themselves are made once the broadcast runs)."""
    assert svc.pusher is not None
    targets = svc.pusher.targets(svc.hub.storage.round.number)
    if not targets:
        return f"no lichess round for round {svc.hub.storage.round.number}: nothing is pushed"
    base = svc.pusher.base_url.rstrip("/")
    return "pushing to " + ", ".join(f"{base}/api/broadcast/round/{t.round_id}/push" for t in targets)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__

