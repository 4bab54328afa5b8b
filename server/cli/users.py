"""``python -m server users …``: the password accounts of ``--auth password``.

    python -m server users add NAME [--db PATH] [--password-stdin]
    python -m server users set-password NAME [--db PATH] [--password-stdin]
    python -m server users remove NAME [--db PATH]
    python -m server users list [--db PATH]

Passwords are asked twice on the terminal (or read from one line of standard input with
``--password-stdin``, for scripts) and stored as argon2id hashes; removing a user ends their
sessions and deletes their chats.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import re
import sys
from pathlib import Path

from server.config import REPO_ROOT
from server.http.auth import NAME_PATTERN
from server.http.passwords import hash_password
from server.store.db import Database, is_postgres_url, open_database
from server.store.users import account_names, ensure_user, find_user, remove_user, set_password

MIN_PASSWORD = 8


class UsersError(Exception):
    """A command that cannot be done; the message says why."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m server users", description=__doc__)
    p.add_argument("action", choices=["add", "set-password", "remove", "list"])
    p.add_argument("name", nargs="?")
    p.add_argument("--db", default=str(REPO_ROOT / ".cache" / "riacho.db"))
    p.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    return p


def run(argv: list[str]) -> int:
    """Run one command; prints what it did (or why not) and returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        message = asyncio.run(_dispatch(args))
    except UsersError as error:
        print(f"users: {error}", file=sys.stderr)
        return 1
    print(message)
    return 0


async def _dispatch(args: argparse.Namespace) -> str:
    if not is_postgres_url(args.db):
        Path(args.db).parent.mkdir(parents=True, exist_ok=True)
    db = open_database(args.db)
    await db.open()
    try:
        if args.action == "list":
            return "\n".join(await account_names(db)) or "(no accounts)"
        name = _name(args.name)
        if args.action == "remove":
            return await _remove(db, name)
        return await _set_password(db, name, _password(args.password_stdin), args.action == "add")
    finally:
        await db.close()


def _name(name: str | None) -> str:
    if name is None or not re.fullmatch(NAME_PATTERN, name):
        raise UsersError("a NAME of 1-64 letters, digits, '_', '.' or '-' is needed")
    return name


def _password(from_stdin: bool) -> str:
    if from_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass("Password: ")
        if getpass.getpass("Again: ") != password:
            raise UsersError("the two passwords differ")
    if len(password) < MIN_PASSWORD:
        raise UsersError(f"a password needs at least {MIN_PASSWORD} characters")
    return password


async def _set_password(db: Database, name: str, password: str, adding: bool) -> str:
    found = await find_user(db, name)
    if adding and found is not None and found[1] is not None:
        raise UsersError(f"{name} already has an account (use set-password)")
    if not adding and (found is None or found[1] is None):
        raise UsersError(f"{name} has no account (use add)")
    user_id = await ensure_user(db, name)
    await set_password(db, user_id, hash_password(password))
    return f"{name}: account {'added' if adding else 'password changed'}"


async def _remove(db: Database, name: str) -> str:
    found = await find_user(db, name)
    if found is None:
        raise UsersError(f"there is no user {name}")
    await remove_user(db, found[0])
    return f"{name}: removed, with their chats"
