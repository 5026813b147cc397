"""The OpenAPI entries of the picker's start-up call and the cloud-drive calls."""

from __future__ import annotations

from stowage.http.openapi_common import JSON, Doc, error_refs, json_body, op, path_param

_CLOUD_CALLS = {
    "/folder/list": ("List a cloud drive's folder", "cloudFolderList"),
    "/store/": ("Store a file from a cloud drive", "cloudStore"),
    "/metadata": ("A cloud drive file's metadata", "cloudMetadata"),
    "/auth/logout": ("Log out of a cloud drive", "cloudLogout"),
    "/recording/{kind}/{step}": ("Start or stop a recording", "cloudRecording"),
}


def _prefetch() -> Doc:
    body = {
        "type": "object",
        "properties": {
            "apikey": {"type": "string"},
            "settings": {"type": "array", "items": {"type": "string"}},
            "permissions": {"type": "array", "items": {"type": "string"}},
            "picker_config": {"type": "object"},
            "events": {"type": "array", "items": {"type": "string"}},
        },
    }
    answer = {
        "type": "object",
        "required": ["blocked", "settings", "permissions"],
        "properties": {
            "blocked": {"type": "boolean"},
            "settings": {"type": "object"},
            "permissions": {"type": "object", "additionalProperties": {"type": "boolean"}},
        },
    }
    return {
        "post": op(
            "The picker's start-up call (filestack-js `client.picker()`, `client.prefetch()`)",
            "prefetch",
            "uploads",
            description="No `updated_config`: the page's own picker options stand.",
            requestBody={"required": True, "content": {JSON: {"schema": body}}},
            responses={
                "200": json_body(answer, "What this server allows."),
                **error_refs(400, 401),
            },
        )
    }


def _cloud(summary: str, op_id: str, path: str) -> Doc:
    params = [path_param(n, "As the SDK sends it.") for n in ("kind", "step") if n in path]
    return {
        "post": op(
            f"{summary} (cloud drives are not connected: always 501 CLOUD_DRIVE_UNAVAILABLE)",
            op_id,
            "uploads",
            parameters=params,
            responses=error_refs(501),
        )
    }


def picker_paths() -> Doc:
    cloud = {path: _cloud(summary, op_id, path) for path, (summary, op_id) in _CLOUD_CALLS.items()}
    return {"/prefetch": _prefetch(), **cloud}
