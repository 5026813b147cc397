"""(9) Stowage's S3 provider on the provider tests' S3 server (Swift's s3api) against
direct access to that server (presigned URLs, so wrk and curl can send them)."""

from __future__ import annotations

import json
import resource
import time
from collections.abc import Callable
from typing import Any

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.session import get_session

from bench import load
from bench.scenarios import Context, GiB, Row, _peak, _size, alternate, cpu_row, median, warm
from bench.servers import cpu_seconds

BUCKET = "stowage-bench"
# The S3 provider's defaults (storage/s3.py), for the direct reference to match.
PART_SIZE = 8 * 1024 * 1024
PART_CONCURRENCY = 4


def _client(ctx: Context) -> Any:
    return get_session().create_client(
        "s3",
        region_name=ctx.swift.s3_region,
        endpoint_url=ctx.swift.s3_endpoint,
        aws_access_key_id=ctx.swift.s3_access_key,
        aws_secret_access_key=ctx.swift.s3_secret_key,
        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"),
    )


def _storage(ctx: Context) -> dict[str, object]:
    return {
        "S3": {
            "type": "s3",
            "bucket": BUCKET,
            "endpoint_url": ctx.swift.s3_endpoint,
            "region": ctx.swift.s3_region,
            "access_key_id": ctx.swift.s3_access_key,
            "secret_access_key": ctx.swift.s3_secret_key,
        }
    }


def s3_provider(ctx: Context) -> list[Row]:
    ctx.swift.request("PUT", BUCKET)
    key, _ = ctx.stowage.create_app(_storage(ctx))
    client = _client(ctx)
    small, big = ctx.files["small"], ctx.files["s3big"]
    stored = {name: _store(ctx, key, path) for name, path in (("small", small), ("big", big))}

    def presign(method: str, object_key: str) -> str:
        op = "get_object" if method == "GET" else "put_object"
        url: str = client.generate_presigned_url(
            op, Params={"Bucket": BUCKET, "Key": object_key}, ExpiresIn=3600
        )
        return url

    seconds = ctx.sizes.wrk_seconds
    octet = {"Content-Type": "application/octet-stream"}

    def get_rate(url: str) -> Callable[[], float]:
        return lambda: _rate(load.wrk(url, seconds=seconds, connections=16))

    def store_rate(url: str, method: str) -> Callable[[], float]:
        return lambda: _rate(
            load.wrk(
                url,
                seconds=seconds,
                connections=16,
                headers=octet,
                body=small,
                method=method,
                lua_dir=ctx.tmp,
            )
        )

    def transfer(url: str, method: str) -> Callable[[], float]:
        def go() -> float:
            upload = big if method != "GET" else None
            status, _got, took, body = load.curl(url, method=method, upload=upload, headers=octet)
            assert status == 200, (status, body)
            return big.stat().st_size / took / 1e6

        return go

    cpu: dict[str, list[float]] = {"stowage": [], "disk": []}
    gib = big.stat().st_size / GiB

    def store_big() -> float:
        warm(big)
        before = cpu_seconds(ctx.stowage.pids())
        rate = transfer(store_url, "POST")()
        cpu["stowage"].append((cpu_seconds(ctx.stowage.pids()) - before) / gib)
        return rate

    transfer_client = boto3.client(
        "s3",
        region_name=ctx.swift.s3_region,
        endpoint_url=ctx.swift.s3_endpoint,
        aws_access_key_id=ctx.swift.s3_access_key,
        aws_secret_access_key=ctx.swift.s3_secret_key,
        config=Config(
            s3={"addressing_style": "path"},
            signature_version="s3v4",
            request_checksum_calculation="when_required",
        ),
    )
    same_parts = TransferConfig(
        multipart_threshold=PART_SIZE,
        multipart_chunksize=PART_SIZE,
        max_concurrency=PART_CONCURRENCY,
    )

    def direct_big() -> float:
        """boto3's transfer manager: the same object, part size and concurrency."""
        warm(big)
        before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        transfer_client.upload_file(str(big), BUCKET, "direct-big", Config=same_parts)
        took = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF)
        used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        cpu["disk"].append(used / gib)  # the client's CPU: the reference column
        return big.stat().st_size / took / 1e6

    store_url = f"{ctx.stowage.url}/api/store/S3?key={key}"
    cases = [
        (
            "GET 1 KiB by handle, 16 connections",
            "req/s",
            get_rate(f"{ctx.stowage.url}/api/file/{stored['small']['handle']}"),
            get_rate(presign("GET", stored["small"]["key"])),
        ),
        (
            f"GET {_size(big.stat().st_size)}, 1 stream",
            "MB/s",
            transfer(f"{ctx.stowage.url}/api/file/{stored['big']['handle']}", "GET"),
            transfer(presign("GET", stored["big"]["key"]), "GET"),
        ),
        (
            "store 1 KiB raw body, 16 connections",
            "req/s",
            store_rate(store_url, "POST"),
            store_rate(presign("PUT", "direct-small"), "PUT"),
        ),
        (
            f"store {_size(big.stat().st_size)} raw body, 1 stream",
            "MB/s",
            store_big,
            direct_big,
        ),
    ]
    rows = []
    for label, unit, via_stowage, direct in cases:

        def measure(
            label: str = label, unit: str = unit, a: Any = via_stowage, b: Any = direct
        ) -> Row:
            runs = alternate(ctx.sizes.rounds, {"stowage": a, "direct": b})
            s, d = median(runs["stowage"]), median(runs["direct"])
            multipart = b is direct_big
            return Row(
                "9",
                f"S3 provider (Swift s3api): {label}",
                unit,
                s,
                reference=d,
                reference_label=(
                    f"direct: boto3 transfer, {PART_SIZE // 2**20} MiB parts, "
                    f"{PART_CONCURRENCY} at once"
                    if multipart
                    else "the same server, direct (presigned)"
                ),
                target=">= 0.8x direct" if multipart else "",
                met=s >= 0.8 * d if multipart else None,
                extra={"runs": runs},
            )

        rows.append(_peak(ctx, measure))
    cost = cpu_row("9", cpu)
    cost.reference_label = "the boto3 client's own CPU"
    cost.target, cost.met = "", None
    rows.append(cost)
    return rows


def _rate(res: load.WrkResult) -> float:
    if res.errors:
        raise RuntimeError(f"{res.errors} errors in {res.requests} requests")
    return res.rps


def _store(ctx: Context, key: str, path: Any) -> dict[str, Any]:
    status, _, _, body = load.curl(
        f"{ctx.stowage.url}/api/store/S3?key={key}&filename={path.name}",
        method="POST",
        upload=path,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert status == 200, body
    result: dict[str, Any] = json.loads(body)
    return result
