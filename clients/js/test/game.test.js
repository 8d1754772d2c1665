// Whole games through the client against a real service: play, hidden
// information, watch streams (live, resumed, and through a connection that
// keeps dropping) checked against the game's log.
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { RailyardClient, eventKind, seatOf, tileOf, versionOf } from "../src/index.js";
import { greedyChooser, playTurn } from "../src/bot.js";
import { BASE_URL, NEEDS_SERVICE, client, collect, cuttingProxy, newGame } from "../test-support/helpers.js";

const tileKey = (t) => {
  const { a, b } = tileOf(t);
  return a <= b ? `${a}-${b}` : `${b}-${a}`;
};

/** The log's events, as a seat's stream shows them: its own draws carry the tile. */
function withoutOwnDrawnTiles(events, seat) {
  return events.map((e) => {
    if (e.tileDrawn === undefined || seatOf(e.tileDrawn) !== seat) return e;
    const { tile, ...rest } = e.tileDrawn;
    assert.ok(tile !== undefined, `seat ${seat}'s own draw shows its tile: ${JSON.stringify(e)}`);
    return { ...e, tileDrawn: rest };
  });
}

describe("a whole game through the client", { skip: NEEDS_SERVICE }, () => {
  const c = BASE_URL ? client() : undefined;
  let game; // {gameId, tokens, created}
  let final;
  let log;
  let spectator; // the live spectator stream
  let seat1; // seat 1's live stream
  let torn; // a live spectator stream through a connection cut every few frames
  let proxy;
  let turns = 0;

  before(async () => {
    // Three seats played here, one by the server's greedy bot.
    game = await newGame(c, { people: 3, bots: ["BOT_LEVEL_GREEDY"], rounds: 1, seed: "js-client-full-game" });
    const { gameId, tokens } = game;
    proxy = await cuttingProxy(BASE_URL, (n) => 1 + [3, 1, 2, 5, 4, 2, 6, 1][n % 8]);
    try {
      const viaProxy = new RailyardClient(proxy.url);
      const watching = [
        collect(c.watchGame(gameId)),
        collect(c.watchGame(gameId, { token: tokens[1] })),
        collect(viaProxy.watchGame(gameId, { reconnectDelayMs: 1 })),
      ];
      for (;;) {
        const view = await c.getGame(gameId);
        if (view.currentSeat === undefined) break;
        assert.ok(view.currentSeat < 3, "the bot seat is never left waiting for us");
        const { moves } = await playTurn(c, gameId, tokens[view.currentSeat], greedyChooser);
        assert.ok(moves.length > 0, `seat ${view.currentSeat} was to move but played nothing`);
        turns++;
        assert.ok(turns < 2000, "the game does not end");
      }
      [spectator, seat1, torn] = await Promise.all(watching);
    } finally {
      await proxy.close(); // else its listening socket keeps the test process alive
    }
    final = await c.getGame(gameId);
    log = await c.getGameLog(gameId);
  });

  test("it ends with winners, scores, and the seed revealed", () => {
    assert.equal(final.status, "GAME_STATUS_FINISHED");
    assert.equal(final.currentSeat, undefined);
    assert.ok(final.winners.length >= 1);
    assert.equal(final.seed, "js-client-full-game");
    assert.equal(log.seed, "js-client-full-game");
    const ended = log.events.at(-1);
    assert.equal(eventKind(ended), "gameEnded");
    assert.deepEqual(ended.gameEnded.winners, final.winners);
    assert.deepEqual(ended.gameEnded.totals, final.players.map((p) => p.score ?? 0));
    assert.equal(versionOf(ended), versionOf(final));
    // The lowest total wins.
    const low = Math.min(...ended.gameEnded.totals);
    assert.deepEqual(final.winners, ended.gameEnded.totals.flatMap((t, s) => (t === low ? [s] : [])));
  });

  test("the server bot played its seat, and versions rise by one per move", () => {
    const moves = log.events.filter((e) => ["tilePlayed", "tileDrawn", "passed"].includes(eventKind(e)));
    assert.ok(moves.some((e) => seatOf(e[eventKind(e)]) === 3), "seat 3 (the bot) moved");
    let previous = 0;
    for (const e of log.events) {
      const v = versionOf(e);
      assert.ok(v === previous || v === previous + 1, `version ${v} after ${previous}`);
      previous = v;
    }
  });

  test("the spectator's watch: a snapshot, then every later event in order, ending with gameEnded", () => {
    assert.equal(eventKind(spectator[0]), "snapshot");
    assert.equal(spectator[0].snapshot.hand, undefined, "a spectator sees no hand");
    const from = versionOf(spectator[0]);
    assert.deepEqual(spectator.slice(1), log.events.filter((e) => versionOf(e) > from));
    assert.equal(eventKind(spectator.at(-1)), "gameEnded");
  });

  test("seat 1's watch shows its own drawn tiles and nobody else's", () => {
    assert.equal(seat1[0].snapshot.viewerSeat, 1);
    const from = versionOf(seat1[0]);
    const later = seat1.slice(1);
    for (const e of later) {
      if (e.tileDrawn !== undefined && seatOf(e.tileDrawn) !== 1) {
        assert.equal(e.tileDrawn.tile, undefined, `another seat's draw leaks its tile: ${JSON.stringify(e)}`);
      }
    }
    assert.deepEqual(
      withoutOwnDrawnTiles(later, 1),
      log.events.filter((e) => versionOf(e) > from),
    );
  });

  test("a live watch whose connection keeps dropping still sees every event exactly once, in order", () => {
    assert.ok(proxy.connections > 5, `the proxy cut the stream ${proxy.connections} times`);
    assert.equal(eventKind(torn[0]), "snapshot");
    const from = versionOf(torn[0]);
    assert.deepEqual(torn.slice(1), log.events.filter((e) => versionOf(e) > from));
  });

  test("replaying the finished game from afterVersion yields exactly the later events", async () => {
    const last = versionOf(final);
    for (const after of [-1, 0, 1, Math.floor(last / 2), String(last - 1), last]) {
      const events = await collect(c.watchGame(game.gameId, { afterVersion: after }));
      assert.equal(eventKind(events[0]), "snapshot");
      assert.equal(versionOf(events[0]), last);
      assert.deepEqual(events.slice(1), log.events.filter((e) => versionOf(e) > Number(after)), `after ${after}`);
    }
  });

  test("replaying the whole game through a connection cut every few frames, torn mid-frame", async () => {
    const cutter = await cuttingProxy(BASE_URL, (n) => 1 + (n % 4) + 1);
    try {
      const events = await collect(
        new RailyardClient(cutter.url).watchGame(game.gameId, { afterVersion: -1, reconnectDelayMs: 1 }),
      );
      assert.ok(cutter.connections > 10);
      assert.deepEqual(events.slice(1), log.events);
    } finally {
      await cutter.close();
    }
  });

  test("without reconnecting, a dropped stream is an UNAVAILABLE error after what arrived", async () => {
    const cutter = await cuttingProxy(BASE_URL, () => 4);
    const seen = [];
    try {
      await assert.rejects(
        async () => {
          for await (const e of new RailyardClient(cutter.url).watchGame(game.gameId, { afterVersion: -1, reconnect: false })) {
            seen.push(e);
          }
        },
        { name: "RailyardError", code: "UNAVAILABLE", reason: "NETWORK_ERROR" },
      );
    } finally {
      await cutter.close();
    }
    assert.deepEqual(seen.slice(1), log.events.slice(0, 3));
  });

  test("watching a finished game without afterVersion yields its snapshot and ends", async () => {
    const events = await collect(c.watchGame(game.gameId));
    assert.equal(events.length, 1);
    assert.equal(events[0].snapshot.status, "GAME_STATUS_FINISHED");
  });
});

