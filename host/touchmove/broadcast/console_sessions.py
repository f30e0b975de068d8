"""The console's session cookie: what ``POST /api/auth`` gives a browser for the private console's live views
(an ``EventSource`` sends no ``Authorization`` header), holding no token.

The cookie is ``<nonce>.<mac>``: a random nonce and HMAC-SHA256 over it and the arbiter's token digest, under
a key of the broadcast's own (``console-session.key`` in the output directory, 0600, made at the first
``/api/auth``). Checking it tries each arbiter who may act now, so a session dies with its arbiter's
revocation, and every session dies with the key (delete the file and restart). A restart keeps them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from pathlib import Path

from touchmove.broadcast.arbiter_book import Arbiter, ArbiterBook
from touchmove.private_files import write_private

KEY_NAME = "console-session.key"
NONCE_BYTES = 18


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


class ConsoleSessions:
    """Issue and check session cookies under the key at ``key_path`` (read or made at the first use)."""

    def __init__(self, key_path: Path) -> None:
        self.key_path = key_path
        self._key: bytes | None = None

    def _secret(self, create: bool) -> bytes | None:
        if self._key is None:
            try:
                text = self.key_path.read_text(encoding="ascii").strip()
                self._key = bytes.fromhex(text) if len(text) >= 64 else None
            except (OSError, ValueError):
                self._key = None
            if self._key is None and create:
                key = secrets.token_bytes(32)
                self.key_path.parent.mkdir(parents=True, exist_ok=True)
                write_private(self.key_path, key.hex() + "\n")
                self._key = key
        return self._key

    def _mac(self, key: bytes, nonce: str, token_sha256: str) -> str:
        return _b64(hmac.new(key, f"{nonce}.{token_sha256}".encode(), hashlib.sha256).digest())

    def issue(self, arbiter: Arbiter) -> str:
        """Return a new cookie value for ``arbiter`` (OSError when the key cannot be written)."""
        key = self._secret(create=True)
        assert key is not None
        nonce = _b64(secrets.token_bytes(NONCE_BYTES))
        return f"{nonce}.{self._mac(key, nonce, arbiter.token_sha256)}"

    def arbiter(self, cookie: str, book: ArbiterBook) -> Arbiter | None:
        """Return the arbiter a cookie was issued to while he may still act, else None."""
        nonce, dot, mac = cookie.partition(".")
        if not dot or not nonce or not mac or len(cookie) > 200:
            return None
        key = self._secret(create=False)
        if key is None:
            return None
        found = None
        for candidate in book.active():
            if hmac.compare_digest(mac, self._mac(key, nonce, candidate.token_sha256)):
                found = candidate
        return found
