"""Message framing (RFC 9112 sections 5-7): every request whose framing is in doubt is answered
with an error and the connection is closed, so that no byte of it can be read as the start of
another request (request smuggling)."""


from lib.server import Conn, req
from lib.probe import answer_then_keepalive, error_then_close

H = b"GET /one.txt HTTP/1.1\r\nHost: x\r\n"
P = b"POST /one.txt HTTP/1.1\r\nHost: x\r\n"
NEXT = b"GET /kib.txt HTTP/1.1\r\nHost: x\r\n\r\n"   # a smuggled second request


def test_content_length_and_transfer_encoding_400_close(srv):
    for head in (b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                 b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
                 b"Content-Length: 0\r\nTransfer-Encoding: chunked\r\n"):
        error_then_close(srv, P + head + b"\r\n0\r\n\r\n" + NEXT, 400)


def test_differing_content_length_400_close(srv):
    for head in (b"Content-Length: 1\r\nContent-Length: 2\r\n",
                 b"Content-Length: 2\r\nContent-Length: 1\r\n",
                 b"Content-Length: 1, 2\r\n"):
        error_then_close(srv, P + head + b"\r\nab" + NEXT, 400)


def test_duplicate_identical_content_length_400_close(srv):
    # RFC 9112 6.3 allows either rejecting or collapsing identical values; we reject.
    for head in (b"Content-Length: 2\r\nContent-Length: 2\r\n", b"Content-Length: 2, 2\r\n"):
        error_then_close(srv, P + head + b"\r\nab" + NEXT, 400)


def test_malformed_content_length_400_close(srv):
    for v in (b"+2", b"-2", b"0x2", b"2 2", b"", b"2;", b"two", b"2.0", b"\x002",
              b"99999999999999999999999"):
        error_then_close(srv, P + b"Content-Length: " + v + b"\r\n\r\nab" + NEXT, 400)


def test_content_length_optional_whitespace_ok(srv):
    # OWS around a field value is not part of it.
    answer_then_keepalive(srv, P + b"Content-Length: \t2 \r\n\r\nab", 405, method="POST")


def test_transfer_encoding_chunked_not_final_400_close(srv):
    # RFC 9112 6.3: chunked not the final coding -> length unknown -> 400 and close.
    for v in (b"gzip", b"chunked, gzip", b"identity", b"chunkedx", b"chunked, chunked", b""):
        error_then_close(srv, P + b"Transfer-Encoding: " + v + b"\r\n\r\n0\r\n\r\n" + NEXT, 400)
    error_then_close(srv, P + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n"
                     b"0\r\n\r\n" + NEXT, 400)


def test_transfer_coding_not_understood_501_close(srv):
    # chunked is final, but we do not implement the coding applied before it (RFC 9112 6.1).
    for head in (b"Transfer-Encoding: gzip, chunked\r\n",
                 b"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"):
        error_then_close(srv, P + head + b"\r\n0\r\n\r\n" + NEXT, 501)


