// Shared by the tests that talk to a real Railyard service.
import net from "node:net";
import { RailyardClient, seatOf } from "../src/index.js";

export const BASE_URL = process.env.RAILYARD_URL;

/** node:test's `skip` option: a reason when no service was given, else false. */
export const NEEDS_SERVICE = BASE_URL
  ? false
  : "RAILYARD_URL is not set: start a service and point RAILYARD_URL at it (tests/test_client_js.py does)";

export function client() {
  return new RailyardClient(BASE_URL);
}

/** A new game; returns the CreateGame answer plus tokens by seat (seat 0's `seat` is omitted in JSON). */
export async function newGame(c, { people = 2, bots = [], rounds = 1, preset = "standard", seed } = {}) {
  const players = [
    ...Array.from({ length: people }, (_, i) => ({ displayName: `P${i}` })),
    ...bots.map((bot, i) => ({ displayName: `B${i}`, bot })),
  ];
  const request = { ruleset: { preset, rounds }, players };
  if (seed !== undefined) request.seed = seed;
  const created = await c.createGame(request);
  // By seat; the people's seats only (a bot seat has no token, and a game of
  // bots only has no `seats` at all: proto3 JSON omits an empty list).
  const tokens = [];
  for (const s of created.seats ?? []) tokens[seatOf(s)] = s.token;
  return { created, gameId: created.game.gameId, tokens };
}

/** Collects a whole watch stream into an array (the promise settles when it ends). */
export async function collect(iterable) {
  const out = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/**
 * A TCP proxy to `target`: for each connection, `relay(downstream, up, cut, n)`
 * wires the two sockets (n counts connections from 0); either socket failing
 * or closing cuts both. Returns its url and close().
 */
async function tcpProxy(target, relay) {
  const upstream = new URL(target);
  let connections = 0;
  const sockets = new Set();
  const server = net.createServer((downstream) => {
    const up = net.connect(Number(upstream.port), upstream.hostname);
    sockets.add(downstream).add(up);
    const cut = () => {
      downstream.destroy();
      up.destroy();
    };
    relay(downstream, up, cut, connections++);
    for (const s of [downstream, up]) {
      s.on("error", cut);
      s.on("close", () => {
        sockets.delete(s);
        cut();
      });
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(resolve);
      }),
  };
}

/**
 * A TCP proxy in front of the service that cuts each connection after it has
 * forwarded a given number of SSE frames (counted by their blank line) plus a
 * few bytes of the next one, the way a flaky network or a restarting load
 * balancer would. Connection n may pass framesFor(n) frames.
 */
export async function cuttingProxy(target, framesFor) {
  let connections = 0;
  const proxy = await tcpProxy(target, (downstream, up, cut, n) => {
    connections = n + 1;
    const budget = framesFor(n);
    let seen = 0;
    let tail = ""; // the last byte forwarded, so a "\n\n" split across reads still counts
    downstream.on("data", (d) => up.write(d));
    up.on("data", (data) => {
      const text = data.toString("latin1");
      const scan = tail + text;
      let at = -1;
      for (let i = scan.indexOf("\n\n"); i >= 0; i = scan.indexOf("\n\n", i + 1)) {
        seen++;
        if (seen >= budget) {
          at = i + 2 - tail.length; // end of the last frame allowed, in `data`
          break;
        }
      }
      if (at < 0) {
        downstream.write(data);
        tail = text.slice(-1);
        return;
      }
      // The frames allowed and half a dozen bytes of the next: a torn frame.
      downstream.write(data.subarray(0, Math.min(data.length, at + 6)), cut);
    });
  });
  return {
    ...proxy,
    get connections() {
      return connections;
    },
  };
}

/**
 * A TCP proxy in front of the service that lets the first `drops` ApplyMove
 * requests through and then cuts the connection instead of passing their
 * answer back: the move is applied, the client sees a network error. This is
 * the case requestId exists for.
 */
export async function answerDroppingProxy(target, drops) {
  let dropped = 0;
  const proxy = await tcpProxy(target, (downstream, up, cut) => {
    let dropNext = false;
    downstream.on("data", (data) => {
      if (dropped < drops && /^POST \/v1\/games\/[^/ ]+\/moves /.test(data.toString("latin1"))) dropNext = true;
      up.write(data);
    });
    up.on("data", (data) => {
      if (dropNext) {
        dropped++;
        cut();
        return;
      }
      downstream.write(data);
    });
  });
  return {
    ...proxy,
    get dropped() {
      return dropped;
    },
  };
}
