// watchGame's edges: aborting, breaking out, a stalled connection, and an
// error event inside the stream. Aborting runs against the real service; a
// connection that stalls and an `event: error` cannot be provoked there on
// demand, so a small local HTTP server writes those streams byte for byte
// as service/transports/http/server.py would.
import assert from "node:assert/strict";
import http from "node:http";
import { describe, test } from "node:test";
import { RailyardClient, RailyardError, eventKind } from "../src/index.js";
import { NEEDS_SERVICE, client, newGame } from "../test-support/helpers.js";

describe("stopping a watch", { skip: NEEDS_SERVICE }, () => {
  test("aborting the signal ends the iteration with the abort reason, not a RailyardError", async () => {
    const c = client();
    const { gameId } = await newGame(c, { people: 2 });
    const controller = new AbortController();
    const seen = [];
    const reason = new Error("the page was closed");
    await assert.rejects(async () => {
      for await (const event of c.watchGame(gameId, { signal: controller.signal })) {
        seen.push(eventKind(event));
        controller.abort(reason); // nobody moves: the stream would wait for ever
      }
    }, (err) => err === reason);
    assert.deepEqual(seen, ["snapshot"]);
  });

  test("breaking out of the loop closes the stream", async () => {
    const c = client();
    const { gameId } = await newGame(c, { people: 2 });
    for await (const event of c.watchGame(gameId)) {
      assert.equal(eventKind(event), "snapshot");
      break;
    }
    // Nothing to assert beyond getting here: an open stream would keep the
    // loop waiting for a move nobody makes, and this test would time out.
  });
});

async function streamServer(write) {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    write(req, res);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    client: new RailyardClient(`http://127.0.0.1:${server.address().port}`),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const SNAPSHOT = 'id: 3\ndata: {"version":"3","snapshot":{"gameId":"g","version":"3","status":"GAME_STATUS_IN_PROGRESS"}}\n\n';

describe("streams the real service cannot be made to send on demand", () => {
  test("a connection that goes silent (not even a keep-alive) counts as dropped after idleTimeoutMs", async () => {
    const requests = [];
    const s = await streamServer((req, res) => {
      requests.push(req.headers["last-event-id"]);
      res.write(SNAPSHOT);
      res.write(": keep-alive\n\n"); // keep-alives re-arm the timer...
      res.write('id: 4\ndata: {"version":"4","turnStarted":{"seat":1}}\n\n'); // ...then silence
    });
    try {
      const seen = [];
      const started = Date.now();
      await assert.rejects(
        async () => {
          for await (const e of s.client.watchGame("g", { idleTimeoutMs: 150, maxReconnects: 1, reconnectDelayMs: 1 })) seen.push(e);
        },
        (err) => err instanceof RailyardError && err.code === "UNAVAILABLE" && /no data for 150 ms/.test(err.message),
      );
      assert.ok(Date.now() - started >= 300, "two connections, each given 150 ms");
      // The reconnect resumed before version 4 and skipped the event it had already yielded.
      assert.deepEqual(requests, [undefined, "3"]);
      assert.deepEqual(seen.map(eventKind), ["snapshot", "turnStarted"]);
    } finally {
      await s.close();
    }
  });

  test("an `event: error` in the stream is thrown as a RailyardError with the Status unpacked", async () => {
    const s = await streamServer((req, res) => {
      res.write(SNAPSHOT);
      res.end(
        'event: error\ndata: {"code":13,"message":"internal error","details":[{"@type":' +
          '"type.googleapis.com/google.rpc.ErrorInfo","reason":"INTERNAL","domain":"railyard.dev"}]}\n\n',
      );
    });
    try {
      const seen = [];
      await assert.rejects(
        async () => {
          for await (const e of s.client.watchGame("g")) seen.push(e);
        },
        { name: "RailyardError", code: "INTERNAL", reason: "INTERNAL", message: "internal error", httpStatus: 500 },
      );
      assert.equal(seen.length, 1);
    } finally {
      await s.close();
    }
  });
});
