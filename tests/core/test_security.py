"""Policies, signatures and app-secret authentication (checklist items 1-11)."""

from __future__ import annotations

import base64
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stowage import errors
from stowage.core import security
from stowage.core.security import CALLS, Credentials, Policy, Target
from stowage.core.urlguard import check_url

# Signature vectors from the official Filestack SDKs' own tests and docs (a copy of
# ../shared/compat/vectors.json, kept in the repo so a plain clone can run the tests).
VECTORS_PATH = Path(__file__).resolve().parents[1] / "data" / "filestack-vectors.json"
SECRET = "s3cr3t-app-secret"
NOW = 1_700_000_000
FUTURE = NOW + 3600


def load_vectors() -> list[dict[str, str]]:
    vectors: list[dict[str, str]] = json.loads(VECTORS_PATH.read_text())["policies"]
    return vectors


VECTORS = load_vectors()


def std_b64(data: dict[str, Any], *, pad: bool = True) -> str:
    text = base64.b64encode(json.dumps(data).encode()).decode()
    return text if pad else text.rstrip("=")


def url_b64(data: dict[str, Any], *, pad: bool = True) -> str:
    text = base64.urlsafe_b64encode(json.dumps(data).encode()).decode()
    return text if pad else text.rstrip("=")


def signed(data: dict[str, Any], secret: str = SECRET) -> Credentials:
    text = security.encode_policy(data)
    return Credentials(policy=text, signature=security.sign(secret, text))


def authorize(
    creds: Credentials,
    call: str | tuple[str, ...] = "read",
    target: Target | None = None,
    *,
    now: float = NOW,
    skew: int = 0,
    required: bool = True,
) -> Policy | None:
    return security.authorize(
        SECRET, creds, call, target or Target(), required=required, now=now, skew=skew
    )


# --- test vectors -------------------------------------------------------------------------


def test_vectors_file_is_found_and_not_empty() -> None:
    assert VECTORS_PATH.is_file()
    assert len(VECTORS) >= 8


@pytest.mark.parametrize("vector", VECTORS, ids=[v["source"] for v in VECTORS])
def test_every_vector_signature_verifies(vector: dict[str, str]) -> None:
    assert security.sign(vector["secret"], vector["policy"]) == vector["signature"]
    security.verify_signature(vector["secret"], vector["policy"], vector["signature"])


@pytest.mark.parametrize("vector", VECTORS, ids=[v["source"] for v in VECTORS])
def test_every_vector_decodes_to_a_json_object(vector: dict[str, str]) -> None:
    data = security.decode_policy(vector["policy"])
    assert isinstance(data, dict)
    assert data == json.loads(base64.urlsafe_b64decode(vector["policy"] + "=="))


@pytest.mark.parametrize("vector", VECTORS, ids=[v["source"] for v in VECTORS])
def test_every_vector_with_known_keys_passes_check_policy(vector: dict[str, str]) -> None:
    data = security.decode_policy(vector["policy"])
    if set(data) - security.KNOWN_KEYS:
        with pytest.raises(errors.InvalidPolicy):
            security.check_policy(vector["secret"], vector["policy"], vector["signature"], 0, 0)
        return
    policy = security.check_policy(
        vector["secret"], vector["policy"], vector["signature"], data["expiry"], 0
    )
    assert policy.expiry == data["expiry"]
    with pytest.raises(errors.PolicyExpired):
        security.check_policy(
            vector["secret"], vector["policy"], vector["signature"], data["expiry"] + 1, 0
        )


def test_vector_with_unknown_key_expires_is_refused_after_its_signature_checks() -> None:
    vector = next(v for v in VECTORS if v["source"] == "py test expires")
    with pytest.raises(errors.InvalidPolicy, match="expires"):
        security.check_policy(vector["secret"], vector["policy"], vector["signature"], 0, 0)
    with pytest.raises(errors.InvalidSignature):
        security.check_policy(vector["secret"], vector["policy"], "0" * 64, 0, 0)


