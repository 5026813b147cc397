"""The API and CDN applications, on one assembly (``stowage/assembly.py``), served."""

from __future__ import annotations

import asyncio
import logging
import signal

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.typedefs import Middleware
from aiohttp.web import BaseRequest, StreamResponse

from stowage.assembly import Assembly, assemble
from stowage.config import Settings
from stowage.http import dates, logpath, observe
from stowage.http.cors import cors_middleware
from stowage.http.drain import Drain
from stowage.http.errors import error_middleware, use_json_expect_handler
from stowage.http.keys import PARTS
from stowage.http.protocol import JsonAppRunner
from stowage.http.ratelimit import limit_middleware
from stowage.http.routes import add_api_routes, add_cdn_routes, add_static_routes
from stowage.http.strict import strict_request_middleware

log = logging.getLogger("stowage")


class AccessLogger(AbstractAccessLogger):
    """Path without the query string or a path's credentials (``logpath``). Also feeds
    the metrics, so it always runs; a disabled logger (``access_log`` off) writes nothing."""

    def log(self, request: BaseRequest, response: StreamResponse, time: float) -> None:
        observe.record(request, response, time)
        if self.logger.disabled:
            return
        path = logpath.loggable(request.raw_path)
        self.logger.info(
            "%s %s %s %s %.1fms",
            request.remote,
            request.method,
            path,
            response.status,
            time * 1000,
            extra={
                "remote": request.remote,
                "method": request.method,
                "path": path,
                "status": response.status,
                "duration_ms": round(time * 1000, 1),
                "request_id": request.get(observe.RID, ""),
            },
        )

    @property
    def enabled(self) -> bool:
        return True


def _middlewares(error: Middleware, *inner: Middleware) -> list[Middleware]:
    """Request ids and metrics outside the error middleware, provider errors inside it."""
    return [observe.observe_middleware, error, observe.provider_errors_middleware, *inner]


def api_app(parts: Assembly) -> web.Application:
    """The API origin. Its parts run (workers, uploads' sweeper, the job pool) from
    ``Assembly.start`` to ``Assembly.close``, whoever calls them (``serve``, a test)."""
    app = web.Application(
        middlewares=[
            cors_middleware(parts.settings.cors_origins),
            *_middlewares(error_middleware, strict_request_middleware, _limits(parts)),
        ],
        client_max_size=1024**2,
    )
    app[PARTS] = parts
    add_api_routes(app)
    add_cname_hosts(app, parts)
    observe.install(app)
    dates.install(app)
    use_json_expect_handler(app)
    return app


def add_cname_hosts(app: web.Application, parts: Assembly) -> None:
    """With ``cname`` set, the API origin also answers the Filestack hosts of that domain
    (docs/decisions.md, "The SDKs' cname hosts"): upload., www., process. and cloud. fall
    through to the API routes; cdn.<cname> gets the CDN's routes and static.<cname> the
    picker module, each matched by Host before any path. Those run under the API origin's
    middlewares (one rate limit, one error answer), so the sub-applications have none."""
    domain = parts.settings.cname_domain()
    if not domain:
        return
    cdn = web.Application(client_max_size=1024**2)
    cdn[PARTS] = parts
    add_cdn_routes(cdn)
    use_json_expect_handler(cdn)
    app.add_domain(f"cdn.{domain}", cdn)
    static = web.Application()
    add_static_routes(static)
    app.add_domain(f"static.{domain}", static)


def cdn_app(parts: Assembly) -> web.Application:
    app = web.Application(
        middlewares=_middlewares(error_middleware, strict_request_middleware, _limits(parts)),
        client_max_size=1024**2,
    )
    app[PARTS] = parts
    add_cdn_routes(app)
    observe.install(app)
    dates.install(app)
    use_json_expect_handler(app)
    return app


def _limits(parts: Assembly) -> Middleware:
    """The assembly's one limiter: the API and CDN origins share its buckets."""
    return limit_middleware(parts.limiter)


async def serve(
    settings: Settings,
    ready: asyncio.Event | None = None,
    *,
    recover: bool = True,
    reuse_port: bool = False,
) -> None:
    parts = assemble(settings)
    await parts.start(recover=recover)
    runners: list[web.AppRunner] = []
    drain = Drain()
    access_logger = logging.getLogger("aiohttp.access" if settings.access_log else "stowage.nolog")
    access_logger.disabled = not settings.access_log
    access = {"access_log_class": AccessLogger, "access_log": access_logger}
    try:
        origins = [(api_app(parts), settings.port)]
        if settings.cdn_port:
            origins.append((cdn_app(parts), settings.cdn_port))
        for app, port in origins:
            app.middlewares.append(drain.middleware)
            runner = JsonAppRunner(
                app,
                handle_signals=False,
                shutdown_timeout=settings.shutdown_timeout,
                keepalive_timeout=settings.idle_timeout,  # aiohttp counts it from connect
                **access,  # type: ignore[arg-type]
            )
            await runner.setup()
            site = web.TCPSite(
                runner, settings.host, port, reuse_address=True, reuse_port=reuse_port or None
            )
            await site.start()
            runners.append(runner)
        log.info("stowage serving API on %s and CDN on %s", settings.api_url(), settings.cdn_url())
        await _until_stopped(ready)
    finally:
        # Drain: /readyz fails, listeners close, in-flight requests get shutdown_timeout.
        parts.draining = True
        await drain.stop(runners, settings.shutdown_timeout)
        await parts.close()


async def _until_stopped(ready: asyncio.Event | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        ready.set()
    await stop.wait()
