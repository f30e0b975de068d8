"""``touchmove doctor``: check a deployment and say what to fix.

On a hall PC (``--config bridge.toml``): the configuration, every broker node (reachable, TLS, credentials
accepted, the user's access rules), the journal (directory writable, owner-only, free space), the serial
ports (boards found and openable) and the host clock (NTP synchronised). On the broadcaster's host
(``--tournament tournament.toml``): every broker node, each hall's bridge (online, answering
``health_check``) with the clock skew between that hall PC and this host, the output directory and the
dashboard port. One line per check: ``ok``, ``warn`` or ``FAIL`` with what to do; exit status 1 when
something failed.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shutil
import socket
import ssl
import subprocess
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import aiomqtt

from touchmove.config import SerialConfig
from touchmove.mqtt import wire
from touchmove.mqtt.brokers import BrokerSettingError, Endpoint, tls_context

if TYPE_CHECKING:
    from touchmove.broadcast.tournament import Tournament

#: Clock skew between hosts above which the journals' and the PGN's times disagree visibly.
SKEW_WARN_S = 0.5
SKEW_FAIL_S = 5.0
FREE_SPACE_WARN = 1 << 30

_CREDENTIALS = ("check username and password_file / password_env (touchmove broker-auth wrote "
                "secrets/<user>.password), and that the broker was reloaded with the same event's password file "
                "or NATS accounts")
#: CONNACK codes (3.1.1 and their MQTT 5 reason codes) -> what to fix. Mosquitto answers a wrong password
#: with "not authorised".
CONNACK_FIX = {4: "bad user name or password: " + _CREDENTIALS, 134: "bad user name or password: " + _CREDENTIALS,
               5: "not authorised: " + _CREDENTIALS, 135: "not authorised: " + _CREDENTIALS}


@dataclass
class Report:
    lines: list[tuple[str, str, str]] = field(default_factory=list)

    def ok(self, what: str) -> None:
        self._add("ok", what, "")

    def warn(self, what: str, fix: str) -> None:
        self._add("warn", what, fix)

    def fail(self, what: str, fix: str) -> None:
        self._add("FAIL", what, fix)

    def add(self, level: str, what: str, fix: str = "") -> None:
        """Add a line of ``level`` (``ok``, ``warn`` or ``FAIL``): the fix is said for warnings and failures."""
        self._add(level, what, "" if level == "ok" else fix)

    def _add(self, level: str, what: str, fix: str) -> None:
        self.lines.append((level, what, fix))
        print(f"{level:<4} {what}" + (f"\n     -> {fix}" if fix else ""), flush=True)

    @property
    def failed(self) -> bool:
        return any(level == "FAIL" for level, _, _ in self.lines)


@dataclass(frozen=True)
class Login:
    username: str | None
    password: str | None
    ca_file: str | None
    cert_file: str | None
    key_file: str | None


def check_tcp(report: Report, node: Endpoint, timeout: float) -> bool:
    try:
        with socket.create_connection((node.host, node.port), timeout=timeout):
            return True
    except OSError as exc:
        report.fail(f"broker {node.url}: not reachable ({exc.strerror or exc})",
                    "start the broker / this cluster node, or fix host and port in the URL; check the firewall "
                    f"between this host and {node.host} (port {node.port})")
        return False


async def check_mqtt(report: Report, node: Endpoint, login: Login, timeout: float) -> bool:
    """Connect with the service's credentials, then make a QoS 1 round trip on the doctor's own topic."""
    try:
        context = tls_context(login.ca_file, login.cert_file, login.key_file) if node.tls else None
    except BrokerSettingError as exc:
        report.fail(f"broker {node.url}: {exc}", "fix ca_file / cert_file / key_file")
        return False
    who = f"user {login.username}" if login.username else "anonymous"
    try:
        async with asyncio.timeout(timeout), aiomqtt.Client(
                node.host, node.port, username=login.username, password=login.password, tls_context=context,
                identifier=f"touchmove-doctor-{uuid.uuid4().hex[:8]}", timeout=timeout) as client:
            topic = wire.probe_topic(login.username or "anonymous", uuid.uuid4().hex[:8])
            await client.subscribe(topic, qos=1)
            await client.publish(topic, b"probe", qos=1)
            try:
                async with asyncio.timeout(timeout):
                    async for _ in client.messages:
                        break
                report.ok(f"broker {node.url}: connected ({who}), QoS 1 round trip")
            except TimeoutError:
                report.warn(f"broker {node.url}: connected ({who}), but no QoS 1 round trip on {topic}",
                            "the broker's rules do not give this user its doctor topic (regenerate them with "
                            "touchmove broker-auth), or the cluster has no JetStream quorum (nats-server logs)")
            return True
    except aiomqtt.MqttCodeError as exc:
        rc = int(exc.rc.value if hasattr(exc.rc, "value") else exc.rc)  # type: ignore[union-attr,arg-type]
        report.fail(f"broker {node.url}: connection refused ({who}): {exc}",
                    CONNACK_FIX.get(rc, "see the broker's log for why it refused the connection"))
    except (ssl.SSLError, ssl.CertificateError) as exc:
        report.fail(f"broker {node.url}: TLS failed: {exc}", "the broker's certificate must be signed by ca_file and "
                    "name the host in the URL; with require_certificate give cert_file and key_file")
    except (aiomqtt.MqttError, OSError, TimeoutError) as exc:
        report.fail(f"broker {node.url}: no MQTT session ({who}): {exc or type(exc).__name__}",
                    "is this port the broker's MQTT listener (not NATS client port 4222, not the TLS port "
                    "with mqtt://)? For NATS: is JetStream up with a quorum of nodes?")
    return False


def check_clock(report: Report) -> None:
    """Whether this host's clock is synchronised (systemd-timesyncd, chrony, ntpd all report to timedatectl)."""
    tool = shutil.which("timedatectl")
    if tool is None:
        report.warn("host clock: timedatectl not found, synchronisation unknown", "run an NTP client on every host")
        return
    try:
        out = subprocess.run([tool, "show", "-p", "NTPSynchronized", "--value"], capture_output=True, text=True,
                             timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    if out == "yes":
        report.ok("host clock: NTP synchronised")
    else:
        report.warn(f"host clock: NTP synchronisation {'off' if out == 'no' else 'unknown'}",
                    "enable NTP (timedatectl set-ntp true, or chrony) on every hall PC and the broadcaster's host: "
                    "event times (ts) and the PGN's clock comments come from the hosts' clocks")


def check_journal(report: Report, path: Path) -> None:
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        parent = next((p for p in folder.parents if p.exists()), Path("/"))
        if parent.is_dir() and os.access(parent, os.W_OK | os.X_OK):
            report.ok(f"journal {path}: the folder {folder} will be created at the bridge's first start")
        else:
            report.fail(f"journal {path}: the folder {folder} does not exist and {parent} is not a folder this "
                        "user may write", "create it for the service user (systemd StateDirectory=touchmove "
                        "does: /var/lib/touchmove)")
        return
    if not os.access(folder, os.W_OK | os.X_OK):
        report.fail(f"journal {path}: the folder {folder} is not writable by this user",
                    f"chown it to the user the bridge runs as (now {os.getuid()})")
        return
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            report.fail(f"journal {path}: not readable and writable by this user", "chown it to the bridge's user")
            return
        mode = path.stat().st_mode & 0o777
        if mode & 0o077:
            report.warn(f"journal {path}: mode {mode:o}, readable by others", f"chmod 600 {path}")
        else:
            report.ok(f"journal {path}: writable, owner-only")
    else:
        report.ok(f"journal {path}: will be created (owner-only) in a writable folder")
    free = shutil.disk_usage(folder).free
    if free < FREE_SPACE_WARN:
        report.warn(f"journal {path}: only {free / 1e6:.0f} MB free", "free disk space: a full disk stops journaling")


def check_checkpoint_key(report: Report, configured: str | None) -> None:
    from touchmove.bridge.checkpoint import CheckpointKeyError, find_key, key_path

    path = key_path(configured)
    try:
        key = find_key(path)
    except CheckpointKeyError as exc:
        report.fail(f"checkpoint key: {exc}", "fix or delete the file: the bridge makes a new key, and replays "
                    "each board's journal once instead of trusting the old checkpoints")
        return
    if key is not None:
        report.ok(f"checkpoint key {path}: owner-only, signs the engine checkpoints")
        return
    folder = next((p for p in path.parents if p.exists()), Path("/"))
    if os.access(folder, os.W_OK | os.X_OK):
        report.ok(f"checkpoint key {path}: will be made at the bridge's first start")
    else:
        report.fail(f"checkpoint key {path}: missing, and {folder} is not writable by this user",
                    "set [journal] checkpoint_key or TOUCHMOVE_CHECKPOINT_KEY to a file the bridge's user may "
                    "write: without a key `touchmove run` does not start")


def check_serial(report: Report, cfg: SerialConfig, timeout: float) -> None:
    """What ``run`` will use: touchmove's ports (found, opened, a board answering its hello) and every
    ``[serial] boards`` entry (its ports found, opened at its protocol's settings, the board answering in its
    own protocol with its serial number)."""
    from dataclasses import replace

    from touchmove import boards
    from touchmove.boards.probe import ask
    from touchmove.bridge.port_report import describe_entry, describe_watch, probe
    from touchmove.serial.discovery import find_ports

    if not cfg.ports and not cfg.usb and not cfg.boards:
        report.fail("serial: no [serial] ports, usb or boards: the bridge would watch nothing",
                    "touchmove init bridge writes the Pico's and ESP32-S3's USB ids; DGT, ChessLink and Chessnut "
                    "boards go in [serial] boards (docs/boards.md#which-port-speaks-which-protocol-bridgetoml)")
        return
    if cfg.ports or cfg.usb:
        found = [p for p in find_ports(cfg.ports, cfg.usb) if boards.board_port_of(p, cfg) is None]
        if not found:
            report.warn(f"serial: no touchmove board at {describe_watch(cfg.ports, cfg.usb)}",
                        "plug the boards in; check the udev rule (deploy/udev/99-touchmove.rules) names them as "
                        "configured: `touchmove doctor --ports` lists what is there (docs/boards.md#permissions)")
        for path in found:
            level, what = probe(path, cfg.baudrate, timeout)
            if level == "FAIL" and "locked by another program" in what and "touchmove" in what and " run" in what:
                report.ok(f"serial {path}: held by a running bridge, not asked")
                continue
            what, _, fix = what.partition(" -> ")
            report.add(level, f"serial {path}: {what}", fix)
    for entry in cfg.boards:
        paths = boards.find_board_ports(replace(cfg, boards=(entry,)))
        if not paths:
            report.warn(f"serial: no {entry.protocol} board at {describe_entry(entry)}",
                        "plug it in and switch it on; `touchmove doctor --ports` lists the serial devices with "
                        "their USB ids (permissions and udev rules: docs/boards.md#permissions)")
            continue
        for path in paths:
            answer = ask(path, entry.protocol, timeout)
            report.add(answer.level, f"serial {path}: {answer.what}", answer.fix)


@dataclass
class Seen:
    """What the broker holds for the bridges' boards: each board's retained availability (online or not) and
    state (its game, ply, whether over, the bridge session that wrote it), and each bridge's live session."""

    online: dict[str, bool] = field(default_factory=dict)
    states: dict[str, dict[str, object]] = field(default_factory=dict)
    sessions: set[str] = field(default_factory=set)
    #: each board's bridge (its base topic), and the bridges that answered health_check
    base_of: dict[str, str] = field(default_factory=dict)
    answering: set[str] | None = None

    def bound(self, board: str) -> bool:
        """Return whether ``board`` is online at a bridge that answers (a killed bridge's boards still say
        online in their retained availability: its last will is the bridge's own state)."""
        if not self.online.get(board):
            return False
        return self.answering is None or self.base_of.get(board) in self.answering


async def check_bridges(report: Report, node: Endpoint, login: Login, bases: Sequence[str],
                        timeout: float, seen: Seen | None = None) -> None:
    """Each bridge's retained state and a health_check round trip; the clock skew from the reply's time. The
    boards' retained availability and state go into ``seen``."""
    seen = seen if seen is not None else Seen()
    try:
        context = tls_context(login.ca_file, login.cert_file, login.key_file) if node.tls else None
        async with aiomqtt.Client(node.host, node.port, username=login.username, password=login.password,
                                  tls_context=context, identifier=f"touchmove-doctor-{uuid.uuid4().hex[:8]}",
                                  timeout=timeout) as client:
            for base in bases:
                await client.subscribe(wire.bridge_topic(base, "state"), qos=1)
                await client.subscribe(wire.response_topic(base, "health_check"), qos=1)
                await client.subscribe(wire.board_topic(base, wire.ANY, "availability"), qos=1)
                await client.subscribe(wire.board_topic(base, wire.ANY, "state"), qos=1)
            states: dict[str, bytes] = {}
            replies: dict[str, tuple[dict[str, object], float, float]] = {}
            sent: dict[str, float] = {}
            tag = uuid.uuid4().hex[:8]
            for base in bases:
                sent[base] = time.time()
                await client.publish(wire.request_topic(base, "health_check"),
                                     json.dumps({"transaction": f"doctor-{tag}"}).encode(), qos=1)
            try:
                async with asyncio.timeout(timeout):
                    async for m in client.messages:
                        topic = str(m.topic)
                        if _board_retained(topic, m.payload, bases, seen):
                            continue
                        state_of = {wire.bridge_topic(b, "state"): b for b in bases}
                        base = state_of.get(topic) or next(
                            (b for b in bases if topic == wire.response_topic(b, "health_check")), "")
                        if not base:
                            continue
                        raw = bytes(m.payload) if isinstance(m.payload, bytes | bytearray) else b""
                        if topic in state_of:
                            states[base] = raw
                        else:
                            try:
                                msg = json.loads(raw)
                            except ValueError:
                                continue
                            if msg.get("transaction") == f"doctor-{tag}":
                                replies[base] = (msg.get("data") or {}, sent[base], time.time())
                        if len(replies) == len(bases):
                            break
            except TimeoutError:
                pass
    except (aiomqtt.MqttError, OSError, BrokerSettingError) as exc:
        report.fail(f"bridges via {node.url}: {exc}", "fix the broker connection first (see above)")
        return
    seen.answering = seen.answering if seen.answering is not None else set()
    for base in bases:
        state = states.get(base, b"")
        if base not in replies:
            why = "offline (its last will)" if b"offline" in state else "never seen" if not state else "silent"
            report.fail(f"bridge {base}: no health_check answer within {timeout:.0f} s; bridge/state {why}",
                        f"on the hall PC: systemctl status touchmove-bridge@{base}; journalctl -u "
                        f"touchmove-bridge@{base}; then touchmove doctor --config there")
            continue
        data, t_sent, t_back = replies[base]
        seen.answering.add(base)
        if isinstance(data.get("session"), str):
            seen.sessions.add(str(data["session"]))
        if data.get("healthy") is False:
            report.fail(f"bridge {base}: reports itself unhealthy: {data.get('problems')}",
                        f"on the hall PC: journalctl -u touchmove-bridge@{base} (docs/bridge-faults.md)")
        remote = data.get("time")
        if not isinstance(remote, str):
            report.warn(f"bridge {base}: online, {data.get('boards_online')} board(s); clock not reported",
                        "update touchmove on that hall PC (health_check reports its time from 0.1)")
            continue
        try:
            their = dt.datetime.fromisoformat(remote.replace("Z", "+00:00")).timestamp()
        except ValueError:
            report.warn(f"bridge {base}: unreadable time {remote!r}", "update touchmove on that hall PC")
            continue
        skew = their - (t_sent + t_back) / 2
        rtt = t_back - t_sent
        what = (f"bridge {base}: online, {data.get('boards_online')} board(s); clock {skew * 1000:+.0f} ms from "
                f"this host (±{rtt * 500:.0f} ms)")
        if abs(skew) - rtt / 2 > SKEW_FAIL_S:
            report.fail(what, "the hosts' clocks disagree: enable NTP on both (timedatectl set-ntp true)")
        elif abs(skew) - rtt / 2 > SKEW_WARN_S:
            report.warn(what, "enable NTP on both hosts (timedatectl set-ntp true, or chrony)")
        else:
            report.ok(what)


def _board_retained(topic: str, payload: object, bases: Sequence[str], seen: Seen) -> bool:
    """Note a board's retained availability or state in ``seen``; return whether ``topic`` was one."""
    parsed = wire.parse_topic(topic, bases)
    if parsed is None or parsed.board is None or parsed.leaf not in ("availability", "state"):
        return False
    try:
        data = json.loads(bytes(payload) if isinstance(payload, bytes | bytearray) else b"")
    except ValueError:
        return True
    if not isinstance(data, dict):
        return True
    seen.base_of[parsed.board] = parsed.base
    if parsed.leaf == "availability":
        seen.online[parsed.board] = data.get("state") == "online"
    else:
        seen.states[parsed.board] = data
    return True


def check_pairings(report: Report, number: int, board_ids: Sequence[str], seen: Seen) -> None:
    """Ready only when every paired board is bound: online at a bridge (its retained availability)."""
    missing = [b for b in board_ids if not seen.bound(b)]
    if not missing:
        report.ok(f"round {number}: all {len(board_ids)} paired boards bound (online at a bridge)")
        return
    never = [b for b in missing if b not in seen.online]
    report.fail(f"round {number}: {len(missing)} of {len(board_ids)} paired boards not bound: "
                f"{', '.join(missing[:12])}{' ...' if len(missing) > 12 else ''}"
                + (f" ({len(never)} never seen by a bridge)" if never else ""),
                "plug them in and switch them on; on the hall PC `touchmove doctor --config bridge.toml` says "
                "what each port answers; a board_id in the tournament file must be the id the bridge binds "
                "(docs/club.md#the-round-tournament-file-arbiters-lichess)")


def check_retained(report: Report, board_ids: Sequence[str], seen: Seen) -> None:
    """Say which games the broker keeps (retained) for the round's boards, and which a bridge session that is
    no longer running wrote (an earlier event's or rehearsal's games)."""
    games = {b: seen.states[b] for b in board_ids if b in seen.states and int(str(seen.states[b].get("ply") or 0))}
    if not games:
        report.ok("broker: no games kept (retained) for the round's boards")
        return
    old = [b for b, st in games.items() if st.get("session") not in seen.sessions]

    def said(board: str) -> str:
        st = games[board]
        return f"{board} (game {st.get('game')}, {st.get('ply')} plies{', over' if st.get('game_over') else ''})"

    listed = ", ".join(said(b) for b in list(games)[:6]) + (" ..." if len(games) > 6 else "")
    if old:
        report.warn(f"broker: games kept (retained) for {len(games)} board(s), {len(old)} from a bridge session "
                    f"that is not running: {listed}",
                    "games of an earlier session (a rehearsal, last week's round): to start clean, see "
                    "docs/club.md#starting-an-event-clean")
    else:
        report.ok(f"broker: games kept (retained) for {len(games)} board(s), by the running bridges: {listed}")


async def check_lichess(report: Report, t: Tournament, timeout: float) -> None:
    """When the round is pushed to lichess: a token (the environment's or the file's), lichess reachable, and
    the token known to lichess with the study:write scope (``POST /api/token/test``)."""
    import aiohttp

    from touchmove.broadcast.lichess_push import TokenSource
    from touchmove.broadcast.tournament import LICHESS_TOKEN_ENV

    targets = t.lichess_targets()
    if not targets:
        return
    rounds = ", ".join(x.round_id for x in targets)
    url = t.settings.lichess_url
    token = TokenSource(os.environ.get(LICHESS_TOKEN_ENV), t.settings.lichess_token_file).current()
    if not token:
        report.fail(f"lichess: round {rounds} is pushed to {url}, but there is no token",
                    f"set {LICHESS_TOKEN_ENV} (a token with the study:write scope, lichess.org/account/oauth/token) "
                    "or [broadcast] lichess_token_file: `touchmove broadcast` refuses to start without one "
                    "(docs/club.md#the-round-tournament-file-arbiters-lichess)")
        return
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session, \
                session.post(f"{url}/api/token/test", data=token.encode()) as resp:
            status = resp.status
            body = await resp.json(content_type=None) if status == 200 else None
    except (aiohttp.ClientError, TimeoutError, ValueError, OSError) as exc:
        report.fail(f"lichess: {url} cannot be reached ({' '.join(str(exc).split()) or type(exc).__name__})",
                    "the push needs internet on the broadcaster's PC: without it the console shows lichess "
                    "retrying and the games reach lichess when it comes back (docs/club.md#internet-for-lichess)")
        return
    info = body.get(token) if isinstance(body, dict) else None
    if status != 200:
        report.warn(f"lichess: {url} reached, the token not checked (HTTP {status} to /api/token/test); "
                    f"round {rounds}", "fine for the rehearsal's stand-in; lichess itself answers this check")
    elif not isinstance(info, dict):
        report.fail(f"lichess: the token is unknown to {url} (expired or revoked)",
                    "make a new one with the study:write scope (lichess.org/account/oauth/token)")
    elif "study:write" not in str(info.get("scopes", "")).split(","):
        report.fail(f"lichess: the token of {info.get('userId')} lacks the study:write scope",
                    "make a new one with the study:write scope (lichess.org/account/oauth/token)")
    else:
        report.ok(f"lichess: token of {info.get('userId')} with study:write; round {rounds}")
    await _check_lichess_rounds(report, url, token, [x.round_id for x in targets], timeout)


async def _check_lichess_rounds(report: Report, url: str, token: str, rounds: Sequence[str], timeout: float) -> None:
    """Each round id known to lichess (``GET /api/broadcast/-/-/{id}``: the slugs are not read)."""
    import aiohttp

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
        for round_id in rounds:
            try:
                async with session.get(f"{url}/api/broadcast/-/-/{round_id}",
                                       headers={"Authorization": f"Bearer {token}"}) as resp:
                    status = resp.status
                    body = await resp.json(content_type=None) if status == 200 else None
            except (aiohttp.ClientError, TimeoutError, ValueError, OSError) as exc:
                report.warn(f"lichess: round {round_id} not checked ({' '.join(str(exc).split())})", "")
                continue
            if status == 404:
                report.fail(f"lichess: {url} has no broadcast round {round_id}",
                            "lichess_round is the round's id: the 8 characters at the end of the round's URL "
                            "(docs/club.md#the-round-tournament-file-arbiters-lichess)")
            elif status != 200 or not isinstance(body, dict):
                report.warn(f"lichess: round {round_id} not checked (HTTP {status})", "")
            else:
                tour, rnd = body.get("tour"), body.get("round")
                tour_name = tour.get("name", "?") if isinstance(tour, dict) else "?"
                round_name = rnd.get("name", "?") if isinstance(rnd, dict) else "?"
                report.ok(f"lichess: round {round_id} is {tour_name}, {round_name}")


def check_port(report: Report, host: str, port: int) -> None:
    if port == 0:
        report.ok("dashboard: any free port")
        return
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            report.ok(f"dashboard: {host}:{port} is free")
        except OSError as exc:
            report.warn(f"dashboard: {host}:{port} is in use ({exc.strerror})",
                        "fine if the broadcaster is already running there; otherwise choose another port or stop "
                        "what holds it (ss -ltnp)")


def check_folder(report: Report, what: str, folder: Path) -> None:
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if os.access(probe, os.W_OK | os.X_OK):
        report.ok(f"{what} {folder}: writable")
    else:
        report.fail(f"{what} {folder}: not writable by this user", "create it and chown it to the service user")


async def doctor_bridge(report: Report, path: Path, timeout: float) -> None:
    from touchmove.config import ConfigError, load

    try:
        cfg = load(path)
    except ConfigError as exc:
        report.fail(f"bridge configuration {path}: {exc}",
                    "fix the file (docs/bridge.md: every key; `touchmove init bridge` writes a commented sample)")
        return
    report.ok(f"bridge configuration {path}: base topic {cfg.mqtt.base_topic}, {len(cfg.mqtt.endpoints)} broker "
              f"node(s), user {cfg.mqtt.username or '(anonymous)'}")
    if cfg.mqtt.username and cfg.mqtt.password is None:
        report.warn("bridge: a user name without a password",
                    "set password_file (e.g. $CREDENTIALS_DIRECTORY/mqtt-password) or TOUCHMOVE_MQTT_PASSWORD")
    login = Login(cfg.mqtt.username, cfg.mqtt.password, cfg.mqtt.ca_file, cfg.mqtt.cert_file, cfg.mqtt.key_file)
    reachable = 0
    for node in cfg.mqtt.endpoints:
        if check_tcp(report, node, timeout) and await check_mqtt(report, node, login, timeout):
            reachable += 1
    if len(cfg.mqtt.endpoints) > 1 and reachable < len(cfg.mqtt.endpoints) and reachable:
        report.warn(f"brokers: {reachable} of {len(cfg.mqtt.endpoints)} nodes answer",
                    "the bridge runs on the others, but the cluster has less slack: restart the missing node")
    check_journal(report, Path(cfg.journal))
    check_checkpoint_key(report, cfg.checkpoint_key)
    check_serial(report, cfg.serial, min(timeout, 3.0))
    check_clock(report)


async def doctor_broadcast(report: Report, path: Path, timeout: float) -> None:
    from touchmove.broadcast.tournament import TournamentError, load_tournament

    try:
        t = load_tournament(path)
    except (TournamentError, OSError) as exc:
        report.fail(f"tournament {path}: {exc}", "fix the file (docs/broadcast.md#the-tournament-file: every key)")
        return
    report.ok(f"tournament {path}: round {t.round}, {len(t.current_round().pairings)} boards, "
              f"{len(t.brokers)} broker(s)")
    seen = Seen()
    for b in t.brokers:
        login = Login(b.username, b.password, b.ca_file, b.cert_file, b.key_file)
        working: Endpoint | None = None
        for node in b.endpoints:
            if check_tcp(report, node, timeout) and await check_mqtt(report, node, login, timeout) and not working:
                working = node
        if working is not None:
            await check_bridges(report, working, login, b.bases, timeout, seen)
    paired = [p.board_id for p in t.current_round().pairings]
    check_pairings(report, t.round, paired, seen)
    check_retained(report, paired, seen)
    await check_lichess(report, t, timeout)
    check_folder(report, "output", t.settings.output_dir)
    check_port(report, t.settings.host, t.settings.port)
    check_arbiters(report, t.settings.output_dir, t.settings.token)
    check_clock(report)


def check_arbiters(report: Report, output_dir: Path, shared_token: str | None) -> None:
    """Report who may act in the console: the accounts the broadcaster itself will accept."""
    from touchmove.broadcast.arbiter_book import ArbiterConfigError, accounts_summary, book_for

    try:
        book = book_for(output_dir, shared_token)
    except ArbiterConfigError as exc:
        report.fail(f"arbiters: {exc}", "fix the file, or make it again with `touchmove arbiters add`")
        return
    summary = accounts_summary(book)
    if summary is None:
        report.warn("arbiters: no account, every console action is refused",
                    f"touchmove arbiters add {book.file} NAME --chief (or set TOUCHMOVE_ARBITER_TOKEN)")
    else:
        report.ok(f"arbiters: {summary}")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="a bridge's configuration (on a hall PC)")
    parser.add_argument("--tournament", type=Path, help="the broadcaster's tournament file (on its host)")
    parser.add_argument("--ports", action="store_true",
                        help="list the serial devices with their USB ids and whether a board answers on each")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per network check (default 5)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from touchmove.errors import EXIT_USAGE, CommandError

    if not args.config and not args.tournament and not args.ports:
        raise CommandError("give --config bridge.toml (hall PC), --tournament tournament.toml (broadcaster) "
                           "or --ports (the serial devices)", EXIT_USAGE)
    if not args.timeout > 0:
        raise CommandError(f"--timeout must be a positive number of seconds, not {args.timeout}", EXIT_USAGE)
    for given in (args.config, args.tournament):
        if given is not None and not given.is_file():
            raise CommandError(f"{given}: no such file", EXIT_USAGE)
    report = Report()
    if args.ports:
        from touchmove.bridge.port_report import doctor_ports

        doctor_ports(report, args.config, min(args.timeout, 3.0))

    async def main() -> None:
        if args.config:
            await doctor_bridge(report, args.config, args.timeout)
        if args.tournament:
            await doctor_broadcast(report, args.tournament, args.timeout)

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        return 130
    bad = sum(1 for level, _, _ in report.lines if level == "FAIL")
    warn = sum(1 for level, _, _ in report.lines if level == "warn")
    print(f"{len(report.lines)} checks: {bad} failed, {warn} warnings" + ("" if bad else " - ready"))
    return 1 if report.failed else 0