def test_java_vector_restrictions_are_parsed() -> None:
    vector = next(v for v in VECTORS if v["source"] == "java normal")
    policy = security.check_policy(
        vector["secret"], vector["policy"], vector["signature"], 4653651600, 0
    )
    assert policy.calls == frozenset({"write", "remove"})
    assert policy.handle == "KW9EJhYtS6y48Whm2S6D"
    assert policy.max_size == 1024 and policy.min_size == 128
    assert policy.path == "/some/dir/" and policy.container == "some-container"
    assert policy.url is not None
    creds = Credentials(policy=vector["policy"], signature=vector["signature"])
    target = Target(
        handle="KW9EJhYtS6y48Whm2S6D",
        url="https://upload.wikimedia.org/wikipedia/x.png",
        path="/some/dir/",
        container="some-container",
    )
    got = security.authorize(
        vector["secret"], creds, "write", target, required=True, now=4653651600
    )
    assert got == policy
    with pytest.raises(errors.PolicyDenied):
        security.authorize(vector["secret"], creds, "read", target, required=True, now=0)


# --- alphabets and padding ----------------------------------------------------------------


def alphabet_sensitive_policy() -> dict[str, Any]:
    """A policy whose standard base64 contains both '+' and '/'."""
    for n in range(10_000):
        data = {"expiry": FUTURE, "handle": f"h~~~???>>>{n}"}
        text = std_b64(data)
        if "+" in text and "/" in text and text.endswith("="):
            return data
    raise AssertionError("no alphabet-sensitive policy found")


@pytest.mark.parametrize("encode", [std_b64, url_b64])
@pytest.mark.parametrize("pad", [True, False])
def test_both_alphabets_padded_or_not(encode: Any, pad: bool) -> None:
    data = alphabet_sensitive_policy()
    text = encode(data, pad=pad)
    if encode is std_b64:
        assert "+" in text and "/" in text
    else:
        assert "-" in text and "_" in text
    assert text.endswith("=") == pad
    assert security.decode_policy(text) == data
    creds = Credentials(policy=text, signature=security.sign(SECRET, text))
    policy = authorize(creds, target=Target(handle=data["handle"]))
    assert policy is not None and policy.handle == data["handle"]


def test_signature_is_over_the_text_as_received() -> None:
    data = alphabet_sensitive_policy()
    std, url = std_b64(data), url_b64(data)
    assert security.decode_policy(std) == security.decode_policy(url)
    with pytest.raises(errors.InvalidSignature):
        security.check_policy(SECRET, url, security.sign(SECRET, std), NOW, 0)


def test_encode_policy_round_trips() -> None:
    data = {"expiry": FUTURE, "call": ["read", "stat"], "handle": "abc"}
    assert security.decode_policy(security.encode_policy(data)) == data


# --- signatures ---------------------------------------------------------------------------


def _flip_bit(signature: str, index: int, bit: int) -> str:
    value = int(signature[index], 16) ^ (1 << bit)
    return signature[:index] + format(value, "x") + signature[index + 1 :]


@given(index=st.integers(0, 63), bit=st.integers(0, 3))
@settings(max_examples=40, deadline=None)
def test_signature_with_one_bit_flipped_is_refused(index: int, bit: int) -> None:
    creds = signed({"expiry": FUTURE})
    assert creds.policy is not None and creds.signature is not None
    flipped = _flip_bit(creds.signature, index, bit)
    assert flipped != creds.signature
    with pytest.raises(errors.InvalidSignature):
        authorize(Credentials(policy=creds.policy, signature=flipped))


@pytest.mark.parametrize("cut", [1, 2, 32, 63])
def test_truncated_signature_is_refused(cut: int) -> None:
    creds = signed({"expiry": FUTURE})
    assert creds.signature is not None
    with pytest.raises(errors.InvalidSignature):
        authorize(Credentials(policy=creds.policy, signature=creds.signature[:-cut]))


def test_uppercase_hex_signature_is_refused() -> None:
    creds = signed({"expiry": FUTURE})
    assert creds.signature is not None
    upper = creds.signature.upper()
    assert upper != creds.signature
    with pytest.raises(errors.InvalidSignature):
        authorize(Credentials(policy=creds.policy, signature=upper))


