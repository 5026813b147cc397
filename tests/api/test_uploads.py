"""The multipart upload protocol (/multipart/...) on the API origin, in process."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
from typing import Any

import pytest
from yarl import URL

from stowage.core.security import encode_policy, sign
from tests.api.harness import Harness

MiB = 1024 * 1024


def md5_b64(data: bytes) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode()


async def post(h: Harness, path: str, status: int = 200, **body: Any) -> dict[str, Any]:
    resp = await h.api.post(path, json=body)
    assert resp.status == status, await resp.text()
    result: dict[str, Any] = await resp.json()
    return result


async def start(h: Harness, data: bytes, **extra: Any) -> dict[str, Any]:
    body = {
        "apikey": h.open_app.api_key,
        "filename": "big.bin",
        "mimetype": "application/octet-stream",
        "size": len(data),
        "store": {"location": "s3"},
        **extra,
    }
    return await post(h, "/multipart/start", **body)


async def put_part(
    h: Harness, started: dict[str, Any], n: int, chunk: bytes, offset: int | None = None, **kw: Any
) -> str:
    body = {
        "apikey": h.open_app.api_key,
        "upload_id": started["upload_id"],
        "uri": started["uri"],
        "region": started["region"],
        "part": n,
        "size": len(chunk),
        "md5": md5_b64(chunk),
        **({"offset": offset} if offset is not None else {}),
        **kw,
    }
    target = await post(h, "/multipart/upload", **body)
    url = URL(target["url"])
    resp = await h.api.put(url.path_qs, data=chunk, headers=target["headers"])
    assert resp.status == 200, await resp.text()
    return resp.headers["ETag"]


async def complete(h: Harness, started: dict[str, Any], parts: Any, status: int = 200) -> Any:
    body = {"apikey": h.open_app.api_key, "upload_id": started["upload_id"], "parts": parts}
    return await post(h, "/multipart/complete", status, **body)


def split(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


async def stored_bytes(h: Harness, handle: str) -> bytes:
    resp = await h.api.get(f"/api/file/{handle}")
    assert resp.status == 200
    return await resp.read()


async def test_upload_in_parts_streams_them_into_one_file(harness: Harness) -> None:
    data = os.urandom(3 * MiB + 17)
    started = await start(harness, data)
    assert {"uri", "region", "upload_id", "location_url"} <= set(started)
    parts = [
        {"part_number": n, "etag": await put_part(harness, started, n, chunk)}
        for n, chunk in enumerate(split(data, MiB), 1)
    ]
    done = await complete(harness, started, parts)
    assert done["status"] == "Stored" and done["size"] == len(data)
    assert {"handle", "url", "container", "key"} <= set(done)
    assert await stored_bytes(harness, done["handle"]) == data
    assert not (harness.settings.data_dir / "uploads" / started["upload_id"]).exists()
    again = await complete(harness, started, parts)  # a repeated complete answers the same
    assert again["handle"] == done["handle"]


async def test_resumed_upload_sends_only_missing_parts(harness: Harness) -> None:
    data = os.urandom(4 * MiB)
    chunks = split(data, MiB)
    started = await start(harness, data)
    etags = {n: await put_part(harness, started, n, chunks[n - 1]) for n in (1, 3)}
    listed = [{"part_number": n, "etag": "x"} for n in (1, 2, 3, 4)]
    failed = await complete(harness, started, listed, status=400)
    assert failed["error"]["code"] == "INVALID_PARTS"
    etags.update({n: await put_part(harness, started, n, chunks[n - 1]) for n in (2, 4)})
    parts = [{"part_number": n, "etag": etags[n]} for n in sorted(etags)]
    done = await complete(harness, started, parts)
    meta = await harness.api.get(f"/api/file/{done['handle']}/metadata", params={"sha256": "true"})
    assert (await meta.json())["sha256"] == hashlib.sha256(data).hexdigest()


async def test_part_with_wrong_md5_is_refused_and_not_kept(harness: Harness) -> None:
    data = os.urandom(1000)
    started = await start(harness, data)
    body = {
        "apikey": harness.open_app.api_key,
        "upload_id": started["upload_id"],
        "part": 1,
        "size": len(data),
        "md5": md5_b64(b"something else"),
    }
    target = await post(harness, "/multipart/upload", **body)
    resp = await harness.api.put(URL(target["url"]).path_qs, data=data)
    assert resp.status == 400
    assert (await resp.json())["error"]["code"] == "BAD_DIGEST"
    folder = harness.settings.data_dir / "uploads" / started["upload_id"]
    assert list(folder.iterdir()) == []
    assert await harness.service.registry.upload_parts(started["upload_id"]) == []


async def test_retried_part_replaces_the_first(harness: Harness) -> None:
    data = os.urandom(2048)
    started = await start(harness, data)
    await put_part(harness, started, 1, os.urandom(1024))
    first = await put_part(harness, started, 1, data[:1024])
    second = await put_part(harness, started, 2, data[1024:])
    parts = [{"part_number": 1, "etag": first}, {"part_number": 2, "etag": second}]
    done = await complete(harness, started, parts)
    assert await stored_bytes(harness, done["handle"]) == data


async def test_part_urls_cannot_be_forged(harness: Harness) -> None:
    data = os.urandom(100)
    started = await start(harness, data)
    body = {
        "apikey": harness.open_app.api_key,
        "upload_id": started["upload_id"],
        "part": 1,
        "size": 100,
        "md5": md5_b64(data),
    }
    url = URL((await post(harness, "/multipart/upload", **body))["url"])
    other_part = url.path.rsplit("/", 1)[0] + "/2"  # the part number only, never the id
    for path, query in [
        (other_part, url.query),
        (url.path, {**url.query, "size": "99"}),
        (url.path, {**url.query, "signature": "0" * 64}),
        (url.path, {k: v for k, v in url.query.items() if k != "signature"}),
    ]:
        resp = await harness.api.put(path, params=query, data=data)
        assert resp.status in (400, 403), (path, query)
        assert (await resp.json())["error"]["code"] in ("INVALID_SIGNATURE", "PART_SIZE_MISMATCH")


async def test_form_data_variant_with_php_parts(harness: Harness) -> None:
    data = os.urandom(2 * MiB)
    form = {
        "apikey": harness.open_app.api_key,
        "filename": "php.bin",
        "mimetype": "application/octet-stream",
        "size": str(len(data)),
        "store_location": "S3",
        "store_path": "uploads/",
    }
    resp = await harness.api.post("/multipart/start", data=form)
    started = await resp.json()
    assert resp.status == 200, started
    etags = []
    for n, chunk in enumerate(split(data, MiB), 1):
        fields = {
            "apikey": harness.open_app.api_key,
            "upload_id": started["upload_id"],
            "part": str(n),
            "size": str(len(chunk)),
            "md5": md5_b64(chunk),
        }
        target = await (await harness.api.post("/multipart/upload", data=fields)).json()
        put = await harness.api.put(URL(target["url"]).path_qs, data=chunk)
        etags.append(f"{n}:{put.headers['ETag'].strip(chr(34))}")
    fields = {
        "apikey": harness.open_app.api_key,
        "upload_id": started["upload_id"],
        "parts": ";".join(etags),
    }
    resp = await harness.api.post("/multipart/complete", data=fields)
    done = await resp.json()
    assert resp.status == 200, done
    assert done["key"].startswith("uploads/")
    assert await stored_bytes(harness, done["handle"]) == data


async def test_intelligent_mode_chunks_and_commit(harness: Harness) -> None:
    data = os.urandom(3 * MiB)
    started = await start(harness, data, fii=True)
    assert started["upload_type"] == "intelligent_ingestion"
    part_size = 2 * MiB
    for n, part in enumerate(split(data, part_size), 1):
        for offset in range(0, len(part), 512 * 1024):
            await put_part(
                harness, started, n, part[offset : offset + 512 * 1024], offset, fii=True
            )
        body = {"apikey": harness.open_app.api_key, "upload_id": started["upload_id"], "part": n}
        await post(harness, "/multipart/commit", size=len(data), **body)
    done = await complete(harness, started, None)
    assert await stored_bytes(harness, done["handle"]) == data


async def test_security_needs_a_store_policy_and_enforces_it(harness: Harness) -> None:
    app = harness.secure_app
    body = {"apikey": app.api_key, "filename": "a", "size": 10, "store": {"location": "s3"}}
    resp = await harness.api.post("/multipart/start", json=body)
    assert resp.status == 401
    read_only = harness.policy(app, call=["read"])
    resp = await harness.api.post("/multipart/start", json={**body, **read_only})
    assert (await resp.json())["error"]["code"] == "POLICY_DENIED"
    small = harness.policy(app, call=["store"], maxSize=5)
    resp = await harness.api.post("/multipart/start", json={**body, **small})
    assert resp.status == 413
    wrong_path = harness.policy(app, call=["store"], path="only/.*")
    resp = await harness.api.post("/multipart/start", json={**body, **wrong_path})
    assert (await resp.json())["error"]["code"] == "POLICY_DENIED"
    good = harness.policy(app, call=["store"], minSize=10, maxSize=10)
    resp = await harness.api.post("/multipart/start", json={**body, **good})
    assert resp.status == 200


async def test_complete_checks_the_actual_size(harness: Harness) -> None:
    data = os.urandom(1000)
    started = await start(harness, data)
    etag = await put_part(harness, started, 1, data[:600])
    failed = await complete(harness, started, [{"part_number": 1, "etag": etag}], status=400)
    assert failed["error"]["details"] == {"expected": 1000, "received": 600}


async def test_abandoned_upload_is_swept_after_expiry(harness: Harness) -> None:
    data = os.urandom(2000)
    started = await start(harness, data)
    await put_part(harness, started, 1, data[:1000])
    uploads = harness.uploads
    folder = harness.settings.data_dir / "uploads" / started["upload_id"]
    assert folder.is_dir()
    assert await uploads.sweep() == 0  # not expired yet
    harness.settings.upload_expiry_seconds = -1
    assert await uploads.sweep() == 1
    assert not folder.exists()
    assert await harness.service.registry.get_upload(started["upload_id"]) is None
    failed = await complete(harness, started, None, status=404)
    assert failed["error"]["code"] == "UPLOAD_NOT_FOUND"


async def test_a_swept_session_is_closed_before_its_pieces_go(harness: Harness) -> None:
    """A client that sees the pieces gone must find the session gone too (404), never an
    open session with no pieces (400)."""
    started = await start(harness, os.urandom(2000))
    uploads = harness.uploads
    open_while_removing: list[tuple[str, bool]] = []
    remove = uploads.files.remove

    async def watched(upload_id: str) -> None:
        session = await harness.service.registry.get_upload(upload_id)
        open_while_removing.append((upload_id, session is not None))
        await remove(upload_id)

    uploads.files.remove = watched  # type: ignore[method-assign]
    harness.settings.upload_expiry_seconds = -1
    assert await uploads.sweep() == 1
    assert open_while_removing == [(started["upload_id"], False)]


async def test_upload_ids_belong_to_their_app(harness: Harness) -> None:
    started = await start(harness, b"abc")
    policy = encode_policy({"expiry": 2**40, "call": ["store"]})
    body = {
        "apikey": harness.secure_app.api_key,
        "upload_id": started["upload_id"],
        "part": 1,
        "size": 3,
        "policy": policy,
        "signature": sign(harness.secure_app.secret, policy),
    }
    failed = await post(harness, "/multipart/upload", 404, **body)
    assert failed["error"]["code"] == "UPLOAD_NOT_FOUND"


async def test_two_processes_completing_one_upload_store_one_file(harness: Harness) -> None:
    """A poll that reaches another worker or node starts a second assembly of the same
    parts: one file results, the other copy is removed, both answer the same handle."""
    from stowage.core.security import Credentials
    from stowage.core.uploads import Uploads

    data = os.urandom(3 * MiB)
    started = await start(harness, data)
    parts = [(n, await put_part(harness, started, n, c)) for n, c in enumerate(split(data, MiB), 1)]
    here, there = (
        harness.uploads,
        Uploads(
            harness.settings,
            harness.service.registry,
            harness.service.providers,
            harness.service.store,
        ),
    )
    results = await asyncio.gather(
        *(u.complete(started["upload_id"], harness.open_app.api_key, parts, Credentials())
          for u in (here, there))
    )  # fmt: skip
    handles = {r.handle for r in results if r is not None}
    assert len(handles) == 1
    files = await harness.service.registry.list_files(harness.open_app.api_key)
    assert [f.handle for f in files] == list(handles)
    assert await stored_bytes(harness, handles.pop()) == data


async def test_a_completion_that_read_the_session_before_another_finished_answers_its_file(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the test above may hit: a second process reads the session while it is
    still open, the first finishes (and drops the parts) before the second selects them.
    The second answers the first one's file, not 400 'part 1 was not uploaded'."""
    from stowage.core.security import Credentials
    from stowage.core.uploads import Uploads

    data = os.urandom(2 * MiB)
    started = await start(harness, data)
    parts = [(n, await put_part(harness, started, n, c)) for n, c in enumerate(split(data, MiB), 1)]
    registry = harness.service.registry
    stale = await registry.get_upload(started["upload_id"])
    first = await harness.uploads.complete(
        started["upload_id"], harness.open_app.api_key, parts, Credentials()
    )
    assert first is not None
    there = Uploads(harness.settings, registry, harness.service.providers, harness.service.store)
    reads = iter([stale])
    real = registry.get_upload

    async def get_upload(upload_id: str) -> Any:
        return next(reads, None) or await real(upload_id)

    monkeypatch.setattr(registry, "get_upload", get_upload)
    second = await there.complete(
        started["upload_id"], harness.open_app.api_key, parts, Credentials()
    )
    assert second is not None and second.handle == first.handle


