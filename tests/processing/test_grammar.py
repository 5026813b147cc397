"""The one grammar of the CDN path: sources (a handle, a list, a URL), the API key, and
the request tasks read into the parsed path by the table."""

from __future__ import annotations

import string
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stowage import errors
from stowage.core import names
from stowage.processing import catalogue, grammar
from stowage.processing.base import Task
from stowage.processing.table import Kind

H, H2 = "A" * 20, "B" * 20


def test_a_list_of_handles_is_several_sources() -> None:
    path = grammar.parse_path(f"/KEY/flip/animate/[{H},{H2}]")
    assert (path.handle, path.handles, path.sources) == ("", (H, H2), (H, H2))
    assert path.api_key == "KEY" and path.tasks == ["flip", "animate"]
    assert grammar.parse_path(f"/{H}").sources == (H,)
    for bad in (f"/[{H},[{H2}]]", "/[]", "/[" + ",".join([H] * 33) + "]"):
        with pytest.raises(errors.InvalidParameter):
            grammar.parse_path(bad)


def test_store_is_found_by_the_table_in_any_spelling() -> None:
    path = grammar.parse_path(f"/resize=w:10/STORE=filename:a.png,location:gcs/{H}")
    assert path.store == Task("store", (("filename", "a.png"), ("location", "gcs")))
    assert path.tasks == ["resize=w:10", "STORE=filename:a.png,location:gcs"]
    assert grammar.parse_path(f"/resize=w:10/{H}").store is None


def test_request_tasks_leave_the_chain() -> None:
    path = grammar.parse_path(f'/K/cache=false/security=p:"a/b",s:c/flip/{H}')
    assert (path.cache, path.policy, path.signature, path.tasks) == (False, "a/b", "c", ["flip"])
    assert grammar.parse_path(f"/cache=e:60/{H}").max_age == 60
    assert grammar.parse_path(f"/cache=expiry:max/{H}").max_age == 31_536_000
    assert grammar.parse_path(f"/cache=cache:no,expiry:5/{H}").cache is False


def test_external_urls_as_sent_or_encoded() -> None:
    for url in ("https://example.test/a/b.jpg?x=1", "https%3A%2F%2Fexample.test%2Fa%2Fb.jpg"):
        path = grammar.parse_path(f"/KEY/resize=width:10/{url}")
        assert path.url is not None and path.url.startswith("https://example.test/a/b.jpg")
        assert path.api_key == "KEY" and path.tasks == ["resize=width:10"]
        assert path.url_as_sent == ("://" in url)  # then the request's query is the URL's


LABELS = st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=10)
PATHS = st.lists(st.text(string.ascii_letters + string.digits + "._-", min_size=1), max_size=4)


@given(
    scheme=st.sampled_from(["http", "https", "HTTPS"]),
    host=st.lists(LABELS, min_size=1, max_size=3).map(".".join),
    parts=PATHS,
    query=st.sampled_from(["", "?x=1", "?a=b&c=d"]),
)
def test_a_url_that_lost_a_slash_after_its_scheme_is_the_url(
    scheme: str, host: str, parts: list[str], query: str
) -> None:
    """``https:/host/a.jpg``: proxies and CMSs that merge slashes in paths send that."""
    whole = f"{scheme}://{host}/{'/'.join(parts)}{query}"
    wanted = grammar.parse_path(f"/KEY/resize=w:10/{whole}")
    for sent in (whole.replace("://", ":/", 1), quote(whole.replace("://", ":/", 1), safe="")):
        path = grammar.parse_path(f"/KEY/resize=w:10/{sent}")
        assert path.url == wanted.url and path.url is not None, sent
        assert path.url.startswith(f"{scheme}://{host}/")
        assert (path.api_key, path.tasks) == ("KEY", ["resize=w:10"])
        assert path.url_as_sent == ("%" not in sent)


def test_tasks_are_checked_when_the_path_is_parsed() -> None:
    with pytest.raises(errors.UnsupportedTask):
        grammar.parse_path(f"/nosuchtask=a:1/{H}")
    with pytest.raises(errors.InvalidParameter) as caught:
        grammar.parse_path(f"/resize=w:0/{H}")
    assert caught.value.details["parameter"] == "resize.width"