@pytest.mark.parametrize("signature", ["\udcae" * 64, "é" * 64, " " + "a" * 63, "x"])
def test_odd_signatures_are_refused_cleanly(signature: str) -> None:
    creds = signed({"expiry": FUTURE})
    with pytest.raises(errors.InvalidSignature):
        authorize(Credentials(policy=creds.policy, signature=signature))


def test_signature_with_another_secret_is_refused() -> None:
    creds = signed({"expiry": FUTURE}, secret="another-secret")
    with pytest.raises(errors.InvalidSignature):
        authorize(creds)


def test_signature_is_checked_before_the_policy_is_decoded() -> None:
    with pytest.raises(errors.InvalidSignature):
        security.check_policy(SECRET, "%%% not base64 %%%", "0" * 64, NOW, 0)


# --- expiry and skew ----------------------------------------------------------------------


def test_expiry_one_second_in_the_past_fails_at_skew_zero() -> None:
    with pytest.raises(errors.PolicyExpired):
        authorize(signed({"expiry": NOW - 1}), now=NOW, skew=0)


def test_expiry_one_second_in_the_future_passes_at_skew_zero() -> None:
    assert authorize(signed({"expiry": NOW + 1}), now=NOW, skew=0) is not None


def test_expiry_exactly_now_passes() -> None:
    assert authorize(signed({"expiry": NOW}), now=NOW, skew=0) is not None


def test_fractional_now_just_past_expiry_fails() -> None:
    with pytest.raises(errors.PolicyExpired):
        authorize(signed({"expiry": NOW}), now=NOW + 0.001, skew=0)


def test_skew_allows_a_recently_expired_policy() -> None:
    creds = signed({"expiry": NOW - 30})
    assert authorize(creds, now=NOW, skew=30) is not None
    with pytest.raises(errors.PolicyExpired):
        authorize(creds, now=NOW, skew=29)
    with pytest.raises(errors.PolicyExpired):
        authorize(creds, now=NOW + 1, skew=30)


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"call": ["read"]},
        {"expiry": str(FUTURE)},
        {"expiry": float(FUTURE)},
        {"expiry": 1.5},
        {"expiry": True},
        {"expiry": False},
        {"expiry": None},
        {"expiry": [FUTURE]},
        {"expiry": {"t": FUTURE}},
    ],
    ids=["empty", "missing", "string", "float", "fraction", "true", "false", "null", "list", "obj"],
)
def test_expiry_missing_or_not_an_integer_is_invalid(data: dict[str, Any]) -> None:
    with pytest.raises(errors.InvalidPolicy):
        authorize(signed(data))


# --- malformed policies -------------------------------------------------------------------


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "=",
        "!!!!",
        "a",
        "abcde",
        "eyJleHBpcnkiOjF9=====x",
        "ey Jl",
        "eyJ\u00e9",
        "\udcae\udc8a",
        _b64(b"not json"),
        _b64(b"\xff\xfe\x00garbage"),
        _b64(b"[1, 2, 3]"),
        _b64(b'"a string"'),
        _b64(b"123"),
        _b64(b"null"),
        _b64(b"{"),
        _b64(b"[" * 5000),
        _b64(b'{"a":' * 2000),
        "A" * (security.MAX_POLICY_CHARS + 4),
    ],
)
def test_decode_policy_refuses_junk_as_invalid_policy(text: str) -> None:
    with pytest.raises(errors.InvalidPolicy):
        security.decode_policy(text)


@pytest.mark.parametrize("raw", [b"not json", b"[1]", b"[" * 5000, b"{}", b'{"expires":1}'])
def test_malformed_but_signed_policy_is_invalid_policy(raw: bytes) -> None:
    text = _b64(raw)
    with pytest.raises(errors.InvalidPolicy):
        security.check_policy(SECRET, text, security.sign(SECRET, text), NOW, 0)


