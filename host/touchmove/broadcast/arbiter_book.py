"""Named arbiters: one token each, kept only as SHA-256 digests; the chief arbiter can revoke a token at once.

Tokens come from a TOML file (``TOUCHMOVE_ARBITERS_FILE``, or ``arbiters.toml`` in the broadcast's output
directory) and/or the environment (``TOUCHMOVE_ARBITERS``)::

    # arbiters.toml: made by `touchmove arbiters add arbiters.toml "Anna Chief" --chief`
    [[arbiter]]
    name = "Anna Chief"
    role = "chief"
    token_sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

    TOUCHMOVE_ARBITERS="chief:Anna Chief=<token>;Bob Deputy=<token>"   (clear tokens, hashed when read)

The tournament's single ``token`` still works, as an arbiter named ``arbiter`` with the chief's rights.
Revocations live in one place, :func:`revocations_path`: ``arbiters-revoked.json`` beside the tokens file
(the broadcaster's, wherever ``TOUCHMOVE_ARBITERS_FILE`` puts it, and the one ``touchmove arbiters revoke
FILE`` names). They hold across restarts; the file is re-read when it changes, so editing it (or the tokens
file) needs no restart either. A broadcaster whose tokens file is elsewhere than its output directory also
honours the revocations an earlier version wrote there.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from touchmove.private_files import write_private

ARBITERS_ENV = "TOUCHMOVE_ARBITERS"
ARBITERS_FILE_ENV = "TOUCHMOVE_ARBITERS_FILE"
ROLES = ("chief", "arbiter")
#: The revocations' file name, beside the tokens file (:func:`revocations_path`).
REVOKED_NAME = "arbiters-revoked.json"
SHARED_NAME = "arbiter"


def revocations_path(tokens_file: Path) -> Path:
    """Return where the revocations of the arbiters in ``tokens_file`` live (the one place the CLI writes and
    the broadcaster reads them)."""
    return tokens_file.parent / REVOKED_NAME


def digest(token: str) -> str:
    """The SHA-256 hex digest a token is kept as."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Arbiter:
    name: str
    role: str
    token_sha256: str
    source: str

    @property
    def chief(self) -> bool:
        return self.role == "chief"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "role": self.role, "source": self.source}


class ArbiterConfigError(ValueError):
    """A tokens file or environment value that cannot be read."""


def parse_env(value: str) -> list[Arbiter]:
    """``role:Name=token;Name=token`` (role ``chief`` or ``arbiter``, default arbiter)."""
    out = []
    for part in value.split(";"):
        part = part.strip()
        if not part:
            continue
        who, sep, token = part.rpartition("=")
        if not sep or not who.strip() or not token.strip():
            raise ArbiterConfigError(f"{ARBITERS_ENV}: expected [role:]Name=token, got {part.split('=')[0]!r}=...")
        role, colon, name = who.partition(":")
        if not colon or role.strip() not in ROLES:
            role, name = "arbiter", who
        out.append(Arbiter(name.strip(), role.strip(), digest(token.strip()), "env"))
    return out


def parse_file(path: Path) -> list[Arbiter]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ArbiterConfigError(f"{path}: {exc}") from None
    out = []
    for i, item in enumerate(data.get("arbiter", [])):
        if not isinstance(item, dict):
            raise ArbiterConfigError(f"{path}: arbiter {i + 1} is not a table")
        name, role, sha = item.get("name"), item.get("role", "arbiter"), item.get("token_sha256")
        if not isinstance(name, str) or not name.strip():
            raise ArbiterConfigError(f"{path}: arbiter {i + 1} has no name")
        if role not in ROLES:
            raise ArbiterConfigError(f"{path}: arbiter {name!r}: role must be one of {', '.join(ROLES)}")
        if not isinstance(sha, str) or len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha.lower()):
            raise ArbiterConfigError(f"{path}: arbiter {name!r}: token_sha256 must be 64 hex digits")
        out.append(Arbiter(name.strip(), role, sha.lower(), "file"))
    return out


