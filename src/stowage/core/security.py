"""Policies, signatures and the app-secret form of authentication.

A policy is base64 JSON (either alphabet, padded or not). Its signature is
the lowercase hex HMAC-SHA256 of the policy string *exactly as received*, so
it is verified before anything is decoded or re-serialised. Comparisons run
in constant time. Unknown policy keys are refused: a restriction we do not
understand must not be silently ignored.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from stowage import errors, jsonkeys
from stowage.core import names, patterns
from stowage.core.urlguard import canonical_url
from stowage.registry.base import AppRows, FileRecord, FileRows

CALLS = frozenset(
    {
        "pick",
        "read",
        "stat",
        "write",
        "writeUrl",
        "store",
        "convert",
        "remove",
        "exif",
        "runWorkflow",
    }
)
KNOWN_KEYS = frozenset(
    {"expiry", "call", "calls", "handle", "url", "path", "container", "maxSize", "minSize"}
)
MAX_POLICY_CHARS = 8192
MAX_PATTERN_CHARS = patterns.MAX_PATTERN_CHARS


@dataclass(frozen=True)
class Credentials:
    """What a request presented; gathered by the HTTP layer, judged here."""

    policy: str | None = None
    signature: str | None = None
    basic_user: str | None = None
    basic_secret: str | None = None
    basic_problem: str | None = None  # an Authorization header that is no HTTP Basic

    @property
    def empty(self) -> bool:
        return (
            self.policy is None
            and self.signature is None
            and self.basic_user is None
            and self.basic_problem is None
        )


@dataclass(frozen=True)
class Policy:
    expiry: int
    calls: frozenset[str] | None  # None: every call but exif
    handle: str | None = None
    url: str | None = None
    path: str | None = None
    container: str | None = None
    min_size: int | None = None
    max_size: int | None = None

    def allows(self, call: str) -> bool:
        if self.calls is None:
            return call != "exif"
        return call in self.calls


#: The grant given by the app secret: every call, no restriction.
MASTER = Policy(expiry=2**62, calls=CALLS)


def sign(secret: str, policy_text: str) -> str:
    return hmac.new(secret.encode(), policy_text.encode(), hashlib.sha256).hexdigest()


def encode_policy(policy: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(policy, separators=(",", ":")).encode()).decode()


def verify_signature(secret: str, policy_text: str, signature: str) -> None:
    expected = sign(secret, policy_text)
    if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace")):
        raise errors.InvalidSignature()


def decode_policy(policy_text: str) -> dict[str, Any]:
    if len(policy_text) > MAX_POLICY_CHARS:
        raise errors.InvalidPolicy("policy is too long")
    raw = _b64decode(policy_text)
    try:
        data = jsonkeys.loads(raw)
    except jsonkeys.DuplicateKey as exc:  # a rule given twice: which one did its author mean?
        raise errors.InvalidPolicy(f"policy: {exc}") from exc
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # deep nesting recurses
        raise errors.InvalidPolicy("policy is not JSON") from exc
    if not isinstance(data, dict):
        raise errors.InvalidPolicy("policy must be a JSON object")
    try:  # a "\udcff" escape decodes to a lone surrogate that fails every later encode
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, RecursionError) as exc:
        raise errors.InvalidPolicy("policy holds a string that is not valid Unicode") from exc
    return data


def _b64decode(text: str) -> bytes:
    cleaned = text.strip().translate(str.maketrans("-_", "+/")).rstrip("=")
    try:
        return base64.b64decode(cleaned + "=" * (-len(cleaned) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise errors.InvalidPolicy("policy is not valid base64") from exc


def parse_policy(data: dict[str, Any]) -> Policy:
    unknown = set(data) - KNOWN_KEYS
    if unknown:
        raise errors.InvalidPolicy(f"unknown policy keys: {', '.join(sorted(unknown))}")
    if "call" in data and "calls" in data:
        # one must not shadow the other (a null "call" would widen a narrow "calls")
        raise errors.InvalidPolicy("policy may have call or calls, not both")
    nulls = sorted(key for key, value in data.items() if value is None)
    if nulls:  # a null rule would read as no rule: a wider grant than its author meant
        raise errors.InvalidPolicy(f"policy {', '.join(nulls)} must not be null; leave it out")
    expiry = data.get("expiry")
    if type(expiry) is not int:
        raise errors.InvalidPolicy("policy expiry must be an integer epoch time")
    return Policy(
        expiry=expiry,
        calls=_calls(data.get("call", data.get("calls"))),
        handle=_opt_str(data, "handle"),
        url=_pattern(data, "url"),
        path=_pattern(data, "path"),
        container=_pattern(data, "container"),
        min_size=_opt_int(data, "minSize"),
        max_size=_opt_int(data, "maxSize"),
    )


def _calls(value: Any) -> frozenset[str] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(c, str) for c in items):
        raise errors.InvalidPolicy("policy call must be a list of names")
    unknown = set(items) - CALLS
    if unknown:
        raise errors.InvalidPolicy(f"unknown policy calls: {', '.join(sorted(unknown))}")
    return frozenset(items)


def _opt_str(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise errors.InvalidPolicy(f"policy {key} must be a string")
    return value


def _pattern(data: dict[str, Any], key: str) -> str | None:
    value = _opt_str(data, key)
    if value is None:
        return None
    patterns.compiled(value)  # RE2: linear time; one it cannot compile is a 400
    return value


def _opt_int(data: dict[str, Any], key: str) -> int | None:
    value = data.get(key)
    if value is not None and (type(value) is not int or value < 0):
        raise errors.InvalidPolicy(f"policy {key} must be a non-negative integer")
    return value


def check_policy(secret: str, policy_text: str, signature: str, now: float, skew: int) -> Policy:
    """Verify the signature first, then decode, then check expiry."""
    verify_signature(secret, policy_text, signature)
    policy = parse_policy(decode_policy(policy_text))
    if now > policy.expiry + skew:
        raise errors.PolicyExpired()
    return policy


def check_basic(secret: str, user: str, given: str) -> Policy:
    if user != "app":  # the name is no secret: say what it must be
        raise errors.InvalidCredentials(
            f"the HTTP Basic user must be `app` (not {user!r}); the password is the app secret"
        )
    if not secret or not given:
        raise errors.InvalidCredentials()
    if not hmac.compare_digest(secret.encode(), given.encode("utf-8", "replace")):
        raise errors.InvalidCredentials()
    return MASTER


def _basic_grant(secret: str, creds: Credentials) -> Policy:
    if creds.basic_problem is not None:
        raise errors.InvalidCredentials(creds.basic_problem)
    return check_basic(secret, creds.basic_user or "", creds.basic_secret or "")


@dataclass(frozen=True)
class Target:
    """What a request touches, matched against the policy's restrictions."""

    handle: str | None = None
    url: str | None = None
    path: str | None = None
    container: str | None = None
    #: The call has a place in storage (a store, a stored file): a policy's ``path`` and
    #: ``container`` bind it. A transformation of a URL source has none, and they do not.
    placed: bool = True