@pytest.mark.parametrize(
    "extra",
    [
        {"expires": FUTURE},
        {"Call": ["read"]},
        {"handle": "x", "handles": ["y"]},
        {"maxsize": 1},
        {"__proto__": {}},
    ],
)
def test_unknown_keys_are_refused(extra: dict[str, Any]) -> None:
    with pytest.raises(errors.InvalidPolicy, match="unknown policy keys"):
        security.parse_policy({"expiry": FUTURE, **extra})


@pytest.mark.parametrize(
    "extra",
    [
        {"call": "nope"},
        {"call": ["read", "fly"]},
        {"call": [1]},
        {"call": {"read": True}},
        {"calls": 7},
        {"handle": 5},
        {"url": ["x"]},
        {"maxSize": -1},
        {"maxSize": 1.0},
        {"maxSize": "10"},
        {"minSize": True},
    ],
)
def test_bad_field_values_are_invalid_policy(extra: dict[str, Any]) -> None:
    with pytest.raises(errors.InvalidPolicy):
        security.parse_policy({"expiry": FUTURE, **extra})


VALID_RULES: dict[str, Any] = {
    "call": ["read"],
    "handle": "h" * 20,
    "url": "https://a\\.example/.*",
    "path": "up/.*",
    "container": "c",
    "minSize": 1,
    "maxSize": 10,
}


@given(
    rules=st.lists(st.sampled_from(sorted(VALID_RULES)), unique=True),
    null=st.sampled_from(sorted(security.KNOWN_KEYS - {"expiry"})),
)
def test_a_null_rule_is_a_malformed_policy(rules: list[str], null: str) -> None:
    """``{"call": null}`` read as no ``call`` rule: every call but exif. A null rule is
    refused, beside any other rules, as a malformed policy."""
    data = {
        "expiry": FUTURE,
        **{k: VALID_RULES[k] for k in rules if {k, null} != {"call", "calls"}},
    }
    security.parse_policy(data)  # the others alone are a policy
    with pytest.raises(errors.InvalidPolicy) as caught:
        security.parse_policy({**data, null: None})
    assert caught.value.code == "INVALID_POLICY"


@given(
    rules=st.lists(st.sampled_from(sorted(VALID_RULES)), unique=True, min_size=1),
    data=st.data(),
)
def test_a_rule_given_twice_is_a_malformed_policy(rules: list[str], data: st.DataObject) -> None:
    """``{"handle": A, ..., "handle": B}`` kept the last: the author's other rule went
    unread. A key given twice, whatever its place, is a malformed policy."""
    rules = [k for k in rules if k != "calls" or "call" not in rules]
    items = [("expiry", FUTURE)] + [(k, VALID_RULES[k]) for k in rules]
    twice = data.draw(st.sampled_from(items))
    at = data.draw(st.integers(0, len(items)))
    text = ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in items)
    doubled = [*items[:at], twice, *items[at:]]
    text2 = ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in doubled)
    security.parse_policy(security.decode_policy(_b64(("{" + text + "}").encode())))
    with pytest.raises(errors.InvalidPolicy) as caught:
        security.decode_policy(_b64(("{" + text2 + "}").encode()))
    assert caught.value.code == "INVALID_POLICY"


@pytest.mark.parametrize(
    "extra",
    [
        {"path": "("},
        {"container": "[z-a]"},
        {"path": "a{1001}"},
        {"path": "(a)\\1"},  # a backreference: RE2 has none
        {"url": "(?=a)b"},  # lookahead: neither
        {"url": "a" * (security.MAX_PATTERN_CHARS + 1)},
    ],
)
def test_patterns_re2_cannot_compile_are_a_400(extra: dict[str, Any]) -> None:
    with pytest.raises(errors.InvalidPolicyPattern) as caught:
        security.parse_policy({"expiry": FUTURE, **extra})
    assert caught.value.status == 400


def test_deeply_nested_pattern_is_accepted_or_invalid_never_a_crash() -> None:
    for depth in (100, 300, 512):
        pattern = "(" * depth + ")" * depth
        try:
            policy = security.parse_policy({"expiry": FUTURE, "path": pattern})
        except (errors.InvalidPolicy, errors.InvalidPolicyPattern):
            continue
        assert policy.path == pattern


