"""The interactive API reference renders in Chromium from Stowage's own files only."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, expect

from tests.servers.stowage_serve import Running


def test_reference_renders_every_operation(browser: Browser, server: Running, shots: Path) -> None:
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    errors: list[str] = []
    origins: set[str] = set()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: origins.add(r.url.split("/", 3)[2]))
    page.goto(f"{server.server.api}/api/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Stowage")
    operations = page.locator(".opblock")
    expect(operations.first).to_be_visible()
    assert operations.count() >= 20
    expect(page.locator(".opblock-summary-path", has_text="/api/files").first).to_be_visible()
    page.screenshot(path=str(shots / "api-docs.png"))
    assert origins == {f"127.0.0.1:{server.server.port}"}, origins
    assert errors == [], errors
    page.close()