@pytest.mark.parametrize("digit", ["\u0661", "\uff11", "\u00b9", "\u0967"])
def test_a_part_number_of_another_scripts_digits_is_refused(digit: str) -> None:
    """int() reads "\u0661" as 1: a part number is ASCII digits or a JSON number."""
    from stowage import errors
    from stowage.http import multipart

    assert multipart.listed_parts(
        [{"part_number": 1, "etag": "x"}, {"part_number": "2", "etag": "y"}]
    ) == [(1, "x"), (2, "y")]
    for listed in ([{"part_number": digit, "etag": "x"}], f"{digit}:x", f"1:x;{digit}2:y"):
        with pytest.raises(errors.InvalidParameter):
            multipart.listed_parts(listed)


async def test_a_part_put_at_another_scripts_digits_is_not_found(harness: Harness) -> None:
    """The part's URL with its number in another script's digits names no part."""
    chunk = b"x" * 10
    started = await start(harness, chunk)
    body = {"apikey": harness.open_app.api_key, "upload_id": started["upload_id"]}
    body |= {"uri": started["uri"], "region": started["region"], "part": 1}
    target = await post(harness, "/multipart/upload", **body, size=10, md5=md5_b64(chunk))
    url = URL(target["url"])
    assert url.path.endswith("/1")
    for digit in ("\u0661", "\uff11"):
        other = url.with_path(url.path[:-1] + digit, encoded=False)
        resp = await harness.api.put(other.path_qs, data=chunk, headers=target["headers"])
        assert resp.status == 404, digit
