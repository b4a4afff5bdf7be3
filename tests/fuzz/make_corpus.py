#!/usr/bin/env python3
"""Write the seed corpora tests/fuzz/corpus/<harness>/ (run from anywhere; idempotent).

fuzz_request, fuzz_connection: each seed is [config byte][4 split-seed bytes][a byte stream];
see the harnesses. The streams are small valid and invalid requests covering what the server
distinguishes: methods, target forms, versions, Host, framing (Content-Length, chunked,
extensions, trailers), Expect, pipelining, limits, and the HTTP/2 preface.

fuzz_config: each seed is a configuration file: the shipped ones (conf/*.conf), one that uses
every directive, and small files like the ones the tests write, valid and with each kind of
mistake. Paths are the ones the harness's scratch directory has (www/, conf/mime.types,
conf/htpasswd).

fuzz_rules: each seed is a mode byte, a `_redirects` or `_headers` file (or one pattern), a NUL
and request paths; see the harness."""

import os

HERE = os.path.dirname(os.path.abspath(__file__))

H = b"Host: x\r\n"
STREAMS = {
    "get": b"GET / HTTP/1.1\r\n" + H + b"\r\n",
    "get-file": b"GET /one.txt HTTP/1.1\r\n" + H + b"\r\n",
    "get-big": b"GET /big.bin HTTP/1.1\r\n" + H + b"\r\n",
    "head": b"HEAD /kib.txt HTTP/1.1\r\n" + H + b"\r\n",
    "pipeline-kib": (b"GET /kib.txt HTTP/1.1\r\n" + H + b"\r\n") * 12 + b"GET /big.bin HTTP/1.1\r\n"
                    + H + b"Connection: close\r\n\r\n",
    "options-star": b"OPTIONS * HTTP/1.1\r\n" + H + b"\r\n",
    "options-file": b"OPTIONS /one.txt HTTP/1.1\r\n" + H + b"\r\n",
    "http10": b"GET /one.txt HTTP/1.0\r\n\r\n",
    "http10-keepalive": b"GET /one.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                        b"GET /kib.txt HTTP/1.0\r\n\r\n",
    "close": b"GET /one.txt HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n",
    "absolute": b"GET http://example.com:8080/sub/a.css?x=1 HTTP/1.1\r\n" + H + b"\r\n",
    "absolute-noslash": b"GET https://example.com?q HTTP/1.1\r\n" + H + b"\r\n",
    "query-percent": b"GET /sub/%61.css?a=%20b&c=%zz HTTP/1.1\r\n" + H + b"\r\n",
    "traversal": b"GET /../%2e%2e/sub/./../.hidden HTTP/1.1\r\n" + H + b"\r\n",
    "dir-redirect": b"GET /sub?x HTTP/1.1\r\n" + H + b"\r\n",
    "pipeline": (b"GET /one.txt HTTP/1.1\r\n" + H + b"\r\n") * 3 + b"HEAD /big.bin HTTP/1.1\r\n"
                + H + b"\r\n",
    "post-cl": b"POST /one.txt HTTP/1.1\r\n" + H + b"Content-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n"
               + H + b"\r\n",
    "post-chunked": b"POST /one.txt HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"
                    b"5;e=v\r\nhello\r\n1\r\n!\r\n0\r\nTrailer: t\r\n\r\nGET /one.txt HTTP/1.1\r\n"
                    + H + b"\r\n",
    "get-chunked-body": b"GET /kib.txt HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"
                        b"a\r\n0123456789\r\n0\r\n\r\n",
    "expect": b"POST /one.txt HTTP/1.1\r\n" + H + b"Expect: 100-continue\r\nContent-Length: 3\r\n"
              b"\r\nabc",
    "expect-nobody": b"PUT /x HTTP/1.1\r\n" + H + b"Expect: 100-continue\r\nContent-Length: 9\r\n\r\n",
    "cl-te": b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
             b"0\r\n\r\n",
    "te-gzip": b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    "te-http10": b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "cl-dup": b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 1\r\nContent-Length: 1\r\n\r\na",
    "obs-fold": b"GET / HTTP/1.1\r\n" + H + b"X-A: a\r\n b\r\n\r\n",
    "bare-cr": b"GET / HTTP/1.1\r\n" + H + b"Content-Length: 3\r\n\rXabc",
    "space-colon": b"GET / HTTP/1.1\r\nHost : x\r\n\r\n",
    "no-host": b"GET / HTTP/1.1\r\n\r\n",
    "two-host": b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    "bad-host": b"GET / HTTP/1.1\r\nHost: [::1]:80x\r\n\r\n",
    "v6-host": b"GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
    "http09": b"GET /\r\n\r\n",
    "http2-version": b"GET / HTTP/2.0\r\n" + H + b"\r\n",
    "bad-version": b"GET / HTTP/1.x\r\n" + H + b"\r\n",
    "preface": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00",
    "connect": b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
    "unknown-method": b"BREW /pot HTTP/1.1\r\n" + H + b"\r\n",
    "trace": b"TRACE / HTTP/1.1\r\n" + H + b"\r\n",
    "upgrade": b"GET / HTTP/1.1\r\n" + H + b"Connection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
    "long-uri": b"GET /" + b"a" * 200 + b" HTTP/1.1\r\n" + H + b"\r\n",
    "many-headers": b"GET / HTTP/1.1\r\n" + H + b"".join(b"X-%d: v\r\n" % i for i in range(12))
                    + b"\r\n",
    "big-body": b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 300\r\n\r\n" + b"b" * 300,
    "chunk-ext-bad": b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"
                     b"3;=x\r\nabc\r\n0\r\n\r\n",
    "leading-crlf": b"\r\n\r\nGET /one.txt HTTP/1.1\r\n" + H + b"\r\n",
    "bare-lf": b"GET /one.txt HTTP/1.1\nHost: x\n\n",
    "garbage": b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(range(0, 256, 7)),
}

