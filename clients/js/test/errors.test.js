// Every error class of API.md's table as the client raises it, requestId
// retries, versions; against a real service (RAILYARD_URL). The network-level
// cases use real sockets: a closed port, and an HTTP server that answers the
// way a proxy in front of the service might.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { describe, test } from "node:test";
import { RailyardClient, RailyardError, newRequestId, seatOf, tileOf, versionOf } from "../src/index.js";
import { playTurn } from "../src/bot.js";
import { BASE_URL, NEEDS_SERVICE, answerDroppingProxy, client, newGame } from "../test-support/helpers.js";

const RULE_ID = /^[A-Z]+(-[A-Z0-9]+)+$/;

/** The error a call fails with (the test fails if it succeeds or throws something else). */
async function failure(call) {
  try {
    await call();
  } catch (err) {
    assert.ok(err instanceof RailyardError, `not a RailyardError: ${err?.stack ?? err}`);
    assert.ok(err instanceof Error);
    assert.ok(err.message.length > 0);
    if (err.status !== undefined) assert.equal(err.message, err.status.message, "the server's message is kept");
    return err;
  }
  assert.fail("the call succeeded");
}

/** A game with two people, and who is to move. */
async function twoSeats(c) {
  const game = await newGame(c, { people: 2 });
  const seat = game.created.game.currentSeat;
  return { ...game, seat, other: 1 - seat, turnToken: game.tokens[seat], otherToken: game.tokens[1 - seat] };
}

