"""Checklist 12-18 over HTTP: hostile paths are refused before anything is written;
hostile filenames are repaired and never break out of a header; odd keys round-trip."""

from __future__ import annotations

import pytest

from tests.api.harness import Harness
from tests.api.test_file_ops import handle_of
from tests.reliability.checks import TOTALS, assert_clean, expect_error

REFUSED_PATHS = [
    "../escape.txt",  # 12
    "..\\escape.txt",
    "a/./../../x",
    "a/b/../../../x",
    "x\x00.jpg",  # 13
    "a" * 256,  # 14: one component over 255 bytes
    "/".join(["d" * 200] * 6),  # 14: a path over 1024 bytes
    "a/\u202etxt.exe",  # 15
    "CON",  # 17
    "dir/NUL.txt",
    "trailing.",
    "trailing ",
]


@pytest.mark.parametrize("path", REFUSED_PATHS, ids=range(len(REFUSED_PATHS)))
async def test_hostile_paths_are_refused_and_nothing_is_written(
    harness: Harness, path: str
) -> None:
    params = {"key": harness.open_app.api_key, "path": path}
    resp = await harness.api.post("/api/store/S3", params=params, data=b"x")
    await expect_error(resp, 400, "INVALID_PATH")
    assert [f async for f in harness.service.registry.all_files()] == []
    await assert_clean(harness.service)


@pytest.mark.parametrize("raw", ["%2e%2e%2fescape.txt", "..%2Fescape.txt", "a%2F..%2F..%2Fx"])
async def test_percent_encoded_traversal_is_refused(harness: Harness, raw: str) -> None:
    """12: the query is decoded once, then the path is normalised and refused."""
    resp = await harness.api.post(
        f"/api/store/S3?key={harness.open_app.api_key}&path={raw}", data=b"x"
    )
    await expect_error(resp, 400, "INVALID_PATH")
    await assert_clean(harness.service)


@pytest.mark.parametrize("literal", ["..%2fescape.txt", "%252e%252e%252fescape"])
async def test_double_encoding_is_never_decoded_twice(harness: Harness, literal: str) -> None:
    """12: `%252e` arrives as the text `%2e`: one odd but harmless name inside the root."""
    TOTALS.inputs_tried += 1
    result = await harness.store(b"literal", path=literal)
    assert result["key"] == literal
    stored = harness.object_path(harness.open_app, literal)
    assert (harness.settings.data_dir / "storage") in stored.resolve().parents
    assert stored.read_bytes() == b"literal"


async def test_invalid_utf8_in_the_raw_query_is_refused(harness: Harness) -> None:
    """15: `%ae%8a-` decodes to bytes that are not UTF-8."""
    url = f"/api/store/S3?key={harness.open_app.api_key}&path=%ae%8a-"
    resp = await harness.api.post(url, data=b"x")
    await expect_error(resp, 400)
    await assert_clean(harness.service)


@pytest.mark.parametrize(
    "path",
    ["/etc/passwd", "a/b/c.txt", "n\u0303fd.txt", "ñfd.txt"],
)
async def test_absolute_and_unicode_paths_stay_inside_the_root(harness: Harness, path: str) -> None:
    """12, 15: a leading / is dropped; NFC/NFD twins name the same key (NFC)."""
    TOTALS.inputs_tried += 1
    result = await harness.store(b"inside", path=path)
    assert not result["key"].startswith("/")
    stored = harness.object_path(harness.open_app, result["key"])
    root = harness.settings.data_dir / "storage"
    assert root in stored.resolve().parents
    assert stored.read_bytes() == b"inside"
    if "fd" in path:
        assert result["key"] == "\u00f1fd.txt"


async def test_nfc_nfd_twins_are_one_key(harness: Harness) -> None:
    await harness.store(b"first", path="caf\u00e9.txt")
    resp = await harness.api.post(
        "/api/store/S3",
        params={"key": harness.open_app.api_key, "path": "cafe\u0301.txt"},
        data=b"second",
    )
    await expect_error(resp, 409, "KEY_IN_USE")


async def test_special_key_names_round_trip(harness: Harness) -> None:
    """16: s3tests special_key_names."""
    for name in ["a`b", 'q"uote', "d$llar", "pe%rcent", "amp&er", "it's", "<lt", "gt>", "sp ace"]:
        TOTALS.inputs_tried += 1
        result = await harness.store(name.encode(), path=f"keys/{name}")
        assert result["key"] == f"keys/{name}"
        resp = await harness.api.get(f"/api/file/{handle_of(result)}")
        assert resp.status == 200
        assert await resp.read() == name.encode()
    await assert_clean(harness.service)


@pytest.mark.parametrize(
    "filename",
    [
        'evil"\r\nSet-Cookie: a=b.txt',  # 18
        "x\x00.jpg",  # 13
        "shell.jpg.php",  # 13
        "..\\..\\win.ini",
        "CON",  # 17
        "dot.",
        "\u202egnp.exe",
        "n" * 400 + ".png",  # 14
    ],
)
async def test_hostile_filenames_are_repaired_and_safe_in_headers(
    harness: Harness, filename: str
) -> None:
    TOTALS.inputs_tried += 1
    result = await harness.store(b"data", filename=filename)
    stored = result["filename"]
    assert all(c not in stored for c in "\x00\r\n/\\\u202e")
    assert len(stored.encode()) <= 255 and not stored.endswith((".", " "))
    assert stored.upper() != "CON"
    resp = await harness.api.get(f"/api/file/{handle_of(result)}", params={"dl": "true"})
    disposition = resp.headers["Content-Disposition"]
    assert "\r" not in disposition and "\n" not in disposition
    assert "Set-Cookie" not in resp.headers
    assert disposition.startswith("attachment;")
    if filename.endswith(".php"):
        assert resp.headers["Content-Type"] != "application/x-httpd-php"
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
