"""Console latency: simulated boards -> Mosquitto -> ``touchmove broadcast`` -> the console in headless Chromium.

Prints figures; not a test. The broadcaster runs as its own process (``touchmove broadcast --config``), as in
production; this process plays the bridges (each move published as a bridge does: the move event, a clock
event, the retained state and PGN) and drives Debian's Chromium with Playwright, the console open at
1920x1080 showing every board of the round. The page notes when each board's update reached the screen
(``?measure``: the animation frame that wrote it); a move counts as shown at the first frame that showed
its ply or a later one of the same board. Both clocks are this machine's wall clock.

    .venv/bin/python bench/dashboard_latency.py --boards 200 --rate 150 --seconds 60

The last line reads ``dashboard move->page p50 A ms p99 B ms max C ms (N boards, R moves/s)``.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import logging
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import aiomqtt
import chess
from figures import Run

from touchmove.sim.broadcast_boards import SimBoard, SimBridge, SimRound, round_toml
from touchmove.sim.local_broker import LocalBroker, free_port

EVENT_PLY = re.compile(rb'"ply":(\d+),')
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-background-timer-throttling", "--disable-renderer-backgrounding"]


class QuickPgnBoard(SimBoard):
    """A simulated board whose retained PGN is built move by move (python-chess's writer, 2 ms a move at 40
    plies, would make the benchmark's own process the bottleneck at 150 moves/s)."""

    def __init__(self, bridge: SimBridge, board_id: str) -> None:
        super().__init__(bridge, board_id)
        self.movetext: list[str] = []

    async def move(self, uci: str, remaining_ms: int | None = None) -> dict[str, Any]:
        ply = self.ply + 1
        san = self.position.san(chess.Move.from_uci(uci))
        number = f"{(ply + 1) // 2}. " if ply % 2 else ""
        clock = f" {{ [%clk {remaining_ms // 3_600_000}:{remaining_ms // 60_000 % 60:02d}:" \
                f"{remaining_ms // 1000 % 60:02d}] }}" if remaining_ms is not None else ""
        self.movetext.append(f"{number}{san}{clock}")
        return await super().move(uci, remaining_ms)

    def pgn(self) -> str:
        return f'[Event "?"]\n[Result "{self.result}"]\n\n' + " ".join([*self.movetext, self.result]) + "\n"


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux ``/proc``); None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def reference_subscriber(port: int, out: Path) -> None:
    """``--reference PORT FILE``: note when each move event reaches a plain subscriber (a process of its own,
    so that the benchmark's own work does not delay it): what the broker and the machine take."""
    async def run() -> None:
        async with aiomqtt.Client("127.0.0.1", port) as sub:
            await sub.subscribe("+/boards/+/events", qos=1)
            with out.open("w") as fh:
                async for message in sub.messages:
                    now = time.time() * 1000
                    raw = message.payload
                    if isinstance(raw, bytes | bytearray) and b'"type":"move"' in raw:
                        m = EVENT_PLY.search(raw)
                        if m:
                            board = str(message.topic).split("/")[2].split("-")[1]
                            fh.write(f"{board} {int(m.group(1))} {now:.1f}\n")
                            fh.flush()
    asyncio.run(run())


def read_reference(path: Path) -> dict[tuple[int, int], float]:
    out: dict[tuple[int, int], float] = {}
    try:
        for line in path.read_text().splitlines():
            board, ply, at = line.split()
            out.setdefault((int(board), int(ply)), float(at))
    except (OSError, ValueError):
        pass
    return out


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def latencies(published: dict[tuple[int, int], float], shown: list[list[float]]
              ) -> tuple[list[float], list[float], int]:
    """Per published move, the time until its board first showed that ply or a later one, the part of it
    spent in the page (from the stream's update arriving to the frame), and how many were never shown."""
    by_board: dict[int, tuple[list[float], list[int], list[float]]] = {}
    for board, ply, at, arrived in sorted(shown, key=lambda s: s[2]):
        times, plies, arrivals = by_board.setdefault(int(board), ([], [], []))
        times.append(at)
        plies.append(int(ply))
        arrivals.append(arrived)
    out, in_page, missing = [], [], 0
    for (board, ply), t_pub in published.items():
        times, plies, arrivals = by_board.get(board, ([], [], []))
        i = bisect.bisect_left(times, t_pub)
        j = next((j for j in range(i, len(times)) if plies[j] >= ply), None)
        if j is None:
            missing += 1
        else:
            out.append(times[j] - t_pub)
            in_page.append(times[j] - max(arrivals[j], t_pub))
    return out, in_page, missing


