"""A stand-in board speaking wire protocol v1 on stdin/stdout, in CPython (quick tests; the end-to-end tests
also run the real firmware). Usage: fake_board.py TIMELINE BOARD_ID [--speed N] [--boot B]

The timeline is recording-format lift/place lines (raw sensor changes, already debounced); the board starts in
the standard position, says hello and sends a snapshot, then plays the timeline in real time / speed.

Faults for the bridge's tests (device times are the timeline's): ``--inject T:LINE`` writes a raw line at T;
``--time-warp T:MS`` turns the board's clock back by MS at T (same boot); ``--rehello T:ID`` says hello as
another board id at T (same boot, as if its id had been changed while it ran).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import sys
import time

import chess


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("timeline")
    parser.add_argument("board")
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--boot", default=None)
    parser.add_argument("--start-ms", type=int, default=0, help="skip the timeline before this time")
    parser.add_argument("--inject", action="append", default=[], metavar="T:LINE")
    parser.add_argument("--time-warp", action="append", default=[], metavar="T:MS")
    parser.add_argument("--rehello", action="append", default=[], metavar="T:ID")
    args = parser.parse_args()
    faults: list[tuple[int, str, str]] = []
    for kind in ("inject", "time_warp", "rehello"):
        for spec in getattr(args, kind):
            at, _, value = spec.partition(":")
            faults.append((int(at), kind, value))
    faults.sort(key=lambda f: f[0])
    warp = 0
    with open(args.timeline) as fh:
        timeline = [json.loads(line) for line in fh if line.strip()]
    occ = chess.BB_RANK_1 | chess.BB_RANK_2 | chess.BB_RANK_7 | chess.BB_RANK_8
    boot = args.boot or f"{random.getrandbits(32):08x}"
    seq = 0
    t0 = time.monotonic()

    last_t = 0

    def send(kind: str, at: int | None = None, **fields: object) -> None:
        nonlocal seq
        nonlocal last_t
        # Device time is when a change was due, not when this process got round to it: a busy test machine
        # must not pile changes onto one time (the firmware stamps each at its own scan).
        last_t = max(last_t, last_t if at is None else at - warp)
        msg = {"seq": seq, "t": last_t, "type": kind, **fields}
        seq += 1
        os.write(1, (json.dumps(msg, separators=(",", ":")) + "\n").encode())

    def snapshot(kind: str = "snapshot", at: int | None = None) -> None:
        send(kind, at, occ=f"{occ:016x}")

    def hello(board: str = args.board) -> None:
        rate = {"rate": args.speed} if args.speed > 1 else {}       # a simulation says how fast its clock runs
        send("hello", proto=1, fw="fake-1", board=board, boot=boot, **rate)

    def run_faults(upto: int) -> None:
        nonlocal warp, last_t
        while faults and faults[0][0] <= upto:
            _, kind, value = faults.pop(0)
            if kind == "inject":
                os.write(1, value.encode() + b"\n")
            elif kind == "time_warp":
                warp += int(value)
                last_t -= int(value)       # the clock goes back
            else:
                hello(value)

    hello()
    snapshot()
    buf = b""
    i = 0
    next_beat = 1000
    start = args.start_ms
    while i < len(timeline) and timeline[i]["t"] < start:
        rec = timeline[i]
        bit = chess.BB_SQUARES[chess.parse_square(rec["sq"])]
        occ = occ & ~bit if rec["type"] == "lift" else occ | bit
        i += 1
    while i < len(timeline):
        due = min(timeline[i]["t"] - start, next_beat)
        wait = max(0.0, due / args.speed / 1000 - (time.monotonic() - t0))
        ready, _, _ = select.select([0], [], [], wait)
        if ready:
            data = os.read(0, 4096)
            if not data:
                return 0
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                try:
                    cmd = json.loads(line)
                except ValueError:
                    send("error", why="bad json")
                    continue
                if cmd.get("cmd") == "hello":
                    hello()
                elif cmd.get("cmd") == "snapshot":
                    snapshot()
                elif cmd.get("cmd") == "ping":
                    send("pong", id=cmd.get("id"))
        elapsed = (time.monotonic() - t0) * 1000 * args.speed
        while i < len(timeline) and min(timeline[i]["t"] - start, next_beat) <= elapsed:
            if next_beat < timeline[i]["t"] - start:
                snapshot("heartbeat", next_beat)
                next_beat += 1000
                continue
            rec = timeline[i]
            i += 1
            run_faults(rec["t"])
            at = rec["t"] - start
            if rec["type"] in ("lift", "place"):
                bit = chess.BB_SQUARES[chess.parse_square(rec["sq"])]
                occ = occ & ~bit if rec["type"] == "lift" else occ | bit
                send(rec["type"], at, sq=rec["sq"])
            elif rec["type"] == "clock":
                send("button", at, id=f"clock_{rec['side']}")
    # stay connected a little so the host settles the last move
    time.sleep(float(os.environ.get("FAKE_BOARD_LINGER", "2")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
