vcl 4.1;
# Stowage's edge cache: Varnish (Debian: varnish, varnish-modules for xkey) in front of
# the CDN origin. tests/edge runs this very file; it only rewrites the 127.0.0.1:<port>
# backend address to the port the test picked. docs/deployment.md shows how to run it.
#
# The origin decides what may be stored: a file response carries `X-Edge-TTL: <seconds>`
# only when it may be (apps without security, no cache=false, not a large file) and
# `xkey: <handle> app:<api key>` with the tags Stowage purges it by. Both are removed
# before a client sees the response; a piped request (X-Edge-Piped) gets neither. Stowage purges with `PURGE /` and an `xkey-purge`
# header, sent to this same listener from an address in `purgers`. Every request sent to
# the origin carries X-Edge-Via (see edge_bypass_url in docs/configuration.md).

import std;
import xkey;

# The CDN origin: one node's cdn_port, or the nginx CDN listener in front of several
# nodes (deploy/nginx/stowage.conf listens on 127.0.0.1:8081 for both).
backend stowage_cdn {
    .host = "127.0.0.1";
    .port = "8081";
    .connect_timeout = 5s;
    .first_byte_timeout = 120s;
    .between_bytes_timeout = 60s;
}

# Who may purge: the Stowage nodes. Add each node's address in production.
acl purgers {
    "127.0.0.1";
    "::1";
}