REQUEST_TASKS = st.sampled_from(
    ["cache=false", "cache=e:60", "cache=cache:off", "cache=expiry:max", 'security=p:"a",s:b']
)
SOURCE_LISTS = st.lists(st.sampled_from([H, H2]), min_size=1, max_size=4).map(
    lambda handles: "[" + ",".join(handles) + "]"
)


@given(
    key=st.sampled_from([[], ["KEY"]]),
    asks=st.lists(REQUEST_TASKS | st.just("preview"), max_size=3).filter(
        lambda asks: sum(a.startswith("security") for a in asks) < 2  # a second: refused
    ),
    sources=SOURCE_LISTS,
    metadata=st.booleans(),
)
def test_a_list_of_sources_with_no_task_to_read_it_is_refused(
    key: list[str], asks: list[str], sources: str, metadata: bool
) -> None:
    """Nothing downloads, describes or previews a list: it needs zip, animate, ..."""
    text = "/".join([*key, *asks, sources, *(["metadata"] if metadata else [])])
    with pytest.raises(errors.InvalidParameter) as caught:
        grammar.parse_path("/" + text)
    assert caught.value.details["parameter"] == "sources"


def _parsed_or_refused(text: str) -> None:
    """A path that parses names something to read, and a list only with a task."""
    try:
        path = grammar.parse_path("/" + text)
    except errors.StowageError as exc:
        assert 400 <= exc.status < 500
        return
    assert path.sources or path.url
    assert not path.handles or any(grammar._reads_list(t) for t in path.tasks)


@given(st.text(max_size=120))
def test_any_path_is_parsed_or_refused_with_a_4xx(text: str) -> None:
    _parsed_or_refused(text)


@given(
    st.lists(REQUEST_TASKS | st.sampled_from(["KEY", "flip", "zip", "metadata"]), max_size=4),
    SOURCE_LISTS | st.just(H),
    st.lists(st.just("metadata"), max_size=1),
)
def test_any_arrangement_of_request_tasks_and_sources_is_parsed_or_refused(
    before: list[str], source: str, after: list[str]
) -> None:
    _parsed_or_refused("/".join([*before, source, *after]))


HANDLES = st.text(alphabet=string.ascii_letters + string.digits + "_-", min_size=20, max_size=20)
# Items that cannot be handles: of the URL's other characters (no "/" "[" "]" "," '"'
# or "%": they change the path's or the list's shape), or of handle characters at
# another length; blanks around an item are not part of it.
NOT_HANDLES = st.text(
    alphabet=string.ascii_letters + string.digits + "_-.~!*()'@$&+;=: é", max_size=24
).filter(lambda item: not names.is_handle(item.strip()))


@given(
    task=st.sampled_from(["zip", "animate", "collage=files:[" + H + "],width:9,height:9"]),
    good=st.lists(HANDLES, max_size=4),
    bad=NOT_HANDLES,
    at=st.integers(0, 4),
)
def test_a_list_item_that_cannot_be_a_handle_is_refused_at_parse(
    task: str, good: list[str], bad: str, at: int
) -> None:
    """``[h,]``, ``[,]``, ``[h,a.png]``: 400 on ``sources``, not a 404 naming ""."""
    items = [*good[:at], bad, *good[at:]]
    with pytest.raises(errors.InvalidParameter) as caught:
        grammar.parse_path(f"/{task}/[{','.join(items)}]")
    assert caught.value.details["parameter"] == "sources"


@given(
    task=st.sampled_from(["zip", "animate", "flip"]),
    handles=st.lists(HANDLES, min_size=1, max_size=4),
    cut=st.sampled_from(["open", "close"]),
)
def test_a_list_left_open_or_closed_only_is_refused_at_parse(
    task: str, handles: list[str], cut: str
) -> None:
    """``zip/[h1`` was a 404 naming ``[h1``: a list with one bracket is the list's
    mistake, 400 on ``sources``."""
    listed = ",".join(handles)
    source = f"[{listed}" if cut == "open" else f"{listed}]"
    with pytest.raises(errors.InvalidParameter) as caught:
        grammar.parse_path(f"/{task}/{source}")
    assert caught.value.details["parameter"] == "sources"