describe("hidden information", { skip: NEEDS_SERVICE }, () => {
  test("each seat's view has its own hand only; spectators see none", async () => {
    const c = client();
    const { gameId, tokens } = await newGame(c, { people: 3, rounds: 1 });
    const spectator = await c.getGame(gameId);
    assert.equal(spectator.hand, undefined);
    assert.equal(spectator.viewerSeat, undefined);
    const hands = [];
    for (const [seat, token] of tokens.entries()) {
      const view = await c.getGame(gameId, { token });
      assert.equal(view.viewerSeat, seat);
      assert.equal(view.hand.length, view.players[seat].handCount);
      hands.push(new Set(view.hand.map(tileKey)));
      // The public part is what the spectator sees.
      const { hand, viewerSeat, ...publicPart } = view;
      assert.deepEqual(publicPart, spectator);
      // A seat's legal plays are tiles of its own hand.
      const legal = await c.listLegalMoves(gameId, { token });
      for (const m of legal.moves ?? []) {
        if (m.move.play) assert.ok(hands[seat].has(tileKey(m.move.play.tile)), m.notation);
      }
    }
    for (let i = 0; i < hands.length; i++) {
      for (let j = i + 1; j < hands.length; j++) {
        for (const t of hands[i]) assert.ok(!hands[j].has(t), `${t} is in two hands`);
      }
    }
  });
});
