"""`stowage verify` (47) and `stowage fsck [--repair]` (start-up recovery's report) through
the real command line, on a data folder left with every kind of inconsistency."""

from __future__ import annotations

import hashlib
import os
import time

from stowage.core import overwrites
from tests.api.harness import Harness
from tests.api.test_file_ops import handle_of
from tests.reliability.checks import fault


async def test_verify_reports_corrupt_and_missing_files(harness: Harness) -> None:
    good = await harness.store(b"good bytes")
    bad = await harness.store(b"bad bytes!")
    gone = await harness.store(b"gone bytes")
    harness.object_path(harness.open_app, bad["key"]).write_bytes(b"bad byteS!")
    harness.object_path(harness.open_app, gone["key"]).unlink()
    fault(2)
    code, out = await harness.cli("verify")
    handles = {handle_of(good), handle_of(bad), handle_of(gone)}
    words = [line.split() for line in out.splitlines()]
    lines = {w[0]: w[1] for w in words if len(w) > 1 and w[0] in handles}  # not log lines
    assert code == 1, out
    assert lines == {handle_of(good): "ok", handle_of(bad): "corrupt", handle_of(gone): "missing"}
    code, out = await harness.cli("verify", "--", handle_of(good))
    assert code == 0 and f"{handle_of(good)}  ok" in out, out
    code, out = await harness.cli("verify", "-FnoSuchHandle000000")  # handles may begin with -
    assert code == 1 and "-FnoSuchHandle000000  missing" in out, out


async def test_fsck_reports_then_repairs(harness: Harness) -> None:
    kept = await harness.store(b"kept")
    gone = await harness.store(b"gone")
    harness.object_path(harness.open_app, gone["key"]).unlink()
    orphan = harness.object_path(harness.open_app, "nobody/owns.me")
    orphan.parent.mkdir(parents=True)
    orphan.write_bytes(b"orphan")
    tmp = harness.settings.data_dir / "storage" / harness.open_app.api_key / "tmp"
    old_temp, new_temp = tmp / "old.part", tmp / "new.part"
    old_temp.write_bytes(b"left by a crash")
    new_temp.write_bytes(b"an upload in progress")
    past = time.time() - 7200
    os.utime(old_temp, (past, past))
    fault(3)
    code, out = await harness.cli("fsck")
    assert code == 1
    assert f"missing object  {handle_of(gone)}" in out
    assert f"orphan object   {orphan}" in out
    assert "old.part" in out and "new.part" in out
    assert out.rstrip().endswith("inconsistent")
    assert orphan.exists() and old_temp.exists()  # report only
    code, out = await harness.cli("fsck", "--repair")
    assert "repaired 3" in out
    assert not orphan.exists() and not old_temp.exists()
    assert new_temp.exists()  # younger than an hour: may be a live upload
    assert await harness.service.registry.get(handle_of(gone)) is None
    assert await harness.service.registry.get(handle_of(kept)) is not None
    new_temp.unlink()
    code, out = await harness.cli("fsck")
    assert code == 0 and out.rstrip().endswith("clean"), out


async def test_fsck_reports_and_settles_an_unsettled_overwrite(harness: Harness) -> None:
    """An overwrite intent left by a crash (item 49) after its bytes were committed:
    reported, then adopted by --repair, after which verify says ok."""
    handle = handle_of(await harness.store(b"v1"))
    record = await harness.service.registry.get(handle)
    assert record is not None
    new = record.with_(size=2, sha256=hashlib.sha256(b"v2").hexdigest(), version=2)
    assert await harness.service.registry.intend_overwrite(overwrites.intent_for(new))
    harness.object_path(harness.open_app, record.key).write_bytes(b"v2")
    fault()
    code, out = await harness.cli("fsck")
    assert code == 1 and f"unsettled write {handle}" in out, out
    code, out = await harness.cli("fsck", "--repair")
    assert "repaired 1" in out, out
    code, out = await harness.cli("verify", "--", handle)
    assert code == 0 and f"{handle}  ok" in out, out
    code, out = await harness.cli("fsck")
    assert code == 0 and out.rstrip().endswith("clean"), out
