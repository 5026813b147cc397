"""Every route of the API and CDN origins, in one place."""

from __future__ import annotations

from aiohttp import web

from stowage.http import (
    api,
    cdn,
    cloud,
    console,
    docs,
    listing,
    multipart,
    observe,
    picker,
    preview,
    process,
)

#: The first File API's convert address, with the trailing slash every other form takes.
LEGACY_CONVERT = ("/api/file/{handle}/convert", "/api/file/{handle}/convert/")


def add_api_routes(app: web.Application) -> None:
    router = app.router
    for end in ("", "/"):  # a saved or hand-written address may end in a slash
        router.add_post(f"/api/store/{{provider}}{end}", api.store_handler)
        router.add_post(f"/api/store/{{provider}}/{{handle}}{end}", api.copy_handler)
        router.add_get(f"/api/file/{{handle}}{end}", api.download_handler)
        router.add_post(f"/api/file/{{handle}}{end}", api.overwrite_handler)
        router.add_delete(f"/api/file/{{handle}}{end}", api.remove_handler)
        router.add_post(f"/api/file/{{handle}}/remove{end}", api.remove_handler)
        router.add_get(f"/api/file/{{handle}}/metadata{end}", api.metadata_handler)
        router.add_get(f"/api/files{end}", listing.list_handler)
    for convert in LEGACY_CONVERT:  # the first File API's, and storing the result
        router.add_get(convert, cdn.legacy_on_api)
        router.add_post(convert, cdn.legacy_on_api)
    router.add_get("/healthz", api.healthz)
    router.add_get("/readyz", api.readyz)
    router.add_get("/api/openapi.json", docs.openapi_json)
    router.add_get("/api/docs", docs.docs_page)
    router.add_get("/api/docs/{name}", docs.docs_asset)
    router.add_get("/", console.to_console)
    router.add_get("/console", console.console_page)
    router.add_get("/console/{name}", console.console_asset)
    router.add_get("/metrics", observe.metrics_handler)
    router.add_post("/multipart/start", multipart.start_handler)
    router.add_post("/multipart/upload", multipart.upload_handler)
    router.add_put("/multipart/part/{upload_id}/{part}", multipart.part_handler)
    router.add_post("/multipart/commit", multipart.commit_handler)
    router.add_post("/multipart/complete", multipart.complete_handler)
    router.add_post("/process", process.process_handler)
    router.add_post("/prefetch", cloud.prefetch_handler)  # filestack-js's picker, at start
    for path in ("/folder/list", "/store/", "/metadata", "/auth/logout"):  # cloudApiUrl
        router.add_post(path, cloud.cloud_drive_handler)
    router.add_post("/recording/{kind}/{step}", cloud.cloud_drive_handler)
    router.add_get("/process/{tail:.+}", cdn.chain_on_api)  # transformation chains
    router.add_post("/process/{tail:.+}", cdn.chain_on_api)


def add_cdn_routes(app: web.Application) -> None:
    router = app.router
    router.add_post("/process", process.redirect_to_api)
    router.add_delete("/{handle}", cdn.cdn_refuse_write)
    router.add_post("/{handle}", cdn.cdn_refuse_write)
    router.add_post("/{handle}/remove", cdn.cdn_refuse_write)
    for convert in LEGACY_CONVERT:  # before the next
        router.add_post(convert, cdn.legacy_store_to_api)
    router.add_post("/{tasks:.+}/{handle}", cdn.cdn_post_chain)  # store task: to the API origin
    router.add_get(preview.ASSETS + "{name:.+}", preview.asset)  # the preview page's files
    for legacy in ("/api/file/{handle}", "/api/file/{handle}/", *LEGACY_CONVERT):
        router.add_get(legacy, cdn.legacy_on_cdn)  # filepicker.io's CDN links
    router.add_get("/{tail:.+}", cdn.cdn_get)  # last: it matches every path


def add_static_routes(app: web.Application) -> None:
    """static.<cname>: the picker module filestack-js loads."""
    app.router.add_get("/picker/{version}/picker.js", picker.picker_module)