@given(handles=st.lists(HANDLES, min_size=1, max_size=32), spaced=st.booleans())
def test_a_list_of_handles_keeps_its_order_and_repeats(handles: list[str], spaced: bool) -> None:
    listed = [*handles, handles[0]][:32]
    glue = ", " if spaced else ","
    assert grammar.parse_path(f"/zip/[{glue.join(listed)}]").handles == tuple(listed)


ONE_FILE_TASKS = sorted(
    spec.name
    for spec in catalogue.TABLE.values()
    if not (spec.reads_list or spec.needs_one_of or spec.unavailable)
    and spec.kind is not Kind.REQUEST
)


@given(task=st.sampled_from(ONE_FILE_TASKS), reader=st.sampled_from([None, *grammar.LIST_READERS]))
def test_only_a_task_that_reads_a_list_takes_one(task: str, reader: str | None) -> None:
    """``flip/[h1,h2]`` flipped the first and dropped the others without a word."""
    tasks = [task] if reader is None else [task, reader]
    path = "/" + "/".join([*tasks, f"[{H},{H2}]"])
    if reader is None:
        with pytest.raises(errors.InvalidParameter) as caught:
            grammar.parse_path(path)
        assert caught.value.details["parameter"] == "sources"
    else:
        assert grammar.parse_path(path).handles == (H, H2)


@given(
    scheme=st.sampled_from(["src", "SRC", "Src"]),
    alias=st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=20),
    path=st.lists(st.text(string.ascii_letters + ".-", min_size=1, max_size=12), max_size=4),
    tasks=st.sampled_from(["", "resize=w:100/", "flip/store/"]),
    encoded=st.booleans(),
)
def test_a_storage_alias_source_is_refused_with_what_to_do(
    scheme: str, alias: str, path: list[str], tasks: str, encoded: bool
) -> None:
    """``/<KEY>/[tasks/]src://<alias>/<path>``: the hosted storage aliases have no
    counterpart here; the answer says so and names the two ways in (never a 404 or a
    fetch)."""
    url = f"{scheme}://{alias}/" + "/".join(path)
    with pytest.raises(errors.InvalidUrl, match=r"storage aliases .*stowage import.*link=true"):
        grammar.parse_path(f"/KEY/{tasks}{quote(url, safe='') if encoded else url}")
    assert grammar.parse_path(f"/KEY/resize=w:100/{H}").handle == H  # a handle still is one


@given(
    tasks=st.lists(st.sampled_from(["flip", "resize=w:100", "output=f:png", "blur"]), max_size=3),
    at=st.integers(0, 4),
    key_first=st.sampled_from([None, True, False]),
    source=st.sampled_from([H, f"[{H},{H2}]", "https://example.com/a.jpg?v=1"]),
)
def test_debug_anywhere_before_the_source_asks_for_a_report(
    tasks: list[str], at: int, key_first: bool | None, source: str
) -> None:
    """As the SDKs place it: first (Java; Ruby, with the API key after it), after the API
    key (PHP), or among the tasks. The report is of the same path without ``debug``."""
    if source.startswith("[") and not tasks:
        tasks = ["animate"]
    elif source.startswith("["):
        tasks = [*tasks, "animate"]
    chain = list(tasks)
    chain.insert(min(at, len(chain)), "debug")
    if key_first is True:
        chain = ["KEY", *chain]
    elif key_first is False:  # Ruby: debug, then the key
        chain = ["debug", "KEY", *[t for t in chain if t != "debug"]]
    asked = grammar.debug_asked("/" + "/".join([*chain, source]))
    assert asked is not None
    assert asked.api_key == ("KEY" if key_first is not None else None)
    assert asked.task_uri == "/".join(tasks)
    plain = "/".join([*(["KEY"] if key_first is not None else []), *tasks, source])
    assert _parsed(asked.path) == _parsed("/" + plain)
    assert grammar.debug_asked("/" + plain) is None


def _parsed(path: str) -> object:
    """The parsed path, or the error it is refused with (a URL with no API key is)."""
    try:
        return grammar.parse_path(path)
    except errors.StowageError as exc:
        return (exc.code, exc.message)