def test_call_and_calls_together_are_refused() -> None:
    # A null or wide "call" must not shadow a narrower "calls" (or the other way round).
    for data in (
        {"expiry": FUTURE, "call": None, "calls": ["read"]},
        {"expiry": FUTURE, "call": ["read"], "calls": ["remove"]},
    ):
        with pytest.raises(errors.InvalidPolicy):
            security.parse_policy(data)


def test_call_as_a_single_string_is_accepted() -> None:
    policy = security.parse_policy({"expiry": FUTURE, "call": "read"})
    assert policy.calls == frozenset({"read"})


def test_calls_key_is_accepted_like_call() -> None:
    policy = security.parse_policy({"expiry": FUTURE, "calls": ["write", "remove"]})
    assert policy.calls == frozenset({"write", "remove"})


@given(st.text(max_size=300))
@settings(max_examples=300, deadline=None)
def test_decode_and_parse_raise_only_stowage_errors_on_text(text: str) -> None:
    try:
        data = security.decode_policy(text)
        security.parse_policy(data)
    except errors.StowageError:
        pass


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=6,
)


@given(
    st.dictionaries(
        st.sampled_from(sorted(security.KNOWN_KEYS)) | st.text(max_size=10),
        json_values,
        max_size=6,
    )
)
@settings(max_examples=150, deadline=None)
def test_parse_policy_raises_only_invalid_policy_on_any_json_object(data: dict[str, Any]) -> None:
    try:
        policy = security.parse_policy(data)
    except errors.InvalidPolicy:
        return
    assert type(policy.expiry) is int
    assert set(data) <= security.KNOWN_KEYS


@given(st.binary(max_size=300))
@settings(max_examples=200, deadline=None)
def test_decode_policy_raises_only_stowage_errors_on_any_encoded_bytes(raw: bytes) -> None:
    for text in (base64.b64encode(raw).decode(), _b64(raw).rstrip("=")):
        try:
            data = security.decode_policy(text)
        except errors.StowageError:
            continue
        assert isinstance(data, dict)


# --- calls --------------------------------------------------------------------------------


def test_call_lacking_the_operation_is_denied() -> None:
    creds = signed({"expiry": FUTURE, "call": ["read"]})
    assert authorize(creds, "read") is not None
    with pytest.raises(errors.PolicyDenied):
        authorize(creds, "remove")
    with pytest.raises(errors.PolicyDenied):
        authorize(creds, "exif")


def test_any_of_several_calls_is_enough() -> None:
    creds = signed({"expiry": FUTURE, "call": ["stat"]})
    assert authorize(creds, ("exif", "stat")) is not None
    with pytest.raises(errors.PolicyDenied):
        authorize(creds, ("exif", "remove"))


def test_empty_call_list_allows_nothing() -> None:
    creds = signed({"expiry": FUTURE, "call": []})
    for call in CALLS:
        with pytest.raises(errors.PolicyDenied):
            authorize(creds, call)


@pytest.mark.parametrize("call", sorted(CALLS))
def test_no_call_means_everything_but_exif(call: str) -> None:
    creds = signed({"expiry": FUTURE})
    if call == "exif":
        with pytest.raises(errors.PolicyDenied):
            authorize(creds, call)
    else:
        assert authorize(creds, call) is not None


def test_exif_is_allowed_when_listed() -> None:
    assert authorize(signed({"expiry": FUTURE, "call": ["exif"]}), "exif") is not None


# --- targets ------------------------------------------------------------------------------

HANDLE_A = "A" * 20
HANDLE_B = "B" * 20


def test_policy_for_one_handle_is_denied_on_another() -> None:
    creds = signed({"expiry": FUTURE, "handle": HANDLE_A})
    assert authorize(creds, target=Target(handle=HANDLE_A)) is not None
    with pytest.raises(errors.PolicyDenied):
        authorize(creds, target=Target(handle=HANDLE_B))
    with pytest.raises(errors.PolicyDenied):
        authorize(creds, target=Target(handle=None))
    with pytest.raises(errors.PolicyDenied):
        authorize(creds, target=Target(handle=HANDLE_A + "x"))


