"""The warm LibreOffice converters (processing/office.py) for real: any text round-trips
through txt -> PDF (a PDF of at least one page whose text holds the words), formats are
chosen by type or name, and a converter killed at its deadline is replaced."""

from __future__ import annotations

import asyncio
import math
import os
import random
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pypdfium2 as pdfium
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.processing import office, officeformats, sandbox
from stowage.processing.office import Converters
from tests.processing import officedocs

needs_office = pytest.mark.needs("soffice", by="scripts/setup.d/79-office.sh")
WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12)
TMP = Path("/tmp")  # LibreOffice's pipe folder whenever it is writable (sal/osl/unx)


@pytest.fixture(autouse=True)
def _stale_office_pipes_removed() -> Iterator[None]:
    """A LibreOffice run unconfined (the tests below that need it) makes its pipes in the
    machine's /tmp, where bubblewrap gives a confined one a private /tmp, and leaves them
    there when it is killed: six sockets a run, found after a day of test runs. Those the
    test left and nothing listens on any more are removed."""
    before = set(TMP.glob("OSL_PIPE_*"))
    yield
    for path in set(TMP.glob("OSL_PIPE_*")) - before:
        with socket.socket(socket.AF_UNIX) as probe:
            try:
                probe.connect(str(path))
            except ConnectionRefusedError:
                path.unlink(missing_ok=True)
            except OSError:
                pass


@pytest.fixture(scope="module")
def running(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[asyncio.AbstractEventLoop, Converters]]:
    loop = asyncio.new_event_loop()
    root = tmp_path_factory.mktemp("office")
    caps = sandbox.Caps(memory=4 << 30, output_bytes=64 << 20, readable=office.converters_caps())
    converters = Converters(root, 1, 30.0, caps)
    yield loop, converters
    loop.run_until_complete(converters.close())
    loop.close()


@needs_office
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(WORDS, min_size=1, max_size=30),
    noise=st.text(max_size=200),
)
def test_any_text_becomes_a_pdf_that_holds_its_words(
    running: tuple[asyncio.AbstractEventLoop, Converters],
    tmp_path_factory: pytest.TempPathFactory,
    words: list[str],
    noise: str,
) -> None:
    loop, converters = running
    folder = tmp_path_factory.mktemp("text")
    source, dest = folder / "in.txt", folder / "out.pdf"
    # Any Unicode text around the words (controls, surrogates' replacements, RTL, ...).
    source.write_text(noise + "\n" + " ".join(words) + "\n" + noise, "utf-8", "replace")
    kind = officeformats.KINDS["txt"]
    loop.run_until_complete(converters.convert(source, kind, "pdf", dest))
    pdf = pdfium.PdfDocument(str(dest))
    try:
        assert len(pdf) >= 1
        text = "".join(pdf[n].get_textpage().get_text_range() for n in range(len(pdf)))
    finally:
        pdf.close()
    flat = "".join(text.split())
    assert "".join(words) in flat


@needs_office
def test_a_document_of_another_family_is_refused_and_the_converter_goes_on(
    running: tuple[asyncio.AbstractEventLoop, Converters], tmp_path: Path
) -> None:
    loop, converters = running
    source = tmp_path / "deck.odp"
    source.write_bytes(officedocs.odp(["one"]))
    sheet = officeformats.KINDS["xlsx"]  # the type says spreadsheet; the file is slides
    with pytest.raises(errors.InvalidDocument):
        loop.run_until_complete(converters.convert(source, sheet, "pdf", tmp_path / "o.pdf"))
    slides = officeformats.KINDS["odp"]
    loop.run_until_complete(converters.convert(source, slides, "pdf", tmp_path / "o.pdf"))
    assert (tmp_path / "o.pdf").read_bytes().startswith(b"%PDF-")