async def run(args: argparse.Namespace) -> None:
    from playwright.async_api import async_playwright

    fig = Run("dashboard_latency")
    rng = random.Random(args.seed)
    with LocalBroker() as broker, tempfile.TemporaryDirectory(prefix="touchmove-bench-") as tmp:
        config = Path(tmp) / "tournament.toml"
        config.write_text(round_toml("Console latency bench", args.boards, args.bridges, broker.port,
                                     Path(tmp) / "out"))
        http_port = free_port()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        profile = ["-m", "cProfile", "-o", args.profile] if args.profile else []
        proc = subprocess.Popen([sys.executable, *profile, "-m", "touchmove.cli", "broadcast", "--config", str(config),
                                 "--port", str(http_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=env)
        url = f"http://127.0.0.1:{http_port}"
        published: dict[tuple[int, int], float] = {}
        ref_file = Path(tmp) / "reference.txt"
        ref_proc = subprocess.Popen([sys.executable, __file__, "--reference", str(broker.port), str(ref_file)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cpu0 = cpu1 = None
        try:
            async with aiohttp.ClientSession() as http:
                for _ in range(400):
                    try:
                        async with http.get(f"{url}/api/state?svg=0") as resp:
                            if resp.status == 200:
                                break
                    except aiohttp.ClientError:
                        pass
                    await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)  # let it subscribe
            async with SimRound(broker.port, boards=args.boards, bridges=args.bridges,
                                board_class=QuickPgnBoard) as sim, async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
                try:
                    await sim.start()
                    page = await browser.new_page(viewport={"width": 1920, "height": 1080})
                    await page.goto(f"{url}/?measure")
                    await page.wait_for_function(f"document.querySelectorAll('.row').length >= {args.boards}")
                    await asyncio.sleep(1.0)
                    per_board = args.boards / args.rate  # mean seconds between one board's plies

                    def wall_ms() -> float:
                        return time.time() * 1000

                    async def play(board: SimBoard, number: int, deadline: float) -> None:
                        due = time.monotonic() + rng.uniform(0, per_board)
                        while due < deadline and not board.position.is_game_over():
                            await asyncio.sleep(max(0.0, due - time.monotonic()))
                            await sim.random_move(board, number, rng, published, wall_ms)
                            due += rng.uniform(0.5, 1.5) * per_board  # the pace holds whatever publishing took

                    deadline = time.monotonic() + args.seconds
                    cpu0 = cpu_seconds(proc.pid)
                    await asyncio.gather(*(play(b, n, deadline) for b, n in sim.boards))
                    cpu1 = cpu_seconds(proc.pid)
                    await asyncio.sleep(3.0)  # the last moves come through
                    shown = await page.evaluate("window.touchmoveShown")
                    if args.screenshot:
                        await page.screenshot(path=args.screenshot)
                    await sim.clear_retained()
                finally:
                    await browser.close()
        finally:
            proc.terminate()
            proc.wait(30)
            ref_proc.terminate()
            ref_proc.wait(30)
        reference = read_reference(ref_file)
    lat, in_page, missing = latencies(published, shown)
    rate = len(published) / args.seconds
    print(f"{len(published)} moves on {args.boards} boards in {args.seconds:.0f} s ({rate:.1f} moves/s, "
          f"4 MQTT messages each); {len(lat)} seen on the page, {missing} not seen")
    if cpu0 is not None and cpu1 is not None:
        print(f"broadcaster CPU while playing: {100 * (cpu1 - cpu0) / args.seconds:.0f}% of a core "
              f"({1000 * (cpu1 - cpu0) / max(1, len(published)):.2f} ms a move)")
    try:
        load = os.getloadavg()
        print(f"load average during the run: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    except OSError:
        pass
    ref = [reference[k] - t for k, t in published.items() if k in reference]
    print(f"reference, move event -> a plain MQTT subscriber (its own process): p50 {pct(ref, 50):.0f} ms "
          f"p99 {pct(ref, 99):.0f} ms ({len(ref)}/{len(published)} seen)")
    print(f"of which in the page (stream update -> frame drawn): p50 {pct(in_page, 50):.0f} ms "
          f"p99 {pct(in_page, 99):.0f} ms")
    print(f"dashboard move->page p50 {pct(lat, 50):.0f} ms p99 {pct(lat, 99):.0f} ms "
          f"max {max(lat, default=float('nan')):.0f} ms ({args.boards} boards, {rate:.0f} moves/s)")
    fig.add("boards", args.boards)
    fig.add("moves a second", round(rate, 1))
    fig.add("move → on screen, p50", round(pct(lat, 50)), "ms")
    fig.add("move → on screen, p99", round(pct(lat, 99)), "ms")
    fig.add("move → on screen, max", round(max(lat, default=float("nan"))), "ms")
    fig.add("moves not shown", missing)
    fig.add("in the page, p99", round(pct(in_page, 99)), "ms")
    if cpu0 is not None and cpu1 is not None:
        fig.add("broadcaster CPU", round(100 * (cpu1 - cpu0) / args.seconds), "% of a core")
    fig.add("reference subscriber, p50", round(pct(ref, 50)), "ms")
    fig.add("reference subscriber, p99", round(pct(ref, 99)), "ms")
    fig.write()


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--reference":
        reference_subscriber(int(sys.argv[2]), Path(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", type=int, default=200)
    parser.add_argument("--rate", type=float, default=150.0, help="moves per second over all boards")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--bridges", type=int, default=4, help="bridges (base topics) sharing the boards")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--chromium", default=os.environ.get("TOUCHMOVE_CHROMIUM", "/usr/bin/chromium"))
    parser.add_argument("--profile", metavar="FILE", help="run the broadcaster under cProfile, stats to FILE")
    parser.add_argument("--screenshot", metavar="PNG", help="save the console at the end of the run")
    args = parser.parse_args()
    logging.getLogger("mqtt").setLevel(logging.ERROR)
    if args.boards < 1 or args.rate <= 0 or args.seconds <= 0:
        sys.exit("error: --boards, --rate and --seconds must be positive")
    if not LocalBroker.available():
        sys.exit("error: mosquitto is not installed (apt-get install mosquitto)")
    if not Path(args.chromium).exists():
        sys.exit(f"error: Chromium not found at {args.chromium} (apt-get install chromium)")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
