"""How long QoS 1 publishes stall when the node leading ``$MQTT_msgs`` goes away (a script, not a test).

A private 3-node NATS cluster (``touchmove.sim.natscluster``); one MQTT client on a node that leads no MQTT
stream publishes a QoS 1 message every 50 ms; 3 s in, the ``$MQTT_msgs`` leader is killed (SIGKILL: a machine
lost), stopped (SIGTERM: what ``systemctl stop`` sends by default) or put in lame duck mode (SIGUSR2: what
``nats-server --signal ldm`` sends). Prints the longest wait for a PUBACK after that, and how long until the
stream had a new leader.

    .venv/bin/python bench/nats_leader_loss.py [--mode kill|term|ldm|all] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time
import uuid

import paho.mqtt.client as mqtt
from figures import Run
from paho.mqtt.enums import CallbackAPIVersion

from touchmove.sim.natscluster import NatsCluster

PERIOD_S = 0.05


def one_run(mode: str) -> tuple[float, float, int]:
    """Return (longest PUBACK wait after the event in s, seconds until a new ``$MQTT_msgs`` leader, lost)."""
    with NatsCluster(3) as cluster:
        leaders = cluster.stream_leaders()
        victim = leaders["$MQTT_msgs"]
        others = [i for i in range(3) if i != victim and i not in leaders.values()] or \
            [i for i in range(3) if i != victim]
        node = cluster.nodes[others[0]]
        sent: dict[int, float] = {}
        acked: dict[int, float] = {}
        lock = threading.Lock()
        client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"stall-{uuid.uuid4().hex[:8]}")

        def on_publish(_c: mqtt.Client, _u: object, mid: int, _rc: object, _p: object) -> None:
            with lock:
                acked.setdefault(mid, time.monotonic())

        client.on_publish = on_publish
        client.max_inflight_messages_set(1000)
        client.connect("127.0.0.1", node.mqtt_port, keepalive=10)
        client.loop_start()
        try:
            start = time.monotonic()
            event_at = start + 3.0
            event_done = False
            new_leader_at: float | None = None
            while time.monotonic() < event_at + 20.0:
                info = client.publish("stall/probe", b"x" * 200, qos=1)
                with lock:
                    sent[info.mid] = time.monotonic()
                if not event_done and time.monotonic() >= event_at:
                    pid = cluster.nodes[victim].pid
                    assert pid is not None
                    if mode == "kill":
                        cluster.kill(victim)
                    else:
                        os.kill(pid, signal.SIGTERM if mode == "term" else signal.SIGUSR2)
                    event_at = time.monotonic()
                    event_done = True
                if event_done and new_leader_at is None:
                    try:
                        now_leader = cluster.stream_leaders(via=others[0]).get("$MQTT_msgs")
                    except OSError:
                        now_leader = None
                    if now_leader is not None and now_leader != victim:
                        new_leader_at = time.monotonic()
                time.sleep(PERIOD_S)
            time.sleep(3.0)
            with lock:
                after = sorted((t, acked.get(mid)) for mid, t in sent.items() if t >= event_at - 1.0)
            lost = sum(1 for _, a in after if a is None)
            waits = [a - t for t, a in after if a is not None]
            # the longest time without any PUBACK after the event
            times = sorted(a for _, a in after if a is not None and a >= event_at)
            gaps = [b - a for a, b in zip([event_at, *times], times, strict=False)]
            longest = max([*gaps, max(waits, default=0.0)])
            if os.environ.get("STALL_DEBUG"):
                slow = sorted(((a - t, t - event_at) for t, a in after if a is not None), reverse=True)[:5]
                print("  slowest (wait, sent after the event):", [(round(w, 2), round(s, 2)) for w, s in slow])
            elected = (new_leader_at - event_at) if new_leader_at is not None else float("nan")
            return longest, elected, lost
        finally:
            client.loop_stop()
            client.disconnect()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["kill", "term", "ldm", "all"], default="all")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    modes = ["kill", "term", "ldm"] if args.mode == "all" else [args.mode]
    fig = Run("nats_leader_loss")
    print(f"load average {os.getloadavg()[0]:.1f}")
    for mode in modes:
        for run in range(args.runs):
            longest, elected, lost = one_run(mode)
            print(f"{mode:4} run {run + 1}: longest PUBACK wait {longest:5.2f} s, new $MQTT_msgs leader after "
                  f"{elected:5.2f} s, {lost} without PUBACK", flush=True)
            row = f"{mode}, run {run + 1}"
            fig.add("longest PUBACK wait", round(longest, 2), "s", group=row)
            fig.add("new `$MQTT_msgs` leader after", round(elected, 2), "s", group=row)
            fig.add("without PUBACK", lost, group=row)
    fig.write()


if __name__ == "__main__":
    main()