def url_target(url: str) -> Target:
    """What a transformation of a URL source touches: the URL, and no stored file (its
    store, if any, is held to ``path`` and ``container`` by the store's own check)."""
    return Target(url=url, placed=False)


def authorize(
    secret: str,
    creds: Credentials,
    call: str | tuple[str, ...],
    target: Target,
    *,
    required: bool,
    now: float,
    skew: int = 0,
) -> Policy | None:
    """Return the grant that allows ``call`` on ``target``, or raise.

    With ``required`` false and no credentials presented, returns None (open
    access). A policy that is presented is always checked, beside valid HTTP Basic
    credentials too (the policy is then the grant); HTTP Basic credentials that fail are
    refused only where credentials are required (a browser or a client that sends them
    everywhere still reads an open app's files: issue 24).
    """
    if creds.basic_user is not None or creds.basic_problem is not None:
        try:
            grant = _basic_grant(secret, creds)
        except errors.InvalidCredentials:
            if required:
                raise
            # judged below as if no Authorization header had been sent
        else:
            if creds.policy is None and creds.signature is None:
                return grant
            # a policy sent beside the secret is checked all the same, and narrows it
    if creds.policy is None and creds.signature is None:
        if required:
            raise errors.Unauthenticated("a policy and signature, or the app secret, are required")
        return None
    if creds.policy is None or creds.signature is None:
        raise errors.Unauthenticated("policy and signature must be sent together")
    if not creds.policy:  # sent, and empty: a malformed pair (an empty signature never matches)
        raise errors.InvalidPolicy("policy is empty")
    policy = check_policy(secret, creds.policy, creds.signature, now, skew)
    calls = (call,) if isinstance(call, str) else call
    if not any(policy.allows(c) for c in calls):
        raise errors.PolicyDenied(f"policy does not allow {' or '.join(calls)}")
    _check_target(policy, target)
    return policy


def file_target(record: FileRecord) -> Target:
    """What a call on a stored file touches: its handle, and its key and container for a
    policy's ``path`` and ``container`` (a policy that let a file be stored under
    ``uploads/`` reads it; one for ``uploads/`` does not read a file kept elsewhere)."""
    return Target(handle=record.handle, path=record.key, container=record.container)


