"""filestack-js's ``client.picker()`` in real headless Chromium, against Stowage serving a
domain's Filestack hosts (issue 25): the page loads filestack-js from its npm package,
unchanged, and sets only ``cname``; Chromium resolves *.stowage.test to 127.0.0.1
(``--host-resolver-rules``) and trusts the test's certificate by its key
(``--ignore-certificate-errors-spki-list``), nothing changed on the machine. The SDK loads
Stowage's picker module from static.<cname>, which uploads through the SDK's multipart
protocol.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import pyvips
from playwright.sync_api import Browser, Playwright, expect

from stowage.core.security import encode_policy, sign
from tests.browser.picker_kit import (
    REMOTE,
    Front,
    fetch,
    launch,
    noted,
    open_page,
    serve_site,
    serving,
)


@pytest.fixture(scope="module")
def front(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Front]:
    yield from serving(tmp_path_factory.mktemp("picker"))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve_site(tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="module")
def chromium(playwright: Playwright, front: Front) -> Iterator[Browser]:
    # A fake camera (a test pattern), allowed without asking, for the webcam source.
    fake = ("--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream")
    browser = launch(playwright, front, extra=fake)
    yield browser
    browser.close()


def test_pick_upload_and_reject_in_an_overlay(
    chromium: Browser, site: str, front: Front, tmp_path: Path, shots: Path
) -> None:
    page = open_page(chromium, site, front)
    page.evaluate("openPicker({maxFiles: 3, fromSources: ['local_file_system', 'url']})")
    dashboard = page.locator(".uppy-Dashboard-inner")
    expect(dashboard).to_be_visible(timeout=20_000)
    big = os.urandom(13 * 1024 * 1024)  # three parts of filestack-js's multipart upload
    files = {"hello.bin": big, "rename-me.txt": b"renamed on the way\n"}
    files["reject-me.txt"] = b"never uploaded\n"
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    page.locator("input.uppy-Dashboard-input").first.set_input_files(
        [str(tmp_path / name) for name in files]
    )
    expect(page.locator(".uppy-Dashboard-Item")).to_have_count(2, timeout=10_000)
    expect(page.locator(".uppy-Informer", has_text="Not this one, please").first).to_be_visible()
    page.screenshot(path=str(shots / "picker.png"))  # docs/picker.png is one of these
    page.locator(".uppy-StatusBar-actionBtn--upload").click()
    page.wait_for_function("window.done !== null", timeout=30_000)
    done = page.evaluate("window.done")
    assert done["filesFailed"] == []
    uploaded = {f["filename"]: f for f in done["filesUploaded"]}
    assert set(uploaded) == {"hello.bin", "renamed.txt"}
    for name, original in (("hello.bin", "hello.bin"), ("renamed.txt", "rename-me.txt")):
        meta = uploaded[name]
        assert meta["url"] == f"https://cdn.{front.cname}/{meta['handle']}"
        assert len(meta["handle"]) == 20 and meta["status"] == "Stored"
        assert meta["source"] == "local_file_system" and meta["size"] == len(files[original])
        assert meta["originalFile"]["name"] == original and meta["uploadId"]
        assert fetch(front, meta["url"]) == files[original]
    events = noted(page)
    assert events[0] == ["open", "function"]
    assert [e[1] for e in events if e[0] == "selected"] == list(files)
    assert ["started", 2] in events
    percents = [e[2] for e in events if e[0] == "progress" and e[1] == "hello.bin"]
    # Reported while the parts go (how many depends on the machine's pace), never back.
    assert percents and percents == sorted(percents), percents
    assert sorted(e[1] for e in events if e[0] == "finished") == ["hello.bin", "renamed.txt"]
    expect(dashboard).to_have_count(0)  # an overlay closes once every file is stored
    assert events[-1] == ["close"]
    page.close()


def test_inline_in_a_container_with_limits(chromium: Browser, site: str, front: Front) -> None:
    page = open_page(chromium, site, front)
    page.evaluate(
        "openPicker({displayMode: 'inline', container: '#inline', accept: ['image/*'],"
        " maxSize: 1000})"
    )
    inline = page.locator("#inline .uppy-Dashboard-inner")
    expect(inline).to_be_visible(timeout=20_000)
    page.locator("#inline input.uppy-Dashboard-input").first.set_input_files(
        files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"not an image"}]
    )
    expect(
        page.locator(".uppy-Informer", has_text="You can only upload: image/*").first
    ).to_be_visible()
    assert page.locator(".uppy-Dashboard-Item").count() == 0  # accept held
    page.locator("#inline input.uppy-Dashboard-input").first.set_input_files(
        files=[{"name": "big.png", "mimeType": "image/png", "buffer": b"\x89PNG" + bytes(2000)}]
    )
    expect(page.locator(".uppy-Informer", has_text="big.png exceeds").first).to_be_visible()
    assert page.locator(".uppy-Dashboard-Item").count() == 0  # maxSize held
    page.evaluate("window.picker.close()")
    expect(inline).to_have_count(0)
    assert noted(page)[-1] == ["close"]
    page.close()


def test_a_link_stored_in_the_background(chromium: Browser, site: str, front: Front) -> None:
    page = open_page(chromium, site, front)
    page.evaluate("openPicker({fromSources: ['url'], uploadInBackground: true})")
    page.get_by_role("tab", name="Link (URL)").click()
    page.locator("form.stowage-url input[name=url]").fill(f"{site}/remote.txt")
    page.locator("form.stowage-url button").click()
    page.wait_for_function("window.done !== null", timeout=30_000)  # no upload button
    done = page.evaluate("window.done")
    assert done["filesFailed"] == []
    (meta,) = done["filesUploaded"]
    assert (meta["filename"], meta["source"]) == ("remote.txt", "url")
    assert meta["originalPath"] == f"{site}/remote.txt" and meta["size"] == len(REMOTE)
    assert meta["url"] == f"https://cdn.{front.cname}/{meta['handle']}"
    assert fetch(front, meta["url"]) == REMOTE  # Stowage fetched it, not the browser
    assert ["selected", "remote.txt", "url"] in noted(page)
    page.close()


def test_an_image_cropped_to_the_aspect_ratio_before_upload(
    chromium: Browser, site: str, front: Front
) -> None:
    page = open_page(chromium, site, front)
    page.evaluate(
        "openPicker({accept: ['image/*'], transformations: {crop: {aspectRatio: 1, force: true}}})"
    )
    wide = pyvips.Image.black(300, 120).draw_rect([250, 90, 20], 20, 20, 100, 60, fill=True)
    page.locator("input.uppy-Dashboard-input").first.set_input_files(
        files=[
            {"name": "wide.png", "mimeType": "image/png", "buffer": wide.write_to_buffer(".png")}
        ]
    )
    save = page.locator(".uppy-DashboardContent-save")  # force: the editor opens by itself
    expect(save).to_be_visible(timeout=10_000)
    expect(page.locator(".cropper-crop-box")).to_be_visible()
    save.click()
    page.locator(".uppy-StatusBar-actionBtn--upload").click()
    page.wait_for_function("window.done !== null", timeout=30_000)
    (meta,) = page.evaluate("window.done")["filesUploaded"]
    stored = pyvips.Image.new_from_buffer(fetch(front, meta["url"]), "")
    assert abs(stored.width - stored.height) <= 1, (stored.width, stored.height)
    assert stored.height <= 120 and meta["filename"] == "wide.png"
    shown = page.evaluate(  # the page shows it through a transformation URL on cdn.<cname>
        """(handle) => new Promise((ok, no) => {
            const img = new Image();
            img.onload = () => ok([img.naturalWidth, img.naturalHeight, img.src]);
            img.onerror = () => no(new Error('not shown: ' + img.src));
            img.src = client.transform(handle, { resize: { width: 50 } });
            document.body.appendChild(img);
        })""",
        meta["handle"],
    )
    assert shown[:2] == [50, 50] and shown[2].startswith(f"https://cdn.{front.cname}/"), shown
    page.close()


def test_a_failed_store_and_too_few_files(chromium: Browser, site: str, front: Front) -> None:
    page = open_page(chromium, site, front)
    # The app has no Dropbox storage: the upload is refused and reported, not lost.
    page.evaluate("openPicker({maxFiles: 2, minFiles: 2, storeTo: {location: 'dropbox'}})")
    picked = page.locator("input.uppy-Dashboard-input").first
    picked.set_input_files(files=[{"name": "one.txt", "mimeType": "text/plain", "buffer": b"1"}])
    expect(page.locator(".uppy-Dashboard-Item")).to_have_count(1)
    page.locator(".uppy-StatusBar-actionBtn--upload").click()
    expect(page.locator(".uppy-Informer", has_text="at least 2").first).to_be_visible()
    assert page.evaluate("window.done") is None  # minFiles held
    page.locator(".uppy-DashboardContent-addMore").click()
    picked.set_input_files(files=[{"name": "two.txt", "mimeType": "text/plain", "buffer": b"2"}])
    expect(page.locator(".uppy-Dashboard-Item")).to_have_count(2)
    page.locator(".uppy-StatusBar-actionBtn--upload").click()
    page.wait_for_function("window.done !== null", timeout=60_000)
    done = page.evaluate("window.done")
    assert done["filesUploaded"] == []
    assert sorted(f["filename"] for f in done["filesFailed"]) == ["one.txt", "two.txt"]
    failed = [e for e in noted(page) if e[0] == "failed"]
    assert len(failed) == 2 and all(e[2].startswith("Error: ") for e in failed), failed
    expect(page.locator(".uppy-Dashboard-inner")).to_be_visible()  # stays open on failure
    page.close()


DROP = """([name, text]) => {
    const dt = new DataTransfer();
    dt.items.add(new File([text], name, { type: 'text/plain' }));
    document.body.dispatchEvent(new DragEvent('dragenter', { dataTransfer: dt, bubbles: true }));
    const zone = document.querySelector('.stowage-drop-pane-overlay');
    const shown = getComputedStyle(zone).display;
    const drop = { dataTransfer: dt, bubbles: true, cancelable: true };
    zone.dispatchEvent(new DragEvent('drop', drop));
    return shown;
}"""


def test_a_drop_pane_uploads_what_is_dropped(chromium: Browser, site: str, front: Front) -> None:
    page = open_page(chromium, site, front)
    page.evaluate(
        """openPicker({displayMode: 'dropPane', container: '#inline', maxSize: 1000,
            dropPane: {overlay: true, customText: 'Drop it here', showIcon: false,
                onDragEnter: (evt) => note('dragenter', evt.type),
                onDrop: (evt) => note('drop', evt.dataTransfer.files[0].name),
                onProgress: (percent) => note('pane-progress', percent),
                onSuccess: (files) => note('success', files.map((f) => f.filename))}})"""
    )
    pane = page.locator("#inline .stowage-drop-pane")
    expect(pane).to_contain_text("Drop it here", timeout=20_000)
    assert pane.locator(".stowage-drop-pane-icon").count() == 0  # showIcon: false
    assert page.locator(".uppy-Dashboard-inner").count() == 0  # no Dashboard
    assert page.evaluate(DROP, ["too-big.txt", "x" * 2000]) == "flex"  # the overlay showed
    expect(pane).to_contain_text("too-big.txt exceeds")  # maxSize held, said in the pane
    text = "dropped on the page\n"
    page.evaluate(DROP, ["dropped.txt", text])
    page.wait_for_function("window.done !== null", timeout=30_000)  # uploaded at once
    (meta,) = page.evaluate("window.done")["filesUploaded"]
    assert meta["filename"] == "dropped.txt" and meta["url"].startswith(
        f"https://cdn.{front.cname}/"
    )
    assert fetch(front, meta["url"]) == text.encode()
    expect(pane.locator(".stowage-drop-pane-progress")).to_have_text("100%")  # showProgress
    expect(page.locator(".stowage-drop-pane-overlay")).to_be_hidden()
    events = noted(page)
    assert ["dragenter", "dragenter"] in events
    assert [e for e in events if e[0] == "drop"] == [
        ["drop", "too-big.txt"],
        ["drop", "dropped.txt"],
    ]
    assert ["success", ["dropped.txt"]] in events and ["pane-progress", 100] in events
    page.evaluate("window.picker.close()")
    expect(pane).to_have_count(0)
    expect(page.locator(".stowage-drop-pane-overlay")).to_have_count(0)
    page.close()


def test_a_picture_taken_with_the_webcam(chromium: Browser, site: str, front: Front) -> None:
    page = open_page(chromium, site, front)
    page.evaluate("openPicker({fromSources: ['local_file_system', 'webcam']})")
    page.get_by_role("tab", name="Camera").click()
    snap = page.locator(".uppy-Webcam-button--picture")
    expect(snap).to_be_enabled(timeout=20_000)
    page.wait_for_function("document.querySelector('.uppy-Webcam-video')?.videoWidth > 0")
    snap.click()
    page.locator(".uppy-Webcam-button--submit").click()  # the picture shown, then kept
    expect(page.locator(".uppy-Dashboard-Item")).to_have_count(1, timeout=10_000)
    page.locator(".uppy-StatusBar-actionBtn--upload").click()
    page.wait_for_function("window.done !== null", timeout=30_000)
    (meta,) = page.evaluate("window.done")["filesUploaded"]
    assert (meta["source"], meta["mimetype"]) == ("webcam", "image/jpeg"), meta
    stored = fetch(front, meta["url"])
    assert stored[:3] == b"\xff\xd8\xff" and len(stored) == meta["size"]
    picture = pyvips.Image.new_from_buffer(stored, "")
    assert picture.width >= 160 and picture.height >= 120  # a frame of the fake camera
    assert ["selected", meta["filename"], "webcam"] in noted(page)
    page.close()


def test_a_stored_file_linked_from_the_apps_storage(
    chromium: Browser, site: str, front: Front
) -> None:
    key, secret = front.server.create_app()
    policy = encode_policy(
        {"expiry": int(time.time()) + 600, "call": ["pick", "read", "stat", "store"]}
    )
    page = open_page(
        chromium, site, front, apikey=key, policy=policy, signature=sign(secret, policy)
    )
    handles = page.evaluate(
        """Promise.all(['one.txt', 'two.txt'].map((name) =>
            client.upload(new Blob(['stored ' + name]), {}, { filename: name })
                .then((stored) => stored.handle)))"""
    )
    page.evaluate(
        "openPicker({fromSources: ['local_file_system', 'customsource'],"
        " customSourceName: 'Our files'})"
    )
    page.get_by_role("tab", name="Our files").click()
    listed = page.locator(".stowage-storage .stowage-pick")
    expect(listed).to_have_count(2, timeout=10_000)  # the app's files, and only them
    page.locator(f".stowage-pick[data-handle='{handles[1]}']").click()
    expect(page.locator(".uppy-Dashboard-Item")).to_have_count(1)
    page.locator(".uppy-StatusBar-actionBtn--upload").click()
    page.wait_for_function("window.done !== null", timeout=30_000)
    (meta,) = page.evaluate("window.done")["filesUploaded"]
    assert (meta["handle"], meta["filename"], meta["source"]) == (
        handles[1],
        "two.txt",
        "customsource",
    )
    assert meta["url"] == f"https://cdn.{front.cname}/{handles[1]}" and meta["size"] == 14
    assert fetch(front, meta["url"]) == b"stored two.txt"  # linked: the same stored file
    assert ["selected", "two.txt", "customsource"] in noted(page)
    page.close()
    # Without a policy a browser may not list: the tab says why, nothing is listed.
    page = open_page(chromium, site, front, apikey=key)
    page.evaluate("openPicker({fromSources: ['customsource']})")
    page.get_by_role("tab", name="Stored files").click()
    error = page.locator(".stowage-storage-error")
    expect(error).to_contain_text("a policy and signature", timeout=10_000)
    assert page.locator(".stowage-pick").count() == 0
    page.close()
