"""``minify_js`` and ``minify_css`` never change what the code means: generated scripts
run in node before and after, generated style sheets read by tinycss2 before and after.
rjsmin and rcssmin alone broke 24 of 80 programs and 43 of 60 sheets of a prober's
(a backtick in a template substitution, ``2 .toString()``, ``1<!--2``, a quoted
``url("a b.png")``); the snippets below hold those and their neighbours."""

from __future__ import annotations

import json
import random
import subprocess
from typing import Any

import pytest
import tinycss2

from stowage.processing import minify
from stowage.processing.base import Task

#: Each records what it computes with ``out``; some throw, which is recorded too.
JS_SNIPPETS = [
    "out(`a${1+1}b // not comment`);",
    "out(`x /* y */ ${`in${'ner'}`} z`);",
    "out(`multi\n  line   spaces\n`);",
    "out(`a${'`'}b`);",
    'out(`a${"`"}b`); out(`keep  two  spaces /* c */`);',
    "out(`${/`/.source}`); out(`x  y // z`);",
    "out(`${`${`deep  er`}`}`);",
    "out(`\\`escaped backtick // `);",
    'out(`${"}"}  ${"{"}`);',
    "out(`${ {a:1}.a }`);",
    "var s=`/*`; out(s + `*/`);",
    "out(`${1}/${2}//${3}`);",
    "out([`a`,`b`].join(`/**/`));",
    "out(/\\/\\/x/.test('//x'));",
    "var r=[/a]b/.test(']'), /[/]/.test('/')]; out(r);",
    "var re=/\\/*/; out(re.source);",
    "out('a/*b*/c'.length); out('//'+'x');",
    "var a=10,b=2,g=5; out(a / b / g);",
    "var a=10,b=2; out(a\n/b\n/1);",
    "var a=4,g=2; out(a\n/2/g);",
    "var a=1,b=2; out(a - -b); out(a + +b); out(a+ ++b); out(a - --b);",
    "out(1..toString() + 2 .toString());",
    "out(2 .toFixed(1)); out(0.5.toFixed(1)); out(1e3 .toString());",
    "var i=1; var j = i\n++i\nout(j+','+i);",
    "function f(){ return\n 42 } out(f());",
    "function f(){ return /*\n*/ 42 } out(f());",
    "function f(){ return /* one line */ 42 } out(f());",
    "var x = 1\n;[2,3].forEach(function(v){ out(v) })",
    "let k = 5\n;(function(){ out(k) })()",
    "var t = 1\nvar u = t\n(function(){return 2})",
    "var n = 3; while (n --> 0) out(n);",
    "var p = 1, q = 0; out(p<!--q\n);",
    "out('<!-- not a comment -->'); out(/<!--/.test('<!--'));",
    "var c = 2\n--> this line is a comment in a script\nout(c);",
    "out(typeof 1 + typeof 'x'); out(('a' in {a:1}) + '' + ([] instanceof Array));",
    "var o={a:{b:1}}; out(o?.a?.b ?? 9);",
    "class C{ #p=3; get v(){return this.#p} } out(new C().v);",
    "function* g(){ yield /re/.source } out(g().next().value);",
    "label: for(var q=0;q<3;q++){ continue label } out(q);",
    "out('\\u2028'.length); out(`line1\r\nline2`.length); out(`tab\there`);",
    "var x = 1; x\n++\nx; out(x);",
    "var y = {} /* c */\n/foo/g.source; out(typeof y);",
]
#: Plain code rjsmin always minified: still minified.
PLAIN = (
    "var  total = 0 ;  // sum\nfor (var i = 0 ; i < 4 ; i++) {\n  total  +=  i ;\n}\nout(total);"
)

RUNNER = """
const vm = require('vm');
const programs = JSON.parse(require('fs').readFileSync(0, 'utf8'));
console.log(JSON.stringify(programs.map((code) => {
  const seen = [];
  try {
    vm.runInNewContext(code, {out: (v) => seen.push(String(v))}, {timeout: 2000});
  } catch (e) { seen.push('threw ' + (e && e.name)); }
  return seen;
})));
"""


