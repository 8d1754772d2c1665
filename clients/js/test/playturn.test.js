// playTurn plays one turn and stops, even when the server's bots move inside
// the same request and hand the turn straight back (API.md, Bots): one call
// used to play a whole game against server bots.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { eventKind, isFinished, seatOf } from "../src/index.js";
import { greedyChooser, playTurn } from "../src/bot.js";
import { NEEDS_SERVICE, client, newGame } from "../test-support/helpers.js";

const MOVES = new Set(["tilePlayed", "tileDrawn", "passed"]);

/** The seat of a move event (tilePlayed, tileDrawn, passed), else undefined. */
function mover(event) {
  const kind = eventKind(event);
  return MOVES.has(kind) ? seatOf(event[kind]) : undefined;
}

describe("playTurn against server bots", { skip: NEEDS_SERVICE }, () => {
  test("each call plays one turn of the seat, then the bot's turn comes back in the answer", async () => {
    const c = client();
    // You and one greedy bot, two rounds: the bot moves inside every ApplyMove
    // that ends your turn, and a round's end is a turn's end too.
    const { gameId, tokens } = await newGame(c, { people: 1, bots: ["BOT_LEVEL_GREEDY"], rounds: 2, seed: "js-play-turn" });
    let calls = 0;
    let botAnswered = 0;
    for (;;) {
      const before = await c.getGame(gameId);
      if (isFinished(before)) break;
      assert.equal(before.currentSeat, 0, "with one bot, it is always seat 0's turn between calls");
      const { moves, events, game } = await playTurn(c, gameId, tokens[0], greedyChooser);
      calls++;
      assert.ok(moves.length > 0, "it was seat 0's turn");
      // Seat 0's moves all come before the first event that starts a turn or
      // ends the round: they are one turn.
      const end = events.findIndex((e) => ["turnStarted", "roundEnded", "gameEnded"].includes(eventKind(e)));
      assert.ok(end >= 0, `the turn ended: ${JSON.stringify(events)}`);
      const ours = events.filter((e) => mover(e) === 0).length;
      assert.equal(ours, moves.length, "one event per move applied");
      assert.ok(
        events.slice(end).every((e) => mover(e) !== 0),
        `seat 0 moved after its turn ended: ${moves.map((m) => m.notation).join(" ")}`,
      );
      if (events.slice(end).some((e) => mover(e) === 1)) botAnswered++;
      if (!isFinished(game)) assert.equal(game.currentSeat, 0, "the bot handed the turn back");
      assert.ok(calls < 1000, "the game does not end");
    }
    // Many turns, not one call for the whole game; and the bot played inside them.
    assert.ok(calls > 5, `${calls} calls played the game`);
    assert.ok(botAnswered > 0, "the bot moved inside the requests");
    const log = await c.getGameLog(gameId);
    const turnsOfSeat0 = log.events.filter((e) => e.turnStarted !== undefined && seatOf(e.turnStarted) === 0).length;
    // One call per turn of seat 0 (a round it began has no turnStarted of its own before it).
    const starts = log.events.filter((e) => e.roundStarted !== undefined && seatOf({ seat: e.roundStarted.starter }) === 0).length;
    assert.ok(calls >= turnsOfSeat0 && calls <= turnsOfSeat0 + starts, `${calls} calls for ${turnsOfSeat0} turns`);
  });

  test("it does nothing when it is not the seat's turn", async () => {
    const c = client();
    const { gameId, tokens, created } = await newGame(c, { people: 2, rounds: 1, seed: "js-play-turn-idle" });
    const waiting = created.game.currentSeat === 0 ? 1 : 0;
    const { moves, events, game } = await playTurn(c, gameId, tokens[waiting], greedyChooser);
    assert.deepEqual(moves, []);
    assert.deepEqual(events, []);
    assert.equal(game, undefined);
  });
});