sub vcl_recv {
    if (req.restarts == 0) {
        unset req.http.X-Stowage-Pipe;    # only this VCL sets it, on a restart
        unset req.http.X-Stowage-Code;    # nor this one (vcl_synth)
        # Lists sent on several lines are one list (RFC 9110 5.3), as the origin reads
        # them (src/stowage/http/fieldlines.py): VCL reads a header's first line only.
        std.collect(req.http.Accept, ", ");
        std.collect(req.http.If-None-Match, ", ");
        std.collect(req.http.If-Match, ", ");
    }
    if (req.method == "PURGE") {
        if (client.ip !~ purgers) {
            set req.http.X-Stowage-Code = "PURGE_FORBIDDEN";
            return (synth(403, "only the Stowage nodes may purge"));
        }
        if (!req.http.xkey-purge) {
            set req.http.X-Stowage-Code = "BAD_REQUEST";
            return (synth(400, "xkey-purge header required"));
        }
        # A hard purge: the objects are gone, never served stale, whatever their grace.
        set req.http.X-Purged = xkey.purge(req.http.xkey-purge);
        return (synth(200, "Purged " + req.http.X-Purged));
    }
    # auto_image answers vary with Accept (Vary: Accept): four classes, so that the cache
    # keeps at most four copies of such a URL (AVIF, WebP, the input's format, and AVIF to
    # a client that takes no WebP: an AVIF too costly to make is WebP to the others), not
    # one per browser's Accept string. The two expressions are the origin's own, character
    # for character (src/stowage/processing/accepts.py), so a class is what the origin
    # would choose for the original header. The class goes in X-Stowage-Accept, and the
    # cache varies on it (vcl_backend_response); Accept itself reaches the origin as sent.
    # Every request is classed: the origin reads Accept for auto_image only, and a URL may
    # name it in ways no expression here sees (any letter percent-encoded, %41uto_image;
    # the base64 task form, /<key>/b64/<tasks>/b64://<handle>). The expressions match in
    # linear time and with bounded PCRE2 stack at any length (no repeated group: a
    # look-ahead per item), within pcre2_match_limit (override.conf). An Accept over the
    # origin's limit (8190 bytes) gets a class no stored answer has: the origin answers
    # it, 431 HEADERS_TOO_LARGE, as it does without the edge.
    if (req.http.Accept ~ "^.{8191}") {
        set req.http.X-Stowage-Accept = "oversized";
    } elsif (req.http.Accept ~ "(?i)(^|,)[ \t]*image/avif[ \t]*+(?=[;,]|$)(?![^,]*;[ \t]*+q(?![^;,= \t]|[ \t]*=[ \t]*0*(\.0*)?[1-9]))") {
        if (req.http.Accept ~ "(?i)(^|,)[ \t]*image/webp[ \t]*+(?=[;,]|$)(?![^,]*;[ \t]*+q(?![^;,= \t]|[ \t]*=[ \t]*0*(\.0*)?[1-9]))") {
            set req.http.X-Stowage-Accept = "image/avif,image/webp";
        } else {
            set req.http.X-Stowage-Accept = "image/avif";
        }
    } elsif (req.http.Accept ~ "(?i)(^|,)[ \t]*image/webp[ \t]*+(?=[;,]|$)(?![^,]*;[ \t]*+q(?![^;,= \t]|[ \t]*=[ \t]*0*(\.0*)?[1-9]))") {
        set req.http.X-Stowage-Accept = "image/webp";
    } else {
        set req.http.X-Stowage-Accept = "*/*";
    }
    # Only the origin sets these.
    unset req.http.xkey;
    unset req.http.X-Edge-TTL;
    unset req.http.X-Edge-Piped;
    # Range, part 1: a Range the origin ignores (a unit other than bytes, several ranges)
    # is dropped, so that a hit answers the whole file as the origin does on a miss (left
    # in, Varnish's own range code answered it 416 on a hit). So is one sent with an
    # If-Range that is no entity-tag (a date): the origin takes a strong ETag only there
    # (a Last-Modified is no strong validator, RFC 9110 13.1.5 and 8.8.2.2) and answers
    # 200 with the whole file, where Varnish compared the date and cut a 206 on a hit.
    if (req.http.Range && (req.http.Range !~ "(?i)^\s*bytes\s*=" || req.http.Range ~ ","
            || (req.http.If-Range && req.http.If-Range !~ {"^\s*(W/)?""}))) {
        unset req.http.Range;
    }
    # Piped: the bytes go from the origin to the client as they come, never through the
    # cache's storage (Varnish 7.1 would buffer a passed body as fast as the origin sends
    # it). For large files (see vcl_deliver), a Range on a miss, and requests that may
    # not be stored: they carry credentials (a policy may grant what a plain URL must not
    # get) or ask for no cache.
    if (req.http.X-Stowage-Pipe
        || req.http.Authorization
        || req.url ~ "(?i)(security=|[?&](policy|signature)=)"
        || req.url ~ "(?i)(cache=false|cache:false|[?&]cache=(0|no|off)(&|$))") {
        return (pipe);
    }
    # Passed (never stored; small or empty bodies): other methods, HEAD (on a miss
    # Varnish would fetch the whole body to store it), metadata.
    if (req.method != "GET" || req.url ~ "/metadata(\?|$)") {
        return (pass);
    }
    unset req.http.Cookie;
    return (hash);
}

sub vcl_miss {
    # A Range on a miss: Varnish would fetch the whole file to cut the range out. Ask the
    # origin for just those bytes; a later plain GET stores the file, and ranges are then
    # cut from the stored copy.
    if (req.http.Range) {
        set req.http.X-Stowage-Pipe = "range";
        return (restart);
    }
}

sub vcl_pipe {
    # One request per piped connection; the origin adds none of its edge headers.
    set bereq.http.Connection = "close";
    set bereq.http.X-Edge-Piped = "1";
    set bereq.http.X-Edge-Via = "1";
}

sub vcl_backend_fetch {
    # Came through this cache: with edge_bypass_url set, the origin answers a large file
    # with a 307 to its own public address (passed on, never stored) instead of the bytes.
    set bereq.http.X-Edge-Via = "1";
}

sub vcl_backend_response {
    # Vary: Accept becomes Vary: X-Stowage-Accept, the class vcl_recv set: one stored copy
    # per class, not per Accept string (vcl_deliver says Accept again).
    if (beresp.http.Vary) {
        set beresp.http.Vary = regsuball(beresp.http.Vary,
            "(?i)(^|,)[ \t]*Accept(?=[ \t]*(,|$))", "\1X-Stowage-Accept");
    }
    if (beresp.status == 200 && beresp.http.X-Edge-TTL ~ "^[0-9]+$") {
        set beresp.ttl = std.duration(beresp.http.X-Edge-TTL + "s", 0s);
        set beresp.grace = 0s;      # never serve an expired copy
        set beresp.keep = 0s;
        unset beresp.http.X-Edge-TTL;
        unset beresp.http.Set-Cookie;
        # Per-request headers of the request that filled the cache: wrong on a hit.
        unset beresp.http.X-Request-ID;
        unset beresp.http.RateLimit-Limit;
        unset beresp.http.RateLimit-Remaining;
        unset beresp.http.RateLimit-Reset;
        unset beresp.http.Filestack-Limit;
        unset beresp.http.Filestack-Remaining;
        unset beresp.http.Filestack-Reset;
        return (deliver);
    }
    if (beresp.status == 200
        && std.integer(beresp.http.Content-Length, 1073741824) > 1048576) {
        # A body over 1 MiB the origin says not to store (a file larger than
        # edge_max_object_bytes, or no length given): drop this fetch and pipe the request
        # instead (vcl_deliver), so the body never sits in cache memory.
        return (error(599, "Pipe"));
    }
    # Errors and small bodies the origin says not to store: passed on, never stored.
    unset beresp.http.X-Edge-TTL;
    unset beresp.http.xkey;
    set beresp.uncacheable = true;
    set beresp.ttl = 0s;
    return (deliver);
}

sub vcl_backend_error {
    if (beresp.status == 599) {
        set beresp.ttl = 0s;
        return (deliver);
    }
    # The origin unreachable: Stowage's JSON error shape (docs/errors.md), never stored.
    set beresp.status = 503;
    set beresp.http.Content-Type = "application/json";
    set beresp.http.Cache-Control = "no-store";
    set beresp.body = {"{"error": {"code": "ORIGIN_UNAVAILABLE", "message": "the CDN origin did not answer" } }"};
    return (deliver);
}

sub vcl_synth {
    # The cache's own answers (PURGE): JSON, in Stowage's error shape for a refusal
    # (docs/errors.md), never stored. Requests Varnish refuses before any VCL runs get its
    # bare answer (docs/deployment.md, "Oversized and malformed requests at the edge").
    set resp.http.Content-Type = "application/json";
    set resp.http.Cache-Control = "no-store";
    if (resp.status == 200) {
        set resp.body = {"{"purged": "} + req.http.X-Purged + {"}"};
    } else {
        # A VCL failure (Varnish's own 503 "VCL failed", with the request's headers as the
        # client sent them) or any synth without a code of this VCL's: EDGE_ERROR.
        if (resp.reason == "VCL failed" || req.http.X-Stowage-Code !~ "^[A-Z_]{1,40}$") {
            set req.http.X-Stowage-Code = "EDGE_ERROR";
        }
        set resp.body = {"{"error": {"code": ""} + req.http.X-Stowage-Code
            + {"", "message": ""} + resp.reason + {"""} + "}}";
    }
    return (deliver);
}

sub vcl_deliver {
    if (resp.status == 599 && req.restarts == 0) {
        set req.http.X-Stowage-Pipe = "large";
        return (restart);
    }
    # Range, part 2: on a hit, the cache cuts only a plain range it can satisfy (vcl_recv
    # has dropped the ignored ones); anything else (past the end, reversed, malformed) goes
    # to the origin, whose answer (416 with its JSON error) is the one a miss gets.
    if (obj.hits > 0 && req.http.Range && req.restarts == 0 && !(
            (req.http.Range ~ "^bytes=[0-9]{1,15}-[0-9]{0,15}$"
             && std.integer(regsub(req.http.Range, "^bytes=([0-9]+)-.*$", "\1"), 0)
                < std.integer(resp.http.Content-Length, 0)
             && (req.http.Range ~ "-$"
                 || std.integer(regsub(req.http.Range, "^bytes=[0-9]+-", ""), 0)
                    >= std.integer(regsub(req.http.Range, "^bytes=([0-9]+)-.*$", "\1"), 0)))
            || (req.http.Range ~ "^bytes=-0{0,14}[1-9][0-9]{0,14}$"
                && std.integer(resp.http.Content-Length, 0) > 0))) {
        set req.http.X-Stowage-Pipe = "range";
        return (restart);
    }
    # If-None-Match, as the origin judges it (RFC 9110 13.1.2): `*`, or a list of
    # entity-tags one of which is the response's ETag, W/ prefixes ignored. Varnish's own
    # conditional, which runs after this, compares the whole header with the ETag: given
    # the ETag itself, it answers the 304 (with the ETag, Cache-Control and Vary of the
    # 200). A header that is no entity-tag list (an element neither empty nor a tag: one
    # look-ahead per element, no repeated group, so any length is safe) matches nothing, as
    # at the origin; the
    # tags are joined ("a""b") and searched for the quoted ETag, which can only match a
    # whole tag, as no tag holds a quote.
    if (resp.status == 200 && req.http.If-None-Match
        && resp.http.ETag ~ {"^(W/)?"[^"]+"$"}
        && (req.http.If-None-Match ~ "^[ \t]*\*[ \t]*$"
            || (req.http.If-None-Match !~ {"(^|,)[ \t]*+(?!(W/)?"[^",\x00-\x20\x7f]*"[ \t]*+(,|$)|,|$)"}
                && std.strstr(regsuball(req.http.If-None-Match, {"[^"]*("[^"]*")"}, "\1"),
                              regsub(resp.http.ETag, "^W/", "")) ~ {"^""}))) {
        set req.http.If-None-Match = resp.http.ETag;
    }
    if (resp.http.Vary) {
        set resp.http.Vary = regsuball(resp.http.Vary, "X-Stowage-Accept", "Accept");
    }
    unset resp.http.xkey;
    unset resp.http.X-Edge-TTL;
    unset resp.http.Via;
    unset resp.http.X-Varnish;
}
