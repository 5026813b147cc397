"""A colour asked for on a kept profile is converted into its space in every job of a job
process (``profiles.ink``), not only the first: the process's folder, its TMPDIR where
the profile's file is written for libvips, is emptied after each job. The file's path
was remembered, so the next job's new colour met a removed file and was drawn unconverted
(as if the profile were sRGB)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from stowage.processing import jobfiles, profiles
from tests.processing.rgbprofiles import rgb_profile


@pytest.mark.parametrize("name", ["adobe", "prophoto", "p3"])
def test_each_job_converts_its_colours_after_the_folder_is_emptied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # read TMPDIR again
    data, rng = rgb_profile(name), random.Random(5252 + len(name))
    colours = [tuple(rng.randrange(40, 216) for _ in range(3)) for _ in range(4)]
    profiles._ink.cache_clear()
    expected = {}
    for rgb in colours:  # each in a fresh folder: what one job alone would draw
        jobfiles.empty(tmp_path)
        profiles._ink.cache_clear()
        expected[rgb] = profiles._ink(data, rgb)
    assert any(expected[rgb] != rgb for rgb in colours), "the profile changed nothing"
    profiles._ink.cache_clear()
    for rgb in colours:  # one process, its folder emptied after each job
        assert profiles._ink(data, rgb) == expected[rgb], (name, rgb)
        jobfiles.empty(tmp_path)
