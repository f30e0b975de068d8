"""Engine checkpoints: a board's rules engine as bytes, signed so that only this installation's own are read back.

A checkpoint is the engine pickled (its state is large: every game's plies, positions and pending hypotheses;
pickling it takes about 0.2 ms). Unpickling runs whatever the bytes say, so a journal from elsewhere (a copy
sent for review, a file replaced on a shared disk) must never be unpickled on trust. Each checkpoint therefore
carries an HMAC-SHA256 made with this installation's *checkpoint key*, a random secret kept in a file of its own,
outside the journal (:func:`key_path`). A checkpoint is unpickled only after :meth:`CheckpointKey.verify` has
checked its MAC with :func:`hmac.compare_digest`; one that fails (no key, another machine's key, a forged or
altered checkpoint, one written before checkpoints were signed) is ignored and the board's journal is replayed
from its start instead, which gives the same engine (the engine is deterministic): nothing is lost, it is slower.

A checkpoint is also only valid for the exact rules code that wrote it (an engine of another version may have
other attributes), so each one carries :func:`fingerprint`, a hash of the rules package and the record format,
python-chess's version and Python's; a checkpoint with another fingerprint is ignored in the same way.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import os
import pickle
import secrets
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

import chess

from touchmove.rules import Engine

#: the touchmove package (this module is in its bridge/): the fingerprint hashes its rules, records and values
_PACKAGE = Path(__file__).resolve().parent.parent

#: The environment variable naming the checkpoint key file (the bridge's ``[journal] checkpoint_key`` wins).
KEY_ENV = "TOUCHMOVE_CHECKPOINT_KEY"
#: Random bytes in a new key (written as hex).
KEY_BYTES = 32
_DOMAIN = b"touchmove checkpoint v2\0"


class CheckpointKeyError(Exception):
    """The checkpoint key file cannot be created or read, or is not a key; ``str()`` is one line."""


class CheckpointRejected(ValueError):
    """A checkpoint that is not read back (why, in a few words); the journal is replayed instead."""


@functools.cache
def fingerprint() -> str:
    """Return a short hash of the code an engine checkpoint depends on."""
    digest = hashlib.sha256()
    files = [*sorted((_PACKAGE / "rules").glob("*.py")), _PACKAGE / "records.py", _PACKAGE / "values.py"]
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    digest.update(f"{chess.__version__} {sys.version_info[:2]} {pickle.HIGHEST_PROTOCOL}".encode())
    return digest.hexdigest()[:16]


def key_path(configured: str | None = None) -> Path:
    """Return where the checkpoint key lives: ``configured`` (the bridge's ``[journal] checkpoint_key``), else
    ``$TOUCHMOVE_CHECKPOINT_KEY``, else ``$XDG_STATE_HOME/touchmove/checkpoint.key`` (``~/.local/state/...``).

    Never derived from the journal's path: a key that came with a journal would vouch for that journal.
    """
    chosen = configured or os.environ.get(KEY_ENV)
    if chosen:
        return Path(os.path.expandvars(chosen)).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "touchmove" / "checkpoint.key"


@dataclass(frozen=True)
class CheckpointKey:
    """This installation's secret for signing checkpoints, and the file it came from."""

    secret: bytes
    path: str

    def sign(self, board: str, code: str, settle_ms: int, event_seq: int, state: bytes, after_entry: int = 0,
             headers: dict[str, str] | None = None) -> str:
        """Return the MAC of a checkpoint: its board, code fingerprint, settle time, event count, the last journal
        entry it includes, its PGN headers and its bytes (every column a restart or an export believes)."""
        tags = json.dumps(headers or {}, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        head = f"{board}\0{code}\0{settle_ms}\0{event_seq}\0{after_entry}\0{tags}\0".encode()
        return hmac.new(self.secret, _DOMAIN + head + state, hashlib.sha256).hexdigest()

    def verify(self, board: str, code: str, settle_ms: int, event_seq: int, state: bytes, mac: str | None,
               after_entry: int = 0, headers: dict[str, str] | None = None) -> bool:
        """Return whether ``mac`` is this key's MAC of the checkpoint (in constant time)."""
        if not isinstance(mac, str):
            return False
        return hmac.compare_digest(self.sign(board, code, settle_ms, event_seq, state, after_entry, headers).encode(),
                                   mac.encode("ascii", "replace"))


def ensure_key(path: Path) -> CheckpointKey:
    """Return the key in ``path``, made first when missing (0600, in a 0700 folder): the bridge's key.

    Raise :class:`CheckpointKeyError` when the file cannot be made or read, is writable by others (anyone who
    can change it can make this program unpickle their bytes), or does not hold a key.
    """
    if not path.exists():
        _create_key(path)
    key = find_key(path)
    if key is None:
        raise CheckpointKeyError(f"checkpoint key {path} vanished while it was created")
    return key


def find_key(path: Path) -> CheckpointKey | None:
    """Return the key in ``path``, or None when there is none (nothing is created): a reader's key.

    Raise :class:`CheckpointKeyError` as :func:`ensure_key` does.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CheckpointKeyError(f"cannot read the checkpoint key {path} ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if os.name == "posix" and info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise CheckpointKeyError(f"the checkpoint key {path} is writable by others; make it 0600 "
                                     f"(chmod 600 {path})")
        text = fh.read(4096)
    try:
        secret = bytes.fromhex(text.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        secret = b""
    if len(secret) < 16:
        raise CheckpointKeyError(f"{path} does not hold a checkpoint key (at least 32 hex digits expected); "
                                 f"delete it to have a new one made")
    return CheckpointKey(secret, str(path))


def _create_key(path: Path) -> None:
    """Write a new random key to ``path`` atomically (a key another process wrote meanwhile is kept)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as fh:
                fh.write(secrets.token_hex(KEY_BYTES) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)          # never replaces a key that is already there
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    except OSError as exc:
        raise CheckpointKeyError(f"cannot create the checkpoint key {path} ({exc.strerror or exc}); set "
                                 f"[journal] checkpoint_key or {KEY_ENV} to a file this user may write") from None


def dump(engine: Engine) -> bytes:
    """Return an engine as checkpoint bytes (sign them with :meth:`CheckpointKey.sign`)."""
    return pickle.dumps(engine, protocol=pickle.HIGHEST_PROTOCOL)


def load(key: CheckpointKey | None, board: str, code: str, settle_ms: int, event_seq: int, state: bytes,
         mac: str | None, after_entry: int = 0, headers: dict[str, str] | None = None) -> Engine:
    """Return the engine of an authentic checkpoint; raise :class:`CheckpointRejected` (nothing unpickled) when
    there is no key, the MAC does not match, or it was written by other code."""
    if key is None:
        raise CheckpointRejected("no checkpoint key to verify it with")
    if mac is None:
        raise CheckpointRejected("it is not signed (written before checkpoints were)")
    if not key.verify(board, code, settle_ms, event_seq, state, mac, after_entry, headers):
        raise CheckpointRejected(f"its signature does not match the checkpoint key {key.path} (a journal from "
                                 f"another installation, or altered)")
    if code != fingerprint():
        raise CheckpointRejected("written by other rules code")
    try:
        engine = pickle.loads(state)  # authenticated above: written by this installation
    except Exception as exc:
        raise CheckpointRejected(f"unreadable ({exc})") from None
    if not isinstance(engine, Engine):
        raise CheckpointRejected(f"it holds a {type(engine).__name__}, not an engine")
    return engine
