"""Tasks about the request, not the pixels: ``security`` (the policy and signature),
``cache`` (whether and how long the answer may be kept), ``store`` (the result
becomes a new file) and ``debug`` (a report of the transformation instead of its
result). The URL grammar reads them into the parsed path; the engine never sees
``security``, ``cache`` or ``debug``."""

from __future__ import annotations

from stowage import words
from stowage.processing.base import Value
from stowage.processing.params import (
    Text,
    boolean,
    choice,
    handle,
    integer,
    text,
    texts,
)
from stowage.processing.table import Kind, Param, TaskSpec
from stowage.storage import API_PROVIDERS

MAX_EXPIRY = 10**10 - 1  # ten digits of seconds, as the header may carry
YEAR = 31_536_000  # cache=expiry:max


def seconds(value: Value) -> Value:
    if isinstance(value, str) and words.folded(value) == "max":
        return YEAR
    try:  # the schema types it integer: a decimal is rounded, as everywhere
        return integer(0, MAX_EXPIRY)(value)
    except ValueError:
        raise ValueError("must be seconds (a whole number) or max") from None


#: A policy or a signature: text, as sent (base64 may hold "/", "+" and "=").
token = Text(8192)


#: store's location: the File API's provider names, lower-cased as the SDKs send them.
LOCATIONS = tuple(name.lower() for name in API_PROVIDERS)

TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        "security",
        (Param("policy", token, ("p",)), Param("signature", token, ("s",))),
        kind=Kind.REQUEST,
        doc="the policy and signature of an app with security on",
    ),
    TaskSpec(
        "cache",
        (Param("cache", boolean, (), True), Param("expiry", seconds, ("e",))),
        kind=Kind.REQUEST,
        bare="cache",
        doc="cache=false: not kept by caches; expiry: seconds they may keep it",
    ),
    TaskSpec(
        "store",
        (
            Param("filename", text, ("f",)),
            Param("location", choice(*LOCATIONS), ("l",), "s3"),
            Param("path", text, ("p",)),
            Param("container", text, ("c",)),
            Param("region", text, ("r",)),
            Param("access", choice("public", "private"), ("a",), "private"),
            Param("base64decode", boolean, ("b",)),
            Param("workflows", texts, ("w",)),
        ),
        kind=Kind.REQUEST,
        doc="the result becomes a new file of the same app",
    ),
    TaskSpec(
        "video_playlist",
        kind=Kind.REQUEST,
        doc="a stored HLS playlist, its segment links this server's with the request's policy",
    ),
    TaskSpec(
        "debug",
        kind=Kind.REQUEST,
        doc="a JSON report of the transformation (its tasks, source, result or error)",
    ),
    TaskSpec(
        "fallback",
        (Param("handle", handle, ("file",)), Param("cache", integer(1, YEAR), (), 300)),
        kind=Kind.REQUEST,
        needs_one_of=("handle",),
        doc="when the transformation fails, the file `handle` is served, kept `cache` s",
    ),
)
