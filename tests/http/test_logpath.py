"""What the logs show of a request's path (http/logpath.py): never a ``security`` task's
policy or signature, wherever the task stands and however it is spelled, nor an external
source's query string or user part; every other segment as it came."""

from __future__ import annotations

import base64
import json
import string
from urllib.parse import quote

from hypothesis import assume, given
from hypothesis import strategies as st

from stowage.http.logpath import HIDDEN, loggable
from stowage.processing import catalogue

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
    # As the SDKs send it: the source percent-encoded; the request's own query is dropped.
    source = quote(f"https://{user}:{password}@example.com/a/b.jpg?token={token}", safe="")
    shown = loggable(f"/APIKEY/{'/'.join(tasks)}/{source}?policy={token}&signature={token}")
    assert user not in shown and password not in shown and token not in shown
    prefix = f"/APIKEY/{'/'.join(tasks)}/https://"
    assert shown == f"{prefix}{HIDDEN}@example.com/a/b.jpg?{HIDDEN}"


#: Every task of the table but ``security``, with the options it takes (long and short).
OWN_OPTIONS = [
    (name, [n for p in spec.params for n in (p.name, *p.short)])
    for name, spec in catalogue.TABLE.items()
    if name != "security"
]


@st.composite
def own_task(draw: st.DrawFn) -> str:
    """A task the table knows, with options it takes (values are not checked here)."""
    name, options = draw(st.sampled_from(OWN_OPTIONS))
    keys = draw(st.lists(st.sampled_from(options), max_size=3)) if options else []
    values = st.text(alphabet=string.ascii_letters + string.digits + "._-", max_size=8)
    return name + ("=" + ",".join(f"{k}:{draw(values)}" for k in keys) if keys else "")


@given(
    segments=st.lists(
        st.text(alphabet=string.ascii_letters + ":,._-[]", max_size=20) | own_task(), max_size=6
    )
)
def test_a_path_without_credentials_is_shown_as_it_came(segments: list[str]) -> None:
    kept = [s for s in segments if s[:3] != "b64"]
    path = "/" + "/".join(kept)
    assert loggable(path) == path


def _source_forms(url: str) -> list[str]:
    """``url`` in every form the grammar reads a source in (docs/transformations.md)."""
    scheme, _, rest = url.partition("://")
    one_slash = f"{scheme}:/{rest}"
    b64 = base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
    return [
        url,  # as sent
        one_slash,  # a proxy merged the slashes
        quote(url, safe=""),  # percent-encoded (the SDKs)
        quote(one_slash, safe=""),
        f'"{url}"',  # quoted (filestack-js)
        f"%22{quote(url, safe='')}%22",
        f'["{url}","{one_slash}"]',  # lists
        f"[{one_slash},{url}]",
        f"%5B%22{quote(url, safe='')}%22%5D",
        f"b64://{b64}",  # filestack-js's base64 form
        f"{scheme}:{rest}",  # no slash at all, backslashes: what a fetcher may still read
        f"{scheme}:\\\\{rest}",
        quote(quote(url, safe=""), safe=""),  # encoded twice
    ]


@given(
    user=SECRETS,
    password=SECRETS,
    scheme=st.sampled_from(["http", "https", "HTTPS", "Http"]),
    host=st.sampled_from(["example.com", "127.0.0.1:18139", "[::1]:8080", "h"]),
    tasks=st.lists(TASKS, min_size=1, max_size=2),
    with_password=st.booleans(),
)
def test_every_source_form_loses_its_user_part(
    user: str,
    password: str,
    scheme: str,
    host: str,
    tasks: list[str],
    with_password: bool,
) -> None:
    userinfo = f"{user}:{password}" if with_password else user
    url = f"{scheme}://{userinfo}@{host}/allowed/a.png"
    for form in _source_forms(url):
        shown = loggable(f"/APIKEY/{'/'.join(tasks)}/{form}")
        assert user not in shown and password not in shown, (form, shown)
        assert HIDDEN in shown, (form, shown)


@given(
    name=st.text(alphabet=string.ascii_letters, min_size=1, max_size=12).filter(
        lambda n: catalogue.spec(n) is None
    ),
    names=NAMES,
    secret=SECRETS,
    before=st.lists(TASKS, max_size=2),
)
def test_an_unknown_task_name_never_shows_a_policy(
    name: str, names: tuple[str, str], secret: str, before: list[str]
) -> None:
    """``securty=p:...,s:...``: a typo, or any name, carrying a policy and a signature."""
    assume(secret.lower() not in name.lower())  # the name is shown: it may not be the secret
    policy = base64.urlsafe_b64encode(f'{{"expiry":1,"x":"{secret}"}}'.encode()).decode()
    task = f"{name}={names[0]}:{policy},{names[1]}:{secret}"
    shown = loggable("/" + "/".join(["APIKEY", *before, task, "HANDLE"]))
    assert policy not in shown and secret not in shown
    assert shown == "/" + "/".join(["APIKEY", *before, f"{name.lower()}={HIDDEN}", "HANDLE"])


@given(task=st.sampled_from(OWN_OPTIONS), names=NAMES, secret=SECRETS, bare=st.booleans())
def test_a_known_task_given_an_option_it_does_not_take_never_shows_it(
    task: tuple[str, list[str]], names: tuple[str, str], secret: str, bare: bool
) -> None:
    name, options = task
    spec = catalogue.spec(name)
    assert spec is not None
    carried = [k for k in names if k not in options]
    body = secret if bare and not spec.bare else ",".join(f"{k}:{secret}" for k in carried)
    if not body:  # the task takes both names (store's p, metadata's p): nothing foreign
        return
    shown = loggable(f"/APIKEY/{name}={body}/HANDLE")
    assert secret not in shown and shown == f"/APIKEY/{name}={HIDDEN}/HANDLE"


