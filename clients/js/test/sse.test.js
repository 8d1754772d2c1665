// The SSE parser on its own: the stream as the server writes it, cut at every
// possible point, with CRLF / CR line endings, comments and multi-line data.
import assert from "node:assert/strict";
import { test } from "node:test";
import { SseParser } from "../src/sse.js";

// Frames as service/transports/http/server.py writes them (an id, one data line, a blank line).
const STREAM =
  'id: 0\ndata: {"snapshot":{"gameId":"g"}}\n\n' +
  ": keep-alive\n\n" +
  'id: 0\ndata: {"roundStarted":{"round":1}}\n\n' +
  'id: 1\ndata: {"version":"1","tilePlayed":{"seat":1}}\n\n' +
  'id: 1\ndata: {"version":"1","turnStarted":{}}\n\n';

const EXPECTED = [
  { type: "message", id: "0", data: '{"snapshot":{"gameId":"g"}}' },
  { type: "message", id: "0", data: '{"roundStarted":{"round":1}}' },
  { type: "message", id: "1", data: '{"version":"1","tilePlayed":{"seat":1}}' },
  { type: "message", id: "1", data: '{"version":"1","turnStarted":{}}' },
];

function feed(chunks) {
  const parser = new SseParser();
  const out = [];
  for (const chunk of chunks) out.push(...parser.push(chunk));
  out.push(...parser.finish());
  return { out, parser };
}

test("the whole stream in one chunk", () => {
  const { out, parser } = feed([STREAM]);
  assert.deepEqual(out, EXPECTED);
  assert.equal(parser.comments, 1);
  assert.equal(parser.lastEventId, "1");
});

test("split into two chunks at every position gives the same messages", () => {
  for (let i = 0; i <= STREAM.length; i++) {
    assert.deepEqual(feed([STREAM.slice(0, i), STREAM.slice(i)]).out, EXPECTED, `split at ${i}`);
  }
});

test("one character at a time", () => {
  assert.deepEqual(feed([...STREAM]).out, EXPECTED);
});

for (const [name, eol] of [
  ["CRLF", "\r\n"],
  ["CR", "\r"],
]) {
  test(`${name} line endings, split at every position (CR and LF in different chunks too)`, () => {
    const stream = STREAM.replaceAll("\n", eol);
    for (let i = 0; i <= stream.length; i++) {
      assert.deepEqual(feed([stream.slice(0, i), stream.slice(i)]).out, EXPECTED, `split at ${i}`);
    }
  });
}

test("multi-line data is joined with LF; the space after the colon is optional and only one is removed", () => {
  const { out } = feed(["data: first\r\ndata:second\ndata:  third\r\n", "data\n\n"]);
  assert.deepEqual(out, [{ type: "message", id: "", data: "first\nsecond\n third\n" }]);
});

test("event types, ids kept across messages, retry, unknown fields, comments", () => {
  const { out, parser } = feed([
    ":comment one\n",
    "event: error\nid: 7\ndata: {}\nfoo: bar\nretry: 1500\n\n",
    "data: next\n\n",
    "retry: soon\nid: has\0null\ndata: x\n\n",
  ]);
  assert.deepEqual(out, [
    { type: "error", id: "7", data: "{}" },
    { type: "message", id: "7", data: "next" }, // lastEventId persists; the type resets
    { type: "message", id: "7", data: "x" }, // an id with NUL is ignored
  ]);
  assert.equal(parser.retry, 1500); // "soon" is not a number: ignored
  assert.equal(parser.comments, 1);
});

test("a blank line with no data dispatches nothing, but an id still counts", () => {
  const { out, parser } = feed(["id: 42\n\n", ": keep-alive\n\n", "\n\n"]);
  assert.deepEqual(out, []);
  assert.equal(parser.lastEventId, "42");
});

test("an event cut before its blank line is discarded at the end of the stream", () => {
  for (const tail of ['id: 2\ndata: {"version":"2"}', 'id: 2\ndata: {"version":"2"}\n', "id: 2\ndata: {\"ver"]) {
    const { out } = feed([STREAM, tail]);
    assert.deepEqual(out, EXPECTED, JSON.stringify(tail));
  }
});

test("multi-byte characters split across network chunks survive a streaming TextDecoder", () => {
  const bytes = new TextEncoder().encode('data: {"displayName":"Zoë 🚂"}\n\n');
  for (let i = 0; i <= bytes.length; i++) {
    const decoder = new TextDecoder();
    const parser = new SseParser();
    const out = [
      ...parser.push(decoder.decode(bytes.slice(0, i), { stream: true })),
      ...parser.push(decoder.decode(bytes.slice(i), { stream: true })),
      ...parser.push(decoder.decode()),
    ];
    assert.deepEqual(out, [{ type: "message", id: "", data: '{"displayName":"Zoë 🚂"}' }], `split at byte ${i}`);
  }
});
