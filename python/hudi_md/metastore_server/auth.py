"""API tokens: ``hmd_<key id>_<secret>``, of which the database keeps the key id, a random salt and
HMAC-SHA256(salt, secret).

The secret is 256 random bits, so nobody guesses it from its hash whatever the hash's speed: a fast
keyed hash (not a password hash such as scrypt) keeps every write request cheap while a leaked
database still yields no usable token. The key id only finds the row; comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timezone

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from hudi_md.metastore_server import schema as S
from hudi_md.metastore_server.db import write_tx

PREFIX = "hmd"


def _digest(salt: str, secret: str) -> str:
    return hmac.new(bytes.fromhex(salt), secret.encode("utf-8"), hashlib.sha256).hexdigest()


def create_token(engine: Engine, name: str = "") -> str:
    """A new token, stored hashed; the only time its secret is seen."""
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    salt = secrets.token_hex(16)
    with write_tx(engine) as conn:
        conn.execute(
            S.api_token.insert().values(
                key_id=key_id,
                name=name[:128],
                salt=salt,
                hash=_digest(salt, secret),
                create_time=datetime.now(timezone.utc),
                revoked=False,
            )
        )
    return f"{PREFIX}_{key_id}_{secret}"


def verify_token(conn: Connection, token: str) -> bool:
    prefix, _, rest = token.partition("_")
    key_id, _, secret = rest.partition("_")
    if prefix != PREFIX or not key_id or not secret or len(token) > 256:
        return False
    row = conn.execute(
        sa.select(S.api_token.c.salt, S.api_token.c.hash).where(
            S.api_token.c.key_id == key_id, S.api_token.c.revoked == sa.false()
        )
    ).first()
    if row is None:
        # Same work as for a known key id, so timing does not tell which key ids exist.
        hmac.compare_digest(_digest("00" * 16, secret), "0" * 64)
        return False
    return hmac.compare_digest(_digest(row.salt, secret), row.hash)