# [config byte, split seed]: plain/whole, small limits, half-close, non-reading client
PREFIXES = {
    "fuzz_request": [b"\x00\x00\x00\x00\x00", b"\x01\x12\x34\x56\x78"],
    "fuzz_connection": [b"\x02\x00\x00\x00\x00", b"\x03\x9a\xbc\xde\xf0", b"\x06\x01\x02\x03\x04"],
}


# seeds written with every prefix (the rest with one, rotating)
ALL_PREFIXES = ("get", "get-big", "pipeline", "pipeline-kib", "post-chunked", "expect-nobody")


EVERY_DIRECTIVE = b"""# every directive, with a valid value
listen 127.0.0.1:8080
listen [::1]:8081 proxy_protocol
listen unix:/run/lfhttpd/http.sock proxy_protocol mode=0660 user=nobody
tls_listen 127.0.0.1:8443
tls_certificate conf/cert.pem conf/key.pem example.test *.example.test
tls_passphrase_file conf/pass
tls_session_cache 1000
tls_session_timeout 10m
tls_session_ticket_rotation 2h
tls_hsts 31536000
tls_redirect_http on
threads 4
leader_batch 16
concurrency half-sync-half-async
user nobody
group nogroup
error_log logs/error.log
error_log_format json
access_log logs/access.log
access_log_format json
trusted_proxies 10.0.0.0/8 192.168.0.1 fd00::/8
real_ip_header Forwarded
log_level debug
mime_types conf/mime.types
max_request_head 32k
max_headers 50
max_uri_length 4096
max_body_size 10m
max_connections 500
timeout_header 10s
timeout_body 500ms
timeout_keepalive 1m
timeout_send 1h
drain_timeout 0
timeout_handshake 5s
file_cache_entries 100
file_cache_size 1g
file_cache_valid 0
cgi_timeout 5s
cgi_max 8
cgi_env_pass PATH LANG TZ
status_allow 127.0.0.1 ::1/128
test_endpoints /_test/
root ./www
index index.html index.htm
directory_listing on
hidden_files allow
follow_symlinks any
precompressed off
etag off
spa_fallback /index.html
add_header X-Frame-Options "DENY"
add_header Content-Security-Policy "default-src 'self'; img-src *"
cache_control "public, max-age=60"
expires 7d
error_page 404 410 /404.html
default_type text/plain
auth_basic "Private area"
auth_basic_user_file conf/htpasswd
location /cgi-bin/ {
    handler cgi
    auth_basic off
}
location /scripts/ {
    handler cgi ./www/cgi-bin
}
location *.wasm {
    add_header Cross-Origin-Embedder-Policy require-corp
}
location /env.js {
    handler env js
    env_expose API_URL FEATURE_X
}
location /status {
    handler status
}
server example.test www.example.test *.example.org {
    root ./www
    location /x/ {
        etag on
        expires off
    }
}
server other.test default {
    handler static
    spa_fallback off
    cache_control off
}
"""