describe("errors from the service", { skip: NEEDS_SERVICE }, () => {
  const c = NEEDS_SERVICE ? undefined : client();

  test("unknown game: NOT_FOUND / 404 / GAME_NOT_FOUND, on every call", async () => {
    for (const call of [
      () => c.getGame("no-such-game"),
      () => c.getGameLog("no-such-game"),
      () => c.listLegalMoves("no-such-game", { token: "x" }),
      () => c.applyMove("no-such-game", { draw: {} }, { token: "x" }),
      async () => {
        for await (const _ of c.watchGame("no-such-game")) assert.fail("a stream opened");
      },
    ]) {
      const err = await failure(call);
      assert.equal(err.httpStatus, 404);
      assert.equal(err.code, "NOT_FOUND");
      assert.equal(err.reason, "GAME_NOT_FOUND");
      assert.equal(err.metadata.gameId, "no-such-game");
      assert.match(err.message, /no-such-game/);
    }
  });

  test("no token: UNAUTHENTICATED / 401", async () => {
    const { gameId } = await twoSeats(c);
    for (const call of [() => c.listLegalMoves(gameId), () => c.applyMove(gameId, { draw: {} })]) {
      const err = await failure(call);
      assert.equal(err.httpStatus, 401);
      assert.equal(err.code, "UNAUTHENTICATED");
      assert.equal(err.reason, "UNAUTHENTICATED");
    }
  });

  test("a token that is not this game's: PERMISSION_DENIED / 403 / BAD_SEAT_TOKEN", async () => {
    const { gameId } = await twoSeats(c);
    const elsewhere = await twoSeats(c);
    for (const token of ["not-a-token", elsewhere.turnToken]) {
      for (const call of [
        () => c.getGame(gameId, { token }),
        () => c.listLegalMoves(gameId, { token }),
        () => c.applyMove(gameId, { draw: {} }, { token }),
      ]) {
        const err = await failure(call);
        assert.equal(err.httpStatus, 403);
        assert.equal(err.code, "PERMISSION_DENIED");
        assert.equal(err.reason, "BAD_SEAT_TOKEN");
      }
    }
  });

  test("a move not legal now: FAILED_PRECONDITION / 400 / ILLEGAL_MOVE with its rule; nothing changes", async () => {
    const { gameId, turnToken } = await twoSeats(c);
    const mine = await c.getGame(gameId, { token: turnToken });
    const inHand = new Set(mine.hand.map((t) => `${tileOf(t).a}-${tileOf(t).b}`));
    // A tile of the set that is not in this hand (nor the engine, set aside).
    let missing;
    for (let a = 0; a <= 12 && !missing; a++) {
      for (let b = a; b <= 11 && !missing; b++) if (!inHand.has(`${a}-${b}`)) missing = { a, b };
    }
    const err = await failure(() =>
      c.applyMove(gameId, { play: { tile: missing, train: { seat: mine.viewerSeat } } }, { token: turnToken }),
    );
    assert.equal(err.httpStatus, 400);
    assert.equal(err.code, "FAILED_PRECONDITION");
    assert.equal(err.reason, "ILLEGAL_MOVE");
    assert.match(err.rule, RULE_ID);
    assert.equal(err.rule, "MT-TURN-1"); // RULES.md: a seat plays tiles of its own hand
    assert.equal(err.metadata.detail, "TILE_NOT_IN_HAND");
    assert.equal(versionOf(await c.getGame(gameId)), 0);
  });

  test("not your turn: FAILED_PRECONDITION / 400 / NOT_YOUR_TURN with its rule", async () => {
    const { gameId, otherToken } = await twoSeats(c);
    // The seat not to move has no legal moves at all...
    const legal = await c.listLegalMoves(gameId, { token: otherToken });
    assert.deepEqual(legal.moves ?? [], []);
    // ...and a move from it is refused.
    const err = await failure(() => c.applyMove(gameId, { draw: {} }, { token: otherToken }));
    assert.equal(err.httpStatus, 400);
    assert.equal(err.code, "FAILED_PRECONDITION");
    assert.equal(err.reason, "NOT_YOUR_TURN");
    assert.match(err.rule, RULE_ID);
  });

  test("stale expectedVersion: ABORTED / 409 / VERSION_MISMATCH, numbers and strings alike", async () => {
    const { gameId, turnToken } = await twoSeats(c);
    const legal = await c.listLegalMoves(gameId, { token: turnToken });
    for (const expectedVersion of [5, "5", 5n]) {
      const err = await failure(() => c.applyMove(gameId, legal.moves[0], { token: turnToken, expectedVersion }));
      assert.equal(err.httpStatus, 409);
      assert.equal(err.code, "ABORTED");
      assert.equal(err.reason, "VERSION_MISMATCH");
      assert.equal(err.metadata.expectedVersion, "5");
      assert.equal(err.metadata.currentVersion, "0");
    }
    // The version legal-moves gave (absent = 0) is the right one.
    const answer = await c.applyMove(gameId, legal.moves[0], { token: turnToken, expectedVersion: versionOf(legal) });
    assert.equal(versionOf(answer), 1);
    // A version that is not an integer never reaches the server.
    assert.throws(() => c.applyMove(gameId, legal.moves[0], { token: turnToken, expectedVersion: 1.5 }), TypeError);
  });

  test("a bad ruleset: INVALID_ARGUMENT / 400", async () => {
    const players = [{ displayName: "A" }, { displayName: "B" }];
    for (const ruleset of [{ preset: "no_such_preset" }, { mexicanTrains: 0 }, { setMax: 99 }]) {
      const err = await failure(() => c.createGame({ ruleset, players }));
      assert.equal(err.httpStatus, 400);
      assert.equal(err.code, "INVALID_ARGUMENT");
      assert.equal(err.reason, "INVALID_ARGUMENT", JSON.stringify(ruleset));
    }
    const err = await failure(() => c.createGame({ ruleset: { preset: "no_such_preset" }, players }));
    assert.match(err.message, /no_such_preset/);
    // A deal that does not fit is INVALID_ARGUMENT too, with its own reason.
    const big = await failure(() => c.createGame({ ruleset: { setMax: 6, handSize: 20 }, players }));
    assert.equal(big.code, "INVALID_ARGUMENT");
    assert.equal(big.reason, "DEAL_DOES_NOT_FIT");
  });

  test("a move after the game is over: FAILED_PRECONDITION / GAME_OVER", async () => {
    // One person against a random bot: a bot seat has no token, so the
    // person plays to the end, then moves once more.
    const { created, gameId, tokens } = await newGame(c, { people: 1, bots: ["BOT_LEVEL_RANDOM"] });
    assert.deepEqual(created.seats.map(seatOf), [0], "a token for the person only");
    const token = tokens[0];
    let turns = 0;
    for (;;) {
      const view = await c.getGame(gameId);
      if (view.status === "GAME_STATUS_FINISHED") break;
      assert.equal(view.currentSeat ?? 0, 0, "the bot seat is never left to move");
      const { moves } = await playTurn(c, gameId, token);
      assert.ok(moves.length > 0, "the person was to move but played nothing");
      assert.ok(++turns < 2000, "the game does not end");
    }
    const err = await failure(() => c.applyMove(gameId, { draw: {} }, { token }));
    assert.equal(err.code, "FAILED_PRECONDITION");
    assert.equal(err.reason, "GAME_OVER");
  });

  test("requestId: a repeat returns the identical answer and applies once", async () => {
    const { gameId, turnToken } = await twoSeats(c);
    const legal = await c.listLegalMoves(gameId, { token: turnToken });
    const requestId = newRequestId();
    const first = await c.applyMove(gameId, legal.moves[0], { token: turnToken, expectedVersion: 0, requestId });
    // The repeat still names version 0, now stale: it is answered from the first answer, not refused.
    const again = await c.applyMove(gameId, legal.moves[0].move, { token: turnToken, expectedVersion: "0", requestId });
    assert.deepEqual(again, first);
    assert.equal(versionOf(first), 1);
    assert.equal(versionOf(await c.getGame(gameId)), 1);
    const log = await c.getGameLog(gameId);
    assert.equal(log.events.filter((e) => versionOf(e) === 1).length, first.events.length);
  });

  test("requestId after a lost answer: the move was applied once, the retry gets its answer", async () => {
    const { gameId, turnToken } = await twoSeats(c);
    const proxy = await answerDroppingProxy(BASE_URL, 1);
    try {
      const flaky = new RailyardClient(proxy.url);
      const legal = await flaky.listLegalMoves(gameId, { token: turnToken });
      const requestId = newRequestId();
      const options = { token: turnToken, expectedVersion: versionOf(legal), requestId };
      const lost = await failure(() => flaky.applyMove(gameId, legal.moves[0], options));
      assert.equal(lost.code, "UNAVAILABLE");
      assert.equal(lost.reason, "NETWORK_ERROR");
      assert.equal(proxy.dropped, 1);
      // The server did apply it; the retry (same id, now-stale version) is answered, not refused.
      assert.equal(versionOf(await c.getGame(gameId)), 1);
      const retried = await flaky.applyMove(gameId, legal.moves[0], options);
      assert.equal(versionOf(retried), 1);
      const log = await c.getGameLog(gameId);
      // The log is public: a draw's tile, which the drawer's own answer shows, is not in it.
      const publicEvents = retried.events.map((e) => {
        if (e.tileDrawn === undefined) return e;
        const { tile, ...rest } = e.tileDrawn;
        assert.ok(tile !== undefined, "the drawer's answer shows the tile drawn");
        return { ...e, tileDrawn: rest };
      });
      assert.deepEqual(publicEvents, log.events.filter((e) => versionOf(e) === 1));
    } finally {
      await proxy.close();
    }
  });

  test("playTurn retries a move whose answer was lost, with the same requestId", async () => {
    const { gameId, seat, turnToken } = await twoSeats(c);
    const proxy = await answerDroppingProxy(BASE_URL, 1);
    try {
      const { moves, game } = await playTurn(new RailyardClient(proxy.url), gameId, turnToken, undefined, {
        retryDelayMs: 1,
      });
      assert.equal(proxy.dropped, 1);
      // Every move applied exactly once: one version per move, all by this seat.
      assert.equal(versionOf(game), moves.length);
      const log = await c.getGameLog(gameId);
      const played = log.events.filter((e) => versionOf(e) > 0 && (e.tilePlayed || e.tileDrawn || e.passed));
      assert.deepEqual(
        played.map((e) => [versionOf(e), (e.tilePlayed ?? e.tileDrawn ?? e.passed).seat ?? 0]),
        moves.map((_, i) => [i + 1, seat]),
      );
    } finally {
      await proxy.close();
    }
  });

  test("versionOf reads every shape; absent is 0", async () => {
    const { created, gameId, turnToken } = await twoSeats(c);
    assert.equal(created.game.version, undefined, "proto3 JSON leaves version 0 out");
    assert.equal(versionOf(created.game), 0);
    assert.equal(versionOf(created), 0);
    const legal = await c.listLegalMoves(gameId, { token: turnToken });
    const answer = await c.applyMove(gameId, legal.moves[0], { token: turnToken });
    assert.equal(answer.game.version, "1", "int64 arrives as a string");
    assert.equal(versionOf(answer), 1);
    assert.equal(versionOf(answer.game), 1);
    assert.equal(versionOf(answer.events[0]), 1);
  });

  test("listRulesets lists the presets of API.md", async () => {
    const { rulesets } = await c.listRulesets();
    const names = rulesets.map((r) => r.preset);
    for (const name of ["standard", "pagat", "university_games", "cover_own", "by_set", "house", "chicken_foot"]) {
      assert.ok(names.includes(name), name);
    }
    assert.equal(rulesets.find((r) => r.preset === "pagat").firstTurn, "FIRST_TURN_CHAIN");
  });
});

