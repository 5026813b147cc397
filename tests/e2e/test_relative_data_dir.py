"""A server started as ``scripts/serve`` starts it: from a folder, with the default data
folder ``data``, which is relative. The sandboxed engines bind their job folders by path
inside bubblewrap, where the server's working folder means nothing: a relative data_dir
made every Office conversion fail (``converter ended (1)``) while the tests, which all
give a plain absolute folder, passed. Every kind of job runs here from a relative data
folder and from one whose path has the characters that paths, URLs and engine options
treat specially (a space, ``#``, ``%``, ``,``, ``:``, ``;``, ``[``, non-ASCII)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import pyvips
import requests

from stowage.config import Settings, load_settings
from tests.api.test_video import clip
from tests.processing.officedocs import docx
from tests.processing.pdfs import three_pages
from tests.servers.stowage_serve import Running, running


def test_a_relative_data_dir_is_taken_from_where_stowage_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert Settings().data_dir == tmp_path / "data"
    assert load_settings(data_dir=Path("d/x")).data_dir == tmp_path / "d" / "x"
    monkeypatch.setenv("STOWAGE_DATA_DIR", "from-env")
    assert load_settings().data_dir == tmp_path / "from-env"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("STOWAGE_DATA_DIR", "~/stowage")
    assert load_settings().data_dir == tmp_path / "home" / "stowage"


#: Where the data folder is, from the folder the server starts in.
FOLDERS = {"relative": Path("data"), "awkward": Path("dätä #1 %20,a:b;c [x]") / "data"}


@pytest.fixture(params=sorted(FOLDERS))
def started_here(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Running]:
    folder = FOLDERS[request.param]
    if folder.parent != Path():
        (tmp_path / folder.parent).mkdir()
        folder = tmp_path / folder  # absolute, as a configuration file would give it
    yield from running(folder, cwd=tmp_path, log=tmp_path / "serve.log")


def _store(running: Running, body: bytes, filename: str) -> str:
    resp = requests.post(
        f"{running.server.api}/api/store/S3",
        params={"key": running.key, "filename": filename},
        data=body,
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    handle: str = resp.json()["handle"]
    return handle


def _get(running: Running, path: str) -> requests.Response:
    resp = requests.get(f"{running.server.cdn}/{path}", timeout=120)
    assert resp.status_code == 200, (path, resp.status_code, resp.text[:300])
    return resp


def test_every_kind_of_job_runs_from_the_data_folder_given(
    started_here: Running, tmp_path: Path
) -> None:
    word = _store(started_here, docx(["Relative folders"]), "letter.docx")
    assert _get(started_here, f"output=format:pdf/{word}").content.startswith(b"%PDF-")
    page = _get(started_here, f"output=format:png/{word}")
    assert pyvips.Image.new_from_buffer(page.content, "").width > 0

    pdf = _store(started_here, three_pages(), "three.pdf")
    thumb = _get(started_here, f"output=format:png,page:2/resize=width:120/{pdf}")
    assert pyvips.Image.new_from_buffer(thumb.content, "").width == 120

    photo = pyvips.Image.black(300, 200).new_from_image([10, 200, 30]).jpegsave_buffer()
    image = _store(started_here, photo, "p.jpg")
    small = _get(started_here, f"resize=width:150/output=format:webp/{image}")
    assert pyvips.Image.new_from_buffer(small.content, "").width == 150

    video = _store(started_here, clip(tmp_path / "clip.mp4"), "clip.mp4")
    job = f"video_convert=preset:thumbnail/{video}"
    ends = time.monotonic() + 60
    while (answer := _get(started_here, job).json())["status"] not in ("completed", "failed"):
        assert time.monotonic() < ends, answer
        time.sleep(0.2)
    assert answer["status"] == "completed", answer
    assert answer["data"]["url"].startswith(started_here.server.cdn)

    assert "text" in _get(started_here, f"ocr/{image}").json()
    assert list(tmp_path.glob("**/stowage.db"))
    log = (tmp_path / "serve.log").read_text(errors="replace")
    assert "could not start" not in log and "Traceback" not in log, log[-3000:]
