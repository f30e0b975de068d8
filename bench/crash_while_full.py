"""Crash while the journal's disk is full, many times: the real firmware (MicroPython), ``touchmove run`` and a
private Mosquitto; the journal's filesystem (tmpfs, or ext4 on a loop device) fills up mid-game, plies go on
being published from memory, the bridge is killed, space comes back, the bridge starts again
(tests/e2e/crash_while_full.py). Prints each run and the totals: plies played / published / journaled /
exported, seqs reused with other content, restarts refused. Needs root (mount) and the tools of the e2e tests.

    python bench/crash_while_full.py [--runs N] [--fs tmpfs ext4] [--seed S]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from figures import Run

from tests.e2e.crash_while_full import CrashRun, can_mount, crash_while_full


def reordering(run: CrashRun) -> str:
    amended = f", {run.amended} plies amended to the order published" if run.amended else ""
    return (f", {run.reordered} plies recovered in another order" if run.reordered else "") + amended


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per filesystem (default 10)")
    parser.add_argument("--fs", nargs="+", default=["tmpfs", "ext4"], choices=["tmpfs", "ext4"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for kind in args.fs:
        why = can_mount(kind)
        if why is not None:
            print(f"crash_while_full: {kind}: {why}", file=sys.stderr)
            return 2
    fig = Run("crash_while_full")
    runs: list[CrashRun] = []
    for kind in args.fs:
        for index in range(args.runs):
            tmp = Path(tempfile.mkdtemp(prefix="touchmove-crash-"))
            run = crash_while_full(tmp, kind, random.Random(f"{args.seed}-{kind}-{index}"))
            if run.lost_nothing():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                print(f"  kept {tmp} (daemon.log, the subscriber's view is not kept)", flush=True)
            runs.append(run)
            print(f"{kind:<5} run {index + 1:>2}: killed at {run.plies_at_crash:>2} plies published, "
                  f"{run.journaled_at_crash:>2} journaled; after the restart played/published/journaled/exported "
                  f"{run.played}/{run.published}/{run.journaled}/{run.exported}, seqs reused {run.reused_seqs}, "
                  f"restarted {'yes' if run.restarted else 'NO'}{reordering(run)} ({run.seconds:.0f} s)", flush=True)
    whole = sum(run.lost_nothing() for run in runs)
    lost_at_crash = [run.plies_at_crash - run.journaled_at_crash for run in runs]
    print(f"{len(runs)} runs ({', '.join(args.fs)}): {whole} lost nothing; plies not journaled at the crash: "
          f"median {statistics.median(lost_at_crash)}, max {max(lost_at_crash)}; seqs reused "
          f"{sum(r.reused_seqs for r in runs)}; restarts refused {sum(not r.restarted for r in runs)}; runs with plies "
          f"recovered in another order (a transposition): {sum(r.reordered > 0 for r in runs)}")
    for i, kind in enumerate(args.fs):
        mine = runs[i * args.runs:(i + 1) * args.runs]
        fig.add("runs", len(mine), group=kind)
        fig.add("lost nothing", sum(r.lost_nothing() for r in mine), group=kind)
        fig.add("plies not journaled at the crash, max", max(r.plies_at_crash - r.journaled_at_crash for r in mine),
                group=kind)
        fig.add("seqs reused", sum(r.reused_seqs for r in mine), group=kind)
        fig.add("restarts refused", sum(not r.restarted for r in mine), group=kind)
        fig.add("runs with plies in another order", sum(r.reordered > 0 for r in mine), group=kind)
    fig.write()
    return 0 if whole == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