def _programs(seed: int, count: int) -> list[str]:
    """Snippets joined with comments and blank lines, some wrapped in ``try``."""
    draw = random.Random(seed)
    programs = []
    for _ in range(count):
        parts = []
        for _ in range(draw.randint(2, 9)):
            snippet = draw.choice(JS_SNIPPETS)
            parts.append(
                f"try{{{snippet}\n}}catch(e){{out('E:'+e.name)}}"
                if draw.random() < 0.6
                else snippet
            )
            parts.append(draw.choice(["", "/* block // with */", "// line /* */", "\n\n\t  "]))
        programs.append("\n".join(parts))
    return programs


def _run(programs: list[str]) -> list[list[str]]:
    done = subprocess.run(
        ["node", "-e", RUNNER],
        input=json.dumps(programs),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    ran: list[list[str]] = json.loads(done.stdout)
    return ran


def _js(code: str) -> str:
    return str(minify.TASKS[0].answer.render(code, Task("minify_js", {})))  # type: ignore[union-attr]


def _css(code: str) -> str:
    return str(minify.TASKS[1].answer.render(code, Task("minify_css", {})))  # type: ignore[union-attr]


@pytest.mark.needs("node", by="scripts/setup.d/60-filestack-sdks.sh")
def test_generated_scripts_do_what_they_did() -> None:
    programs = _programs(4806, 300)
    minified = [_js(code) for code in programs]
    before, after = _run(programs), _run(minified)
    changed = [
        (code, small, was, now)
        for code, small, was, now in zip(programs, minified, before, after, strict=True)
        if was != now
    ]
    assert not changed, f"{len(changed)} of {len(programs)} changed; first: {changed[0]}"
    assert sum(small != code for code, small in zip(programs, minified, strict=True)) > 0


@pytest.mark.needs("node", by="scripts/setup.d/60-filestack-sdks.sh")
def test_each_snippet_alone_and_after_a_plain_script() -> None:
    programs = [*JS_SNIPPETS, *(f"{PLAIN}\n{s}" for s in JS_SNIPPETS)]
    minified = [_js(code) for code in programs]
    assert _run(minified) == _run(programs)
    assert _js(PLAIN) == "var total=0;for(var i=0;i<4;i++){total+=i;}\nout(total);"  # still


CSS_SNIPPETS = [
    'a{background:url("a b.png")}',
    "a{background:url( 'x  y.png' ) no-repeat}",
    "a{background:url(  plain.png  )}",
    'b{background:url("a\\"b c.png")}',
    '@import url("a b.css") screen;',
    '@import "c d.css";',
    '@font-face{font-family:"My  Font";src:url( "my font.woff2" ) format("woff2")}',
    'a{cursor:url("c u.cur"),auto}',
    'a::after{content:"  /* not a comment */  "}',
    "a::before{content:'\\2014  x'}",
    "a{width:calc(100% - (2 * 3px))}",
    "a{width:calc( var(--x) + 2px )}",
    "a{margin:-1px -2px}",
    "a :hover{color:red}",
    "a .b{color:red}",
    "a > b ~ c + d{e:f}",
    ".x:not(.a .b){c:d}",
    "a  ,  b{c : d ; e : f !important}",
    "@media screen and (max-width : 100px){a{b:c}}",
    'a{font:12px/1.5 "A B",serif}',
    'a{background-image:image-set("a b.png" 1x)}',
    "a{--v:  1px  2px  }",
    "a{b:c} /* comment */",
    "a{b:c}/*! bang */",
    'a[title="x  y"]{b:c}',
    "a{grid-template-areas:'a  b' 'c  d'}",
]


def _sheets(seed: int, count: int) -> list[str]:
    draw = random.Random(seed)
    return [
        "\n".join(draw.choice(CSS_SNIPPETS) for _ in range(draw.randint(2, 7)))
        for _ in range(count)
    ]


_SEMICOLON = ("literal", ";", None, None)


def _tokens(sheet: str) -> list[Any]:
    """Every token but comments and white space, by type and decoded value (a string's
    or ``url()``'s text, a number's sign), blocks and functions opened and closed."""
    found: list[Any] = []
    for token in tinycss2.parse_component_value_list(sheet, skip_comments=True):
        _flatten(token, found)
    ends = ("end", _SEMICOLON)  # a ';' closing a block or the sheet ends nothing more
    nexts = [*found[1:], "end"]
    return [t for t, then in zip(found, nexts, strict=True) if t != _SEMICOLON or then not in ends]


def _flatten(token: Any, found: list[Any]) -> None:
    if token.type == "whitespace":
        return
    shown = getattr(token, "representation", None) or getattr(token, "value", None)
    found.append((token.type, shown, getattr(token, "unit", None), getattr(token, "name", None)))
    inner = getattr(token, "content", getattr(token, "arguments", None))
    if inner is not None:
        for each in inner:
            _flatten(each, found)
        found.append("end")


def test_generated_sheets_keep_every_token() -> None:
    sheets = [*CSS_SNIPPETS, *_sheets(4807, 300)]
    changed = [(s, _css(s)) for s in sheets if _tokens(_css(s)) != _tokens(s)]
    assert not changed, f"{len(changed)} of {len(sheets)} changed; first: {changed[0]}"
    sheet = (
        "a  ,  b { c : d ;  e : f  !important }\n/* x */\n@media (max-width : 9px) { a { b : c } }"
    )
    assert _css(sheet) == "a,b{c:d;e:f!important}@media (max-width:9px){a{b:c}}"  # still


JS_PAIRS = [  # (source, a minified form, whether it means the same)
    ("var b=`keep  two  spaces`", "var b=`keep two spaces`", False),
    ("function f(){return /*\n*/ 1}", "function f(){return 1}", False),
    ("x = 2 .toString()", "x=2.toString()", False),
    ("a = b\n++c", "a=b++c", False),
    ("a - -b", "a--b", False),
    ('var a = "x  y"', 'var a="x y"', False),
    ("/a  b/.test(s)", "/a b/.test(s)", False),
    ("f(p<!--q\n)", "f(p<!--q)", False),
    ("a\n\u00a0--> comment\nb", "a\n-->comment\nb", False),
    ("var  a = 1 ; // c\n", "var a=1;", True),
    ("while (n --> 0) f()", "while(n-->0)f()", True),
    ("var t = `a${ x }b`", "var t=`a${x}b`", True),
]
CSS_PAIRS = [
    ('a{b:url("a b.png")}', 'a{b:url("ab.png")}', False),
    ("a :hover{b:c}", "a:hover{b:c}", False),
    ("a .b{c:d}", "a.b{c:d}", False),
    ("a{margin:-1px -2px}", "a{margin:-1px-2px}", False),
    ("a{width:calc(1px + (2px))}", "a{width:calc(1px+(2px))}", False),
    ('a{content:"a  b"}', 'a{content:"a b"}', False),
    ("a{b:c}", "a{b:d}", False),
    ("a , b { c : d ; e : f !important ; }", "a,b{c:d;e:f!important}", True),
    (
        "@media screen and (max-width : 1px) { a { b : c } }",
        "@media screen and (max-width:1px){a{b:c}}",
        True,
    ),
    ("a > b ~ c + d{e:f} /* x */", "a>b~c+d{e:f}", True),
]


@pytest.mark.parametrize(("source", "result", "same"), JS_PAIRS)
def test_the_script_check_tells_a_changed_meaning(source: str, result: str, same: bool) -> None:
    from stowage.processing import samecode  # here: without it the tests above still run

    assert samecode.same_js(source, result) is same


@pytest.mark.parametrize(("source", "result", "same"), CSS_PAIRS)
def test_the_sheet_check_tells_a_changed_meaning(source: str, result: str, same: bool) -> None:
    from stowage.processing import samecode

    assert samecode.same_css(source, result) is same


def test_sources_past_the_checked_length_are_answered_unchanged() -> None:
    script = "var  a = 1 ;\n" * (minify.JS_CHECKED_CHARS // 13 + 1)
    assert _js(script) == script
    sheet = "a { b : c }\n" * (minify.CSS_CHECKED_CHARS // 12 + 1)
    assert _css(sheet) == sheet
