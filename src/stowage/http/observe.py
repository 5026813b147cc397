"""Request ids, metrics and the /metrics endpoint of the API origin (for the clients in
``metrics_allow`` only).

``observe_middleware`` is outermost: it names the request (``X-Request-Id``, a sane
incoming one is kept) and counts requests in progress. ``record`` counts a request
once its last byte is out (the access logger calls it, so sizes and durations are
those of the whole response, sendfile included). ``provider_errors_middleware`` sits
inside the error middleware and counts storage failures by code before they are rendered.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import uuid
from collections.abc import Awaitable, Callable

from aiohttp import web

from stowage import errors
from stowage.edge import metrics as edge_metrics
from stowage.http.keys import PARTS
from stowage.observe import metrics
from stowage.observe.logs import request_id
from stowage.registry.base import QueueDepth

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
REQUEST_ID = "X-Request-Id"
RID: web.RequestKey[str] = web.RequestKey("request_id", str)
_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
UPLOAD_ROUTES = ("/api/store/", "/multipart/upload", "/multipart/start", "/multipart/complete")

REGISTRY = metrics.Registry()
REQUESTS = REGISTRY.add(
    metrics.Counter(
        "stowage_http_requests_total",
        "HTTP requests by route, method and status.",
        ("route", "method", "status"),
    )
)
LATENCY = REGISTRY.add(
    metrics.Histogram(
        "stowage_http_request_duration_seconds",
        "Time from request to the last byte of the response, by route and method.",
        ("route", "method"),
    )
)
BYTES_IN = REGISTRY.add(
    metrics.Counter(
        "stowage_http_request_bytes_total", "Request body bytes read, by route.", ("route",)
    )
)
BYTES_OUT = REGISTRY.add(
    metrics.Counter(
        "stowage_http_response_bytes_total", "Response bytes sent, by route.", ("route",)
    )
)
# Gauges of work in progress add up over the live workers.
IN_FLIGHT = REGISTRY.add(
    metrics.Gauge("stowage_http_requests_in_flight", "Requests in progress.", ())
)
UPLOADS = REGISTRY.add(
    metrics.Gauge(
        "stowage_uploads_in_progress",
        "Uploads in progress (store, overwrite, multipart start/upload/complete requests).",
        (),
    )
)
SESSIONS = REGISTRY.add(
    metrics.Counter(
        "stowage_upload_sessions_total",
        "Multipart upload sessions by event (started, completed) and stores by outcome.",
        ("event",),
    )
)
PROVIDER_ERRORS = REGISTRY.add(
    metrics.Counter(
        "stowage_provider_errors_total",
        "Storage provider failures by error code and route.",
        ("code", "route"),
    )
)
# One queue shared by all workers, read by the worker that answers the scrape: the most
# recent reading is the truth, a sum would count it once per worker.
WEBHOOK_QUEUE = REGISTRY.add(
    metrics.Gauge(
        "stowage_webhook_queue_depth",
        "Webhook deliveries waiting (pending or being delivered).",
        (),
        aggregate="livemostrecent",
    )
)


def incoming_id(request: web.Request) -> str:
    given = request.headers.get(REQUEST_ID, "")
    return given if _SANE_ID.fullmatch(given) else uuid.uuid4().hex


def route_of(request: web.Request) -> str:
    try:
        info = request.match_info
    except (AssertionError, AttributeError):  # refused by the parser: never routed
        return "unmatched"
    if info.http_exception is not None or info.route.resource is None:
        return "unmatched"
    # One label for a route and its form with a trailing slash (routes.py takes both).
    return info.route.resource.canonical.removesuffix("/") or "/"


def _is_upload(request: web.Request, route: str) -> bool:
    writes = request.method == "POST" and route.startswith(UPLOAD_ROUTES)
    return writes or (request.method == "POST" and route == "/api/file/{handle}")


@web.middleware
async def observe_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    rid = incoming_id(request)
    request_id.set(rid)
    request[RID] = rid
    upload = _is_upload(request, route_of(request))
    IN_FLIGHT.inc(1)
    if upload:
        UPLOADS.inc(1)
    try:
        return await handler(request)
    finally:
        IN_FLIGHT.inc(-1)
        if upload:
            UPLOADS.inc(-1)


def record(request: web.BaseRequest, response: web.StreamResponse, seconds: float) -> None:
    """Count a finished request (called by the access logger, once the last byte is out)."""
    route = route_of(request) if isinstance(request, web.Request) else "unmatched"
    method, status = request.method, response.status
    REQUESTS.inc(route=route, method=method, status=str(status))
    LATENCY.observe(seconds, route=route, method=method)
    BYTES_IN.inc(request.content.total_bytes, route=route)
    sent = _bytes_out(request, response)
    if sent:
        BYTES_OUT.inc(sent, route=route)
    if route.endswith("/multipart/start") and status == 200:
        SESSIONS.inc(event="started")
    elif route.endswith("/multipart/complete") and status == 200:
        SESSIONS.inc(event="completed")


def _bytes_out(request: web.BaseRequest, response: web.StreamResponse) -> int:
    """Bytes written; bytes sent with sendfile bypass the writer's count, so for a file
    body the declared length stands in (a download cut short is counted whole)."""
    declared = response.content_length or 0
    if request.method == "HEAD" or declared <= response.body_length:
        return response.body_length
    return declared


@web.middleware
async def provider_errors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except errors.StorageError as exc:
        PROVIDER_ERRORS.inc(code=exc.code, route=route_of(request))
        raise


async def add_request_id(request: web.Request, response: web.StreamResponse) -> None:
    rid = request.get(RID)
    if rid:
        response.headers[REQUEST_ID] = rid


REGISTRY.metrics.extend(edge_metrics.ALL)


async def metrics_handler(request: web.Request) -> web.Response:
    parts = request.app[PARTS]
    if not metrics_allowed(parts.settings.metrics_allow, request.remote):
        raise errors.NotFound()  # the same answer as a path that does not exist
    await _webhook_depth(parts.registry)
    return web.Response(
        body=REGISTRY.render(),
        headers={"Content-Type": metrics.CONTENT_TYPE, "Cache-Control": "no-store"},
    )


def metrics_allowed(allow: str, client: str | None) -> bool:
    """Whether ``client`` (the peer's address, never a forwarded header) is in ``allow``."""
    if not client:
        return False
    try:
        address = ipaddress.ip_address(client.split("%", 1)[0])
    except ValueError:
        return False  # a Unix socket peer, say: not an address on the list
    return any(address in network for network in _networks(allow))


@functools.lru_cache(maxsize=8)
def _networks(allow: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    entries = [entry.strip() for entry in allow.split(",") if entry.strip()]
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


async def _webhook_depth(registry: object) -> None:
    if isinstance(registry, QueueDepth):
        WEBHOOK_QUEUE.set(float(await registry.webhook_queue_depth()))


def install(app: web.Application) -> None:
    app.on_response_prepare.append(add_request_id)