describe("rate limits", { skip: process.env.RAILYARD_RATE_LIMITED_URL ? false : "RAILYARD_RATE_LIMITED_URL is not set" }, () => {
  test("429: RESOURCE_EXHAUSTED / RATE_LIMITED with retryAfter in seconds", async () => {
    const c = new RailyardClient(process.env.RAILYARD_RATE_LIMITED_URL);
    let limited;
    for (let i = 0; i < 50 && limited === undefined; i++) {
      const err = await failure(() => c.getGame("no-such-game"));
      if (err.httpStatus === 429) limited = err;
      else assert.equal(err.reason, "GAME_NOT_FOUND");
    }
    assert.ok(limited, "the service never limited 50 quick calls");
    assert.equal(limited.code, "RESOURCE_EXHAUSTED");
    assert.equal(limited.reason, "RATE_LIMITED");
    assert.equal(typeof limited.retryAfter, "number");
    assert.ok(limited.retryAfter >= 1);
  });

  test("a watch refused with 429 waits retryAfter and connects again", async () => {
    // The limited replica shares the store: a game made elsewhere is watched through it.
    const { gameId } = await newGame(new RailyardClient(process.env.RAILYARD_URL), {
      people: 0,
      bots: ["BOT_LEVEL_RANDOM", "BOT_LEVEL_RANDOM"],
    });
    const c = new RailyardClient(process.env.RAILYARD_RATE_LIMITED_URL);
    // Spend the burst.
    for (let i = 0; i < 50; i++) {
      const err = await failure(() => c.getGame("no-such-game"));
      if (err.httpStatus === 429) break;
    }
    const started = Date.now();
    const events = [];
    for await (const e of c.watchGame(gameId)) events.push(e);
    assert.ok(Date.now() - started >= 500, "it waited before connecting again");
    assert.equal(events.length, 1);
    assert.equal(events[0].snapshot.status, "GAME_STATUS_FINISHED");
  });
});