def test_policy_without_handle_allows_any_handle() -> None:
    creds = signed({"expiry": FUTURE})
    assert authorize(creds, target=Target(handle=HANDLE_B)) is not None


URL_PATTERN = r"https://allowed\.com/.*"


@pytest.mark.parametrize(
    "url",
    [
        "https://allowed.com.evil.net/",
        "https://allowed.com.evil.net/x",
        "https://evil.net/?next=https://allowed.com/",
        "https://evil.net/https://allowed.com/x",
        "xhttps://allowed.com/",
        "https://allowed.com@evil.net/",
        "http://allowed.com/x",
        "https://allowed.com/x\nhttps://evil.net/",
    ],
)
def test_url_pattern_must_match_the_whole_url(url: str) -> None:
    creds = signed({"expiry": FUTURE, "url": URL_PATTERN})
    with pytest.raises(errors.PolicyDenied):
        authorize(creds, "store", Target(url=url))


def test_url_pattern_allows_a_matching_url() -> None:
    creds = signed({"expiry": FUTURE, "url": URL_PATTERN})
    assert authorize(creds, "store", Target(url="https://allowed.com/a/b.png")) is not None


def test_unanchored_prefix_pattern_is_still_matched_whole() -> None:
    creds = signed({"expiry": FUTURE, "url": r"https://allowed\.com"})
    assert authorize(creds, "store", Target(url="https://allowed.com")) is not None
    for url in ("https://allowed.com.evil.net", "https://allowed.com?next=x"):
        with pytest.raises(errors.PolicyDenied):
            authorize(creds, "store", Target(url=url))


@pytest.mark.parametrize("name", ["path", "container"])
def test_path_and_container_patterns_must_match_whole(name: str) -> None:
    pattern = "uploads/.*" if name == "path" else "bucket"
    creds = signed({"expiry": FUTURE, name: pattern})
    good = "uploads/a.png" if name == "path" else "bucket"
    assert authorize(creds, "store", Target(**{name: good})) is not None
    bad_values = (
        ["other/uploads/a.png", "x" + good, "../uploads/a.png"]
        if name == "path"
        else ["bucket-evil", "evil-bucket", "bucketx"]
    )
    for bad in [*bad_values, ""]:
        with pytest.raises(errors.PolicyDenied):
            authorize(creds, "store", Target(**{name: bad}))
    with pytest.raises(errors.PolicyDenied):
        authorize(creds, "store", Target())


def test_restriction_applies_even_when_the_target_lacks_the_value() -> None:
    creds = signed({"expiry": FUTURE, "path": ".*"})
    assert authorize(creds, "store", Target(path="")) is not None
    with pytest.raises(errors.PolicyDenied):
        authorize(creds, "store", Target(path=None))


def test_url_restriction_binds_only_url_sources() -> None:
    """Filestack: `url` limits what a policy may fetch or process; a call on a handle (or a
    store of uploaded bytes) has no url and ignores it."""
    creds = signed({"expiry": FUTURE, "url": "https://ok\\.example/.*", "call": ["remove"]})
    assert authorize(creds, "remove", Target(handle="h" * 20)) is not None
    creds = signed({"expiry": FUTURE, "url": "https://ok\\.example/.*"})
    assert authorize(creds, "store", Target(url="https://ok.example/a")) is not None
    with pytest.raises(errors.PolicyDenied):
        authorize(creds, "store", Target(url="https://evil.example/a"))


# --- credentials --------------------------------------------------------------------------


def test_no_credentials_when_not_required_is_open_access() -> None:
    assert authorize(Credentials(), required=False) is None
    assert Credentials().empty


def test_no_credentials_when_required_is_unauthenticated() -> None:
    with pytest.raises(errors.Unauthenticated):
        authorize(Credentials(), required=True)


