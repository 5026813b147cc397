"""SVG sources are checked and rewritten before libvips sees them (issue 26): every
reference out of the document, every entity and every DTD declaration is refused,
whatever its spelling (generated), and what is kept draws as it did."""

from __future__ import annotations

import base64
import io

import pytest
import pyvips
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage.processing import svg

HEAD = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"'
OPEN = HEAD + ' width="20" height="10">'
PNG = pyvips.Image.black(2, 2).write_to_buffer(".png")
DATA_PNG = "data:image/png;base64," + base64.b64encode(PNG).decode()
JPEG = pyvips.Image.black(2, 2).write_to_buffer(".jpg")
DATA_JPEG = "data:image/JPEG;base64," + base64.b64encode(JPEG).decode()
INNER = base64.b64encode(f'{OPEN}<image href="http://127.0.0.1:9/x"/></svg>'.encode()).decode()

# Where a document can name something outside itself.
TARGETS = st.sampled_from(
    [
        "http://127.0.0.1:9/x.png",
        "https://169.254.169.254/latest/meta-data/",
        "HTTP://10.0.0.1/",
        "file:///etc/passwd",
        "FILE:/etc/passwd",
        "//127.0.0.1/x",
        "passwd",
        "../../../../etc/passwd",
        "ftp://127.0.0.1/x",
        "resource:///org/gnome/x",
        "data:image/svg+xml;base64," + INNER,
        "data:text/html,<script>alert(1)</script>",
        " \thttp://127.0.0.1/",
        "",
    ]
)
PLACES = st.sampled_from(
    [
        '<image xlink:href="{t}" width="5" height="5"/>',
        '<image href="{t}" width="5" height="5"/>',
        '<image xmlns:q="http://www.w3.org/1999/xlink" q:href="{t}"/>',
        '<use xlink:href="{t}"/>',
        '<filter id="f"><feImage href="{t}"/></filter>',
        '<a href="{t}"><rect width="1" height="1"/></a>',
        '<pattern id="p" xlink:href="{t}"/>',
        '<rect width="5" height="5" fill="url({t})"/>',
        '<rect width="5" height="5" fill="url(\'{t}\')"/>',
        '<rect width="5" height="5" style="fill: URL( {t} )"/>',
        '<rect width="5" height="5" style="filter:url(&quot;{t}&quot;)"/>',
        "<style>rect {{ fill: url({t}); }}</style>",
        "<style><![CDATA[rect {{ background: url( '{t}' ) }}]]></style>",
    ]
)


def rewrite(document: str | bytes) -> str:
    out = io.StringIO()
    data = document.encode() if isinstance(document, str) else document
    svg.rewrite(io.BytesIO(data), out)
    return out.getvalue()


@given(TARGETS, PLACES)
@settings(max_examples=150, deadline=None)
def test_a_reference_out_of_the_document_is_refused(target: str, place: str) -> None:
    escaped = target.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
    with pytest.raises(svg.Refused, match="refers to"):
        rewrite(OPEN + place.format(t=escaped) + "</svg>")


@given(PLACES, st.sampled_from(["#p", "#f", " #g", DATA_PNG, DATA_JPEG]))
@settings(max_examples=60, deadline=None)
def test_fragments_and_inline_rasters_are_kept(place: str, target: str) -> None:
    kept = rewrite(OPEN + place.format(t=target) + "</svg>")
    assert target.strip() in kept.replace("&quot;", '"')


ENTITY_FORMS = [
    # a billion laughs
    '<!DOCTYPE svg [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
    '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>' + OPEN + "<text>&c;</text></svg>",
    # XXE, file and network
    '<!DOCTYPE svg [<!ENTITY x SYSTEM "file:///etc/passwd">]>' + OPEN + "<text>&x;</text></svg>",
    '<!DOCTYPE svg [<!ENTITY x SYSTEM "http://127.0.0.1:9/">]>' + OPEN + "<text>&x;</text></svg>",
    # parameter entities, an external subset named in the internal one
    '<!DOCTYPE svg [<!ENTITY % p SYSTEM "http://127.0.0.1:9/e.dtd"> %p;]>' + OPEN + "</svg>",
    # an empty internal subset is still a DTD with declarations allowed
    "<!DOCTYPE svg []>" + OPEN + "</svg>",
    # an entity that the DTD would have declared
    '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://127.0.0.1:9/svg11.dtd">'
    + OPEN
    + "<text>&nbsp;</text></svg>",
    # an undeclared entity without a DTD
    OPEN + "<text>&x;</text></svg>",
]