_HOSTS = st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z]{2,5}){1,2}", fullmatch=True)
_PARTS = st.lists(st.text(string.ascii_letters + string.digits + "._~-", min_size=1, max_size=9))


@given(host=_HOSTS, parts=_PARTS, scheme=st.sampled_from(["http", "https", "HTTPS"]))
def test_a_url_in_double_quotes_is_the_url(host: str, parts: list[str], scheme: str) -> None:
    """filestack-js quotes a source holding ``/``: ``"<URL>"``, ``%22<URL>%22``, the URL
    inside percent-encoded or not; an open quote is closed by the query string's end."""
    url = f"{scheme}://{host}/" + "/".join(parts)
    for written in (f'"{url}"', f"%22{url}%22", f'"{quote(url, safe="")}"', f"%22{url}%22/"):
        path = grammar.parse_path(f"/KEY/resize=w:10/{written}")
        assert (path.url, path.api_key, path.tasks) == (url, "KEY", ["resize=w:10"])
        assert not path.url_as_sent and not path.url_quote_open
    opened = grammar.parse_path(f'/KEY/flip/"{url}')
    assert (opened.url, opened.url_as_sent, opened.url_quote_open) == (url, True, True)


@given(handle=st.text(string.ascii_letters + string.digits + "_-", min_size=20, max_size=20))
def test_a_filestack_cdn_link_of_a_handle_is_that_handle(handle: str) -> None:
    """As filestack-js sends it (no API key needed) or with a key: the handle, which an
    import keeps; a longer path is a URL like any other."""
    for host in ("cdn.filestackcontent.com", "CDN.FILESTACKCONTENT.COM", "filestackcontent.com"):
        link = f"https://{host}/{handle}"
        for path in (f'/flip/"{link}"', f"/KEY/flip/{link}", f"/KEY/flip/%22{link}/%22"):
            found = grammar.parse_path(path)
            assert (found.handle, found.url, found.tasks) == (handle, None, ["flip"]), path
    other = grammar.parse_path(f"/KEY/flip/https://cdn.filestackcontent.com/{handle}/x.jpg")
    assert other.url == f"https://cdn.filestackcontent.com/{handle}/x.jpg"


def _b64(value: object) -> str:
    import base64
    import json

    text = value if isinstance(value, str) else json.dumps(value)
    return base64.urlsafe_b64encode(text.encode()).decode()


@given(
    junk=st.one_of(
        st.text(max_size=40).map(lambda t: _b64(t)),  # base64 of anything: not JSON mostly
        st.text(string.printable, max_size=40),  # not base64 at all
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
            max_leaves=8,
        ).map(_b64),  # JSON of any shape
    )
)
def test_any_base64_part_is_read_or_refused_with_a_400(junk: str) -> None:
    for path in (f"/KEY/b64/{junk}/{H}", f"/KEY/flip/b64://{junk}"):
        try:
            grammar.parse_path(path)
        except errors.StowageError as exc:
            assert 400 <= exc.status < 500, (path, exc)


def test_a_base64_part_that_cannot_be_read_says_why() -> None:
    quoted = _b64([{"name": "watermark", "params": {"file": 'a"b'}}])
    quoted_url = _b64('https://h/a"b')
    cases = {
        f"/KEY/b64/%%%/{H}": "not base64",
        f"/KEY/b64/{_b64('[oops')}/{H}": "not JSON",
        f"/KEY/b64/{_b64({'name': 'flip'})}/{H}": "JSON list",
        f"/KEY/b64/{_b64([{'name': 'resize', 'params': 5}])}/{H}": "not an object",
        f"/KEY/b64/{quoted}/{H}": "value",
        f"/KEY/flip/b64://{quoted_url}": "double quote",
    }
    for path, reason in cases.items():
        with pytest.raises(errors.InvalidParameter, match=reason) as refused:
            grammar.parse_path(path)
        assert refused.value.details["parameter"] == "b64"
    tasks = [{"name": "resize", "params": {"width": 100, "fit": "crop", "height": 50.0}}]
    read = grammar.parse_path(f"/KEY/b64/{_b64(tasks)}/b64://{_b64(H)}")
    # 50.0 is JavaScript's 50, as the SDK would write the same option in the plain form.
    assert (read.tasks, read.handle) == (["resize=width:100,fit:crop,height:50"], H)
    store = [{"name": "store", "params": {"path": "/a%20b/", "filename": "x,y.jpg"}}]
    read = grammar.parse_path(f"/KEY/b64/{_b64(store)}/{H}")
    assert read.store is not None and read.store.get("path") == "/a%20b/"