@pytest.mark.parametrize("required", [True, False])
def test_policy_without_signature_is_unauthenticated(required: bool) -> None:
    """One of the pair left out: 401. Both sent, one empty: a malformed pair, 403 (an
    empty policy ``INVALID_POLICY``, an empty signature never matches)."""
    creds = signed({"expiry": FUTURE})
    for partial in (Credentials(policy=creds.policy), Credentials(signature=creds.signature)):
        with pytest.raises(errors.Unauthenticated):
            authorize(partial, required=required)
    for policy, signature, refused in (
        (creds.policy, "", errors.InvalidSignature),
        ("", creds.signature, errors.InvalidPolicy),
        ("", "", errors.InvalidPolicy),
    ):
        with pytest.raises(refused):
            authorize(Credentials(policy=policy, signature=signature), required=required)


def test_presented_credentials_are_checked_even_when_not_required() -> None:
    creds = signed({"expiry": FUTURE, "call": ["stat"]})
    with pytest.raises(errors.PolicyDenied):
        authorize(creds, "read", required=False)
    with pytest.raises(errors.InvalidSignature):
        authorize(Credentials(policy=creds.policy, signature="0" * 64), required=False)


def test_basic_auth_with_the_app_secret_is_the_master_grant() -> None:
    grant = authorize(Credentials(basic_user="app", basic_secret=SECRET), "exif")
    assert grant is security.MASTER
    assert all(grant.allows(c) for c in CALLS)


@pytest.mark.parametrize(
    ("user", "secret"),
    [
        ("App", SECRET),
        ("apps", SECRET),
        ("", SECRET),
        ("app", SECRET + "x"),
        ("app", SECRET[:-1]),
        ("app", ""),
        ("app", None),
        ("app", SECRET.upper()),
        ("äpp", SECRET),
        ("app", SECRET + "é"),
        ("app", "\udcae" + SECRET),
        ("\udcae", SECRET),
    ],
)
def test_basic_auth_wrong_user_or_secret_is_invalid_credentials(
    user: str, secret: str | None
) -> None:
    with pytest.raises(errors.InvalidCredentials):
        authorize(Credentials(basic_user=user, basic_secret=secret), required=True)
    # Where no credentials are needed, wrong Basic ones are not a 401 (issue 24).
    assert authorize(Credentials(basic_user=user, basic_secret=secret), required=False) is None


def test_basic_auth_with_another_user_says_the_user_must_be_app() -> None:
    with pytest.raises(errors.InvalidCredentials) as caught:
        authorize(Credentials(basic_user="admin", basic_secret=SECRET), required=True)
    assert "must be `app`" in caught.value.message and "'admin'" in caught.value.message


def test_a_header_that_is_no_basic_is_refused_only_where_credentials_are_needed() -> None:
    creds = Credentials(basic_problem="Authorization must be HTTP Basic app:<secret>")
    with pytest.raises(errors.InvalidCredentials):
        authorize(creds, required=True)
    assert authorize(creds, required=False) is None


def test_a_policy_beside_failed_basic_is_still_checked_when_not_required() -> None:
    policy = signed({"expiry": FUTURE, "call": ["stat"]})
    creds = Credentials(policy.policy, policy.signature, basic_user="app", basic_secret="nope")
    with pytest.raises(errors.PolicyDenied):
        authorize(creds, "read", required=False)


def test_basic_auth_with_an_empty_app_secret_never_passes() -> None:
    with pytest.raises(errors.InvalidCredentials):
        security.check_basic("", "app", "")


def test_non_ascii_app_secret_works_for_basic_auth() -> None:
    assert security.check_basic("sécret", "app", "sécret") is security.MASTER
    with pytest.raises(errors.InvalidCredentials):
        security.check_basic("sécret", "app", "secret")


# --- sizes --------------------------------------------------------------------------------


def test_check_size_limits() -> None:
    policy = security.parse_policy({"expiry": FUTURE, "minSize": 10, "maxSize": 20})
    for size in (10, 15, 20):
        security.check_size(policy, size)
    with pytest.raises(errors.PayloadTooLarge):
        security.check_size(policy, 21)
    with pytest.raises(errors.PayloadTooSmall):
        security.check_size(policy, 9)


