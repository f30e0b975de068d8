"""``touchmove arbiters add|list|revoke FILE``: the arbiters' accounts of a broadcast, one token each.

``add`` prints a new token once (only its SHA-256 digest is written to FILE); ``revoke`` refuses an arbiter's
tokens from now on (written to ``arbiters-revoked.json`` beside FILE: :func:`~.arbiter_book.revocations_path`,
where a running broadcaster whose tokens file is FILE reads them, within a second);
``list`` shows who may act. FILE is the broadcast's ``arbiters.toml`` (in its output folder, see
docs/console.md).
"""

from __future__ import annotations

import argparse
import secrets
import sys
from pathlib import Path

from touchmove.broadcast.arbiter_book import (
    ArbiterBook,
    ArbiterConfigError,
    file_entry,
    parse_file,
    revocations_path,
)
from touchmove.errors import EXIT_USAGE, CommandError
from touchmove.mqtt.wire import iso_now
from touchmove.private_files import append_private

TOKEN_BYTES = 18          # 24 URL-safe characters


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = sub.add_parser("add", help="make a token for an arbiter (printed once) and add its digest to FILE")
    add.add_argument("file", type=Path, metavar="FILE", help="the broadcast's arbiters.toml (made if missing)")
    add.add_argument("name", help="the arbiter's name, as the audit log shows it")
    add.add_argument("--chief", action="store_true", help="the chief arbiter (may revoke tokens)")
    add.set_defaults(handler=add_arbiter)
    listing = sub.add_parser("list", help="the arbiters in FILE and whether each may act")
    listing.add_argument("file", type=Path, metavar="FILE")
    listing.set_defaults(handler=list_arbiters)
    revoke = sub.add_parser("revoke", help="refuse every token of an arbiter from now on")
    revoke.add_argument("file", type=Path, metavar="FILE")
    revoke.add_argument("name")
    revoke.set_defaults(handler=revoke_arbiter)


def _book(path: Path) -> ArbiterBook:
    """Return the accounts of ``path`` (which must exist) with the revocations beside it."""
    if not path.is_file():
        raise CommandError(f"{path}: no such file (make it with `touchmove arbiters add {path} NAME`)", EXIT_USAGE)
    try:
        return ArbiterBook.read(file=path, revoked_path=revocations_path(path))
    except ArbiterConfigError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None


def _name(text: str) -> str:
    name = text.strip()
    if not name:
        raise CommandError("the arbiter's name is empty", EXIT_USAGE)
    if any(ord(c) < 32 for c in name):
        raise CommandError("the arbiter's name has a control character", EXIT_USAGE)
    return name


def add_arbiter(args: argparse.Namespace) -> int:
    """Append a new arbiter's digest to the file; print the token (stdout) once. Return the exit status."""
    name = _name(args.name)
    path: Path = args.file
    if path.exists():
        if not path.is_file():
            raise CommandError(f"{path}: not a file", EXIT_USAGE)
        try:
            known = parse_file(path)
        except ArbiterConfigError as exc:
            raise CommandError(str(exc), EXIT_USAGE) from None
        if any(a.name == name for a in known):
            print(f"touchmove arbiters: note: {name!r} already has a token in {path}; this adds another",
                  file=sys.stderr)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)    # the broadcast's output folder, before its first start
        append_private(path, file_entry(name, "chief" if args.chief else "arbiter", token))
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror}", EXIT_USAGE) from None
    print(token)
    return 0


def list_arbiters(args: argparse.Namespace) -> int:
    """Print one line per arbiter: name, role, whether the account may act. Return the exit status."""
    book = _book(args.file)
    rows = book.listing()
    for row in rows:
        state = f"revoked {row['revoked_at']} by {row['revoked_by']}" if row["revoked"] else "active"
        print(f"{row['name']}\t{row['role']}\t{state}")
    if not rows:
        print(f"touchmove arbiters: {args.file} has no arbiter", file=sys.stderr)
    return 0


def revoke_arbiter(args: argparse.Namespace) -> int:
    """Revoke every token of the named arbiter. Return the exit status (1 when nobody had that name)."""
    name = _name(args.name)
    book = _book(args.file)
    if not book.find(name):
        known = ", ".join(sorted({row["name"] for row in book.listing()})) or "none"
        raise CommandError(f"no arbiter named {name!r} in {args.file} (known: {known})")
    try:
        revoked = book.revoke(name, by="touchmove arbiters revoke", at=iso_now())
    except OSError as exc:
        raise CommandError(f"cannot write {revocations_path(args.file)}: {exc.strerror}", EXIT_USAGE) from None
    if revoked:
        print(f"{name}: {len(revoked)} token(s) revoked (a running broadcast refuses them now)")
    else:
        print(f"{name}: already revoked")
    return 0
