"""The ``touchmove run`` subcommand: read the configuration, make sure the checkpoint key can be had, serve."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sqlite3
import sys
from dataclasses import replace
from pathlib import Path

from touchmove import __version__
from touchmove.bridge import checkpoint
from touchmove.bridge.daemon import Bridge
from touchmove.bridge.journal_lock import JournalLocked
from touchmove.config import BridgeConfig, ConfigError, load
from touchmove.errors import EXIT_USAGE, CommandError
from touchmove.mqtt.connection import tame_late_acknowledgements
from touchmove.stop_signals import StopSignals

log = logging.getLogger("touchmove.bridge")

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", metavar="FILE", required=True, help="TOML configuration file")
    parser.add_argument("--port", action="append", default=[], metavar="PATH",
                        help="serial port path or glob (added to the config's [serial] ports)")
    parser.add_argument("--log-level", default="INFO", type=str.upper, choices=LOG_LEVELS, metavar="LEVEL",
                        help=f"one of {', '.join(LOG_LEVELS)} (default INFO)")
    parser.set_defaults(handler=run_command)


def run_command(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    tame_late_acknowledgements()
    try:
        config = load(args.config)
        checkpoint.ensure_key(checkpoint.key_path(config.checkpoint_key))
    except (ConfigError, checkpoint.CheckpointKeyError) as exc:
        print(f"touchmove run: {exc}", file=sys.stderr)
        return 2
    if args.port:
        config = replace(config, serial=replace(config.serial, ports=config.serial.ports + tuple(args.port)))
    folder = Path(config.journal).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"journal {config.journal}: cannot make its folder {folder}: {exc.strerror or exc}",
                           EXIT_USAGE) from None
    try:
        return asyncio.run(serve(config))
    except JournalLocked as exc:       # another bridge serves this journal: one line naming it
        print(f"touchmove run: {exc}", file=sys.stderr)
        return 1


async def serve(config: BridgeConfig) -> int:
    bridge = Bridge(config)
    try:
        bridge.open()
    except sqlite3.Error as exc:    # the journal: not a database, a folder, not writable (the file is named)
        raise CommandError(f"journal {config.journal}: {exc}", EXIT_USAGE) from None
    signals = StopSignals(asyncio.get_running_loop(), bridge.stop)
    log.info("touchmove bridge %s, session %s, journal %s, broker %s", __version__, bridge.session,
             config.journal, config.mqtt.url)
    if config.livechess is None:
        await bridge.run()
        return signals.status
    from touchmove.livechess.command import broker_of  # aiohttp only when the section asks for it
    from touchmove.livechess.server import LiveChessServer

    live = config.livechess
    server = LiveChessServer([broker_of(config.mqtt)], host=live.host, port=live.port, boards=live.boards)
    try:
        await server.start()
    except OSError as exc:
        raise CommandError(f"[livechess] cannot listen on {live.host}:{live.port}: {exc.strerror or exc}",
                           EXIT_USAGE) from None
    log.info("LiveChess-compatible API on %s", server.url)
    try:
        await bridge.run()
    finally:
        await server.stop()
    return signals.status