@pytest.mark.parametrize(
    ("mimetype", "name", "found"),
    [
        (officeformats._OOXML + "wordprocessingml.document", "x.bin", "docx"),
        ("application/octet-stream", "report.DOCX", "docx"),
        ("application/zip", "deck.pptx", "pptx"),
        ("text/plain", "table.csv", "csv"),
        ("text/plain", "notes", "txt"),
        ("text/html; charset=utf-8", "page.htm", "html"),
        ("image/jpeg", "photo.docx", None),  # an image named .docx stays an image
        ("application/pdf", "a.pdf", None),
        (None, "a.odt", "odt"),
    ],
)
def test_a_document_is_known_by_its_type_or_its_name(
    mimetype: str | None, name: str, found: str | None
) -> None:
    kind = officeformats.kind_of(mimetype, name)
    assert (kind.extension if kind else None) == found


def test_each_family_converts_to_its_own_formats_only() -> None:
    assert officeformats.target(officeformats.KINDS["docx"], "odt")[0] == "writer8"
    for kind, fmt in (("docx", "xlsx"), ("csv", "pptx"), ("pptx", "docx")):
        with pytest.raises(errors.UnsupportedConversion) as refused:
            officeformats.target(officeformats.KINDS[kind], fmt)
        assert refused.value.status == 400 and refused.value.details["formats"]
    with pytest.raises(errors.UnsupportedConversion):
        officeformats.target(None, "docx")


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback listener, in a thread, that records what each connection sends and
    closes it (so that a converter that connects is not left waiting)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    seen: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                seen.append(conn.recv(200))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], seen
    stop.set()
    thread.join()
    server.close()


@needs_office
def test_the_sandbox_alone_stops_a_converter_that_would_fetch(
    tmp_path: Path, listener: tuple[int, list[bytes]]
) -> None:
    """With LibreOffice's own guard (``BlockUntrustedRefererLinks``) turned off, an
    HTML page's stylesheet link reaches the listener from a converter with network (the
    control), and not from the sandboxed one."""
    driver = tmp_path / "office_driver.py"
    text = office.DRIVER.read_text()
    flipped = '"BlockUntrustedRefererLinks", "false"'
    driver.write_text(text.replace('"BlockUntrustedRefererLinks", "true"', flipped))
    assert flipped in driver.read_text()
    port, seen_by_listener = listener
    url = f"http://127.0.0.1:{port}/pixel.png"
    source = tmp_path / "linked.html"
    source.write_bytes(officedocs.html(["linked"], image_url=url))
    loop = asyncio.new_event_loop()
    seen: dict[str, int] = {}
    try:
        for name, network in (("open", True), ("sandboxed", False)):
            readable = None if network else (*office.READABLE, str(driver))
            caps = sandbox.Caps(memory=4 << 30, network=network, readable=readable)
            converters = Converters(tmp_path / name, 1, 60.0, caps, driver=driver)
            try:
                kind = officeformats.KINDS["html"]
                done = converters.convert(source, kind, "pdf", tmp_path / f"{name}.pdf")
                loop.run_until_complete(done)
            finally:
                loop.run_until_complete(converters.close())
            time.sleep(0.5)
            seen[name] = len(seen_by_listener)
    finally:
        loop.close()
    assert seen["open"] >= 1, seen  # the control: this LibreOffice does fetch
    assert seen["sandboxed"] == seen["open"], seen  # no connection more from the sandbox


@needs_office
def test_requests_past_the_waiting_room_are_refused_busy(
    running: tuple[asyncio.AbstractEventLoop, Converters], tmp_path: Path
) -> None:
    loop, converters = running
    source = tmp_path / "in.txt"
    source.write_text("a few words\n")
    kind = officeformats.KINDS["txt"]
    asked = converters.size * office.WAITING_PER_CONVERTER + 2

    async def all_at_once() -> list[BaseException | None]:
        jobs = [
            converters.convert(source, kind, "pdf", tmp_path / f"{n}.pdf") for n in range(asked)
        ]
        return await asyncio.gather(*jobs, return_exceptions=True)

    results = loop.run_until_complete(all_at_once())
    refused = [r for r in results if isinstance(r, errors.ProcessingBusy)]
    assert len(refused) == 2
    assert results.count(None) == asked - 2  # the others converted, in turn


