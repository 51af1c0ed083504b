"""The controller API's per-fabric secret: a random token in a root-only file (mode 0600 under
/run/mrclab), written by the fabric before the controller starts and removed at teardown.

Whoever can read the file (root) can drive the fabric; nobody else can, since every request
must carry it (header `Authorization: Bearer <token>`, compared in constant time). A user who
was handed the token can pass it in MRCLAB_API_TOKEN instead of reading the file.
"""
from __future__ import annotations

import hmac
import os
import secrets

RUN_DIR = "/run/mrclab"
TOKEN_ENV = "MRCLAB_API_TOKEN"
HEADER = "Authorization"
SCHEME = "Bearer "


class TokenError(RuntimeError):
    """The token file could not be written or read; the message says what to do."""


def token_path(api_port: int, run_dir: str = RUN_DIR) -> str:
    return os.path.join(run_dir, f"api-token-{int(api_port)}")


def write_new_token(path: str) -> str:
    """Replace `path` with a fresh token, created 0600 without following a link; the token."""
    token = secrets.token_hex(32)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, token.encode())
    finally:
        os.close(fd)
    return token


def read_token(path: str) -> str:
    """The token from MRCLAB_API_TOKEN, else from `path`; TokenError says who may read it."""
    env = os.environ.get(TOKEN_ENV)
    if env:
        return env.strip()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            text = os.read(fd, 256).decode("ascii", errors="replace").strip()
        finally:
            os.close(fd)
    except FileNotFoundError:
        raise TokenError(f"no API token at {path} (a fabric writes it when it starts)") from None
    except PermissionError:
        raise TokenError(f"cannot read the API token {path} (root only): drive the fabric as "
                         f"root, or set {TOKEN_ENV} to the token root gives you") from None
    except OSError as err:
        raise TokenError(f"cannot read the API token {path}: {err.strerror}") from None
    if not text:
        raise TokenError(f"API token file {path} is empty")
    return text


def header_value(token: str) -> str:
    return SCHEME + token


def authorized(header: str | None, token: str) -> bool:
    """True when `header` is "Bearer <token>" (constant-time comparison of the secret)."""
    if not header or not header.startswith(SCHEME):
        return False
    return hmac.compare_digest(header[len(SCHEME):].strip().encode(), token.encode())


def remove_token(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
