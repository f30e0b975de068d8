"""``touchmove init bridge|tournament [FILE]``: commented sample configurations that run as written.

The samples here are the only source of the configuration samples in the documentation (``docs/bridge.md``,
``docs/broadcast.md``); a test keeps those pages identical to them and runs both samples.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from touchmove.errors import EXIT_USAGE, CommandError

BRIDGE = """\
# touchmove bridge: `touchmove run --config bridge.toml`
# Every key is optional. Relative paths are taken from the directory the bridge is started in.

[mqtt]
url = "mqtt://127.0.0.1:1883"       # mqtts://host:8883 for TLS; user:password@ allowed in the URL
base_topic = "touchmove"            # topics are <base_topic>/boards/<board id>/...
# urls = ["mqtt://n1:1883", "mqtt://n2:1883", "mqtt://n3:1883"]  # instead of url: a cluster, tried in turn
# username = "bridge"               # or in the URL, or env TOUCHMOVE_MQTT_USERNAME
# password_file = "$CREDENTIALS_DIRECTORY/mqtt-password"   # or password_env = "VAR", or password = "...",
#                                   # else env TOUCHMOVE_MQTT_PASSWORD (see docs/security.md)
# ca_file = "/etc/touchmove/ca.pem" # a CA file turns TLS on
# cert_file = "/etc/touchmove/hall-a.crt"   # a TLS client certificate, with key_file
# keepalive = 15                    # seconds; a silent broker node is left after about 1.5x this
# protocol = 5                      # 4 = MQTT 3.1.1 (default), 5 = MQTT 5
# queue_size = 10000                # events held in memory while the broker is away (the rest wait in the journal)
# events_qos = 0                    # on a NATS cluster: events at QoS 0 on connections of their own, never
#                                   # waiting for a JetStream election (docs/deployment.md); default 1

[serial]
ports = ["/dev/touchmove/*"]                     # paths or globs: the names deploy/udev/99-touchmove.rules gives
usb = [                                          # and/or USB ids (optional serial_number = "...")
  { vid = 0x2E8A, pid = 0x0005 },                # Raspberry Pi Pico / Pico W (MicroPython)
  { vid = 0x303A, pid = 0x4001 },                # ESP32-S3 (MicroPython ESP32_GENERIC_S3, native USB)
]
# boards that speak a vendor's protocol (docs/boards.md): a path or glob, or USB ids, and the protocol
# boards = [
#   { port = "/dev/touchmove/dgt-*", protocol = "dgt" },         # names deploy/udev/99-touchmove-boards.rules gives
#   { port = "/dev/touchmove/chesslink-*", protocol = "chesslink" },
#   { vid = 0x2D80, protocol = "chessnut" },                    # Chessnut Air / Pro (USB HID)
# ]
rescan_s = 1.5                                   # how often vanished ports are looked for again

[engine]
settle_ms = 200                     # how long a piece must rest before its move is made

[journal]
path = "journal/touchmove.sqlite3"  # every record and event; the folder is created when missing
# checkpoint_key = "/var/lib/touchmove/checkpoint.key"  # signs engine checkpoints (docs/bridge-faults.md);
#                                   # default $TOUCHMOVE_CHECKPOINT_KEY, else ~/.local/state/touchmove/checkpoint.key

# [livechess]                       # the section present: also serve a LiveChess-compatible API (lichess.org/dgt/play
# port = 1982                       #  and LiveChess's programs) on 127.0.0.1 (docs/livechess.md)
"""

TOURNAMENT = """\
# touchmove broadcast: `touchmove broadcast --config tournament.toml`
# One [[rounds]] entry per round; board_id is the id the bridge publishes under (the board's `hello` id).
# Relative paths are taken from this file's directory.

event = "Touchmove Open 2026"
site = "Lisbon POR"
time_control = "5400+30"          # PGN TimeControl
round = 3                         # the round being broadcast (or --round N)

[broadcast]
output_dir = "broadcast"          # round-3.pgn, the round state and the results export go here; created when missing
host = "127.0.0.1"                # the dashboard and PGN; put a TLS reverse proxy in front for the Internet
port = 8080
# token = "..."                   # arbiter token; better: env TOUCHMOVE_ARBITER_TOKEN
# lichess_round = "AbCdEfGh"      # optional push to a lichess broadcast round (env LICHESS_TOKEN)
# assign = true                   # send the pairings to the bridges (names in their own PGNs)
# delay_minutes = 15              # every public output 15 minutes behind (the arbiters' console stays live)

