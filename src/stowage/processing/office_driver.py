"""One warm LibreOffice converter: run by ``office.py`` inside the sandbox, as
``/usr/bin/python3 office_driver.py FOLDER`` (Debian's Python, which has ``uno`` from
python3-uno; Stowage's own modules are not importable there, so this file imports none).

It writes a profile into ``FOLDER/profile`` (macros never run, links of untrusted
documents blocked), starts a headless ``soffice`` on that profile listening on a named
pipe (a local socket: the sandbox has no network), connects to it, says ``{"ready":
true}`` and then converts one job per line of stdin, answering one line each:
``{"ok": true}`` or ``{"error": "why"}``. It ends at the end of its input, or is killed
with its soffice (one session) by the server at a job's deadline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_STARTUP_SECONDS = 60.0
_PROFILE = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry"
 xmlns:xs="http://www.w3.org/2001/XMLSchema"
 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
{items}
</oor:items>
"""
_SETTINGS = (  # (path, name, XML value)
    ("/org.openoffice.Office.Common/Security/Scripting", "MacroSecurityLevel", "3"),
    ("/org.openoffice.Office.Common/Security/Scripting", "DisableMacrosExecution", "true"),
    ("/org.openoffice.Office.Common/Security/Scripting", "BlockUntrustedRefererLinks", "true"),
    ("/org.openoffice.Office.Common/Misc", "UseLocking", "false"),
    ("/org.openoffice.Office.Common/Misc", "UseDocumentOOoLockFile", "false"),
    ("/org.openoffice.Office.Common/Misc", "UseDocumentSystemFileLocking", "false"),
)
NEVER_EXECUTE = 0  # com.sun.star.document.MacroExecMode.NEVER_EXECUTE
NO_UPDATE = 0  # com.sun.star.document.UpdateDocMode.NO_UPDATE


def write_profile(folder: Path) -> Path:
    user = folder / "profile" / "user"
    user.mkdir(parents=True, exist_ok=True)
    items = "\n".join(
        f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse">'
        f"<value>{value}</value></prop></item>"
        for path, name, value in _SETTINGS
    )
    (user / "registrymodifications.xcu").write_text(_PROFILE.format(items=items))
    return folder / "profile"


def start_office(folder: Path, pipe: str) -> subprocess.Popen[bytes]:
    profile = write_profile(folder)
    argv = ["soffice", "--headless", "--invisible", "--nologo", "--norestore"]
    argv += ["--nodefault", "--nolockcheck", "--nofirststartwizard"]
    argv += [f"-env:UserInstallation={profile.as_uri()}"]
    argv += [f"--accept=pipe,name={pipe};urp;StarOffice.ComponentContext"]
    quiet = subprocess.DEVNULL
    return subprocess.Popen(argv, stdin=quiet, stdout=quiet, stderr=quiet, cwd=folder)


def connect(pipe: str, office: subprocess.Popen[bytes]) -> Any:
    import uno  # here, not at the top: only Debian's Python has it

    local = uno.getComponentContext()
    resolver = local.ServiceManager.createInstanceWithContext(
        "com.sun.star.bridge.UnoUrlResolver", local
    )
    url = f"uno:pipe,name={pipe};urp;StarOffice.ComponentContext"
    ends = time.monotonic() + _STARTUP_SECONDS
    while True:
        try:
            context = resolver.resolve(url)
            break
        except Exception:  # NoConnectException until soffice listens
            if office.poll() is not None or time.monotonic() > ends:
                raise
            time.sleep(0.1)
    return context.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", context)


def props(**values: Any) -> tuple[Any, ...]:
    import uno

    found = []
    for name, value in values.items():
        prop = uno.createUnoStruct("com.sun.star.beans.PropertyValue")
        prop.Name, prop.Value = name, value
        found.append(prop)
    return tuple(found)


def convert(desktop: Any, job: dict[str, Any]) -> None:
    load: dict[str, Any] = {
        "Hidden": True,
        "ReadOnly": True,
        "MacroExecutionMode": NEVER_EXECUTE,
        "UpdateDocMode": NO_UPDATE,
    }
    if job.get("load_filter"):
        load["FilterName"] = job["load_filter"]
        if job.get("load_options"):
            load["FilterOptions"] = job["load_options"]
    url = Path(job["source"]).as_uri()
    doc = desktop.loadComponentFromURL(url, "_blank", 0, props(**load))
    if doc is None:
        raise ValueError("LibreOffice does not read the file")
    try:
        if not doc.supportsService(job["service"]):
            raise ValueError(f"the file is not a {job['family']} document")
        store: dict[str, Any] = {"FilterName": job["filter"], "Overwrite": True}
        if job.get("options"):
            store["FilterOptions"] = job["options"]
        doc.storeToURL(Path(job["dest"]).as_uri(), props(**store))
    finally:
        doc.close(True)


def reply(value: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


def main() -> None:
    folder = Path(sys.argv[1])
    pipe = f"stowage-office-{os.getpid()}"
    office = start_office(folder, pipe)
    try:
        desktop = connect(pipe, office)
        reply({"ready": True})
        for line in sys.stdin:
            try:
                convert(desktop, json.loads(line))
                reply({"ok": True})
            except Exception as exc:  # the document's fault: said, and the next job goes on
                text = str(getattr(exc, "Message", "") or exc).strip().splitlines()
                reply({"error": (text[0] if text else type(exc).__name__)[:300]})
    finally:
        office.kill()  # oosplash; soffice.bin, its child, goes with the session below
        if os.getsid(0) == os.getpid():  # the sandbox's session: soffice and its helpers
            os.killpg(os.getpgrp(), signal.SIGKILL)


if __name__ == "__main__":
    main()
