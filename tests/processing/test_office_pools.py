"""Two converter pools of one process on one data folder (a node's API and CDN apps;
nodes run in one process) convert side by side. Each named its converters' folders by
the process and a count from 1: the second pool's start wiped the folder the first one's
LibreOffice was writing in, and failed with FileExistsError (a 500 on ``/process`` in
the API suite through nginx)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pypdfium2 as pdfium

from stowage.processing import office, officeformats, sandbox
from stowage.processing.office import Converters
from tests.processing import officedocs
from tests.processing.test_office import needs_office


@needs_office
def test_two_pools_on_one_folder_convert_side_by_side(tmp_path: Path) -> None:
    caps = sandbox.Caps(memory=4 << 30, output_bytes=64 << 20, readable=office.converters_caps())
    pools = [Converters(tmp_path / "office", 1, 60.0, caps) for _ in range(2)]
    sources = []
    for n in range(2):
        sources.append(tmp_path / f"letter{n}.docx")
        sources[n].write_bytes(officedocs.docx([f"letter {n}"]))
    kind = officeformats.KINDS["docx"]

    async def both() -> None:
        made = (
            p.convert(s, kind, "pdf", s.with_suffix(".pdf"))
            for p, s in zip(pools, sources, strict=True)
        )
        await asyncio.gather(*made)
        folders = [{c.folder for c in pool._all} for pool in pools]
        assert len(folders[0] | folders[1]) == 2, folders  # one each, not one name twice
        for pool in pools:
            await pool.close()

    asyncio.run(both())
    for source in sources:
        assert len(pdfium.PdfDocument(source.with_suffix(".pdf"))) == 1
