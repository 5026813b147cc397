"""The forms ``stowage import`` reads its handles from (migration/entries.py)."""

from __future__ import annotations

import json
import string
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stowage.migration.entries import Entry, epoch_ms, handle_of, read_entries

handles = st.text(string.ascii_letters + string.digits + "_-", min_size=20, max_size=20)


@given(st.lists(handles, min_size=1, max_size=30))
def test_a_list_of_handles_or_urls_gives_each_handle_once(found: list[str]) -> None:
    lines = ["# exported today", ""]
    for i, h in enumerate(found):
        lines.append(h if i % 2 else f"https://cdn.example/resize=width:5/{h}?dl=true")
    entries = read_entries("\n".join(lines))
    assert [e.handle for e in entries] == list(dict.fromkeys(found))


@given(
    handles,
    st.integers(0, 10**12),
    st.datetimes(datetime(1980, 1, 1), datetime(2200, 1, 1), timezones=st.just(UTC)),
)
def test_csv_and_json_exports_give_the_same_entries(handle: str, size: int, when: datetime) -> None:
    ms = round(when.timestamp() * 1000)
    row = {"Handle": handle, "File Name": "a, b.txt", "MIME-Type": "text/plain", "Size": size}
    csv_text = (
        f'Handle,File Name,MIME-Type,Size,Created_At\n{handle},"a, b.txt",text/plain,{size},{ms}\n'
    )
    as_json = json.dumps([{**row, "created_at": when.isoformat()}])
    as_lines = json.dumps({**row, "uploaded": ms / 1000})
    expected = Entry(handle, "a, b.txt", "text/plain", size, None)
    for text in (csv_text, as_json, as_lines, json.dumps({"data": [{**row, "uploaded": ms}]})):
        (entry,) = read_entries(text)
        assert entry.uploaded == pytest.approx(ms, abs=1)
        assert entry.__class__(**{**entry.__dict__, "uploaded": None}) == expected


@given(st.floats(1e9, 4e9))
def test_epoch_seconds_and_milliseconds_are_both_milliseconds(seconds: float) -> None:
    assert epoch_ms(seconds) == pytest.approx(seconds * 1000)
    assert epoch_ms(seconds * 1000) == pytest.approx(seconds * 1000)


def test_what_is_not_a_handle_is_kept_to_be_reported() -> None:
    assert handle_of("https://cdn.example/no-handle-here") == "https://cdn.example/no-handle-here"
    assert handle_of("  short ") == "short"
    with pytest.raises(ValueError):
        read_entries('[{"filename": "no handle"}]')