CONFIGS = {
    "minimal": b"root ./www\n",
    "every-directive": EVERY_DIRECTIVE,
    "quotes": b'add_header X-A "a \\"quoted\\" value # not a comment"\nroot "./www"  # comment\n',
    "crlf": b"root ./www\r\nthreads 2\r\nlocation /a/ {\r\n}\r\n",
    "braces-glued": b"server a.test{\n    etag off\n}\nlocation /b/{\n}\n",
    "listen-forms": b"listen 8080\nlisten *:8081\nlisten 0.0.0.0:0\nlisten [::]:8082\n",
    "status-keywords": b"status_allow none\nstatus_allow all\ncgi_env_pass none\n"
                       b"test_endpoints off\n",
    "nested-error": b"server a.test {\n    location /a/ {\n        location /b/ {\n",
    "unclosed": b"threads 2\nserver a.test {\n    etag off\n",
    "stray-brace": b"root ./www\n}\n",
    "unknown": b"root ./www\nworker_processes 4\n",
    "bad-values": b"threads 0\n",
    "bad-duration": b"timeout_header 5x\n",
    "bad-size": b"max_body_size 1t\n",
    "bad-listen": b"listen ::1:80\n",
    "tls-no-cert": b"tls_listen 127.0.0.1:0\n",
    "auth-no-file": b'location /p/ {\n    auth_basic "R"\n}\n',
    "global-in-block": b"server a.test {\n    threads 2\n}\n",
    "unterminated": b'add_header X-A "abc\n',
    "error-page": b"error_page 404 500 502 /e.html\nerror_page 999 /x\n",
}


# fuzz_rules: [mode byte][file]\0[requests, one a line]. Mode bit 0: _headers (else
# _redirects); bit 1: the file's first line is one pattern, matched directly.
REDIRECTS = b"""# every kind of rule
/home              /
/old/*             /new/:splat          301
/news/:year/:slug  /blog/:year-:slug.html 302
/store id=:id      /items/:id           301
/things type=photos /photos             303
/assets/**/*.{js,css} /static/:splat    307
/app/*             /app/index.html      200!
/en/*              /en/404.html         404
/gone              /gone.html           410
/ext               https://example.com/x?a=1#f 308
/  /anz  302  Country=au,nz
https://host.example/* /x 301
/*                 /index.html          200
"""
REQUESTS = (b"/home\n/old/a/b/?x=1\n/news/2024/hi\n/store?id=7\n/things?type=photos\n"
            b"/assets/a/b/c.js\n/app/x\n/en/zz\n/gone\n/ext?q\n/\n/r/a\r\nb\n")
HEADERS = b"""# a comment
/secure/page
  X-Frame-Options: DENY
  Referrer-Policy: no-referrer
/static/*
  Access-Control-Allow-Origin: *
/movies/:title
  X-Movie: watching ":title"
https://myproject.pages.dev/*
  X-Robots-Tag: noindex
/*
  Content-Security-Policy: default-src 'self'
/*.jpg
  ! Content-Security-Policy
"""
RULES = {
    "redirects": b"\x00" + REDIRECTS + b"\x00" + REQUESTS,
    "redirects-crlf": b"\x00/a /b 301\r\n/b/* /c/:splat 200\r\n\x00/a\n/b/x\n",
    "redirects-loop": b"\x00/a /b 301\n/b /a 301\n\x00/a\n",
    "redirects-errors": b"\x00/a{b /c\n/a /b 299\n\x00/a\n",
    "headers": b"\x01" + HEADERS + b"\x00/secure/page\n/static/a.jpg\n/movies/Up\n/x.jpg\n",
    "headers-errors": b"\x01  X-A: b\n/a\n\x00/a\n",
    "pattern-glob": b"\x02/assets/**/*.{js,css}\x00/assets/a/b/c.js\n/assets/x.css\n/y\n",
    "pattern-placeholders": b"\x02/news/:year/:slug/*\x00/news/2024/hi\n/news/2024/hi/a/b/\n",
    "pattern-stars": b"\x02/a/*-*.x/**/b*c\x00/a/q-r-s.x/d/e/bxxc\n/a/-.x/bc\n",
}


def main():
    d = os.path.join(HERE, "corpus", "fuzz_config")
    os.makedirs(d, exist_ok=True)
    repo = os.path.dirname(os.path.dirname(HERE))
    for name in ("lfhttpd.conf", "container.conf"):
        with open(os.path.join(repo, "conf", name), "rb") as src, \
                open(os.path.join(d, "shipped-" + name), "wb") as f:
            f.write(src.read())
    for name, text in CONFIGS.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(text)
    d = os.path.join(HERE, "corpus", "fuzz_rules")
    os.makedirs(d, exist_ok=True)
    for name, data in RULES.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    for harness, prefixes in PREFIXES.items():
        d = os.path.join(HERE, "corpus", harness)
        os.makedirs(d, exist_ok=True)
        for name, stream in STREAMS.items():
            for i, p in enumerate(prefixes):
                # one prefix per seed, rotating, keeps the corpus to a few dozen files
                if hash_index(name) % len(prefixes) != i and name not in ALL_PREFIXES:
                    continue
                with open(os.path.join(d, "%s-%d" % (name, i)), "wb") as f:
                    f.write(p + stream)


def hash_index(name):
    return sum(name.encode())


if __name__ == "__main__":
    main()