[[brokers]]                       # one entry per broker
url = "mqtt://127.0.0.1:1883"     # mqtts:// for TLS; username/password (or password_env), ca_file
# urls = ["mqtt://n3:1883", "mqtt://n1:1883"]  # a cluster's nodes, tried in turn (docs/deployment.md);
# password_file, cert_file, key_file: docs/security.md
bases = ["touchmove"]             # the bridges' base topics on this broker (base_topic in bridge.toml)
# share_group = "broadcast"       # events as $share/<group>/... when several consumers share the load

[[rounds]]
number = 3
date = 2026-11-29                 # else the day the round started here, kept
# start = 2026-11-29T15:00:00+01:00   # switch to this round by itself then

[[rounds.boards]]
board = 1
board_id = "e6614103e7"
white = { name = "Carlsen, Magnus", fide_id = 1503014, title = "GM", elo = 2830 }
black = { name = "Nepomniachtchi, Ian", fide_id = 4168119, title = "GM", elo = 2770 }
# result = "1/2-1/2"              # a result entered by hand

[[rounds.boards]]
board = 2
board_id = "e6614103f2"
white = "Doe, John"               # a plain name is enough
black = { name = "Roe, Jane", elo = 2101 }
"""

SAMPLES: dict[str, tuple[str, str]] = {
    # kind: (text, default file name)
    "bridge": (BRIDGE, "bridge.toml"),
    "tournament": (TOURNAMENT, "tournament.toml"),
}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=sorted(SAMPLES), help="which configuration")
    parser.add_argument("file", nargs="?", metavar="FILE",
                        help="where to write it (default bridge.toml / tournament.toml; - = standard output)")
    parser.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    parser.add_argument("--from-trf", metavar=("TRF", "FILE"), type=Path, nargs="+",
                        help="tournament: the pairings (and results) of a pairing program's TRF-16/TRF-2026 file "
                             "(`init tournament --from-trf r.trf out.toml` or `init tournament out.toml "
                             "--from-trf r.trf`)")
    parser.add_argument("--round", type=int, help="with --from-trf: the round to broadcast (default: the "
                        "first with a game not played yet)")
    parser.set_defaults(handler=init_command)


def init_command(args: argparse.Namespace) -> int:
    text, default_name = SAMPLES[args.kind]
    if args.from_trf is not None:
        source, *rest = args.from_trf
        if len(rest) > 1 or (rest and args.file is not None):
            raise CommandError("--from-trf takes one TRF (and the file to write, when not given before): "
                               "`touchmove init tournament --from-trf r.trf out.toml`", EXIT_USAGE)
        if rest:
            args.file = str(rest[0])
        args.from_trf = source
        text = from_trf(args)
    target = args.file or default_name
    if target == "-":
        sys.stdout.write(text)
        return 0
    path = Path(target)
    if path.is_dir():
        raise CommandError(f"{path} is a folder: give a file name, e.g. {path / default_name}", EXIT_USAGE)
    if path.exists() and not args.force:
        raise CommandError(f"{path} exists: give another FILE, or --force to overwrite it", EXIT_USAGE)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}", EXIT_USAGE) from None
    command = "run" if args.kind == "bridge" else "broadcast"
    print(f"wrote {path}: edit it, then `touchmove {command} --config {path}`")
    return 0


def from_trf(args: argparse.Namespace) -> str:
    """The tournament file for ``--from-trf`` (a usage error, exit 2, for a file that cannot be read)."""
    from touchmove.broadcast.trf_tournament import tournament_toml

    if args.kind != "tournament":
        raise CommandError("--from-trf makes a tournament file: `touchmove init tournament --from-trf FILE`",
                           EXIT_USAGE)
    try:
        raw = args.from_trf.read_bytes()
        return tournament_toml(raw.decode("utf-8", errors="replace"), name=str(args.from_trf),
                               round_number=args.round)
    except OSError as exc:
        raise CommandError(f"{args.from_trf}: {exc.strerror or exc}", EXIT_USAGE) from None
    except ValueError as exc:
        raise CommandError(" ".join(str(exc).split()), EXIT_USAGE) from None
