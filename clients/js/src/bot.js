// Playing a seat from JavaScript: choose among the server's legal moves (the
// server's list is authoritative: a chooser picks one of them, never builds a
// move of its own) and apply it safely under retries and races.

import { RailyardError, newRequestId, tileOf, versionOf } from "./index.js";

const ACTION_ORDER = ["draw", "endTurn", "pass"];

function pips(legal) {
  const t = tileOf(legal.move.play.tile);
  return t.a + t.b;
}

/**
 * Plays the heaviest tile it may (MT-SC-1: pips left in hand count against
 * the seat), announcing the last tile when that is offered as a separate
 * legal move (MT-KNOCK-1); with no play, draws, else ends a chain first turn,
 * else passes. Ties keep the server's order, so the choice is deterministic.
 *
 * @param {Array<{move: object, notation: string}>} moves the legal moves
 * @returns {{move: object, notation: string} | undefined}
 */
export function greedyChooser(moves) {
  let best;
  for (const legal of moves) {
    if (legal.move.play === undefined) continue;
    if (
      best === undefined ||
      pips(legal) > pips(best) ||
      (pips(legal) === pips(best) && legal.move.play.announceLastTile && !best.move.play.announceLastTile)
    ) {
      best = legal;
    }
  }
  if (best !== undefined) return best;
  for (const action of ACTION_ORDER) {
    const found = moves.find((m) => m.move[action] !== undefined);
    if (found !== undefined) return found;
  }
  return undefined;
}

async function applyWithRetries(client, gameId, token, legal, expectedVersion, { networkRetries, retryDelayMs }) {
  // One id for every attempt of this move: if an attempt was applied but its
  // answer was lost, the retry gets that answer instead of moving twice.
  const requestId = newRequestId();
  for (let attempt = 0; ; attempt++) {
    try {
      return await client.applyMove(gameId, legal.move, { token, expectedVersion, requestId });
    } catch (err) {
      const transient = err instanceof RailyardError && (err.code === "UNAVAILABLE" || err.code === "RESOURCE_EXHAUSTED");
      if (!transient || attempt >= networkRetries) throw err;
      const wait = err.retryAfter !== undefined ? err.retryAfter * 1000 : retryDelayMs * 2 ** attempt;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/**
 * Plays one turn of `token`'s seat: moves until that turn ends (a turn can
 * take several moves: a draw then a play, a chain first turn, a double to
 * cover). It stops there even when server bots moved inside the last
 * request and it is this seat's turn again: call it once per turn. Does
 * nothing when it is not the seat's turn.
 *
 * Each move is sent with the version its legal list was read at
 * (expectedVersion) and a fresh requestId; a VERSION_MISMATCH (someone else
 * moved the game on) re-reads the legal moves and chooses again.
 *
 * @returns {Promise<{moves: Array<{move: object, notation: string}>, game: object | undefined, events: object[]}>}
 *   the moves applied, the seat's view after the last one, and every event they caused
 */
export async function playTurn(client, gameId, token, chooser = greedyChooser, options = {}) {
  const { maxMoves = 200, maxConflicts = 10, networkRetries = 3, retryDelayMs = 100 } = options;
  const played = [];
  const events = [];
  let game;
  let conflicts = 0;
  while (played.length < maxMoves) {
    const legal = await client.listLegalMoves(gameId, { token });
    const moves = legal.moves ?? [];
    if (moves.length === 0) break; // not this seat's turn (any more), or the game is over
    const choice = await chooser(moves, { gameId, version: versionOf(legal) });
    if (choice === undefined || choice === null) {
      throw new Error(`the chooser picked nothing from ${moves.length} legal moves`);
    }
    if (!moves.includes(choice)) {
      // The server decides what is legal; a chooser must return one of its entries.
      throw new Error(`the chooser returned a move that is not in the legal list: ${JSON.stringify(choice)}`);
    }
    let answer;
    try {
      answer = await applyWithRetries(client, gameId, token, choice, legal.version ?? "0", {
        networkRetries,
        retryDelayMs,
      });
    } catch (err) {
      if (err instanceof RailyardError && err.reason === "VERSION_MISMATCH" && conflicts < maxConflicts) {
        conflicts++;
        continue; // the game moved on under us: read it again
      }
      throw err;
    }
    played.push(choice);
    events.push(...(answer.events ?? []));
    game = answer.game;
    // The seat's turn is over once the move started another turn (a new
    // round's included) or ended the game. The view alone cannot say so:
    // server bots move inside the same request (API.md, Bots), so by the
    // answer it may be this seat's turn again, a new one.
    if (endsTheTurn(answer.events ?? []) || game?.currentSeat !== game?.viewerSeat) break;
  }
  return { moves: played, game, events };
}

/** True when a move's events end the mover's turn: every turn starts with turnStarted. */
function endsTheTurn(events) {
  return events.some((e) => e.turnStarted !== undefined || e.roundEnded !== undefined || e.gameEnded !== undefined);
}
