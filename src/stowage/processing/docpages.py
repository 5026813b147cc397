"""``doc_to_images`` for the HTTP layer: the document's ``pdfinfo`` derivative (made in a
job process, cached), read and turned into the answer by ``pageimages``. Kept apart from
``pageimages`` so that the task table does not import the service."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlencode

from stowage import errors
from stowage.core.security import Credentials
from stowage.processing import grammar, pageimages
from stowage.processing.base import Task
from stowage.processing.service import FilesAsk, Processor


def asked(tasks: list[str]) -> Task | None:
    """The ``doc_to_images`` task of a path's tasks, alone; None when there is none."""
    parsed = [grammar.parse_task(task) for task in tasks]
    found = [task for task in parsed if task.name == pageimages.NAME]
    if not found:
        return None
    if len(parsed) != 1:
        raise errors.InvalidParameter(
            f"{pageimages.NAME} takes no other task", parameter=pageimages.NAME
        )
    return found[0]


async def answer(
    processor: Processor,
    task: Task,
    handle: str,
    creds: Credentials,
    api_key: str | None,
) -> dict[str, Any]:
    """Each page's image URL on the CDN, with the request's credentials passed on."""
    if not handle:
        raise errors.InvalidParameter(
            f"{pageimages.NAME} takes one stored file", parameter=pageimages.NAME
        )
    try:
        made = await processor.derivative(FilesAsk(handle, ["pdfinfo"], creds, api_key))
    except errors.NotAPdf as refused:  # the pdfinfo behind it is not what was asked
        raise errors.NotAPdf(f"{pageimages.NAME} takes a document") from refused
    info = json.loads(b"".join([chunk async for chunk in processor.cache.open(made.key)]))
    query = {
        k: v
        for k, v in (("key", api_key), ("policy", creds.policy), ("signature", creds.signature))
        if v
    }
    tail = f"?{urlencode(query)}" if query else ""
    base = processor.core.settings.cdn_url()
    named = quote(handle, safe="")
    most = processor.core.settings.processing_max_output_dimension
    return pageimages.answer(task, info, lambda output: f"{base}/{output}/{named}{tail}", most)