@needs_office
def test_a_busy_answer_says_the_expected_wait_of_the_conversions_ahead(tmp_path: Path) -> None:
    """Retry-After of a converter's 503 is the wait of the requests ahead, from how long
    its recent conversions took (seeded documents of 8,000 to 10,000 lines), as a lane's is
    (``lanes.Lane``): it was always 1, also behind eight conversions of a second."""
    rng = random.Random(5053)
    loop = asyncio.new_event_loop()
    caps = sandbox.Caps(memory=4 << 30, output_bytes=64 << 20, readable=office.converters_caps())
    converters = Converters(tmp_path / "c", 1, 60.0, caps)
    kind = officeformats.KINDS["txt"]
    sources = []
    for n in range(12):
        source = tmp_path / f"in{n}.txt"
        lines = rng.randint(8000, 10_000)
        source.write_text("\n".join(f"line {i} {rng.random()}" for i in range(lines)) + "\n")
        sources.append(source)
    took = []
    try:
        began = time.monotonic()  # the converter's start too: an upper bound
        loop.run_until_complete(converters.convert(sources[0], kind, "pdf", tmp_path / "w.pdf"))
        first = time.monotonic() - began
        for n, source in enumerate(sources[1:4]):
            began = time.monotonic()
            loop.run_until_complete(converters.convert(source, kind, "pdf", tmp_path / f"{n}.pdf"))
            took.append(time.monotonic() - began)
        waiting = office.WAITING_PER_CONVERTER

        async def flood() -> list[BaseException | None]:
            jobs = [
                converters.convert(sources[n % 12], kind, "pdf", tmp_path / f"f{n}.pdf")
                for n in range(waiting + 3)
            ]
            return await asyncio.gather(*jobs, return_exceptions=True)

        results = loop.run_until_complete(flood())
    finally:
        loop.run_until_complete(converters.close())
        loop.close()
    refused = [r for r in results if isinstance(r, errors.ProcessingBusy)]
    assert len(refused) == 3 and results.count(None) == waiting, results
    # Eight ahead of the refused one (its own turn included) on one converter.
    least = max(1, min(30, math.floor(waiting * min(took) * 0.8)))
    assert least > 1, took  # conversions long enough to tell a wait from the old constant 1
    most = max(1, min(30, math.ceil(waiting * max(*took, first) * 1.2)))
    for busy in refused:
        assert least <= int(busy.headers["Retry-After"]) <= most, (busy.headers, took, first)


