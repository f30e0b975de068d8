"""A private NATS cluster on loopback (Debian's ``nats-server``), each node with an MQTT listener.

For the cluster demo, the tests and the benchmark: ``with NatsCluster(3) as c:`` (the constructor only
takes the settings) chooses the nodes' free ports and writes one configuration per node when it starts (a
private JetStream directory each, routes to every other node), starts the nodes and waits until every node's
MQTT listener takes a QoS 1 round trip (that needs the JetStream meta leader and the MQTT streams, replicated
on every node). :meth:`kill` ends a node by its PID (SIGKILL, like a machine
lost) and :meth:`restart` brings it back with its data.

NATS needs JetStream for MQTT (sessions, retained messages and QoS 1 are kept in streams), speaks MQTT
3.1.1 with QoS 0 and 1 (not 2) and maps topic levels to subject tokens (``a/b`` is ``a.b``), so topic
names must not contain ``.``, spaces or ``*``/``>``.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
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
from typing import Any

from touchmove.mqtt.wire import probe_topic

log = logging.getLogger(__name__)

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


#: first starts of a cluster whose node exited at once (its ports taken meanwhile), each with new ports
START_TRIES = 3
#: first starts of a cluster whose node did not serve MQTT within the timeout, each with new ports and empty
#: stores (a fresh-clone test run, 2026-12-06, load 8: one node of one cluster never answered in 120 s while
#: other clusters started beside it)
NOT_READY_TRIES = 2


class _NodeExited(RuntimeError):
    """A node's process ended while it was awaited."""


class _NotReady(RuntimeError):
    """A node did not serve MQTT in time (its message ends with the last lines of every node's log)."""


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
        self.size = nodes
        #: ``nats-server``'s path, looked up by :meth:`start`
        self.binary = ""
        self.name = f"tm-{uuid.uuid4().hex[:6]}"
        #: a private temporary directory (named and made by :meth:`start`, removed by :meth:`stop`) unless one is
        #: given (tempfile.gettempdir() probes the candidate folders by writing in them: not in the constructor)
        self._owns_workdir = workdir is None
        self._workdir = workdir
        self.auth = auth
        self.probe_user = probe_user
        self.log_to_files = log_to_files
        #: the nodes, their free ports chosen by the first :meth:`start`
        self.nodes: list[Node] = []

    @property
    def workdir(self) -> Path:
        """The nodes' configurations, logs and JetStream stores."""
        if self._workdir is None:
            self._workdir = Path(tempfile.gettempdir()) / f"touchmove-nats-{self.name}"
        return self._workdir

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
        """Choose the nodes' ports (the first time), write each node's configuration, start the nodes and wait
        until every one serves MQTT."""
        binary = nats_binary()
        if binary is None:
            raise RuntimeError("nats-server is not installed (apt-get install nats-server)")
        self.binary = binary
        # a port found free may be taken before the node binds it (a client's connection gets the same ephemeral
        # port): a node that exits at its first start is given new ports, twice at most
        first_start = not self.nodes
        tries = START_TRIES if first_start else 1
        for attempt in range(1, tries + 1):
            if first_start:
                for node in self.nodes:
                    shutil.rmtree(node.store, ignore_errors=True)
                self.nodes = [self._node(i + 1) for i in range(self.size)]
            try:
                self._start_nodes(timeout)
                return self
            except _NodeExited:
                self._stop_nodes()
                if attempt == tries:
                    self.stop()
                    raise
            except _NotReady as exc:
                self._stop_nodes()
                if attempt >= min(tries, NOT_READY_TRIES):
                    self.stop()
                    raise
                log.warning("%s; starting the cluster again on new ports", str(exc).splitlines()[0])
            except BaseException:
                self.stop()
                raise
        return self

    def _start_nodes(self, timeout: float) -> None:
        for node in self.nodes:
            node.store.mkdir(parents=True, exist_ok=True)
            self._write_conf(node)
        for node in self.nodes:
            self._spawn(node)
        for node in self.nodes:
            self.wait_ready(node, timeout)

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
                raise _NodeExited(f"nats-server {node.name} exited (code {node.proc.returncode}); "
                                  f"see {self.workdir / node.name}.log")
            last = mqtt_round_trip(node.mqtt_port, self.probe_user)
            if not last:
                return
            time.sleep(0.2)
        raise _NotReady(f"nats-server {node.name}: MQTT not ready within {timeout:.0f} s ({last})\n"
                        + self.log_tails())

    def log_tails(self, lines: int = 15) -> str:
        """Return the last ``lines`` lines of every node's log file (what a failure to start says)."""
        out = []
        for node in self.nodes:
            try:
                tail = (self.workdir / f"{node.name}.log").read_text(errors="replace").splitlines()[-lines:]
            except OSError as exc:
                tail = [f"(no log: {exc.strerror})"]
            out.append(f"--- {node.name}\n" + "\n".join(tail))
        return "\n".join(out)

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
        info = self._jsz(via, "?streams=true")
        by_name = {n.name: i for i, n in enumerate(self.nodes)}
        leaders: dict[str, int] = {}
        for account in info.get("account_details", []):
            for stream in account.get("stream_detail", []):
                leader = stream.get("cluster", {}).get("leader")
                if stream.get("name") in MQTT_STREAMS and leader in by_name:
                    leaders[stream["name"]] = by_name[leader]
        return leaders

    def meta_leader(self, via: int | None = None) -> int | None:
        """Return the index of the JetStream meta leader (asked of node ``via``, by default the first running one),
        None while it is being elected. Killing it stalls what needs the meta group (a QoS 1 subscription's new
        consumer; measured: QoS 1 publishes on a node creating one) until another is elected."""
        info = self._jsz(via, "")
        by_name = {n.name: i for i, n in enumerate(self.nodes)}
        return by_name.get(info.get("meta_cluster", {}).get("leader", ""))

    def leaders(self, via: int | None = None) -> set[int]:
        """Return the nodes that lead something an MQTT client may wait for: an MQTT stream or the meta group."""
        led = set(self.stream_leaders(via).values())
        meta = self.meta_leader(via)
        return led | ({meta} if meta is not None else set())

    def lead_nothing(self, index: int, timeout: float = 30.0) -> None:
        """Move the leadership of every MQTT stream off node ``index`` (JetStream's stream leader step-down, asked
        through another node): afterwards killing ``index`` costs no stream election. The meta group is not moved
        (that needs the system account): choose a node that does not lead it."""
        via = next(i for i, n in enumerate(self.nodes) if i != index and n.pid is not None)
        deadline = time.monotonic() + timeout
        while True:
            led = [name for name, node in self.stream_leaders(via).items() if node == index]
            if not led:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"node {index} still leads {', '.join(led)} after {timeout:.0f} s of step-downs")
            for name in led:
                nats_request(self.nodes[via].client_port, f"$JS.API.STREAM.LEADER.STEPDOWN.{name}")
            time.sleep(0.5)

    def _jsz(self, via: int | None, query: str) -> dict[str, Any]:
        ask = via if via is not None else next(i for i, n in enumerate(self.nodes) if n.pid is not None)
        url = f"http://127.0.0.1:{self.nodes[ask].monitor_port}/jsz{query}"
        with urllib.request.urlopen(url, timeout=5) as resp:
            info: dict[str, Any] = json.load(resp)
        return info

    def node_of_port(self, port: int) -> int | None:
        """The index of the node whose MQTT listener is ``port``."""
        return next((i for i, n in enumerate(self.nodes) if n.mqtt_port == port), None)

    def stop(self) -> None:
        self._stop_nodes()
        if self._owns_workdir and self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)

    def _stop_nodes(self) -> None:
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

    def __enter__(self) -> NatsCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def nats_request(port: int, subject: str, payload: bytes = b"", timeout: float = 5.0) -> bytes:
    """Send one request over NATS's own client protocol (text lines: INFO, CONNECT, SUB, PUB, MSG) to the node
    whose client port is ``port``; return the reply's payload. Enough for a JetStream API call, such as a
    leader step-down, without a NATS client library."""
    inbox = f"_INBOX.touchmove.{uuid.uuid4().hex[:12]}"
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        reader = conn.makefile("rb")
        if not reader.readline().startswith(b"INFO "):
            raise RuntimeError(f"no NATS server on port {port}")
        conn.sendall(b'CONNECT {"verbose":false,"pedantic":false,"protocol":1}\r\n'
                     + f"SUB {inbox} 1\r\nPUB {subject} {inbox} {len(payload)}\r\n".encode()
                     + payload + b"\r\nPING\r\n")
        while True:
            line = reader.readline()
            if not line:
                raise RuntimeError(f"NATS node on port {port} closed the connection before replying")
            if line.startswith(b"PING"):
                conn.sendall(b"PONG\r\n")
            elif line.startswith(b"-ERR"):
                raise RuntimeError(f"NATS node on port {port}: {line.decode(errors='replace').strip()}")
            elif line.startswith(b"MSG "):
                size = int(line.split()[-1])
                return reader.read(size + 2)[:size]