@pytest.mark.parametrize("document", ENTITY_FORMS)
def test_entities_and_declarations_are_refused(document: str) -> None:
    with pytest.raises(svg.Refused, match=r"DTD|entit|not well-formed"):
        rewrite(document)


@given(
    st.sampled_from(["UTF-8", "UTF-16", "ISO-8859-1"]),
    st.sampled_from(
        ['SYSTEM "file:///etc/passwd"', '"&#x26;#x26;"', 'SYSTEM "http://127.0.0.1:9/"']
    ),
    st.sampled_from(["x", "lol", "y1"]),
)
@settings(max_examples=30, deadline=None)
def test_entity_declarations_are_refused_in_any_encoding(
    encoding: str, value: str, name: str
) -> None:
    text = (
        f'<?xml version="1.0" encoding="{encoding}"?>'
        f"<!DOCTYPE svg [<!ENTITY {name} {value}>]>{OPEN}<text>&{name};</text></svg>"
    )
    with pytest.raises(svg.Refused, match=r"DTD|entit"):
        rewrite(text.encode(encoding))


@pytest.mark.parametrize(
    "part",
    [
        "<style>@import url(#x);</style>",
        '<style>@IMPORT "http://127.0.0.1:9/a.css";</style>',
        "<style>rect { fill: \\75rl(http://127.0.0.1:9/) }</style>",
        '<rect style="fill:\\75 rl(http://127.0.0.1:9/)"/>',
        '<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="#x" parse="text"/>',
        "<style><rect/></style>",
    ],
)
def test_css_imports_escapes_and_xinclude_are_refused(part: str) -> None:
    with pytest.raises(svg.Refused):
        rewrite(OPEN + part + "</svg>")


def test_scripts_handlers_comments_and_stylesheets_are_dropped() -> None:
    kept = rewrite(
        '<?xml-stylesheet href="http://127.0.0.1:9/s.css" type="text/css"?>'
        + OPEN
        + '<!-- c --><script>fetch("http://127.0.0.1:9/")</script>'
        + '<svg:script xmlns:svg="http://www.w3.org/2000/svg"><![CDATA[x()]]></svg:script>'
        + '<rect width="5" height="5" onload="x()" ONCLICK="y()"/></svg>'
    )
    assert "script" not in kept and "onload" not in kept.lower() and "127.0.0.1" not in kept
    assert "<!--" not in kept and "<?xml-stylesheet" not in kept
    assert '<rect width="5" height="5"></rect>' in kept


@pytest.mark.parametrize(
    "document",
    ["<html><svg/></html>", "not xml", OPEN, OPEN + "</svg><svg/>", b"\x1f\x8b\x08\x00gzip"],
)
def test_what_is_no_svg_document_is_refused(document: str | bytes) -> None:
    with pytest.raises(svg.Refused):
        rewrite(document)


def test_depth_and_size_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(svg.Refused, match="levels deep"):
        rewrite(OPEN + "<g>" * 300 + "</g>" * 300 + "</svg>")
    monkeypatch.setattr(svg, "MAX_BYTES", 1000)
    with pytest.raises(svg.Refused, match="over 1000 bytes"):
        rewrite(OPEN + "<g/>" * 300 + "</svg>")


@given(st.text(min_size=1, max_size=40))
@settings(max_examples=100, deadline=None)
def test_text_comes_back_as_it_was_read(text: str) -> None:
    """What is written back is what expat read: escaped, re-parsed to the same text."""
    clean = "".join(c for c in text if c in "\t\n\r" or (c >= " " and c not in "\ufffe\uffff"))
    clean = "".join(c for c in clean if not 0xD800 <= ord(c) <= 0xDFFF)
    if not clean:
        return
    escaped = clean.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    kept = rewrite(OPEN + "<text>" + escaped + "</text></svg>")
    again = io.StringIO()
    svg.rewrite(io.BytesIO(kept.encode()), again)
    assert again.getvalue() == kept
    assert escaped.replace("\r\n", "\n").replace("\r", "\n") in kept


def test_the_rewritten_document_draws_as_the_original() -> None:
    document = (
        OPEN + '<defs><linearGradient id="g"><stop offset="0" stop-color="#00f"/>'
        "</linearGradient></defs><style>.a { fill: #f00 }</style>"
        '<rect class="a" width="10" height="10"/>'
        '<rect x="10" width="10" height="10" fill="url(#g)"/></svg>'
    )
    image = pyvips.Image.svgload_buffer(rewrite(document).encode())
    assert (image.width, image.height) == (20, 10)
    assert image.getpoint(5, 5)[:3] == [255, 0, 0]
    assert image.getpoint(15, 5)[:3] == [0, 0, 255]
