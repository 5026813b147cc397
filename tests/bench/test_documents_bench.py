"""The documents benchmark (bench/documents.py, issue 26), for real and alone: its PDF
is read by PDFium and by pdftoppm, both make the same 232 x 300 thumbnail of a page, and
the scenario prints Stowage's rate beside pdftoppm's. It does not assert speed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pypdfium2 as pdfium
import pyvips

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench import documents  # noqa: E402


def test_pdftoppm_and_the_sample_agree(tmp_path: Path) -> None:
    source = documents.sample_pdf(tmp_path / "report.pdf")
    assert len(pdfium.PdfDocument(str(source))) == documents.PAGES
    assert documents.pdftoppm(source, tmp_path) > 0
    made = sorted(tmp_path.glob("p*.png"))
    assert len(made) == documents.PAGES
    image = pyvips.Image.new_from_file(str(made[0]))
    assert (image.width, image.height) == (232, documents.SIDE)


def test_the_scenario_runs_alone() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.documents", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rates = re.search(r"Stowage ([0-9.]+) pages/s, pdftoppm .* ([0-9.]+) pages/s", done.stdout)
    assert rates and float(rates.group(1)) > 0 and float(rates.group(2)) > 0, done.stdout
