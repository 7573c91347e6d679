"""The users file of IDEMDASH_AUTH=basic (``name:role:hash`` lines) and the password check against it."""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from werkzeug.security import check_password_hash, generate_password_hash

from idemdash.core.settings import ConfigError

log = logging.getLogger(__name__)

VIEWER = "viewer"
OPERATOR = "operator"
ROLES = (VIEWER, OPERATOR)

_USER_NAME = re.compile(r"^[^\s:]{1,200}$")
# What werkzeug.security.generate_password_hash produces: method$salt$hexdigest
_PASSWORD_HASH = re.compile(r"^(scrypt|pbkdf2):[^$\s]+\$[^$\s]+\$[0-9a-f]+$")


@dataclass(frozen=True)
class Account:
    name: str
    role: str
    password_hash: str


def hash_method(password_hash: str) -> str:
    """The method and work factor of a werkzeug hash: ``scrypt:32768:8:1``, ``pbkdf2:sha256:600000``."""
    return password_hash.split("$", 1)[0]


def valid_user_name(name: str) -> bool:
    return bool(_USER_NAME.match(name))


def parse_users(text: str, source: str = "users file") -> dict[str, Account]:
    """``name:role:hash`` a line; blank lines and ``#`` comments ignored. ConfigError names the line."""
    accounts: dict[str, Account] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{source}, line {number}"
        name, sep1, rest = line.partition(":")
        role, sep2, password_hash = rest.partition(":")
        if not (sep1 and sep2):
            raise ConfigError(f"{where}: expected name:role:hash (make the hash with `idemdash hash-password`)")
        if not valid_user_name(name):
            raise ConfigError(f"{where}: user name {name!r} must be 1-200 characters without spaces or ':'")
        if role not in ROLES:
            raise ConfigError(f"{where}: role must be viewer or operator, got {role!r}")
        if not _PASSWORD_HASH.match(password_hash):
            raise ConfigError(
                f"{where}: the password hash is not one werkzeug makes (scrypt:… or pbkdf2:…); "
                "make it with `idemdash hash-password`, never put a plain password here"
            )
        if name in accounts:
            raise ConfigError(f"{where}: user {name!r} appears twice")
        accounts[name] = Account(name, role, password_hash)
    if not accounts:
        raise ConfigError(f"{source} lists no users, so nobody could sign in")
    return accounts


def load_users(path: str) -> dict[str, Account]:
    if not path:
        raise ConfigError(
            "IDEMDASH_AUTH=basic needs IDEMDASH_USERS_FILE: a file of name:role:hash lines (see docs/security.md)"
        )
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"IDEMDASH_USERS_FILE: {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"IDEMDASH_USERS_FILE: cannot read {path}: {exc}") from None
    return parse_users(text, f"IDEMDASH_USERS_FILE {path}")


class PasswordCheck:
    """Checks Basic credentials; remembers recent successes so polling panels do not pay scrypt every time.

    Only an HMAC of name and password under a per-process random key is kept, never the password.
    """

    MAX_REMEMBERED = 256

    def __init__(self, accounts: Mapping[str, Account]) -> None:
        self.accounts = dict(accounts)
        self._key = secrets.token_bytes(32)
        self._ok: OrderedDict[bytes, str] = OrderedDict()
        self._lock = threading.Lock()
        # An unknown user costs as much as a wrong password: no user-name oracle through timing. So the stand-in
        # hash has the users' own method and work factor (werkzeug's default differs from pbkdf2 lines in cost).
        methods = Counter(hash_method(account.password_hash) for account in self.accounts.values())
        if len(methods) > 1:
            log.warning(
                "IDEMDASH_USERS_FILE mixes password hash methods (%s): an unknown user name costs what %s "
                "does, so timing tells the users of the others apart; make every line with "
                "`idemdash hash-password`",
                ", ".join(sorted(methods)),
                methods.most_common(1)[0][0],
            )
        self.stand_in_method = methods.most_common(1)[0][0] if methods else "scrypt"
        self._dummy = generate_password_hash(secrets.token_hex(16), method=self.stand_in_method)

    def check(self, name: str, password: str) -> Account | None:
        account = self.accounts.get(name)
        digest = hmac.new(self._key, f"{name}\0{password}".encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
        with self._lock:
            if account is not None and self._ok.get(digest) == name:
                self._ok.move_to_end(digest)
                return account
        try:
            ok = check_password_hash(account.password_hash if account else self._dummy, password)
        except (UnicodeError, ValueError):
            ok = False
        if not ok or account is None:
            return None
        with self._lock:
            self._ok[digest] = name
            while len(self._ok) > self.MAX_REMEMBERED:
                self._ok.popitem(last=False)
        return account
