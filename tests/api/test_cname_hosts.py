"""Issue 25 on one API listener, in process: the cname hosts routed by ``Host``, the
picker's ``/prefetch`` and the cloud-drive calls (the SDKs themselves, over TLS:
tests/sdk/test_cname.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.harness import OPEN_APP, Harness


@pytest.fixture
async def hosts(harness: Harness) -> AsyncIterator[TestClient]:  # type: ignore[type-arg]
    from stowage.http.app import api_app

    harness.settings.cname = "example.com"
    client = TestClient(TestServer(api_app(harness.parts)))
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()


async def test_cdn_host_serves_the_cdn_and_the_others_the_api(
    harness: Harness,
    hosts: TestClient,  # type: ignore[type-arg]
) -> None:
    stored = await harness.store(b"through the cname hosts")
    handle = stored["handle"]
    assert stored["url"] == f"https://cdn.example.com/{handle}"  # the public URL follows
    cdn = await hosts.get(f"/{handle}", headers={"Host": "cdn.example.com"})
    assert cdn.status == 200 and await cdn.read() == b"through the cname hosts"
    refused = await hosts.delete(f"/{handle}", headers={"Host": "CDN.Example.com:8443"})
    assert refused.status == 400  # the CDN's refusal of writes, whatever the case and port
    for name in ("www", "upload", "process", "cloud", "127.0.0.1"):
        api = await hosts.get(f"/api/file/{handle}", headers={"Host": f"{name}.example.com"})
        assert api.status == 200, name
        not_cdn = await hosts.get(f"/{handle}", headers={"Host": f"{name}.example.com"})
        assert not_cdn.status == 404, name


async def test_prefetch_answers_a_known_key_and_changes_no_option(
    hosts: TestClient,  # type: ignore[type-arg]
) -> None:
    body = {"apikey": OPEN_APP.api_key, "settings": ["inapp_browser"], "picker_config": {}}
    resp = await hosts.post("/prefetch", json=body, headers={"Host": "upload.example.com"})
    assert resp.status == 200
    answer = await resp.json()
    assert answer["blocked"] is False and "updated_config" not in answer
    assert all(isinstance(v, bool) for v in answer["permissions"].values())


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"apikey": "nosuchkey00000000000"}, 400, "UNKNOWN_API_KEY"),
        ({}, 401, "AUTH_REQUIRED"),
        ({"apikey": 5}, 400, "INVALID_PARAMETER"),
        ([1, 2], 400, "INVALID_JSON"),
    ],
)
async def test_prefetch_refuses_client_mistakes(
    hosts: TestClient,  # type: ignore[type-arg]
    body: object,
    status: int,
    code: str,
) -> None:
    resp = await hosts.post("/prefetch", json=body)
    assert resp.status == status
    assert (await resp.json())["error"]["code"] == code


@settings(  # the client holds nothing between requests
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    path=st.sampled_from(["/folder/list", "/store/", "/metadata", "/auth/logout"])
    | st.builds(
        "/recording/{}/{}".format,
        st.from_regex(r"[a-z]{1,8}", fullmatch=True),
        st.sampled_from(["init", "start", "stop"]),
    )
)
async def test_cloud_drive_calls_answer_one_clear_error(
    hosts: TestClient,  # type: ignore[type-arg]
    path: str,
) -> None:
    resp = await hosts.post(path, json={"apikey": OPEN_APP.api_key})
    assert resp.status == 400
    error = (await resp.json())["error"]
    assert error["code"] == "CLOUD_DRIVE_UNAVAILABLE" and path in error["message"]


# filestack-js 4.3.8's config.urls.pickerUrl; filestack-js 3.51.6's (filestack-react 6.2.0)
@pytest.mark.parametrize("version", ["4.5.2", "1.39.15"])
async def test_static_host_serves_the_picker_module_of_the_sdks_version(
    hosts: TestClient,  # type: ignore[type-arg]
    version: str,
) -> None:
    from stowage.http.picker import MODULE

    assert MODULE.is_file(), "the picker module is not built: run scripts/vendor-web"
    url = f"/picker/{version}/picker.js"
    resp = await hosts.get(url, headers={"Host": "static.example.com", "Origin": "https://a.b"})
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("application/javascript")
    assert resp.headers["Access-Control-Allow-Origin"] == "*"  # loaded with crossorigin
    assert b"fs-loader-picker" in await resp.read()  # registers with the SDK's loader
    other = await hosts.get("/picker/1.0.0/picker.js", headers={"Host": "static.example.com"})
    assert other.status == 404 and (await other.json())["error"]["code"] == "NOT_FOUND"
    elsewhere = await hosts.get(url, headers={"Host": "www.example.com"})
    assert elsewhere.status == 404  # only the static host has it


_LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True)


@given(
    labels=st.lists(_LABEL, min_size=2, max_size=4),
    port=st.none() | st.integers(1, 65535),
)
def test_a_domain_is_a_cname_and_its_port_is_kept_out_of_the_hosts(
    labels: list[str], port: int | None
) -> None:
    from stowage.config import Settings

    domain = ".".join(labels)
    cname = domain if port is None else f"{domain}:{port}"
    settings = Settings(cname=cname)
    assert settings.cname_domain() == domain
    assert settings.cdn_url() == f"https://cdn.{cname}"
    assert settings.api_url() == f"https://www.{cname}/api"


@pytest.mark.parametrize(
    "bad", ["example", "a b.com", "-x.com", "x.com:", "https://x.com", "x.com/"]
)
def test_a_cname_that_is_no_domain_stops_the_settings(bad: str) -> None:
    from stowage.config import Settings

    with pytest.raises(ValueError, match="setting cname: expected a domain name"):
        Settings(cname=bad)
