"""What the fetcher sends and what a store from a URL is named (generated inputs, seeds
5191-5192): every fetch sends the ``fetch_user_agent`` product token, not aiohttp's
default, which some origins refuse; an origin's ``Content-Disposition``, however broken
or hostile (escapes cut short, bytes that are no UTF-8, a charset RFC 8187 does not name,
path parts, control characters, an empty name or only an extension, a very long one,
``filename`` and ``filename*`` both), names the file by the first usable of
``filename*``, ``filename``, the URL's last part, else the default ``file``: a
``filename*`` of ``%FF%FE.png`` named it ``.png``. A ``filename`` in ISO-8859-1 bytes is
read as such (seed 5195). A download of a URL as it is, and a transformation's result,
whose origin names nothing, are named by the URL's last part, or ``file`` when it names
nothing but an extension (seed 5197; a named one: ``test_url_as_is_names.py``)."""

from __future__ import annotations

import random
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import quote, unquote, unquote_to_bytes

import pytest

from stowage import __version__
from stowage.config import Settings
from stowage.values.coerce import Invalid
from tests.api.harness import Harness
from tests.api.sites import Origin, RawOrigin

STEMS = "abcxyz-_ éü漢😀"


@dataclass
class Named:
    header: str | None  # Content-Disposition, or none sent
    path: str  # the URL's path
    expected: str | None  # the name; None: any bounded name ending in ".png" (long)


def stem(rnd: random.Random) -> str:
    core = "".join(rnd.choice(STEMS) for _ in range(rnd.randint(1, 12))).strip()
    return (core or "n") + rnd.choice(["a", "7", "Z"])


def broken_extended(rnd: random.Random) -> str:
    """A ``filename*`` that names nothing usable."""
    return rnd.choice(
        [
            "UTF-8''%FF%FE.png",  # no UTF-8
            "UTF-8''%C3.png",  # UTF-8 cut short
            f"UTF-8''{quote(stem(rnd))}%G1.png",  # a broken escape
            f"UTF-8''{quote(stem(rnd))}%",  # an escape cut short
            f"KOI8-R''{quote(stem(rnd))}.png",  # a charset RFC 8187 does not name
            "UTF-8''",  # empty
            "UTF-8''.png",  # only an extension
            "UTF-8''%2E%2E%2F",  # only a path
            "''",
            "nothing-like-it",
        ]
    )


def broken_plain(rnd: random.Random) -> str:
    return rnd.choice(['""', '".png"', '"../"', '"\\\\"', '"/.."', ".png", '"\x01\x02.png"'])


def generated(rnd: random.Random) -> Named:
    """One origin's answer: each of filename*, filename and the URL's last part usable or
    not (or absent), the expected name the first usable one."""
    ext = rnd.choice([".png", ".jpg", ""])
    picks: list[tuple[str, str | None]] = []  # (the header's parameter, the name it gives)
    choice = rnd.randrange(3)
    if choice == 1:
        name = stem(rnd) + ext
        picks.append((f"filename*=UTF-8''{quote(name)}", name))
    elif choice == 2:
        picks.append((f"filename*={broken_extended(rnd)}", None))
    choice = rnd.randrange(5)
    if choice == 1:  # plain ASCII, or with path parts and control characters to drop
        name = "".join(c for c in stem(rnd) if c.isascii()) or "plain"
        hostile = rnd.choice(["", "../../", "/etc/", "a/..\\"])
        shown = hostile + name[:1] + rnd.choice(["", "\x07", "\x1f", "\x7f"]) + name[1:] + ext
        quoted = shown.replace("\\", "\\\\")
        picks.append((f'filename="{quoted}"', name + ext))
    elif choice == 2:
        picks.append((f"filename={broken_plain(rnd)}", None))
    elif choice == 3:  # very long: bounded, its extension kept
        picks.append((f'filename="{"long-" * rnd.randint(50, 400)}.png"', "LONG"))
    rnd.shuffle(picks)  # the order they are sent in does not matter
    last = rnd.choice([stem(rnd) + ext, "", ".png", "%FF%FE.png"])
    path = "/dir/" + quote(last, safe="%")
    header = "; ".join([rnd.choice(["attachment", "inline", "ATTACHMENT"])] + [p for p, _ in picks])
    order = sorted(picks, key=lambda p: not p[0].startswith("filename*"))
    found = [name for _, name in order if name is not None]
    url_name = last if last not in ("", ".png", "%FF%FE.png") else None
    expected = (found or [url_name or "file"])[0]
    return Named(header if picks or rnd.random() < 0.5 else None, path, expected)


async def test_a_stored_url_is_named_by_the_first_usable_name(
    harness: Harness, raw_origin: RawOrigin
) -> None:
    rnd = random.Random(5191)
    key = harness.open_app.api_key
    for _ in range(60):
        case = generated(rnd)
        sent = b"Content-Type: image/png\r\n"
        if case.header is not None:  # as UTF-8, as aiohttp reads a header's bytes
            sent += b"Content-Disposition: " + case.header.encode() + b"\r\n"
        raw_origin.head = sent
        url = raw_origin.root + case.path
        resp = await harness.api.post("/api/store/S3", params={"key": key}, data={"url": url})
        stored = await resp.json()
        assert resp.status == 200, (stored, case)
        name = stored["filename"]
        if case.expected == "LONG":
            assert name.startswith("long-long-") and name.endswith(".png"), (name, case)
            assert len(name.encode()) <= 200
        else:
            assert name == case.expected, case