@needs_office
def test_a_converter_whose_input_ends_leaves_no_office_behind(tmp_path: Path) -> None:
    """The server's end closes a converter's stdin: the driver ends and takes soffice
    (and soffice.bin, which oosplash started) with it, even unconfined."""
    loop = asyncio.new_event_loop()
    converters = Converters(tmp_path / "c", 1, 60.0, sandbox.Caps(memory=4 << 30))
    source = tmp_path / "in.txt"
    source.write_text("words\n")
    try:
        kind = officeformats.KINDS["txt"]
        loop.run_until_complete(converters.convert(source, kind, "pdf", tmp_path / "o.pdf"))
        (converter,) = converters._idle
        assert converter.proc.stdin is not None
        converter.proc.stdin.close()
        loop.run_until_complete(asyncio.wait_for(converter.proc.wait(), 30))
        deadline = time.monotonic() + 10
        while _offices(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _offices(tmp_path) == []
    finally:
        loop.run_until_complete(converters.close())
        loop.close()


def _offices(folder: Path) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if entry.name.isdigit() and "soffice" in line and str(folder) in line:
            found.append(line)
    return found


@needs_office
def test_a_conversion_given_its_slot_after_close_starts_no_office(tmp_path: Path) -> None:
    loop = asyncio.new_event_loop()
    converters = Converters(tmp_path / "c", 1, 60.0, sandbox.Caps(memory=4 << 30))
    source = tmp_path / "in.txt"
    source.write_text("words\n")
    kind = officeformats.KINDS["txt"]

    async def closed_while_busy() -> list[BaseException | None]:
        first = asyncio.ensure_future(converters.convert(source, kind, "pdf", tmp_path / "1.pdf"))
        while not _offices(tmp_path):
            await asyncio.sleep(0.05)
        second = asyncio.ensure_future(converters.convert(source, kind, "pdf", tmp_path / "2.pdf"))
        await asyncio.sleep(0.1)
        await converters.close()
        return await asyncio.gather(first, second, return_exceptions=True)

    try:
        results = loop.run_until_complete(asyncio.wait_for(closed_while_busy(), 60))
        assert isinstance(results[1], errors.ShuttingDown)
        assert not (tmp_path / "2.pdf").exists()
        deadline = time.monotonic() + 10
        while _offices(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _offices(tmp_path) == []
    finally:
        loop.close()


@needs_office
def test_a_converter_that_cannot_start_is_the_nodes_fault_not_the_documents(
    tmp_path: Path,
) -> None:
    """A converter that ends before it is ready (here a driver that exits at once; in the
    field a folder the sandbox could not bind) fails the conversion as the node's error,
    a 500 that is logged, not a 422 telling the client its document is bad."""
    driver = tmp_path / "ends.py"
    driver.write_text("import sys\nsys.exit(1)\n")
    caps = sandbox.Caps(memory=4 << 30, readable=(*office.READABLE, str(driver)))
    converters = Converters(tmp_path / "office", 1, 60.0, caps, driver=driver)
    source = tmp_path / "letter.docx"
    source.write_bytes(officedocs.docx(["fine"]))
    loop = asyncio.new_event_loop()
    try:
        done = converters.convert(source, officeformats.KINDS["docx"], "pdf", tmp_path / "o.pdf")
        with pytest.raises(RuntimeError, match="LibreOffice did not start"):
            loop.run_until_complete(done)
        loop.run_until_complete(converters.close())
    finally:
        loop.close()
    assert not [p for p in (tmp_path / "office").iterdir() if p.is_dir()]


@needs_office
def test_a_converter_whose_folder_was_removed_is_replaced(
    running: tuple[asyncio.AbstractEventLoop, Converters], tmp_path: Path
) -> None:
    """A cleaner of temporary files, or a node sharing the data folder, may remove an idle
    converter's folder: the converter is replaced before its next document."""
    loop, converters = running
    source, dest = tmp_path / "in.txt", tmp_path / "out.pdf"
    source.write_text("first", "utf-8")
    txt = officeformats.KINDS["txt"]
    loop.run_until_complete(converters.convert(source, txt, "pdf", dest))
    (before,) = list(converters._idle)
    shutil.rmtree(before.folder)
    source.write_text("second", "utf-8")
    loop.run_until_complete(converters.convert(source, txt, "pdf", dest))
    assert dest.read_bytes().startswith(b"%PDF-")
    (after,) = list(converters._idle)
    assert after is not before and after.folder.is_dir()
    assert before.proc.returncode is not None  # the old LibreOffice was stopped


def test_only_old_folders_of_converters_gone_are_swept(tmp_path: Path) -> None:
    """Another node sharing the data folder has pids this machine does not: a folder of a
    pid not running here is swept only once nothing used it for an hour."""
    gone = 2**22 + 7  # above the kernel's pid_max: never a process here
    young, old, mine = tmp_path / f"{gone}-1", tmp_path / f"{gone}-2", tmp_path / f"{os.getpid()}-1"
    for folder in (young, old, mine):
        (folder / "profile").mkdir(parents=True)
    hour_ago = time.time() - office.STALE_SECONDS - 60
    os.utime(old, (hour_ago, hour_ago))
    os.utime(mine, (hour_ago, hour_ago))
    office._sweep(tmp_path)
    assert young.is_dir() and mine.is_dir() and not old.exists()
