// Tables (tables.md) through the client against a real service: a private
// table joined by its code, started by its last join, played to the end and
// rematched; public tables listed page by page, joined by id, left, started
// by their host; and the table refusals as RailyardError.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RailyardError, eventKind, isFinished, seatOf } from "../src/index.js";
import { greedyChooser, playTurn } from "../src/bot.js";
import { NEEDS_SERVICE, client, collect } from "../test-support/helpers.js";

/** Block for three, to 30 points (CL-SC-2): a game of a few hands. */
const BLOCK = { preset: "block", targetScore: 30 };
const JOIN_CODE = /^[ABCDEFGHJKMNPQRSTUVWXYZ23456789]{10}$/;

/** A table: seat 0 `first` (a person's name, or a server bot), then `open` open seats. */
function table(c, { open = 2, visibility = "VISIBILITY_PRIVATE", botLevel, first = "Host" } = {}) {
  const seat0 = first === "bot" ? { displayName: "Dealer", bot: "BOT_LEVEL_GREEDY" } : { displayName: first };
  const settings = { visibility };
  if (botLevel !== undefined) settings.botLevel = botLevel;
  return c.createGame({
    ruleset: BLOCK,
    players: [seat0, ...Array.from({ length: open }, () => ({ open: true }))],
    table: settings,
  });
}

/** The error a call fails with, checked to be a RailyardError of `code`, `reason`, `httpStatus`. */
async function refused(call, code, reason, httpStatus) {
  try {
    await call();
  } catch (err) {
    assert.ok(err instanceof RailyardError, `not a RailyardError: ${err?.stack ?? err}`);
    assert.deepEqual([err.code, err.reason, err.httpStatus], [code, reason, httpStatus], err.message);
    return err;
  }
  assert.fail(`the call succeeded; ${reason} was expected`);
}

describe("a private table through the client", { skip: NEEDS_SERVICE }, () => {
  test("joined by its code twice, started by the last join, played out, then rematched", async () => {
    const c = client();
    const created = await table(c, { first: "bot" });
    const { gameId } = created.game;
    assert.equal(created.game.status, "GAME_STATUS_WAITING");
    assert.match(created.joinCode, JOIN_CODE);
    assert.ok(created.hostToken);
    assert.equal(created.seats, undefined, "the creator holds no person's seat");
    assert.deepEqual(created.game.players.map((p) => p.open ?? false), [false, true, true]);

    // By the code alone, typed in lower case with a dash.
    const code = created.joinCode;
    const ann = await c.joinGame({ joinCode: `${code.slice(0, 5).toLowerCase()}-${code.slice(5)}`, displayName: "Ann" });
    assert.equal(ann.game.gameId, gameId);
    assert.equal(seatOf(ann.seat), 1);
    assert.equal(ann.game.status, "GAME_STATUS_WAITING");
    assert.equal(ann.game.hand, undefined, "no hand is shown before the start");
    assert.equal(ann.game.currentSeat, undefined);
    await refused(
      () => c.applyMove(gameId, { draw: {} }, { token: ann.seat.token }),
      "FAILED_PRECONDITION",
      "GAME_NOT_STARTED",
      400,
    );

    // By its id and its code, a seat named: the last one, so it starts.
    const bob = await c.joinGame({ gameId, joinCode: code, seat: 2, displayName: "Bob" });
    assert.equal(seatOf(bob.seat), 2);
    assert.equal(bob.game.status, "GAME_STATUS_IN_PROGRESS");
    assert.equal(bob.game.viewerSeat, 2);
    assert.equal(bob.game.hand.length, 7);

    const tokens = { 1: ann.seat.token, 2: bob.seat.token };
    for (let turns = 0; ; turns++) {
      const view = await c.getGame(gameId);
      if (isFinished(view)) break;
      assert.ok(turns < 2000, "the game does not end");
      const { moves } = await playTurn(c, gameId, tokens[view.currentSeat], greedyChooser);
      assert.ok(moves.length > 0, `seat ${view.currentSeat} was to move but played nothing`);
    }
    const log = await c.getGameLog(gameId);
    const kinds = log.events.map(eventKind);
    assert.equal(kinds.filter((k) => k === "seatJoined").length, 2);
    assert.equal(kinds.filter((k) => k === "gameStarted").length, 1);
    assert.deepEqual(
      log.events.filter((e) => e.seatJoined).map((e) => [seatOf(e.seatJoined), e.seatJoined.displayName]),
      [[1, "Ann"], [2, "Bob"]],
    );

    const again = await c.rematch(gameId, { token: ann.seat.token });
    const newId = again.game.gameId;
    assert.notEqual(newId, gameId);
    assert.equal(seatOf(again.seat), 1);
    assert.equal((await c.getGame(gameId)).rematchGameId, newId);
    const twice = await c.rematch(gameId, { token: ann.seat.token });
    assert.equal(twice.game.gameId, newId);
    assert.equal(twice.seat, undefined, "each old token gets its new one once");
    const bobAgain = await c.rematch(gameId, { token: bob.seat.token });
    assert.equal(seatOf(bobAgain.seat), 2);
    const mine = await c.getGame(newId, { token: again.seat.token });
    assert.equal(mine.viewerSeat, 1);
    assert.deepEqual(mine.players.map((p) => p.displayName), ["Dealer", "Ann", "Bob"]);
  });

  test("the table refusals", async () => {
    const c = client();
    const created = await table(c);
    const { gameId } = created.game;
    await refused(() => c.joinGame({ gameId }), "PERMISSION_DENIED", "BAD_JOIN_CODE", 403);
    await refused(() => c.joinGame({ joinCode: "ABCDEFGHJK" }), "NOT_FOUND", "JOIN_CODE_NOT_FOUND", 404);
    const ann = await c.joinGame({ joinCode: created.joinCode, seat: 1 });
    await refused(() => c.joinGame({ joinCode: created.joinCode, seat: 1 }), "FAILED_PRECONDITION", "SEAT_TAKEN", 400);
    await refused(() => c.startGame(gameId, { token: ann.seat.token }), "PERMISSION_DENIED", "NOT_HOST", 403);
    await refused(() => c.rematch(gameId, { token: ann.seat.token }), "FAILED_PRECONDITION", "GAME_NOT_OVER", 400);
    const started = await c.startGame(gameId, { token: created.hostToken });
    assert.equal(started.game.status, "GAME_STATUS_IN_PROGRESS");
    await refused(() => c.startGame(gameId, { token: created.hostToken }), "FAILED_PRECONDITION", "GAME_STARTED", 400);
    await refused(() => c.joinGame({ joinCode: created.joinCode }), "FAILED_PRECONDITION", "GAME_STARTED", 400);
    assert.throws(() => c.joinGame({}), TypeError);
  });
});