def _check_target(policy: Policy, target: Target) -> None:
    """Each part of the target by the rule that concerns it: a handle by ``handle``, a
    URL by ``url``. A URL source (a URL, no handle) is bound by the ``url`` rule when the
    policy has one; a policy with only a ``handle`` rule allows no URL source (it names
    one file). So a policy with both allows ``watermark=file:<handle>/<URL>``: the URL
    by ``url``, the handle by ``handle`` (each its own target); it was refused, the URL
    held to the handle rule."""
    url_source = target.handle is None and target.url is not None and policy.url is not None
    if (
        policy.handle is not None
        and not url_source
        and not hmac.compare_digest(policy.handle.encode(), (target.handle or "").encode())
    ):
        raise errors.PolicyDenied("policy is for another handle")
    for name in ("url", "path", "container"):
        pattern = getattr(policy, name)
        value = getattr(target, name)
        if name == "url" and value is None:
            continue  # Filestack: url restricts URL sources and processing, not handle calls
        if name != "url" and not target.placed:
            continue  # path and container bind a store's place and a stored file's
        if pattern is not None and not _covers(pattern, value, name == "url"):
            raise errors.PolicyDenied(f"policy does not allow this {name}")


def _covers(pattern: str, value: str | None, is_url: bool) -> bool:
    """A URL must match as sent and as any origin may read it (``url_readings``):
    neither ``/allowed/../other``, ``/allowed/..%2Fother`` nor a line break that the
    fetcher would encode gets past."""
    if value is None or not patterns.full_match(pattern, value):
        return False
    return not is_url or all(patterns.full_match(pattern, seen) for seen in url_readings(value))


#: What a decoded path may hold unescaped in a reading (the rest is %-escaped again).
_PATH_SAFE = "/:@!$&'()*+,;=-._~"


def url_readings(url: str) -> list[str]:
    """Every way an origin may read ``url``: as the fetcher sends it (dot segments
    resolved, escapes normalised), then that path percent-decoded once, twice, ... until
    nothing is left to decode, each time ``%2F``, ``%5C`` and ``\\`` read as ``/`` and the
    dot segments resolved again (many servers decode ``%2F`` before they resolve ``..``;
    some decode twice). Each decoded path is escaped again, so that a pattern sees its
    slashes and dots as they are and nothing else new."""
    canonical = canonical_url(url)
    readings = [canonical]
    try:
        parts = urlsplit(canonical)
    except ValueError:
        return readings  # malformed: the fetch refuses it (INVALID_URL)
    path = parts.path
    if ";" in path:  # Tomcat and Jetty drop a segment's ;params first: /a/..;/b is /b
        readings.append(urlunsplit(parts._replace(path=_without_params(path))))
    while (decoded := unquote(path).replace("\\", "/")) != path:
        path = _without_dot_segments(decoded)
        readings.append(urlunsplit(parts._replace(path=quote(path, safe=_PATH_SAFE))))
        if ";" in path:
            plain = _without_params(path)
            readings.append(urlunsplit(parts._replace(path=quote(plain, safe=_PATH_SAFE))))
    return readings


def _without_params(path: str) -> str:
    """The path with each segment's ``;params`` dropped, dot segments resolved after."""
    return _without_dot_segments("/".join(s.partition(";")[0] for s in path.split("/")))


def _without_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4 on a path of plain text: ``/a/b/../c/.`` is ``/a/c/``."""
    kept: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "..":
            if len(kept) > 1:
                kept.pop()
            if last:
                kept.append("")
        elif segment == ".":
            if last:
                kept.append("")
        else:
            kept.append(segment)
    return "/".join(kept) if kept != [""] else "/"


def check_size(policy: Policy | None, size: int) -> None:
    if policy is None:
        return
    if policy.max_size is not None and size > policy.max_size:
        raise errors.PayloadTooLarge("the file is larger than the policy allows")
    if policy.min_size is not None and size < policy.min_size:
        raise errors.PayloadTooSmall()


async def record_for(
    files: FileRows, apps: AppRows, handle: str, api_key: str | None
) -> FileRecord:
    """The file a call on ``handle`` with the ``key`` parameter ``api_key`` may touch: the one
    decision for every API and CDN route (download, metadata, overwrite, remove, transform).

    No key: the handle alone names the file. A key that names no app: ``UNKNOWN_API_KEY``,
    not a 404 for a file that may well exist (docs/decisions.md). A key of another app: the
    file is not that app's, ``HANDLE_NOT_FOUND``. Credentials are judged after, by
    ``authorize``, against the file's own app."""
    record = await files.get(handle) if names.is_handle(handle) else None
    if api_key and (record is None or api_key != record.api_key):
        if await apps.get_app(api_key) is None:
            raise errors.UnknownApiKey()
        raise errors.HandleNotFound(handle=handle)
    if record is None:
        raise errors.HandleNotFound(handle=handle)
    return record