@given(
    sizes=st.lists(st.integers(1, 5000), min_size=1, max_size=4),
    query=st.text(string.ascii_letters + "?>~=&", max_size=20),
)
def test_standard_base64_percent_encoded_reads_as_the_url_safe_form(
    sizes: list[int], query: str
) -> None:
    """A hand-made URL may use standard base64 with its ``/``, ``+`` and ``=`` encoded."""
    import base64
    import json
    from urllib.parse import quote

    tasks = json.dumps([{"name": "resize", "params": {"width": w}} for w in sizes]).encode()
    source = f"https://example.com/a.jpg?q={query}>>?".encode()
    standard = [quote(base64.b64encode(part).decode(), safe="") for part in (tasks, source)]
    safe = [base64.urlsafe_b64encode(part).decode().rstrip("=") for part in (tasks, source)]
    read = [grammar.parse_path(f"/KEY/b64/{t}/b64://{u}") for t, u in (standard, safe)]
    assert (read[0].tasks, read[0].url) == (read[1].tasks, read[1].url)
    assert read[0].url == source.decode() and len(read[0].tasks) == len(sizes)


_URLS = st.builds(lambda host, parts: f"https://{host}/" + "/".join(parts), _HOSTS, _PARTS)


@given(
    urls=st.lists(_URLS, min_size=1, max_size=5),
    quoted=st.booleans(),
    encoded=st.booleans(),
)
def test_a_list_of_urls_is_read_in_order(urls: list[str], quoted: bool, encoded: bool) -> None:
    """As filestack-js (each quoted) and filestack-swift (not) write it, its brackets
    as sent or percent-encoded (``%5B``, as HTTP clients send ``[``)."""
    items = ",".join(f'"{u}"' if quoted else u for u in urls)
    listed = f"%5B{items}%5D" if encoded else f"[{items}]"
    found = grammar.parse_path(f"/KEY/animate=delay:100/{listed}")
    assert (found.urls, found.handles, found.url, found.api_key) == (tuple(urls), (), None, "KEY")
    links = [f"https://cdn.filestackcontent.com/{h}" for h in (H, H2, H)]
    both = grammar.parse_path(f"/KEY/animate/[{','.join(links)}]")
    assert (both.handles, both.urls) == ((H, H2, H), ())
    with pytest.raises(errors.InvalidParameter, match="not both"):
        grammar.parse_path(f"/KEY/animate/[{urls[0]},{H}]")


@given(parts=_PARTS, encoded=st.booleans())
def test_brackets_in_a_url_source_stay_the_urls(parts: list[str], encoded: bool) -> None:
    """A URL source whose last segment is ``%5B...%5D`` is that URL as sent; only a list
    source gets its percent-encoded brackets back."""
    url = "https://example.com/" + "/".join([*parts, "%5Bx%5D"])
    sent = quote(url, safe="") if encoded else url
    found = grammar.parse_path(f"/KEY/flip/{sent}")
    assert (found.url, found.urls, found.handles) == (url, (), ())


@given(
    address=st.ip_addresses(v=6),
    port=st.none() | st.integers(1, 65535),
    user=st.sampled_from(["", "u:p@", "u:%5Bx%5D@"]),
    spelling=st.sampled_from([("[", "]"), ("%5B", "%5D"), ("%5b", "%5d")]),
    task=st.sampled_from(["flip", "store", "resize=w:10"]),
)
def test_an_ipv6_host_reads_the_same_with_its_brackets_encoded(
    address: object, port: int | None, user: str, spelling: tuple[str, str], task: str
) -> None:
    tail = f"{'' if port is None else f':{port}'}/a/%5Bb%5D.png"
    opened, closed = spelling
    read = grammar.parse_path(f"/KEY/{task}/http://{user}{opened}{address}{closed}{tail}")
    assert read.url == f"http://{user}[{address}]{tail}"


