"""The OpenAPI document's schemas: results, metadata, upload answers and the error shape."""

from __future__ import annotations

from stowage.core.examine import HASHES
from stowage.errors import all_error_classes
from stowage.http.openapi_common import (
    Doc,
    closed_object,
    ref,
)


def schemas() -> Doc:
    nullable_str = {"type": ["string", "null"]}
    return {
        "Error": {
            "type": "object",
            "required": ["error"],
            "additionalProperties": False,
            "properties": {
                "error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "additionalProperties": False,
                    "properties": {
                        "code": {"type": "string", "enum": _codes()},
                        "message": {"type": "string"},
                        "details": {"type": "object"},
                    },
                }
            },
        },
        "StoreResult": _schemas_store_result(),
        "OverwriteResult": closed_object(
            url={"type": "string", "format": "uri"},
            handle={"type": "string"},
            mimetype={"type": "string"},
            isWriteable={"type": "boolean"},
            size={"type": "integer", "minimum": 0},
            filename={"type": "string"},
        ),
        "RemoveResult": closed_object(
            handle={"type": "string"},
            removed={"const": True},
            storage={"enum": ["deleted", "kept"]},
        ),
        "Metadata": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "size": {"type": "integer"},
                "mimetype": {"type": "string"},
                "filename": {"type": "string"},
                "width": {"type": "integer", "description": "images only, from the header"},
                "height": {"type": "integer", "description": "images only, from the header"},
                "uploaded": {"type": "number", "description": "epoch milliseconds"},
                "writeable": {"type": "boolean"},
                "cloud": {"type": "boolean"},
                "source_url": nullable_str,
                "exif": {"type": "object"},
                "upload_status": {"const": "complete"},
                "location": {"type": "string"},
                "path": {"type": "string"},
                "container": {"type": "string"},
                "key": {"type": "string"},
                **{h: {"type": "string", "pattern": "^[0-9a-f]+$"} for h in HASHES},
            },
        },
        "FileEntry": closed_object(
            handle={"type": "string"},
            filename={"type": "string"},
            size={"type": "integer", "minimum": 0},
            mimetype={"type": "string"},
            uploaded={"type": "number", "description": "epoch milliseconds"},
            location={"type": "string"},
            provider={"type": "string"},
            container={"type": "string"},
            key={"type": "string"},
        ),
        "FileList": closed_object(
            files={"type": "array", "items": ref("FileEntry")},
            next={**nullable_str, "description": "`after` for the next page; null at the end"},
            providers={
                "type": "array",
                "items": {"type": "string"},
                "description": "The providers this app can store to (`/api/store/<provider>`).",
            },
        ),
        "Status": closed_object(status={"type": "string"}),
        "UploadResult": _upload_result(),
        "UploadStarted": {
            **closed_object(
                uri={"type": "string"},
                region={"type": "string"},
                upload_id={"type": "string"},
                location_url={"type": "string"},
            ),
            "properties": {
                "uri": {"type": "string"},
                "region": {"type": "string"},
                "upload_id": {"type": "string"},
                "location_url": {"type": "string"},
                "upload_type": {"const": "intelligent_ingestion"},
            },
        },
        "PartTarget": closed_object(
            url={"type": "string", "format": "uri"},
            headers={"type": "object", "additionalProperties": {"type": "string"}},
            location_url={"type": "string"},
        ),
    }


def _upload_result() -> Doc:
    """A store result plus what the SDKs read after an upload or /process."""
    base = _schemas_store_result()
    extra = {
        "mimetype": {"type": "string"},
        "status": {"const": "Stored"},
        "upload_tags": {"type": ["object", "null"]},
        "workflows": {"type": "array"},
    }
    return {
        **base,
        "required": [*base["required"], "mimetype", "status"],
        "properties": {**base["properties"], **extra},
    }


def _schemas_store_result() -> Doc:
    return closed_object(
        url={"type": "string", "format": "uri"},
        handle={"type": "string"},
        size={"type": "integer", "minimum": 0},
        type={"type": "string"},
        filename={"type": "string"},
        key={"type": "string"},
        container={"type": "string"},
    )


def _codes() -> list[str]:
    return sorted({cls.code for cls in all_error_classes()})