def test_transfer_encoding_in_http10_400_close(srv):
    # RFC 9112 6.1: Transfer-Encoding in an HTTP/1.0 message means faulty framing.
    error_then_close(srv, b"POST /one.txt HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"0\r\n\r\n" + NEXT, 400)


def test_transfer_encoding_chunked_case_insensitive_ok(srv):
    answer_then_keepalive(srv, H + b"Transfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                          200)


def test_invalid_chunk_size_400_close(srv):
    for size in (b"zz", b"-1", b"0x3", b" 3", b"3 ", b"", b"FFFFFFFFFFFFFFFFFF", b"3\x00"):
        error_then_close(srv, H + b"Transfer-Encoding: chunked\r\n\r\n" + size + b"\r\nabc\r\n"
                         b"0\r\n\r\n" + NEXT, 400)


def test_invalid_chunk_extension_400_close(srv):
    for ext in (b";a\x01", b";\"q\"", b";a=\"x", b";a=b c", b";a=\x7f", b";="):
        error_then_close(srv, H + b"Transfer-Encoding: chunked\r\n\r\n3" + ext + b"\r\nabc\r\n"
                         b"0\r\n\r\n" + NEXT, 400)


def test_valid_chunk_extensions_ignored(srv):
    # (llhttp 8.1 refuses any extension after one with a value, ";a=b;c", and
    # quoted-pairs in quoted values: chunk extensions are rare enough to live with that.)
    answer_then_keepalive(srv, H + b"Transfer-Encoding: chunked\r\n\r\n"
                          b"3;c=\"d e\"\r\nabc\r\n1;f;g\r\nd\r\n0;x=y\r\n\r\n", 200)


def test_chunk_data_without_crlf_400_close(srv):
    error_then_close(srv, H + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n"
                     + NEXT, 400)
    error_then_close(srv, H + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\n0\r\n\r\n"
                     + NEXT, 400)


def test_bare_cr_400_close(srv):
    # A CR not followed by LF ends nothing (RFC 9112 2.2). llhttp outside strict mode takes
    # "\r<any byte>" as the end of the head, and "0\r<any byte>" as a chunk-size line.
    error_then_close(srv, H + b"Content-Length: 3\r\n\rXabc" + NEXT, 400)
    error_then_close(srv, H + b"X-A: b\rX-B: c\r\n\r\n", 400)
    error_then_close(srv, H + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\rX: y\r\n\r\n"
                     + NEXT, 400)
    error_then_close(srv, b"GET /one.txt HTTP/1.1\rHost: x\r\n\r\n", 400)


def test_obs_fold_400_close(srv):
    # RFC 9112 5.2: a server MUST reject obs-fold in a request (outside message/http).
    for head in (b"X-A: a\r\n b\r\n", b"X-A: a\r\n\tb\r\n", b"Content-Length:\r\n 3\r\n",
                 b"Transfer-Encoding:\r\n chunked\r\n", b"X-A:\r\n \r\n"):
        error_then_close(srv, P + head + b"\r\nabc" + NEXT, 400)


def test_whitespace_before_colon_400_close(srv):
    # RFC 9112 5.1: MUST reject whitespace between field name and colon.
    for line in (b"Host : x\r\n", b"Content-Length : 3\r\n", b"X-A\t: b\r\n",
                 b"Transfer-Encoding : chunked\r\n"):
        error_then_close(srv, b"POST /one.txt HTTP/1.1\r\nHost: y\r\n" + line + b"\r\nabc"
                         + NEXT, 400)


def test_bad_field_names_400_close(srv):
    for line in (b"X A: b\r\n", b": b\r\n", b"X\x01A: b\r\n", b"X\x7fA: b\r\n", b"X\xffA: b\r\n",
                 b"X(A): b\r\n", b"X-A\r\n", b" X-A: b\r\n"):
        error_then_close(srv, H + line + b"\r\n", 400)


def test_control_bytes_in_values_400_close(srv):
    for v in (b"a\x00b", b"a\x01b", b"a\x1fb", b"a\x7fb", b"a\x0bb", b"a\x0cb"):
        error_then_close(srv, H + b"X-A: " + v + b"\r\n\r\n", 400)


def test_obs_text_and_tab_in_values_ok(srv):
    # Bytes >= 0x80 (obs-text) and HTAB are valid in field values.
    answer_then_keepalive(srv, H + b"X-A: caf\xc3\xa9\tb\r\n\r\n", 200)


def test_error_response_closes_before_pipelined_request(srv):
    # Nothing after a request with broken framing is answered.
    with Conn(srv) as c:
        c.send(P + b"Content-Length: 1\r\nContent-Length: 2\r\n\r\nab" + NEXT + NEXT)
        r = c.read_response()
        assert r.status == 400
        assert c.wait_closed(5)


def test_chunked_body_decoded_and_consumed_then_pipelined(srv):
    with Conn(srv) as c:
        # The body looks like a request; it must be decoded and discarded, not parsed.
        part1, part2 = NEXT[:5], NEXT[5:]
        c.send(H + b"Transfer-Encoding: chunked\r\n\r\n"
               + b"%x\r\n" % len(part1) + part1 + b"\r\n"
               + b"%X;ext=1\r\n" % len(part2) + part2 + b"\r\n0\r\nT: 1\r\n\r\n" + NEXT)
        r1 = c.read_response()
        r2 = c.read_response()
        assert r1.status == 200 and r1.body == b"1", r1
        assert r2.status == 200 and r2.body == srv.files["/kib.txt"], r2
        assert c.is_open(0.2)


def test_chunked_body_split_in_pieces_then_pipelined(srv):
    # The chunked body arrives in small pieces across many reads.
    import time
    with Conn(srv) as c:
        c.send(P + b"Transfer-Encoding: chunked\r\n\r\n")
        r1 = c.read_response("POST")
        assert r1.status == 405 and not r1.has_token("Connection", "close"), r1
        body = b"4\r\nabcd\r\n10\r\n" + b"x" * 16 + b"\r\n0\r\n\r\n" + NEXT
        for i in range(0, len(body), 3):
            c.send(body[i:i + 3])
            time.sleep(0.01)
        r2 = c.read_response()
        assert r2.status == 200 and r2.body == srv.files["/kib.txt"], r2


def test_plain_body_to_static_consumed_then_pipelined(srv):
    body = NEXT + NEXT
    with Conn(srv) as c:
        c.send(H + b"Content-Length: %d\r\n\r\n" % len(body) + body + NEXT)
        r1, r2 = c.read_response(), c.read_response()
        assert r1.status == 200 and r1.body == b"1", r1
        assert r2.status == 200 and r2.body == srv.files["/kib.txt"], r2
        assert c.is_open(0.3), "a third response or a close: the body was parsed as requests"


def test_body_to_static_arriving_later_consumed(srv):
    # The head is answered at once; the body that follows later is read and discarded.
    import time
    body = b"x" * 100000
    with Conn(srv) as c:
        c.send(P + b"Content-Length: %d\r\n\r\n" % len(body))
        r1 = c.read_response("POST")
        assert r1.status == 405, r1
        for i in range(0, len(body), 30000):
            c.send(body[i:i + 30000])
            time.sleep(0.02)
        c.send(NEXT)
        r2 = c.read_response()
        assert r2.status == 200 and r2.body == srv.files["/kib.txt"], r2


def test_body_after_get_without_length_is_a_request(srv):
    # No Content-Length and no Transfer-Encoding: the request has no body (RFC 9112 6.3), so
    # what follows is the next request.
    with Conn(srv) as c:
        c.send(H + b"\r\n" + NEXT)
        assert c.read_response().status == 200
        assert c.read_response().body == srv.files["/kib.txt"]