@given(
    tasks=st.lists(
        st.sampled_from(["flip", "resize=w:100", "output=f:png", "blur=amount:2"]),
        min_size=1,
        max_size=3,
    ),
    key=st.booleans(),
    form=st.sampled_from(["metadata", "empty_b64", "open_quote", "no_source"]),
)
def test_a_path_that_would_lose_a_part_is_a_400(tasks: list[str], key: bool, form: str) -> None:
    """Each was answered as something else: the image without its /metadata, a 404
    naming a task or the API key as a handle."""
    prefix = "/KEY" if key else ""
    path = {
        "metadata": f"{prefix}/{'/'.join(tasks)}/{H}/metadata",
        "empty_b64": f"{prefix}/{'/'.join(tasks)}/b64://",
        "open_quote": f"{prefix}/{'/'.join(tasks)}/enhance=preset:%22/{H}",
        "no_source": f"{prefix}/{'/'.join(tasks)}/resize=w:5",  # a task where the file goes
    }[form]
    with pytest.raises(errors.InvalidParameter):
        grammar.parse_path(path)


@given(
    handle=st.text(string.ascii_letters + string.digits + "_-", min_size=20, max_size=20),
    key=st.sampled_from(["", "AbCdEfGhIjKlMnOpQrSt/"]),
    link_key=st.sampled_from(["", "ZyXwVuTsRqPoNmLkJiHg/"]),
    link_tasks=st.lists(st.sampled_from(["flip", "cache=expiry:max", "resize=w:30"]), max_size=2),
    outer=st.lists(st.sampled_from(["flop", "resize=width:50", "sepia"]), min_size=1, max_size=2),
    quoted=st.booleans(),
)
def test_a_hosted_link_with_its_key_or_tasks_is_that_file(
    handle: str, key: str, link_key: str, link_tasks: list[str], outer: list[str], quoted: bool
) -> None:
    """filestack-js's Filelink writes ``/<APIKEY>/<HANDLE>``, and saved links carry tasks:
    they were fetched from the hosted service (a 502 here) instead of read as the file.
    The link's tasks make the source, so they run first; its key is the hosted app's."""
    link = "https://cdn.filestackcontent.com/" + link_key + "".join(t + "/" for t in link_tasks)
    link += handle
    source = f'"{link}"' if quoted else link
    found = grammar.parse_path("/" + key + "/".join(outer) + "/" + source)
    engine = [t for t in link_tasks if not t.startswith("cache")]
    assert (found.handle, found.url) == (handle, None)
    assert found.tasks == [*engine, *outer]
    assert found.api_key == (key.rstrip("/") or None)
    assert found.max_age == (31536000 if "cache=expiry:max" in link_tasks else None)


def test_a_path_read_again_is_read_alike_and_shares_nothing_mutable() -> None:
    """``parse_path`` and ``debug_asked`` share one cached reading of a path's segments
    (``grammar._read``): a second parse of the same path, after the first's result was
    changed (the CDN sets ``tasks`` after negotiating), gives what the first gave."""
    paths = [
        "/resize=width:300/output=format:webp/abcdefghijklmnopqrst",
        '/KEY/debug/flip/["https://h/a%20b.jpg","abcdefghijklmnopqrst"]',
        "/KEY/resize=w:10/https://example.com/a/b.jpg?x=1",
        "/KEY/collage=files:[abcdefghijklmnopqrst],w:100,h:100/abcdefghijklmnopqrst",
    ]
    for path in paths * 2:
        try:
            first = grammar.parse_path(path)
        except errors.StowageError as exc:
            first_error = exc.code
            with pytest.raises(errors.StowageError) as again:
                grammar.parse_path(path)
            assert again.value.code == first_error
            continue
        kept = (list(first.tasks), first.handle, first.handles, first.url, first.api_key)
        first.tasks.clear()
        second = grammar.parse_path(path)
        assert (
            list(second.tasks),
            second.handle,
            second.handles,
            second.url,
            second.api_key,
        ) == kept
        assert grammar.debug_asked(path) == grammar.debug_asked(path)
