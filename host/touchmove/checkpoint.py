"""Engine checkpoints: a board's rules engine as bytes, and the fingerprint of the code that can read them back.

A checkpoint is the engine pickled. It is only valid for the exact rules code that wrote it (an engine of another
version may have other attributes), so each one carries :func:`fingerprint`, a hash of the rules package and
the record format, python-chess's version and Python's; a checkpoint with another fingerprint is ignored and the
journal replayed from its start instead. The journal is trusted like the program itself (only the bridge
writes it): pickle is not for data from elsewhere.
"""

from __future__ import annotations

import functools
import hashlib
import pickle
import sys
from pathlib import Path

import chess

from touchmove.rules import Engine

_PACKAGE = Path(__file__).resolve().parent


@functools.cache
def fingerprint() -> str:
    """Return a short hash of the code an engine checkpoint depends on."""
    digest = hashlib.sha256()
    files = [*sorted((_PACKAGE / "rules").glob("*.py")), _PACKAGE / "records.py"]
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    digest.update(f"{chess.__version__} {sys.version_info[:2]} {pickle.HIGHEST_PROTOCOL}".encode())
    return digest.hexdigest()[:16]


def dump(engine: Engine) -> bytes:
    """Return an engine as checkpoint bytes."""
    return pickle.dumps(engine, protocol=pickle.HIGHEST_PROTOCOL)


def load(state: bytes) -> Engine:
    """Return the engine in checkpoint bytes, or raise ValueError."""
    try:
        engine = pickle.loads(state)  # written by this program into its own journal
    except Exception as exc:
        raise ValueError(f"unreadable checkpoint ({exc})") from None
    if not isinstance(engine, Engine):
        raise ValueError(f"a checkpoint holds a {type(engine).__name__}, not an engine")
    return engine