def _b64(text: str, urlsafe: bool) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return encode(text.encode()).decode().rstrip("=")


@given(
    tasks=st.lists(TASKS, max_size=3),
    secret=SECRETS,
    token=SECRETS,
    user=SECRETS,
    urlsafe=st.booleans(),
)
def test_the_base64_form_shows_neither_policy_nor_token(
    tasks: list[str], secret: str, token: str, user: str, urlsafe: bool
) -> None:
    """filestack-js's ``b64`` form carries the same secrets, only base64-encoded."""
    sdk_tasks = [{"name": t.partition("=")[0], "params": True} for t in tasks]
    security = {"name": "security", "params": {"policy": secret + "P", "signature": secret}}
    source = f"https://{user}:pw@example.com/a.jpg?token={token}"
    encoded_tasks = _b64(json.dumps([security, *sdk_tasks]), urlsafe)
    # Standard base64's ``/`` and ``=`` come percent-encoded, as the SDK sends them.
    path = (
        f"/APIKEY/b64/{quote(encoded_tasks, safe='')}/b64://{quote(_b64(source, urlsafe), safe='')}"
    )
    shown = loggable(path)
    for hidden in (secret, token, user, encoded_tasks):
        assert hidden not in shown
    assert shown.startswith(f"/APIKEY/security={HIDDEN}/")
    assert f"@example.com/a.jpg?{HIDDEN}" in shown


@given(garbage=st.text(alphabet=string.ascii_letters + "!*", min_size=1, max_size=30))
def test_a_base64_part_that_does_not_decode_is_hidden(garbage: str) -> None:
    split_source = f"/K/b64://{base64.b64encode(b'http://h/a?t=' + garbage.encode()).decode()}/x"
    for path in (f"/K/b64/{garbage}!/H", f"/K/resize=w:3/b64://{garbage}!", split_source):
        shown = loggable(path)
        assert f"{garbage}!" not in shown and shown.endswith(HIDDEN), shown


def test_the_api_paths_are_unchanged() -> None:
    for path in ("/api/file/H", "/api/store/S3", "/H", "/H+metadata", "/api/file/H/metadata"):
        assert loggable(path) == path


#: Standard base64's own characters, and what a user part may hold besides letters.
STANDARD_B64 = st.binary(min_size=8, max_size=60).map(lambda b: base64.b64encode(b).decode())
USERINFO = st.text(alphabet=string.ascii_letters + string.digits + "=+-._~!$&'()*,;:", min_size=1)


@given(
    policy=STANDARD_B64,
    signature=SECRETS,
    names=NAMES,
    spelling=st.sampled_from(["security", "securty", "SECURITY"]),
    before=st.lists(TASKS, max_size=2),
    after=st.lists(TASKS, max_size=2),
    quoted=st.booleans(),
    source=st.sampled_from(["HANDLE", "https%3A%2F%2Fexample.com%2Fa.jpg", "[H1,H2]"]),
    prefix=st.sampled_from(["", "/APIKEY", "/process"]),
)
def test_a_policy_in_standard_base64_is_hidden_whatever_its_slashes(
    policy: str,
    signature: str,
    names: tuple[str, str],
    spelling: str,
    before: list[str],
    after: list[str],
    quoted: bool,
    source: str,
    prefix: str,
) -> None:
    """Standard base64 holds ``/``, sent as ``%2F``: the grammar reads it inside the task,
    so the logs must too (the policy's tail and the signature were shown, probe sec F1)."""
    value = quote(f'"{policy}"' if quoted else policy, safe="")
    security = f"{spelling}={names[0]}:{value},{names[1]}:{signature}"
    tasks = [*before, security, *after]
    for chain in (tasks, [*tasks, security]):  # a repeated task is logged too (its 400)
        shown = loggable(f"{prefix}/{'/'.join(chain)}/{source}")
        assert signature not in shown, shown
        for piece in policy.replace("+", "/").split("/"):
            assert len(piece) < 6 or piece not in shown, (piece, shown)
    # filestack-js's b64 form: the policy's raw ``/`` is inside the decoded task.
    task = {"name": "security", "params": {"policy": policy, "signature": signature}}
    shown = loggable(f"/APIKEY/b64/{_b64(json.dumps([task]), True)}/{source}")
    assert signature not in shown and shown.startswith(f"/APIKEY/security={HIDDEN}/"), shown


@given(
    user=USERINFO.filter(lambda u: len(u) >= 6),
    host=st.sampled_from(["example.com", "127.0.0.1:18122", "h"]),
    tasks=st.lists(TASKS, min_size=1, max_size=2),
)
def test_a_user_part_holding_an_equals_sign_is_hidden(
    user: str, host: str, tasks: list[str]
) -> None:
    """``user:pw=@host`` read as a task named ``user:pw`` showed the user part, lowercased,
    and swallowed the host (probe sec F2)."""
    url = f"http://{user}@{host}/a.png"
    for form in (url, quote(url, safe=""), f'"{url}"'):
        shown = loggable(f"/APIKEY/{'/'.join(tasks)}/{form}")
        assert user.lower() not in shown.lower(), (form, shown)
        assert f"{HIDDEN}@{host}/a.png" in shown, (form, shown)
