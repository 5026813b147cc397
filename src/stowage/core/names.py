"""Handles, filenames, storage paths and containers: made safe once, here.

The normalised value is the one that is authorised against a policy and the
one that is stored, so a policy can never be bypassed by an encoding trick.
"""

from __future__ import annotations

import re
import secrets
import string
import unicodedata

from stowage import errors

HANDLE_RE = re.compile(r"^[A-Za-z0-9_-]{20}$")
CONTAINER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
MAX_COMPONENT_BYTES = 255
MAX_PATH_BYTES = 1024
MAX_FILENAME_BYTES = 200  # leaves room for the unique id prefix inside one path component
WINDOWS_RESERVED = re.compile(r"^(CON|PRN|AUX|NUL|COM[0-9]|LPT[0-9])(\..*)?$", re.IGNORECASE)
# Bidirectional overrides and other format characters hide what a name really is.
_FORMAT_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn"}


def new_handle() -> str:
    """20 characters of [A-Za-z0-9_-] from the OS's cryptographic source (120 bits)."""
    return secrets.token_urlsafe(15)


_ID_ALPHABET = string.ascii_letters + string.digits


def new_unique_id() -> str:
    """20 alphanumerics: no underscore, so ``<id>_<filename>`` splits unambiguously."""
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(20))


def is_handle(value: str) -> bool:
    return HANDLE_RE.fullmatch(value) is not None  # match() lets a trailing newline through


def clean_filename(name: str | None, fallback: str = "file") -> str:
    """A name safe as one path component and in headers; never refuses, it repairs."""
    name = unicodedata.normalize("NFC", name or "")
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    # U+FFFD too: what a bad decoding left, and a path holding it is refused (clean_path)
    name = "".join(
        c for c in name if unicodedata.category(c) not in _FORMAT_CATEGORIES and c != "\ufffd"
    )
    name = _trim(name)
    if name in {"", ".", ".."}:
        name = fallback
    if WINDOWS_RESERVED.match(name):
        name = "_" + name
    # truncating can expose a trailing dot or space again
    return _trim(_truncate_utf8(name, MAX_FILENAME_BYTES)) or fallback


def _trim(name: str) -> str:
    """No whitespace at either end, no dot at the end (Windows drops both silently)."""
    return re.sub(r"[\s.]+$", "", name).lstrip()


def _truncate_utf8(name: str, limit: int) -> str:
    encoded = name.encode()
    if len(encoded) <= limit:
        return name
    _stem, dot, ext = name.rpartition(".")
    if dot and 0 < len(ext.encode()) <= 16:
        keep = limit - len(ext.encode()) - 1
        return encoded[:keep].decode(errors="ignore") + "." + ext
    return encoded[:limit].decode(errors="ignore")


def clean_path(path: str) -> str:
    """Validate a user storage path; return it without its leading slash.

    A trailing slash is kept: it means "a folder", and the caller appends the
    default ``<id>_<filename>`` name inside it.
    """
    if "\x00" in path or "\\" in path:
        raise errors.InvalidPath("path may not contain NUL or backslash")
    path = unicodedata.normalize("NFC", path)
    if any(unicodedata.category(c) in _FORMAT_CATEGORIES for c in path):
        raise errors.InvalidPath("path contains control or format characters")
    if "\ufffd" in path:
        raise errors.InvalidPath("path is not valid UTF-8")
    stripped = path.lstrip("/")
    is_folder = stripped.endswith("/")
    parts = [p for p in stripped.split("/") if p != ""]
    if not parts:
        return ""
    for part in parts:
        if part in {".", ".."}:
            raise errors.InvalidPath("path may not contain . or .. segments")
        if len(part.encode()) > MAX_COMPONENT_BYTES:
            raise errors.InvalidPath("a path segment is longer than 255 bytes")
        if part != part.rstrip(". ") or WINDOWS_RESERVED.match(part):
            raise errors.InvalidPath(
                "path segments may not end in a dot or space, or be a device name"
            )
    clean = "/".join(parts) + ("/" if is_folder else "")
    if len(clean.encode()) > MAX_PATH_BYTES:
        raise errors.InvalidPath("path is longer than 1024 bytes")
    return clean


def storage_key(path: str | None, filename: str) -> str:
    """The default key is ``<unique id>_<filename>``; a path is used as it is, a folder path
    (ending in ``/``) gets the default name inside it."""
    default = f"{new_unique_id()}_{filename}"
    if not path:
        return default
    clean = clean_path(path)
    if clean == "" or clean.endswith("/"):
        return clean + default
    return clean


def clean_container(container: str) -> str:
    if not CONTAINER_RE.fullmatch(container) or ".." in container:
        raise errors.InvalidParameter(
            "container must be 1-63 characters of letters, digits, '.', '_' or '-'",
            parameter="container",
        )
    return container
