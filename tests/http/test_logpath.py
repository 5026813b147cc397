"""What the logs show of a request's path (http/logpath.py): never a ``security`` task's
policy or signature, wherever the task stands and however it is spelled, nor an external
source's query string or user part; every other segment as it came."""

from __future__ import annotations

import base64
import string

from hypothesis import given
from hypothesis import strategies as st

from stowage.http.logpath import HIDDEN, loggable

SECRETS = st.text(alphabet=string.ascii_letters + string.digits, min_size=12, max_size=40)
TASKS = st.sampled_from(
    ["resize=width:300", "flip", "output=f:webp", "cache=false", "rotate=deg:90"]
)
SPELLINGS = st.sampled_from(["security", "SECURITY", " security ", "Security"])
NAMES = st.sampled_from([("p", "s"), ("policy", "signature")])


@given(
    before=st.lists(TASKS, max_size=3),
    after=st.lists(TASKS, max_size=3),
    spelling=SPELLINGS,
    names=NAMES,
    secret=SECRETS,
    key=st.booleans(),
)
def test_a_security_task_is_hidden_wherever_it_stands(
    before: list[str],
    after: list[str],
    spelling: str,
    names: tuple[str, str],
    secret: str,
    key: bool,
) -> None:
    policy = base64.urlsafe_b64encode(f'{{"expiry":1,"x":"{secret}"}}'.encode()).decode()
    signature = secret.encode().hex()
    security = f"{spelling}={names[0]}:{policy},{names[1]}:{signature}"
    segments = (["APIKEY"] if key else []) + before + [security] + after + ["HANDLE"]
    shown = loggable("/" + "/".join(segments))
    assert policy not in shown and signature not in shown
    kept = (["APIKEY"] if key else []) + before + [f"security={HIDDEN}"] + after + ["HANDLE"]
    assert shown == "/" + "/".join(kept)


@given(tasks=st.lists(TASKS, min_size=1, max_size=3), user=SECRETS, password=SECRETS, token=SECRETS)
def test_a_source_address_loses_its_query_and_user_part(
    tasks: list[str], user: str, password: str, token: str
) -> None:
    # As aiohttp gives the path: percent-decoded, so the source's own ``?`` is in it.
    path = f"/APIKEY/{'/'.join(tasks)}/https://{user}:{password}@example.com/a/b.jpg?token={token}"
    shown = loggable(path)
    assert user not in shown and password not in shown and token not in shown
    prefix = f"/APIKEY/{'/'.join(tasks)}/https://"
    assert shown == f"{prefix}{HIDDEN}@example.com/a/b.jpg?{HIDDEN}"


@given(
    segments=st.lists(st.text(alphabet=string.ascii_letters + "=:,._-[]", max_size=20), max_size=6)
)
def test_a_path_without_credentials_is_shown_as_it_came(segments: list[str]) -> None:
    path = "/" + "/".join(s for s in segments if not s.lower().startswith("security="))
    assert loggable(path) == path


def test_the_api_paths_are_unchanged() -> None:
    for path in ("/api/file/H", "/api/store/S3", "/H", "/H+metadata", "/api/file/H/metadata"):
        assert loggable(path) == path
