"""The ``metadata`` task's answer completed with the stored file's own fields.

A job process answers what the image shows at that step (``width``, ``height``:
``subjects.metadata_answer``); the fields of the file (``size``, ``filename``, the
hashes, ...) come from its record and its bytes, as ``/<HANDLE>/metadata`` gives them
(``core.metadata``). Without ``params``, that address's default fields and the size.
The answer is kept as the derivative of that version of the file, like any other.
"""

from __future__ import annotations

import json
from pathlib import Path

from stowage.config import Settings
from stowage.core import metadata
from stowage.processing.base import Chain
from stowage.registry.base import FileRecord
from stowage.storage.base import Provider

#: Fields the job process answers from the image at the task's step.
IMAGE_FIELDS = frozenset({"width", "height"})


def asks_exif(chain: Chain) -> bool:
    """The chain ends in ``metadata`` naming ``exif``: a read the File API grants only
    under a policy (``exif=true`` needs one, spec 4.5), whatever the app's security."""
    last = chain.tasks[-1] if chain.tasks else None
    asked = last.get("params") if last is not None and last.name == "metadata" else None
    return isinstance(asked, tuple) and "exif" in asked


async def complete(
    dest: Path, chain: Chain, settings: Settings, provider: Provider, record: FileRecord
) -> bool:
    """``dest``, the answer of a chain ending in ``metadata``, with the file's fields;
    whether it was written again."""
    last = chain.tasks[-1] if chain.tasks else None
    if last is None or last.name != "metadata":
        return False
    asked = last.get("params")
    names = [str(n) for n in asked] if isinstance(asked, tuple) else None
    wanted = {n for n in names or () if n not in IMAGE_FIELDS}
    if names is not None and not wanted:
        return False
    found = await metadata.read(settings, provider, record, wanted)
    answer = {**found, **json.loads(dest.read_text(encoding="utf-8"))}
    if names is not None:  # in the order asked
        answer = {name: answer[name] for name in names if name in answer}
    dest.write_text(json.dumps(answer), encoding="utf-8")
    return True