def test_check_size_without_limits() -> None:
    security.check_size(None, 10**12)
    security.check_size(security.parse_policy({"expiry": FUTURE}), 0)
    security.check_size(security.MASTER, 10**12)
    zero = security.parse_policy({"expiry": FUTURE, "maxSize": 0})
    security.check_size(zero, 0)
    with pytest.raises(errors.PayloadTooLarge):
        security.check_size(zero, 1)


# --- a policy's url rule holds for the URL fetched -----------------------------------------

STEPS = st.sampled_from(["allowed", "other", "..", ".", "%2e%2e", "%2E.", "a", "%2e", ""])


@settings(max_examples=300)
@given(steps=st.lists(STEPS, min_size=1, max_size=6), query=st.sampled_from(["", "?x=1"]))
def test_a_url_rule_allows_only_urls_whose_fetched_path_it_covers(
    steps: list[str], query: str
) -> None:
    """Dot segments (plain or escaped) are resolved before the match, as the fetcher
    resolves them: ``/allowed/../other`` is ``/other``, which the rule does not cover."""
    url = "http://files.example/" + "/".join(steps) + query
    creds = signed(
        {"expiry": NOW + 60, "call": ["convert"], "url": "http://files\\.example/allowed/.*"}
    )
    fetched = check_url(url, allow_private=False).path
    try:
        authorize(creds, "convert", Target(url=url))
    except errors.PolicyDenied:
        return
    assert fetched.startswith("/allowed/"), (url, fetched)


def _grants(policy: dict[str, Any], url: str, handles: tuple[str, ...]) -> bool:
    """The documented rules, each target by the rule that concerns it: the URL source
    by ``url`` (a policy with only a ``handle`` names one file, no URL), each named
    handle by ``handle`` (a ``url`` rule does not bind a handle)."""
    if "url" in policy:
        url_ok = re.fullmatch(policy["url"], url) is not None
    else:
        url_ok = "handle" not in policy
    return url_ok and all(policy.get("handle", h) == h for h in handles)


@pytest.mark.parametrize("seed", range(4))
def test_a_url_source_and_the_handles_its_tasks_name_are_each_held_to_their_rule(
    seed: int,
) -> None:
    """Every policy of {no handle rule, H, another} x {no url rule, one the URL matches,
    one it does not}, every URL, every set of named handles: allowed exactly when the
    URL passes ``url`` and each handle ``handle``. A policy with both a ``url`` and a
    ``handle`` rule was refused for ``watermark=file:H/<URL>`` (the URL held to the
    handle rule)."""
    rng = random.Random(seed)
    secret = "s3cret"
    base = f"https://img{seed}.example.com/"
    url = base + rng.choice(["a.png", "dir/b.jpg", "c.gif?v=2"])
    mine, other = f"H{seed}aaaaaaaaaaaaaaaaa", f"O{seed}bbbbbbbbbbbbbbbbb"
    handle_rules: list[str | None] = [None, mine, other]
    url_rules = [None, re.escape(base) + ".*", re.escape(base) + "only/.*"]
    named_sets: list[tuple[str, ...]] = [(), (mine,), (other,), (mine, other)]
    calls = [["convert"], ["convert", "read"], ["convert", "store"]]
    for handle_rule in handle_rules:
        for url_rule in url_rules:
            fields: dict[str, Any] = {"expiry": 2**40, "call": rng.choice(calls)}
            if handle_rule is not None:
                fields["handle"] = handle_rule
            if url_rule is not None:
                fields["url"] = url_rule
            text = security.encode_policy(fields)
            creds = Credentials(policy=text, signature=security.sign(secret, text))
            for named in named_sets:
                targets = [security.url_target(url)] + [
                    Target(handle=h, path=f"k/{h}", container="c") for h in named
                ]
                allowed = True
                for target in targets:
                    try:
                        security.authorize(secret, creds, "convert", target, required=True, now=0)
                    except errors.PolicyDenied:
                        allowed = False
                assert allowed == _grants(fields, url, named), (fields, named)
