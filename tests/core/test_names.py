"""Handles, filenames and storage paths (checklist items 12-18)."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.core import names

HANDLE_CHARS = re.compile(r"^[A-Za-z0-9_-]{20}$")
ID_PREFIX = re.compile(r"^[A-Za-z0-9]{20}_")

# --- handles and ids ----------------------------------------------------------------------


def test_new_handle_shape_and_uniqueness() -> None:
    handles = [names.new_handle() for _ in range(5000)]
    assert all(HANDLE_CHARS.match(h) for h in handles)
    assert all(names.is_handle(h) for h in handles)
    assert len(set(handles)) == len(handles)


def test_new_handle_uses_the_whole_alphabet() -> None:
    seen = set("".join(names.new_handle() for _ in range(500)))
    assert {"-", "_"} <= seen
    assert len(seen) > 60


def test_new_unique_id_is_twenty_alphanumerics_and_unique() -> None:
    ids = [names.new_unique_id() for _ in range(2000)]
    assert all(re.fullmatch(r"[A-Za-z0-9]{20}", i) for i in ids)
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize(
    "value",
    ["", "A" * 19, "A" * 21, "A" * 19 + "/", "A" * 19 + ".", "A" * 19 + "\n", "A" * 19 + "é"],
)
def test_is_handle_refuses_wrong_shapes(value: str) -> None:
    assert not names.is_handle(value)


def test_is_handle_refuses_a_trailing_newline() -> None:
    assert not names.is_handle("A" * 20 + "\n")


# --- clean_path ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "..",
        "../",
        "../etc/passwd",
        "a/../b",
        "a/..",
        "a/./../..",
        "./a",
        "a/./b",
        "/..",
        "//../x",
        "..\\",
        "a\\b",
        "..\\..\\windows",
        "x\x00.jpg",
        "a/b\x00",
        "a\nb",
        "a\rb",
        "a\tb",
        "a\x1bb",
        "a\x7fb",
        "a\x85b",
        "evil\u202egpj.exe",
        "a\u200bb",
        "a\ufeffb",
        "bad\ufffdutf8",
        "\udcae\udc8a-",
        "a\ue000b",
        "a" * 256,
        "d/" + "é" * 128,
        "/".join(["abcdefghi"] * 103),
        "a.",
        "a./b",
        "a/b.",
        "a ",
        "a /b",
        "...",
        " ",
        "CON",
        "con",
        "NUL.txt",
        "dir/nul.tar.gz",
        "COM1",
        "LPT9.log",
        "aux/x",
        "PRN",
    ],
)
def test_clean_path_refuses(path: str) -> None:
    with pytest.raises(errors.InvalidPath):
        names.clean_path(path)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a/b.png", "a/b.png"),
        ("/a/b.png", "a/b.png"),
        ("///a/b.png", "a/b.png"),
        ("a//b", "a/b"),
        ("folder/", "folder/"),
        ("/folder/sub/", "folder/sub/"),
        ("/", ""),
        ("", ""),
        ("/etc/passwd", "etc/passwd"),
        ("%2e%2e%2f", "%2e%2e%2f"),
        ("%252e", "%252e"),
        (".hidden", ".hidden"),
        ("a..b", "a..b"),
        ("..a", "..a"),
        ("x.jpg.php", "x.jpg.php"),
        ("CONSOLE", "CONSOLE"),
        ("CON_x", "CON_x"),
        ("`\"$%&'<> keys", "`\"$%&'<> keys"),
        (" leading", " leading"),
        ("a" * 255, "a" * 255),
        ("é" * 127, "é" * 127),
    ],
)
def test_clean_path_accepts_and_normalises(path: str, expected: str) -> None:
    assert names.clean_path(path) == expected


def test_clean_path_nfc_normalises() -> None:
    nfd = unicodedata.normalize("NFD", "café/naïve.txt")
    assert nfd != "café/naïve.txt"
    assert names.clean_path(nfd) == "café/naïve.txt"
    assert names.clean_path(nfd) == names.clean_path("café/naïve.txt")


def test_clean_path_length_limits_are_in_bytes() -> None:
    exact = "/".join(["a" * 254] * 4) + "/abcd"
    assert len(exact.encode()) == 1024
    assert names.clean_path(exact) == exact
    with pytest.raises(errors.InvalidPath):
        names.clean_path(exact + "d")
    with pytest.raises(errors.InvalidPath):
        names.clean_path("€" * 86)  # 258 bytes in one component
    assert names.clean_path("€" * 85) == "€" * 85


def test_clean_path_folder_length_counts_the_slash() -> None:
    folder = "/".join(["a" * 254] * 4) + "/abc/"
    assert len(folder.encode()) == 1024
    assert names.clean_path(folder) == folder
    with pytest.raises(errors.InvalidPath):
        names.clean_path(folder[:-1] + "c/")


path_alphabet = st.sampled_from(
    ["a", "b", ".", "..", "/", "\\", " ", "\x00", "\u202e", "é", "e\u0301", "CON", "~", "%"]
)


@given(st.lists(path_alphabet, max_size=20).map("".join) | st.text(max_size=60))
@settings(max_examples=400, deadline=None)
def test_clean_path_is_total_and_never_escapes(path: str) -> None:
    try:
        clean = names.clean_path(path)
    except errors.InvalidPath:
        return
    assert not clean.startswith("/")
    parts = clean.split("/")
    assert ".." not in parts and "." not in parts
    assert "\\" not in clean and "\x00" not in clean
    assert len(clean.encode()) <= names.MAX_PATH_BYTES
    assert all(len(p.encode()) <= names.MAX_COMPONENT_BYTES for p in parts)
    assert all(unicodedata.category(c)[0] != "C" for c in clean)
    assert clean == unicodedata.normalize("NFC", clean)
    assert names.clean_path(clean) == clean  # idempotent


# --- storage_key --------------------------------------------------------------------------


def test_storage_key_uses_a_path_as_is() -> None:
    assert names.storage_key("/a/b/photo.png", "ignored.jpg") == "a/b/photo.png"
    assert names.storage_key("a/b", "ignored.jpg") == "a/b"


def test_storage_key_appends_the_default_name_inside_a_folder() -> None:
    key = names.storage_key("/uploads/2024/", "photo.png")
    assert key.startswith("uploads/2024/")
    rest = key.removeprefix("uploads/2024/")
    assert ID_PREFIX.match(rest) and rest.endswith("_photo.png") and len(rest) == 30


@pytest.mark.parametrize("path", [None, "", "/"])
def test_storage_key_defaults_to_id_and_filename(path: str | None) -> None:
    key = names.storage_key(path, "photo.png")
    assert ID_PREFIX.match(key)
    assert key[21:] == "photo.png"
    assert names.storage_key(path, "photo.png") != key


def test_storage_key_refuses_a_bad_path() -> None:
    with pytest.raises(errors.InvalidPath):
        names.storage_key("../x", "a.png")


# --- clean_filename -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("photo.png", "photo.png"),
        ("../../etc/passwd", "passwd"),
        ("..\\..\\boot.ini", "boot.ini"),
        ("C:\\Users\\x\\doc.pdf", "doc.pdf"),
        ("dir/", "file"),
        ("/", "file"),
        ("", "file"),
        (None, "file"),
        (".", "file"),
        ("..", "file"),
        ("...", "file"),
        (" . ", "file"),
        ("name. . .", "name"),
        ("name   ", "name"),
        ("  name", "name"),
        ("a\r\nContent-Type: x.txt", "aContent-Type: x.txt"),
        ("x\x00.jpg", "x.jpg"),
        ("evil\u202egpj.exe", "evilgpj.exe"),
        ("a\u200bb", "ab"),
        ("CON", "_CON"),
        ("nul.txt", "_nul.txt"),
        ("Com1.tar.gz", "_Com1.tar.gz"),
        ("CONSOLE.txt", "CONSOLE.txt"),
        ('say "hi".txt', 'say "hi".txt'),
        (".bashrc", ".bashrc"),
        ("x.jpg.php", "x.jpg.php"),
    ],
)
def test_clean_filename_repairs(name: str | None, expected: str) -> None:
    assert names.clean_filename(name) == expected


def test_clean_filename_uses_the_fallback() -> None:
    assert names.clean_filename("", fallback="upload") == "upload"
    assert names.clean_filename("a/", fallback="upload") == "upload"


def test_clean_filename_nfc_normalises() -> None:
    assert names.clean_filename(unicodedata.normalize("NFD", "café.txt")) == "café.txt"


def test_clean_filename_truncates_keeping_the_extension() -> None:
    name = "a" * 300 + ".jpeg"
    clean = names.clean_filename(name)
    assert clean.endswith(".jpeg")
    assert len(clean.encode()) == names.MAX_FILENAME_BYTES
    multibyte = "€" * 200 + ".png"
    clean = names.clean_filename(multibyte)
    assert clean.endswith(".png") and clean.startswith("€")
    assert len(clean.encode()) <= names.MAX_FILENAME_BYTES
    clean.encode().decode()  # whole characters only


def test_clean_filename_truncates_without_a_usable_extension() -> None:
    clean = names.clean_filename("b" * 300)
    assert clean == "b" * names.MAX_FILENAME_BYTES
    long_ext = "c" * 100 + "." + "d" * 200
    assert len(names.clean_filename(long_ext).encode()) <= names.MAX_FILENAME_BYTES


@pytest.mark.parametrize("filler", [" ", ".", ". "])
def test_truncation_never_leaves_a_trailing_dot_or_space(filler: str) -> None:
    name = "a" * (names.MAX_FILENAME_BYTES - 1) + filler * 20 + "b"
    clean = names.clean_filename(name)
    assert clean == clean.rstrip(". ")
    assert clean and len(clean.encode()) <= names.MAX_FILENAME_BYTES


@pytest.mark.parametrize("name", ["\ufffd", "caf\ufffd.jpg", "\ufffd\ufffd.png"])
def test_a_replacement_character_is_dropped_from_a_filename(name: str) -> None:
    """Found by the generated test with more examples: kept, it made a name that
    ``clean_path`` refuses ("not valid UTF-8")."""
    clean = names.clean_filename(name)
    assert "\ufffd" not in clean
    assert_safe_component(clean)


def assert_safe_component(clean: str) -> None:
    assert clean
    assert "/" not in clean and "\\" not in clean
    assert clean not in {".", ".."}
    assert clean == clean.strip()
    assert not clean.endswith((".", " "))
    assert all(unicodedata.category(c)[0] != "C" for c in clean)
    assert not names.WINDOWS_RESERVED.match(clean)
    assert len(clean.encode()) <= names.MAX_FILENAME_BYTES
    assert names.clean_path(clean) == clean


@given(st.text(max_size=300))
@settings(max_examples=300, deadline=None)
def test_clean_filename_always_gives_a_safe_single_component(name: str) -> None:
    assert_safe_component(names.clean_filename(name))


@given(
    st.lists(
        st.sampled_from(["a", ".", " ", "/", "\\", "CON", "nul", "\u202e", "€", "\u3000", ".txt"]),
        max_size=120,
    ).map("".join)
)
@settings(max_examples=300, deadline=None)
def test_clean_filename_safe_for_tricky_pieces(name: str) -> None:
    clean = names.clean_filename(name)
    assert_safe_component(clean)
    assert names.clean_filename(clean) == clean  # idempotent


# --- containers ---------------------------------------------------------------------------


@pytest.mark.parametrize("container", ["bucket", "my-bucket.v2", "a", "A_b", "x" * 63])
def test_clean_container_accepts(container: str) -> None:
    assert names.clean_container(container) == container


@pytest.mark.parametrize(
    "container", ["", "-a", ".a", "a..b", "a/b", "a b", "x" * 64, "é", "a\n", "..", "a\\b"]
)
def test_clean_container_refuses(container: str) -> None:
    with pytest.raises(errors.InvalidParameter):
        names.clean_container(container)
