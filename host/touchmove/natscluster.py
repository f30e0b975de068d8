"""A private NATS cluster on loopback (Debian's ``nats-server``), each node with an MQTT listener.

For the cluster demo, the tests and the benchmark: ``with NatsCluster(3) as c:`` (the constructor only
chooses ports and paths) writes one configuration per node when it starts (free ports, a private JetStream
directory each, routes to every other node), starts the nodes and waits until every node's MQTT listener
takes a QoS 1 round trip (that needs the JetStream meta leader and
the MQTT streams, replicated on every node). :meth:`kill` ends a node by its PID (SIGKILL, like a machine
lost) and :meth:`restart` brings it back with its data.

NATS needs JetStream for MQTT (sessions, retained messages and QoS 1 are kept in streams), speaks MQTT
3.1.1 with QoS 0 and 1 (not 2) and maps topic levels to subject tokens (``a/b`` is ``a.b``), so topic
names must not contain ``.``, spaces or ``*``/``>``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from touchmove.wire import probe_topic

#: How long a node may take to serve MQTT after it starts: its JetStream meta group must elect a leader first,
#: which on a loaded 2-core machine once took over a minute.
READY_TIMEOUT_S = 120.0
#: The JetStream streams NATS keeps MQTT in: sessions (read at every CONNECT), QoS 1 messages (every QoS 1
#: publish waits for its leader), retained messages.
MQTT_STREAMS = ("$MQTT_sess", "$MQTT_msgs", "$MQTT_rmsgs")
NATS_PATHS = ("nats-server", "/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server")


def nats_binary() -> str | None:
    """The path of ``nats-server``, or None."""
    for name in NATS_PATHS:
        found = shutil.which(name)
        if found:
            return found
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Node:
    name: str
    client_port: int
    cluster_port: int
    mqtt_port: int
    monitor_port: int
    store: Path
    conf: Path
    proc: subprocess.Popen[bytes] | None = None
    down_since: float | None = None

    @property
    def mqtt_url(self) -> str:
        return f"mqtt://127.0.0.1:{self.mqtt_port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None


class NatsCluster:
    """``nodes`` nats-server processes forming one cluster, with JetStream and MQTT on each."""

    def __init__(self, nodes: int = 3, *, workdir: Path | None = None, auth: str = "",
                 probe_user: tuple[str, str] | None = None, log_to_files: bool = True) -> None:
        """``auth``: configuration text added to every node (accounts and users; see ``deploy/nats``);
        ``probe_user``: the (user, password) the readiness probe logs in with when ``auth`` is given."""
        binary = nats_binary()
        if binary is None:
            raise RuntimeError("nats-server is not installed (apt-get install nats-server)")
        self.binary = binary
        self.name = f"tm-{uuid.uuid4().hex[:6]}"
        #: a private temporary directory (made by :meth:`start`, removed by :meth:`stop`) unless one is given
        self._owns_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.gettempdir()) / f"touchmove-nats-{self.name}"
        self.auth = auth
        self.probe_user = probe_user
        self.log_to_files = log_to_files
        self.nodes = [self._node(i + 1) for i in range(nodes)]

    def _node(self, i: int) -> Node:
        store = self.workdir / f"n{i}"
        return Node(f"n{i}", free_port(), free_port(), free_port(), free_port(), store,
                    self.workdir / f"n{i}.conf")

    def _write_conf(self, node: Node) -> None:
        routes = ", ".join(f"nats-route://127.0.0.1:{n.cluster_port}" for n in self.nodes if n is not node)
        log = f'log_file: "{self.workdir / node.name}.log"\n' if self.log_to_files else ""
        node.conf.write_text(
            f"server_name: {node.name}\n"
            f"listen: 127.0.0.1:{node.client_port}\n"
            f"http: 127.0.0.1:{node.monitor_port}\n"
            f"{log}"
            f'jetstream {{ store_dir: "{node.store}", max_memory_store: 256MB, max_file_store: 2GB }}\n'
            + (f"cluster {{ name: {self.name}, listen: 127.0.0.1:{node.cluster_port}, routes: [{routes}] }}\n"
               if len(self.nodes) > 1 else "") +
            f"mqtt {{ listen: 127.0.0.1:{node.mqtt_port}, stream_replicas: {min(3, len(self.nodes))} }}\n"
            f"{self.auth}\n",
            encoding="utf-8")

    @property
    def mqtt_urls(self) -> list[str]:
        return [n.mqtt_url for n in self.nodes]

    # -- life cycle ---------------------------------------------------------------------------------------
    def start(self, timeout: float = READY_TIMEOUT_S) -> NatsCluster:
        """Write each node's configuration, start the nodes and wait until every one serves MQTT."""
        for node in self.nodes:
            node.store.mkdir(parents=True, exist_ok=True)
            self._write_conf(node)
        for node in self.nodes:
            self._spawn(node)
        try:
            for node in self.nodes:
                self.wait_ready(node, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, node: Node) -> None:
        node.proc = subprocess.Popen([self.binary, "-c", str(node.conf)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        node.down_since = None

    def wait_ready(self, node: Node, timeout: float = READY_TIMEOUT_S) -> None:
        """Wait until the node's MQTT listener completes a QoS 1 publish/receive round trip."""
        deadline = time.monotonic() + timeout
        last = "not started"
        while time.monotonic() < deadline:
            if node.proc is not None and node.proc.poll() is not None:
                raise RuntimeError(f"nats-server {node.name} exited (code {node.proc.returncode}); "
                                   f"see {self.workdir / node.name}.log")
            last = mqtt_round_trip(node.mqtt_port, self.probe_user)
            if not last:
                return
            time.sleep(0.2)
        raise RuntimeError(f"nats-server {node.name}: MQTT not ready within {timeout:.0f} s ({last})")

    def kill(self, index: int) -> int:
        """SIGKILL node ``index`` (0-based) by its PID; return the PID."""
        node = self.nodes[index]
        if node.proc is None or node.proc.poll() is not None:
            raise RuntimeError(f"node {node.name} is not running")
        pid = node.proc.pid
        os.kill(pid, signal.SIGKILL)
        node.proc.wait(10)
        node.down_since = time.monotonic()
        return pid

    def restart(self, index: int, timeout: float = READY_TIMEOUT_S) -> float:
        """Start node ``index`` again with its data; return how long it was down (s) once it serves MQTT."""
        node = self.nodes[index]
        since = node.down_since
        self._spawn(node)
        self.wait_ready(node, timeout)
        return time.monotonic() - since if since is not None else 0.0

    def stream_leaders(self, via: int | None = None) -> dict[str, int]:
        """Return the index of the node leading each MQTT stream that has a leader now (asked of node ``via``,
        by default the first running one). Killing a stream's leader stalls that stream until JetStream elects
        another (NATS 2.9's Raft waits 4-9 s for a silent leader), killing any other node stalls nothing."""
        ask = via if via is not None else next(i for i, n in enumerate(self.nodes) if n.pid is not None)
        url = f"http://127.0.0.1:{self.nodes[ask].monitor_port}/jsz?streams=true"
        with urllib.request.urlopen(url, timeout=5) as resp:
            info = json.load(resp)
        by_name = {n.name: i for i, n in enumerate(self.nodes)}
        leaders: dict[str, int] = {}
        for account in info.get("account_details", []):
            for stream in account.get("stream_detail", []):
                leader = stream.get("cluster", {}).get("leader")
                if stream.get("name") in MQTT_STREAMS and leader in by_name:
                    leaders[stream["name"]] = by_name[leader]
        return leaders

    def node_of_port(self, port: int) -> int | None:
        """The index of the node whose MQTT listener is ``port``."""
        return next((i for i, n in enumerate(self.nodes) if n.mqtt_port == port), None)

    def stop(self) -> None:
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is None:
                node.proc.terminate()
        for node in self.nodes:
            if node.proc is not None:
                try:
                    node.proc.wait(10)
                except subprocess.TimeoutExpired:
                    node.proc.kill()
                    node.proc.wait()
                node.proc = None
        if self._owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> NatsCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def mqtt_round_trip(port: int, user: tuple[str, str] | None = None, host: str = "127.0.0.1",
                    timeout: float = 5.0) -> str:
    """Publish a QoS 1 message to ourselves through the broker; return "" on success, else what failed."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    topic = probe_topic(user[0] if user else "anonymous", uuid.uuid4().hex[:10])
    got: list[bytes] = []
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"probe-{uuid.uuid4().hex[:10]}")
    if user is not None:
        client.username_pw_set(*user)
    client.on_message = lambda c, u, m: got.append(bytes(m.payload))
    try:
        client.connect(host, port, keepalive=10)
    except OSError as exc:
        return f"connect: {exc}"
    try:
        client.loop_start()
        deadline = time.monotonic() + timeout
        while not client.is_connected() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not client.is_connected():
            return "no CONNACK"
        client.subscribe(topic, qos=1)
        time.sleep(0.05)
        client.publish(topic, b"x", qos=1)
        while not got and time.monotonic() < deadline:
            time.sleep(0.02)
        return "" if got else "no QoS 1 round trip"
    finally:
        client.disconnect()
        client.loop_stop()