describe("public tables through the client", { skip: NEEDS_SERVICE }, () => {
  test("listGames pages them oldest first; iterGames walks the same pages", async () => {
    const c = client();
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await table(c, { visibility: "VISIBILITY_PUBLIC" })).game.gameId);
    const hidden = (await table(c)).game.gameId;
    const pages = [];
    let pageToken;
    do {
      const page = await c.listGames({ pageSize: 2, pageToken });
      pages.push(page);
      pageToken = page.nextPageToken;
    } while (pageToken);
    assert.ok(pages.length >= 3);
    for (const page of pages.slice(0, -1)) assert.equal(page.games.length, 2);
    const paged = pages.flatMap((p) => (p.games ?? []).map((g) => g.gameId));
    assert.equal(new Set(paged).size, paged.length, "no table twice");
    assert.deepEqual(paged.filter((id) => ids.includes(id)), ids);
    assert.ok(!paged.includes(hidden), "a private table is not listed");
    const summary = pages.flatMap((p) => p.games ?? []).find((g) => g.gameId === ids[0]);
    assert.equal(summary.openSeats, 2);
    assert.equal(summary.ruleset.preset, "block");
    assert.deepEqual(summary.players.map((p) => p.open ?? false), [false, true, true]);
    assert.ok(!Number.isNaN(Date.parse(summary.createTime)));
    const walked = (await collect(c.iterGames({ pageSize: 2 }))).map((g) => g.gameId);
    assert.deepEqual(walked, paged);
    await refused(() => c.listGames({ pageToken: "not-a-token" }), "INVALID_ARGUMENT", "INVALID_ARGUMENT", 400);
  });

  test("joined by id, left before the start (the seat opens), started by its host (bots take the open seats)", async () => {
    const c = client();
    const created = await table(c, { visibility: "VISIBILITY_PUBLIC", botLevel: "BOT_LEVEL_RANDOM" });
    const { gameId } = created.game;
    assert.equal(created.joinCode, undefined, "a public table is joined by its id");
    const ann = await c.joinGame({ gameId, displayName: "Ann" });
    assert.equal(seatOf(ann.seat), 1);
    let listed = (await collect(c.iterGames())).find((g) => g.gameId === gameId);
    assert.equal(listed.openSeats, 1);
    const left = await c.leaveGame(gameId, { token: ann.seat.token });
    assert.equal(left.game.status, "GAME_STATUS_WAITING");
    assert.equal(left.game.players[1].open, true);
    await refused(() => c.getGame(gameId, { token: ann.seat.token }), "PERMISSION_DENIED", "BAD_SEAT_TOKEN", 403);
    listed = (await collect(c.iterGames())).find((g) => g.gameId === gameId);
    assert.equal(listed.openSeats, 2);

    const started = await c.startGame(gameId, { token: created.hostToken });
    assert.equal(started.game.status, "GAME_STATUS_IN_PROGRESS");
    assert.deepEqual(
      started.game.players.map((p) => [p.displayName, p.bot ?? "person"]),
      [["Host", "person"], ["Bot 2", "BOT_LEVEL_RANDOM"], ["Bot 3", "BOT_LEVEL_RANDOM"]],
    );
    assert.ok(!(await collect(c.iterGames())).some((g) => g.gameId === gameId), "a started table is not listed");
    const log = await c.getGameLog(gameId);
    const start = log.events.find((e) => e.gameStarted);
    assert.deepEqual(start.gameStarted.botSeats, [1, 2]);
    assert.deepEqual(log.events.filter((e) => e.seatLeft).map((e) => seatOf(e.seatLeft)), [1]);
  });

  test("a person who leaves during play is replaced by a bot of the table's level", async () => {
    const c = client();
    const created = await table(c, { open: 1, visibility: "VISIBILITY_PUBLIC" });
    const { gameId } = created.game;
    const ann = await c.joinGame({ gameId, displayName: "Ann" });
    assert.equal(ann.game.status, "GAME_STATUS_IN_PROGRESS", "its last seat: started");
    const left = await c.leaveGame(gameId, { token: ann.seat.token });
    assert.equal(left.game.players[1].bot, "BOT_LEVEL_GREEDY");
    assert.equal(left.game.players[1].displayName, "Ann");
    await refused(() => c.leaveGame(gameId, { token: ann.seat.token }), "PERMISSION_DENIED", "BAD_SEAT_TOKEN", 403);
    const event = (await c.getGameLog(gameId)).events.find((e) => e.seatLeft);
    assert.deepEqual(event.seatLeft, { seat: 1, reason: "LEAVE_REASON_LEFT", bot: "BOT_LEVEL_GREEDY" });
  });
});