async def test_a_latin1_filename_is_read_as_latin1(harness: Harness, raw_origin: RawOrigin) -> None:
    """A ``filename`` sent in ISO-8859-1 bytes, as older servers send it (no UTF-8), is
    read in that charset (seed 5195): ``caf<E9>.png`` was stored as ``caf.png``."""
    rnd = random.Random(5195)
    key = harness.open_app.api_key
    for _ in range(12):
        name = "".join(rnd.choice("abcéüßñÀÿ ") for _ in range(rnd.randint(1, 10))) + "x.png"
        head = b'Content-Type: image/png\r\nContent-Disposition: attachment; filename="'
        raw_origin.head = head + name.encode("latin-1") + b'"\r\n'
        form = {"url": raw_origin.root + "/dir/other.png"}
        resp = await harness.api.post("/api/store/S3", params={"key": key}, data=form)
        assert (await resp.json())["filename"] == name.strip(), name


PIECES = ["%FF", "%FE", "%C3", "%E2%80%AE", "%00", "a", "b7", "%C3%A9", "%20", "-"]


def url_name(part: str) -> str:
    """What a URL's last part names: decoded, bytes that are no UTF-8, format and
    control characters dropped, nothing but an extension none ("file")."""
    text = unquote_to_bytes(part).decode("utf-8", "replace")
    text = "".join(c for c in text if c != "\ufffd" and unicodedata.category(c)[0] != "C")
    text = text.strip()
    return text if text.rpartition(".")[0].strip(". ") else "file"


def shown_name(disposition: str) -> str:
    """The name a ``Content-Disposition`` gives in full (its ``filename*``)."""
    found = re.search(r"filename\*=UTF-8''([^;]*)", disposition)
    assert found, disposition
    return unquote(found[1])


async def test_a_url_source_is_named_by_its_last_part_or_file(
    harness: Harness, origin_site: Origin
) -> None:
    """A download of a URL as it is and a transformation's result are named after the
    URL's last part; one whose decoded text holds nothing but an extension (bytes that
    are no UTF-8, format characters) gives ``file``: ``/%FF%FE.png`` named a download
    ``.png`` (seed 5197)."""
    rnd = random.Random(5197)
    key = harness.open_app.api_key
    for _ in range(30):
        part = "".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 4))) + ".png"
        if "%00" in part:
            part = part.replace("%00", "")  # a CDN path refuses a NUL before any URL
        expected = url_name(part)
        url = f"{origin_site.root}/dir/{part}"
        resp = await harness.cdn.get(f"/{key}/{url}")
        assert resp.status == 200, await resp.text()
        assert shown_name(resp.headers["Content-Disposition"]) == expected, part
        resp = await harness.cdn.get(f"/{key}/output=format:webp/{url}")
        assert resp.status == 200, await resp.text()
        stem = expected.rsplit(".", 1)[0] if expected != "file" else "file"
        assert shown_name(resp.headers["Content-Disposition"]) == stem + ".webp", part


async def test_every_fetch_sends_the_product_token(harness: Harness, origin_site: Origin) -> None:
    key = harness.open_app.api_key
    for path in (f"/{key}/{origin_site.root}/a.png", f"/{key}/resize=w:20/{origin_site.root}/b"):
        assert (await harness.cdn.get(path)).status == 200
    listed = f"/{key}/zip/[{origin_site.root}/c.png,{origin_site.root}/d.png]"
    assert (await harness.cdn.get(listed)).status == 200
    form = {"url": f"{origin_site.root}/e.png"}
    assert (await harness.api.post("/api/store/S3", params={"key": key}, data=form)).status == 200
    agents = {headers.get("User-Agent") for _, headers in origin_site.asked}
    assert agents == {f"Stowage/{__version__} (+url-fetch)"}, agents
    assert len(origin_site.asked) == 5


@pytest.mark.settings(fetch_user_agent="AcmeMedia/2.1 (+https://acme.example/bot)")
async def test_the_product_token_is_a_setting(harness: Harness, origin_site: Origin) -> None:
    resp = await harness.cdn.get(f"/{harness.open_app.api_key}/{origin_site.root}/a.png")
    assert resp.status == 200
    assert origin_site.asked[0][1]["User-Agent"] == "AcmeMedia/2.1 (+https://acme.example/bot)"


def test_a_user_agent_that_cannot_be_sent_is_refused_at_load(tmp_path: object) -> None:
    rnd = random.Random(5192)
    for _ in range(40):
        good = "".join(rnd.choice("Ab9/ .()+;:-") for _ in range(rnd.randint(1, 40))) + "x"
        assert Settings(fetch_user_agent=good).fetch_user_agent == good
        bad = rnd.choice(["", "  ", "x" * 257]) + rnd.choice(["", "\n", "\r\nX-A: 1", "é", "\x00"])
        if bad.strip() and len(bad) <= 256 and all(" " <= c <= "~" for c in bad):
            continue
        with pytest.raises(Invalid, match="fetch_user_agent"):
            Settings(fetch_user_agent=bad)
