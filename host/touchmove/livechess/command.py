"""``touchmove livechess``: the LiveChess-compatible e-board server, from a bridge's configuration or a broker URL."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from touchmove import board_ids
from touchmove.broadcast.tournament import BrokerConfig, TournamentError
from touchmove.config import ConfigError, LiveChessConfig, MqttConfig, load
from touchmove.livechess.server import DEFAULT_HOST, DEFAULT_PORT, LiveChessServer
from touchmove.mqtt.connection import tame_late_acknowledgements
from touchmove.stop_signals import StopSignals


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", "-c", metavar="FILE",
                        help="a bridge's TOML file: its [mqtt] broker and base topic, its [livechess] settings")
    parser.add_argument("--broker", metavar="URL", help="mqtt://[user:pass@]host[:port] (instead of --config)")
    parser.add_argument("--base", action="append", default=[], metavar="TOPIC",
                        help="a bridge's base topic (default touchmove; repeat for several bridges)")
    parser.add_argument("--host", help=f"address to listen on (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, help=f"port (default {DEFAULT_PORT}, LiveChess's)")
    parser.add_argument("--board", action="append", default=[], metavar="ID",
                        help="list only these boards, in this order (a client such as lichess's uses the first)")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.set_defaults(handler=run)


def broker_of(mqtt: MqttConfig, bases: tuple[str, ...] = ()) -> BrokerConfig:
    """The broker of a bridge's ``[mqtt]`` table as the MQTT consumer takes it."""
    return BrokerConfig(host=mqtt.host, port=mqtt.port, bases=bases or (mqtt.base_topic,), username=mqtt.username,
                        password=mqtt.password, tls=mqtt.tls, ca_file=mqtt.ca_file, fallbacks=mqtt.fallbacks,
                        cert_file=mqtt.cert_file, key_file=mqtt.key_file)


def settings(args: argparse.Namespace) -> tuple[BrokerConfig, LiveChessConfig]:
    """The broker and the server's settings from the options (a one-line ConfigError otherwise)."""
    if (args.config is None) == (args.broker is None):
        raise ConfigError("give --config (a bridge's TOML file) or --broker URL")
    bases = tuple(args.base)
    if args.config is not None:
        config = load(args.config)
        broker, live = broker_of(config.mqtt, bases), config.livechess or LiveChessConfig()
    else:
        try:
            broker = BrokerConfig.from_url(args.broker, bases=bases or ("touchmove",))
        except TournamentError as exc:
            raise ConfigError(str(exc)) from None
        live = LiveChessConfig()
    for board in args.board:
        if (problem := board_ids.id_problem(board)) is not None:
            raise ConfigError(f"--board {board_ids.shown(board)}: {problem}")
    if args.port is not None and not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be between 0 and 65535, not {args.port}")
    return broker, LiveChessConfig(args.host or live.host, live.port if args.port is None else args.port,
                                   tuple(args.board) or live.boards)


async def serve(server: LiveChessServer, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set."""
    await server.start()
    print(f"touchmove livechess: {server.url} (boards: GET http://{server.host}:{server.port}/api/v1.0/eboards)",
          flush=True)
    try:
        await stop.wait()
    finally:
        await server.stop()


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    tame_late_acknowledgements()
    try:
        broker, live = settings(args)
    except ConfigError as exc:
        print(f"touchmove livechess: {exc}", file=sys.stderr)
        return 2
    server = LiveChessServer([broker], host=live.host, port=live.port, boards=live.boards)

    async def main() -> int:
        stop = asyncio.Event()
        signals = StopSignals(asyncio.get_running_loop(), stop.set)
        await serve(server, stop)
        return signals.status

    try:
        return asyncio.run(main())
    except OSError as exc:      # the port is taken, or the address is not this machine's
        print(f"touchmove livechess: cannot listen on {live.host}:{live.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
