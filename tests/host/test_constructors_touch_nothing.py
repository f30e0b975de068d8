"""Making an object touches no file, socket or database: the I/O waits for its ``open``/``start``/``read``.

Every path given to a constructor here is inside the test's folder and is missing, unwritable or a file that
cannot be read as what it should be (a CA that is not a certificate, a broken tokens file). The constructor
must raise nothing, leave the folder as it was, and open, list, make or connect nothing there (Python's audit
events); the errors come from the step that does the I/O, in one line.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.broadcast.broadcast_helpers import tournament_data
from touchmove import config as bridge_config
from touchmove.boards import translator_for
from touchmove.boards.link import BoardLink
from touchmove.bridge.daemon import Bridge
from touchmove.bridge.journal_lock import JournalLock
from touchmove.bridge.seq_floor import SeqFloor
from touchmove.broadcast.arbiter_book import ArbiterBook, ArbiterConfigError
from touchmove.broadcast.audit import AuditLog
from touchmove.broadcast.broadcaster import Broadcaster
from touchmove.broadcast.event_archive import EventArchive
from touchmove.broadcast.lichess_push import TokenSource
from touchmove.broadcast.service import BroadcastService
from touchmove.broadcast.tournament import LICHESS_TOKEN_ENV, Tournament, TournamentError, parse_tournament
from touchmove.serial.link import SerialLink
from touchmove.sim.local_broker import LocalBroker
from touchmove.sim.natscluster import NatsCluster

#: The audit events of touching a file, a folder, a socket or a database.
TOUCHING = frozenset({"open", "os.mkdir", "os.listdir", "os.scandir", "os.remove", "os.rename", "os.chmod",
                      "os.truncate", "os.utime", "shutil.rmtree", "socket.bind", "socket.connect", "sqlite3.connect"})

_watched: list[tuple[str, tuple[Any, ...]]] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _watched is not None and event in TOUCHING:
        _watched.append((event, args))


sys.addaudithook(_audit)   # for the whole session (a hook cannot be removed); it records only inside touches()


@contextmanager
def touches(folder: Path) -> Iterator[list[str]]:
    """Record what the block touches in ``folder`` (a socket or a database anywhere)."""
    global _watched
    seen: list[tuple[str, tuple[Any, ...]]] = []
    _watched = seen
    found: list[str] = []
    try:
        yield found
    finally:
        _watched = None
    inside = str(folder)
    for event, args in seen:
        target = args[0] if args else None
        if event.startswith(("socket.", "sqlite3.")) or (
                isinstance(target, str | bytes | os.PathLike) and os.fsdecode(target).startswith(inside)):
            found.append(f"{event} {args[0] if args else ''}")


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def broken_files(folder: Path) -> dict[str, Path]:
    """A CA file that is not a certificate, a tokens file that is not TOML, and paths that do not exist or cannot
    be made (below a file)."""
    (folder / "ca.pem").write_text("not a certificate\n")
    (folder / "arbiters.toml").write_text("[[arbiter\n")
    (folder / "a-file").write_text("not a folder\n")
    return {"ca": folder / "ca.pem", "tokens": folder / "arbiters.toml", "unmakeable": folder / "a-file" / "out",
            "missing": folder / "missing" / "deeper"}


def tournament(folder: Path, files: dict[str, Path], **broadcast: Any) -> Tournament:
    data = tournament_data(2, out=files["missing"] / "out")
    data["broadcast"].update(broadcast)
    return parse_tournament(data)


def constructed_without_touching(folder: Path, make: Callable[[], object]) -> object:
    before = tree(folder)
    with touches(folder) as found:
        made = make()
    assert found == [], f"{type(made).__name__} touched {found}"
    assert tree(folder) == before
    return made


def test_the_broadcast_service_reads_nothing_until_it_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LICHESS_TOKEN_ENV, raising=False)
    files = broken_files(tmp_path)
    cases: list[tuple[Tournament, str]] = [
        (tournament(tmp_path, files, output_dir=str(files["unmakeable"])), "is not writable"),
        (parse_tournament({**tournament_data(2, out=files["missing"]),
                           "brokers": [{"url": "mqtts://127.0.0.1:8883", "ca_file": str(files["ca"])}]}),
         "TLS files"),
        (tournament(tmp_path, files, lichess_round="abcd1234", lichess_token_file=str(files["missing"] / "token")),
         "there is no token"),
    ]
    for t, message in cases:
        svc = constructed_without_touching(tmp_path, functools.partial(BroadcastService, t, port=0, svg_workers=0))
        assert isinstance(svc, BroadcastService)
        with pytest.raises(TournamentError) as info:
            asyncio.run(svc.start(wait_mqtt=None))
        assert message in str(info.value) and "\n" not in str(info.value)
        assert not svc.hub.opened
    constructed_without_touching(tmp_path, lambda: Broadcaster(cases[0][0]))
    constructed_without_touching(tmp_path, lambda: TokenSource(None, files["tokens"]))


def test_the_console_files_are_read_by_read_not_by_the_constructors(tmp_path: Path) -> None:
    files = broken_files(tmp_path)
    book = constructed_without_touching(tmp_path, lambda: ArbiterBook(
        file=files["tokens"], revoked_path=files["missing"] / "revoked.json", shared_token="s3cret"))
    assert isinstance(book, ArbiterBook)
    with pytest.raises(ArbiterConfigError, match=r"arbiters\.toml"):
        ArbiterBook.read(file=files["tokens"])
    with pytest.raises(ArbiterConfigError, match=r"arbiters\.toml"):
        book.authenticate("s3cret")          # read at the first question: still an error, not an empty book
    log = constructed_without_touching(tmp_path, lambda: AuditLog(files["missing"] / "audit.jsonl"))
    assert isinstance(log, AuditLog) and log.entries == []
    constructed_without_touching(tmp_path, lambda: EventArchive(files["missing"] / "console.jsonl"))


def test_the_bridge_and_its_links_open_nothing_until_opened(tmp_path: Path) -> None:
    files = broken_files(tmp_path)
    journal = files["missing"] / "journal.sqlite3"
    cfg = bridge_config.from_dict({
        "mqtt": {"url": "mqtts://127.0.0.1:8883", "ca_file": str(files["ca"])},
        "journal": {"path": str(journal), "checkpoint_key": str(files["missing"] / "key")},
        "serial": {"ports": [str(files["missing"] / "ttyACM*")]},
    })
    bridge = constructed_without_touching(tmp_path, lambda: Bridge(cfg))
    assert isinstance(bridge, Bridge)
    constructed_without_touching(tmp_path, lambda: JournalLock(journal))
    constructed_without_touching(tmp_path, lambda: SeqFloor(journal))
    port = str(files["missing"] / "hidraw0")
    constructed_without_touching(tmp_path, lambda: SerialLink(port, 115200, lambda *_: None, lambda *_: None))
    constructed_without_touching(tmp_path, lambda: BoardLink(port, translator_for("chessnut", port),
                                                             lambda *_: None, lambda *_: None))
    bridge.open()                            # opening is what makes the journal (and its folder)
    try:
        assert journal.exists()
    finally:
        bridge.close()


def test_the_simulations_brokers_choose_their_ports_when_they_start(tmp_path: Path) -> None:
    broker = constructed_without_touching(tmp_path, LocalBroker)
    assert isinstance(broker, LocalBroker) and broker.port == 0          # a free one is chosen by start()
    cluster = constructed_without_touching(tmp_path, lambda: NatsCluster(3, workdir=tmp_path / "missing"))
    assert isinstance(cluster, NatsCluster) and cluster.nodes == [] and cluster.mqtt_urls == []


def test_the_recorder_sees_a_constructor_that_reads(tmp_path: Path) -> None:
    """The check itself: a constructor that reads its file, as AuditLog's did, is caught."""
    class ReadsInInit:
        def __init__(self, path: Path) -> None:
            self.text = path.read_text() if path.exists() else ""

    (tmp_path / "there").write_text("x")
    with pytest.raises(AssertionError, match="touched"):
        constructed_without_touching(tmp_path, lambda: ReadsInInit(tmp_path / "there"))
