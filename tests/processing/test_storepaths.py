"""A store path with its slashes unquoted, as filestack-swift writes it
(processing/storepaths.py): read as the quoted path is, wherever the option stands."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stowage.processing import catalogue, grammar

H = "A" * 20
_PIECE = st.text("abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=1, max_size=12).filter(
    lambda piece: catalogue.spec(piece) is None  # a piece named like a task is that task
)
_OTHERS = ["location:S3", "region:us-east-1", "container:bucket", "filename:a.jpg", "access:public"]


@given(
    pieces=st.lists(_PIECE, min_size=1, max_size=5),
    folder=st.booleans(),
    others=st.lists(st.sampled_from(_OTHERS), unique=True, max_size=4),
    at=st.integers(0, 4),
    short=st.booleans(),
    after=st.sampled_from(["", "crop=dim:[1,1,20,20]/", "flip/resize=w:10/"]),
)
def test_an_unquoted_path_is_the_quoted_path(
    pieces: list[str], folder: bool, others: list[str], at: int, short: bool, after: str
) -> None:
    path = "/".join(pieces) + ("/" if folder else "")
    name = "p" if short else "path"
    at = min(at, len(others))

    def store(value: str) -> str:
        return "store=" + ",".join([*others[:at], f"{name}:{value}", *others[at:]])

    plain = grammar.parse_path(f"/{store(path)}/{after}{H}")
    quoted = grammar.parse_path(f"/{store(chr(34) + path + chr(34))}/{after}{H}")
    assert plain.store == quoted.store and plain.store is not None
    assert plain.store.get("path") == path
    assert plain.handle == H and len(plain.tasks) == len(quoted.tasks)


def test_the_swift_sdks_own_store_url() -> None:
    """filestack-swift's TransformableTests.testStoreImageTransformation, as it is sent."""
    found = grammar.parse_path(
        "/store=location:S3,region:us-east-1,container:filestack-web-demo,path:my/custom/path/,"
        "filename:custom_flower_crop.jpg,access:public,base64decode:true"
        f"/crop=dim:[301,269,1226,1100]/security=policy:P,signature:S/{H}"
    )
    assert found.store is not None and found.store.get("path") == "my/custom/path/"
    assert found.store.get("filename") == "custom_flower_crop.jpg"
    assert found.tasks[1] == "crop=dim:[301,269,1226,1100]" and found.policy == "P"
    assert found.handle == H


@pytest.mark.parametrize(
    "raw",
    [
        f"/store=path:a/flip/{H}",  # a piece named like a task is that task
        f"/store=path:a/{H}",  # the source is never taken into the path
    ],
)
def test_the_path_stops_at_a_task_and_at_the_source(raw: str) -> None:
    found = grammar.parse_path(raw)
    assert found.store is not None and found.store.get("path") == "a" and found.handle == H


def test_the_java_sdks_store_task() -> None:
    """filestack-java's TestStorageOptions.testGetTask: the path unquoted, with a leading
    slash, and an option after it."""
    task = (
        "store=access:private,base64decode:false,container:some_bucket,"
        "filename:some_file.txt,location:S3,path:/some/path/,region:us-east-1"
    )
    found = grammar.parse_path(f"/{task}/resize=width:10/{H}")
    assert found.store is not None and found.store.get("path") == "/some/path/"
    assert found.store.get("region") == "us-east-1" and found.tasks[1] == "resize=width:10"
