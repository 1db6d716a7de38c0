"""Newline framing: split and merged lines, CRLF, the maximum line length enforced without
buffering a long line whole, and decode errors with their codes (plus a hypothesis fuzz)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.framing import LineReader, ProtocolError, decode_client, decode_server, encode
from protocol.messages import ActionMsg, Hello, Welcome
from tests.conftest import examples


class FakeStream:
    """Delivers the given chunks one per receive_some; counts bytes handed out."""

    def __init__(self, chunks, endless: bytes | None = None):
        self.chunks = list(chunks)
        self.endless = endless
        self.given = 0

    async def receive_some(self, max_bytes):
        if self.chunks:
            data = self.chunks.pop(0)
        elif self.endless is not None:
            data = self.endless[:max_bytes]
        else:
            data = b""
        self.given += len(data)
        return data


async def _lines(chunks, max_line=100):
    r = LineReader(FakeStream(chunks), max_line=max_line, chunk=16)
    out = []
    while (line := await r.read_line()) is not None:
        out.append(line)
    return out


async def test_lines_split_and_merged_across_reads():
    assert await _lines([b'{"a"', b':1}\n{"b":2}\n{', b'"c":3}\r\n']) == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


async def test_line_at_the_limit_passes_and_one_byte_more_fails():
    assert await _lines([b"x" * 100 + b"\n"]) == [b"x" * 100]
    with pytest.raises(ProtocolError) as e:
        await _lines([b"x" * 101 + b"\n"])
    assert e.value.code == "line_too_long" and e.value.fatal


async def test_endless_line_is_rejected_after_reading_little_more_than_the_limit():
    stream = FakeStream([], endless=b"y" * 65536)
    r = LineReader(stream, max_line=1000, chunk=4096)
    with pytest.raises(ProtocolError) as e:
        await r.read_line()
    assert e.value.code == "line_too_long"
    assert stream.given <= 1000 + 4096  # never buffered whole (it is endless)


async def test_stream_ending_inside_a_line_is_truncated():
    with pytest.raises(ProtocolError) as e:
        await _lines([b'{"type":"hel'])
    assert e.value.code == "truncated"


@pytest.mark.parametrize(
    "line, code",
    [
        (b"\xff\xfe", "bad_utf8"),
        (b'{"type":"hello","name":"\xc3"}', "bad_utf8"),
        (b"{nope", "bad_json"),
        (b"[1,2]", "not_object"),
        (b'"hello"', "not_object"),
        (b'{"name":"x"}', "missing_type"),
        (b'{"type":"dance"}', "unknown_type"),
        (b'{"type":"action","id":"seven","action":"play"}', "bad_message"),
        (b'{"type":"action","action":"play"}', "bad_message"),
        (b'{"type":"hello"}', "bad_message"),
    ],
)
def test_decode_errors_have_specific_codes(line, code):
    with pytest.raises(ProtocolError) as e:
        decode_client(line)
    assert e.value.code == code


def test_valid_messages_round_trip():
    assert decode_client(b'{"type":"action","id":3,"action":["7h","Ks"]}') == ActionMsg(3, ["7h", "Ks"])
    assert isinstance(decode_client(encode(Hello(name="x", token="t"))[:-1]), Hello)
    assert decode_server(encode(Welcome(name="x", server="s"))[:-1]) == Welcome(name="x", server="s")


@settings(max_examples=examples(3000), deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_arbitrary_bytes_give_a_message_or_a_protocol_error(data):
    try:
        msg = decode_client(data)
    except ProtocolError as exc:
        assert exc.code in {"bad_utf8", "bad_json", "not_object", "missing_type", "unknown_type", "bad_message"}
    else:
        assert isinstance(msg, (Hello, ActionMsg))


@settings(max_examples=examples(1000), deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["type", "id", "action", "name", "token", "x"]), inner, max_size=4),
        max_leaves=12,
    )
)
def test_fuzz_arbitrary_json_gives_a_message_or_a_protocol_error(value):
    import msgspec

    try:
        decode_client(msgspec.json.encode(value))
    except ProtocolError:
        pass