class ArbiterBook:
    """Who may act: looks a token up by digest; revoked digests are refused.

    Making one touches no file: :meth:`read` makes one and reads its files at once (raising
    :class:`ArbiterConfigError` for a bad tokens file); otherwise they are read at the first question. They are
    read again whenever they change."""

    def __init__(self, *, file: Path | None = None, env: str | None = None, shared_token: str | None = None,
                 revoked_path: Path | None = None, also_revoked: tuple[Path, ...] = ()) -> None:
        self.file = file
        self.env = env
        self.shared_token = shared_token
        self.revoked_path = revoked_path
        #: Revocations read but never written (where an earlier version kept them).
        self.also_revoked = also_revoked
        self._arbiters: list[Arbiter] = []
        self._revoked: dict[str, dict[str, Any]] = {}
        self._stamps: tuple[float | None, ...] = ()
        self._read = False

    @classmethod
    def read(cls, *, file: Path | None = None, env: str | None = None, shared_token: str | None = None,
             revoked_path: Path | None = None, also_revoked: tuple[Path, ...] = ()) -> ArbiterBook:
        """Return the book with its files read now (:class:`ArbiterConfigError` for a bad tokens file)."""
        book = cls(file=file, env=env, shared_token=shared_token, revoked_path=revoked_path,
                   also_revoked=also_revoked)
        book._load(force=True)
        return book

    @staticmethod
    def _mtime(path: Path | None) -> float | None:
        if path is None:
            return None
        try:
            return path.stat().st_mtime_ns / 1e9
        except OSError:
            return None

    def _load(self, force: bool = False) -> None:
        force = force or not self._read    # the first reading: a bad tokens file is an error, not an edit
        stamps = self._current_stamps()
        if not force and stamps == self._stamps:
            return
        arbiters: list[Arbiter] = []
        if self.shared_token:
            arbiters.append(Arbiter(SHARED_NAME, "chief", digest(self.shared_token), "config"))
        if self.env:
            arbiters += parse_env(self.env)
        if self.file is not None and self.file.is_file():
            try:
                arbiters += parse_file(self.file)
            except ArbiterConfigError:
                if force:
                    raise
                return  # a half-written edit: keep what was read before
        self._arbiters = arbiters
        self._revoked = {}
        for path in (*self.also_revoked, self.revoked_path):
            if path is not None and path.is_file():
                try:
                    data = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue
                if isinstance(data, dict):
                    self._revoked.update({k: v for k, v in data.items() if isinstance(v, dict)})
        self._stamps = stamps
        self._read = True

    def _current_stamps(self) -> tuple[float | None, ...]:
        return (self._mtime(self.file), self._mtime(self.revoked_path), *map(self._mtime, self.also_revoked))

    @property
    def configured(self) -> bool:
        self._load()
        return bool(self._arbiters)

    def authenticate(self, token: str) -> Arbiter | None:
        """The arbiter holding ``token``; None when unknown or revoked."""
        self._load()
        if not token:
            return None
        given = digest(token)
        found = None
        for a in self._arbiters:
            if hmac.compare_digest(given, a.token_sha256):
                found = a
        if found is None or found.token_sha256 in self._revoked:
            return None
        return found

    def find(self, name: str) -> list[Arbiter]:
        self._load()
        return [a for a in self._arbiters if a.name == name]

    def revoke(self, name: str, by: str, at: str) -> list[Arbiter]:
        """Refuse every token of arbiter ``name`` from now on; return them."""
        found = [a for a in self.find(name) if a.token_sha256 not in self._revoked]
        for a in found:
            self._revoked[a.token_sha256] = {"name": a.name, "by": by, "at": at}
        if found and self.revoked_path is not None:
            write_private(self.revoked_path, json.dumps(self._revoked, indent=1) + "\n")
            self._stamps = self._current_stamps()
        return found

    def active(self) -> list[Arbiter]:
        """Return the arbiters who may act now (revoked ones left out)."""
        self._load()
        return [a for a in self._arbiters if a.token_sha256 not in self._revoked]

    def listing(self) -> list[dict[str, Any]]:
        self._load()
        out = []
        for a in self._arbiters:
            rev = self._revoked.get(a.token_sha256)
            out.append({**a.to_json(), "revoked": rev is not None, **({"revoked_by": rev.get("by"),
                                                                      "revoked_at": rev.get("at")} if rev else {})})
        return out


def file_entry(name: str, role: str, token: str) -> str:
    """A ``[[arbiter]]`` table for the tokens file (the token itself is not written)."""
    return (f"\n[[arbiter]]\nname = {json.dumps(name, ensure_ascii=False)}\nrole = \"{role}\"\n"
            f"token_sha256 = \"{digest(token)}\"\n")


def book_for(output_dir: Path, shared_token: str | None) -> ArbiterBook:
    """Return the arbiters a broadcast writing to ``output_dir`` accepts: ``TOUCHMOVE_ARBITERS_FILE`` or
    ``output_dir/arbiters.toml``, ``TOUCHMOVE_ARBITERS`` and the tournament's shared token (the console, its
    start banner and ``touchmove doctor`` all read them through this)."""
    named = os.environ.get(ARBITERS_FILE_ENV)
    file = Path(named) if named else output_dir / "arbiters.toml"
    revoked = revocations_path(file)
    legacy = output_dir / REVOKED_NAME
    also = (legacy,) if legacy.resolve() != revoked.resolve() else ()
    return ArbiterBook.read(file=file, env=os.environ.get(ARBITERS_ENV), shared_token=shared_token,
                            revoked_path=revoked, also_revoked=also)


def accounts_summary(book: ArbiterBook) -> str | None:
    """Return one line naming the arbiters who may act (revoked ones left out), or None when nobody may."""
    active = [a for a in book.listing() if not a["revoked"]]
    if not active:
        return None
    names = ", ".join(f"{a['name']} ({a['role']})" for a in active[:6]) + (", ..." if len(active) > 6 else "")
    where = f" from {book.file}" if book.file is not None and any(a["source"] == "file" for a in active) else ""
    return f"{len(active)} arbiter account(s){where}: {names}"

