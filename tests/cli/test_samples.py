"""``touchmove init``: the samples are the documentation's samples, and each runs as written (only the
broker's address is pointed at the test's own Mosquitto, and the dashboard at a free port)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from tests.cli.conftest import REPO, one_line_error
from touchmove.cli import main
from touchmove.samples import SAMPLES
from touchmove.sim.local_broker import LocalBroker

DOCS = {"bridge": REPO / "docs" / "bridge.md", "tournament": REPO / "docs" / "broadcast.md"}
BLOCK = re.compile(r"(<!-- sample: (\w+) -->\n)(.*?)(<!-- end of sample -->)", re.S)


def doc_block(kind: str) -> str:
    return "\n" + textwrap.indent(SAMPLES[kind][0], "    ") + "\n"


def test_the_docs_show_the_samples() -> None:
    """The docs' samples are the ones ``init`` writes; TOUCHMOVE_UPDATE_DOCS=1 rewrites them from the source."""
    for kind, page in DOCS.items():
        text = page.read_text(encoding="utf-8")
        if os.environ.get("TOUCHMOVE_UPDATE_DOCS") == "1":
            text = BLOCK.sub(lambda m: m[1] + doc_block(m[2]) + m[4], text)
            page.write_text(text, encoding="utf-8")
        blocks = {m[2]: m[3] for m in BLOCK.finditer(text)}
        assert blocks.get(kind) == doc_block(kind), (
            f"{page.name}: the {kind} sample differs from touchmove.samples "
            "(TOUCHMOVE_UPDATE_DOCS=1 pytest tests/cli/test_samples.py rewrites it)")


def test_init_writes_refuses_to_overwrite_and_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init", "bridge"]) == 0
    assert (tmp_path / "bridge.toml").read_text() == SAMPLES["bridge"][0]
    assert "touchmove run --config bridge.toml" in capsys.readouterr().out
    assert main(["init", "bridge"]) == 2   # a file given that cannot be used: a usage error
    assert "exists" in one_line_error(capsys.readouterr().err)
    assert main(["init", "bridge", "--force"]) == 0
    assert main(["init", "tournament", "-"]) == 0
    assert capsys.readouterr().out.endswith(SAMPLES["tournament"][0])
    assert main(["init", "nonsense"]) == 2


def pointed_at(text: str, broker: LocalBroker) -> str:
    """The sample with its one broker URL replaced by the test broker's."""
    out, n = re.subn(r'url = "mqtt://127\.0\.0\.1:1883"', f'url = "{broker.url}"', text)
    assert n == 1
    return out


def wait_for_line(proc: subprocess.Popen[str], needle: str, timeout: float = 60) -> list[str]:
    assert proc.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} never came: {''.join(seen)}")


def bridge_state(broker: LocalBroker, timeout: float = 60) -> object:
    """Return the retained ``touchmove/bridge/state`` payload once the bridge has published it."""
    import aiomqtt

    async def wait() -> object:
        async with asyncio.timeout(timeout), aiomqtt.Client(broker.host, broker.port) as client:
            await client.subscribe("touchmove/bridge/state", qos=1)
            async for message in client.messages:
                payload = message.payload if isinstance(message.payload, bytes) else b"{}"
                return json.loads(payload)
        return None

    return asyncio.run(wait())


def test_the_samples_run_as_written(tmp_path: Path, broker: LocalBroker) -> None:
    """Both samples in a fresh folder: the bridge creates its journal folder and comes online on the broker;
    the broadcaster serves the dashboard and the round PGN; Ctrl-C stops both with 130 and no traceback."""
    for text, name in SAMPLES.values():
        (tmp_path / name).write_text(pointed_at(text, broker))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    bridge = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "run", "--config", "bridge.toml"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    caster = subprocess.Popen([sys.executable, "-m", "touchmove.cli", "broadcast", "--config", "tournament.toml",
                               "--port", "0"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env=env)
    try:
        assert bridge_state(broker) == {"state": "online"}
        dashboard = next(line.split()[-1] for line in wait_for_line(caster, "round PGN") if "dashboard" in line)
        pgn_url = dashboard.rstrip("/") + "/round/3.pgn"
        with urllib.request.urlopen(dashboard, timeout=10) as page:
            assert page.status == 200
        with urllib.request.urlopen(dashboard.rstrip("/") + "/api/state", timeout=10) as state:
            assert "Touchmove Open 2026" in json.dumps(json.load(state))
        with urllib.request.urlopen(pgn_url, timeout=10) as pgn:
            assert pgn.status == 200
        assert (tmp_path / "journal" / "touchmove.sqlite3").exists()
        assert (tmp_path / "broadcast").is_dir()
    finally:
        for proc in (bridge, caster):
            proc.send_signal(signal.SIGINT)
    for proc in (bridge, caster):
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 130, out
        assert "Traceback" not in out