describe("failures below the API", () => {
  test("nothing listening: UNAVAILABLE / NETWORK_ERROR, httpStatus 0, the cause kept", async () => {
    // A port that was free a moment ago: connecting to it is refused.
    const probe = net.createServer();
    await new Promise((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address();
    await new Promise((resolve) => probe.close(resolve));
    const c = new RailyardClient(`http://127.0.0.1:${port}`);
    const err = await failure(() => c.listRulesets());
    assert.equal(err.code, "UNAVAILABLE");
    assert.equal(err.reason, "NETWORK_ERROR");
    assert.equal(err.httpStatus, 0);
    assert.ok(err.cause instanceof Error);
    await assert.rejects(
      async () => {
        for await (const _ of c.watchGame("g", { maxReconnects: 1, reconnectDelayMs: 1 })) assert.fail("a stream opened");
      },
      { code: "UNAVAILABLE" },
    );
  });

  test("an answer that is not a Status (a proxy's page) keeps its text and status", async () => {
    const server = http.createServer((req, res) => {
      res.writeHead(req.url === "/v1/rulesets" ? 502 : 429, { "content-type": "text/html", "retry-after": "7" });
      res.end("<html>upstream went away</html>");
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const c = new RailyardClient(`http://127.0.0.1:${server.address().port}/`);
      const bad = await failure(() => c.listRulesets());
      assert.equal(bad.httpStatus, 502);
      assert.equal(bad.code, "UNAVAILABLE");
      assert.equal(bad.reason, "");
      assert.match(bad.message, /502.*upstream went away/);
      const busy = await failure(() => c.getGame("g"));
      assert.equal(busy.httpStatus, 429);
      assert.equal(busy.retryAfter, 7);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test("an injected fetch is used for every call", async () => {
    const seen = [];
    const c = new RailyardClient({
      baseUrl: "http://railyard.invalid",
      fetch: async (url, init) => {
        seen.push([init.method, url, init.headers.authorization, init.body]);
        return new Response('{"moves":[]}', { status: 200 });
      },
    });
    assert.deepEqual(await c.listLegalMoves("g/1", { token: "t" }), { moves: [] });
    await c.applyMove("g", { draw: {} }, { token: "t", expectedVersion: 3, requestId: "r" });
    assert.deepEqual(seen, [
      ["GET", "http://railyard.invalid/v1/games/g%2F1/legal-moves", "Bearer t", undefined],
      ["POST", "http://railyard.invalid/v1/games/g/moves", "Bearer t", '{"move":{"draw":{}},"expectedVersion":"3","requestId":"r"}'],
    ]);
  });
});