def mqtt_round_trip(port: int, user: tuple[str, str] | None = None, host: str = "127.0.0.1",
                    timeout: float = 5.0) -> str:
    """Publish a QoS 1 message to ourselves through the broker; return "" on success, else what failed.

    The client's network loop is driven here through :mod:`selectors` (epoll on Linux), not by paho's own loop,
    which waits in ``select()``: that cannot watch a descriptor numbered 1024 or above, so in a process holding
    many files (the cluster bench at 1,000 boards keeps a pseudo-terminal each) paho's loop thread died at
    once, no CONNECT was ever sent, and every probe said "no CONNACK" while the node served."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    topic = probe_topic(user[0] if user else "anonymous", uuid.uuid4().hex[:10])
    got: list[bytes] = []
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"probe-{uuid.uuid4().hex[:10]}")
    if user is not None:
        client.username_pw_set(*user)
    client.on_message = lambda c, u, m: got.append(bytes(m.payload))
    client.on_connect = lambda c, u, flags, rc, props: None if rc.is_failure else c.subscribe(topic, qos=1)
    client.on_subscribe = lambda c, u, mid, codes, props: c.publish(topic, b"x", qos=1)
    try:
        client.connect(host, port, keepalive=10)
    except OSError as exc:
        return f"connect: {exc}"
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        try:
            while not got and time.monotonic() < deadline:
                sock = client.socket()
                if sock is None:
                    return "connection closed"
                wanted = selectors.EVENT_READ | (selectors.EVENT_WRITE if client.want_write() else 0)
                if selector.get_map():
                    selector.modify(sock, wanted)
                else:
                    selector.register(sock, wanted)
                for _key, ready in selector.select(0.05):
                    if ready & selectors.EVENT_READ:
                        client.loop_read()
                    if ready & selectors.EVENT_WRITE:
                        client.loop_write()
                client.loop_misc()
            if got:
                return ""
            return "no QoS 1 round trip" if client.is_connected() else "no CONNACK"
        finally:
            client.disconnect()
