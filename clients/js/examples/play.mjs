#!/usr/bin/env node
// Plays a whole game against a Railyard service: this script plays every
// JavaScript seat with the greedy chooser, the service plays any bot seats,
// and a spectator's watch stream says whose turn it is.
//
//   node clients/js/examples/play.mjs --url http://127.0.0.1:8080 --players 3 \
//     [--bots greedy,random] [--preset standard] [--rounds 1] [--seed text]

import { parseArgs } from "node:util";
import { RailyardClient, RailyardError, eventKind, seatOf, tileText, versionOf } from "../src/index.js";
import { greedyChooser, playTurn } from "../src/bot.js";

const USAGE = `usage: play.mjs --url URL [--players N] [--bots LEVEL,...] [--preset NAME] [--rounds N] [--seed TEXT] [--quiet]
  --players  seats this script plays (default 3)
  --bots     server bot seats after them: random, greedy or expert (default none)
  --rounds   rounds to play (default: the preset's)`;

function fail(message) {
  console.error(`play.mjs: ${message}\n${USAGE}`);
  process.exit(2);
}

let args;
try {
  ({ values: args } = parseArgs({
    options: {
      url: { type: "string", default: "http://127.0.0.1:8080" },
      players: { type: "string", default: "3" },
      bots: { type: "string", default: "" },
      preset: { type: "string", default: "standard" },
      rounds: { type: "string" },
      seed: { type: "string" },
      quiet: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  }));
} catch (err) {
  fail(err.message);
}
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}

const people = Number(args.players);
if (!Number.isInteger(people) || people < 0) fail(`--players must be a whole number, not ${args.players}`);
const bots = args.bots ? args.bots.split(",").map((b) => `BOT_LEVEL_${b.trim().toUpperCase()}`) : [];
if (people === 0 && bots.length === 0) fail("no seats: give --players and/or --bots");
const log = args.quiet ? () => {} : (line) => console.log(line);

const client = new RailyardClient(args.url);
const ruleset = { preset: args.preset };
if (args.rounds !== undefined) ruleset.rounds = Number(args.rounds);
const request = {
  ruleset,
  players: [
    ...Array.from({ length: people }, (_, i) => ({ displayName: `JS ${i}` })),
    ...bots.map((bot, i) => ({ displayName: `Bot ${i} (${bot.slice(10).toLowerCase()})`, bot })),
  ],
};
if (args.seed !== undefined) request.seed = args.seed;

let movesPlayed = 0;

async function main() {
  const created = await client.createGame(request);
  const gameId = created.game.gameId;
  // A token for each of our people's seats; bot seats get none. seats[].seat is
  // omitted for seat 0 and seats itself when empty (proto3 JSON leaves zeros out).
  const tokens = new Map((created.seats ?? []).map((s) => [seatOf(s), s.token]));
  const names = created.game.players.map((p) => p.displayName);
  log(`game ${gameId}: ${names.join(", ")}; ${created.game.roundsTotal} round(s)`);

  async function play(seat) {
    // Only the seats this script owns; the server plays its bots itself.
    if (seat >= people) return;
    const { moves } = await playTurn(client, gameId, tokens.get(seat), greedyChooser);
    movesPlayed += moves.length;
    if (moves.length > 0) log(`  ${names[seat]}: ${moves.map((m) => m.notation).join(" ")}`);
  }

  let ended;
  // A spectator's stream: it shows every seat's turn, and no hand.
  for await (const event of client.watchGame(gameId)) {
    switch (eventKind(event)) {
      case "snapshot":
        // Bots may already have moved in CreateGame; whoever is to move now goes first.
        if (event.snapshot.currentSeat !== undefined) await play(event.snapshot.currentSeat);
        break;
      case "roundStarted":
        log(`round ${event.roundStarted.round}: engine ${tileText(event.roundStarted.engine)}`);
        break;
      case "roundEnded":
        log(`round ${event.roundEnded.round} over (${event.roundEnded.reason}): ${event.roundEnded.scores.join(" ")}`);
        break;
      case "turnStarted":
        await play(seatOf(event.turnStarted));
        break;
      case "gameEnded":
        ended = event;
        break;
      default:
        break;
    }
  }

  const final = await client.getGame(gameId);
  const totals = ended.gameEnded.totals ?? [];
  const winners = ended.gameEnded.winners ?? [];
  console.log(`game ${gameId} over at version ${versionOf(ended)} after ${movesPlayed} JS moves`);
  for (const [seat, name] of names.entries()) {
    console.log(`  ${name}: ${totals[seat] ?? 0}${winners.includes(seat) ? "  (winner)" : ""}`);
  }
  console.log(`winners: ${winners.map((s) => names[s]).join(", ")}; status ${final.status}`);
}

/** What the network said, in its own words (ECONNREFUSED, ENOTFOUND, ...). */
function networkCause(err) {
  let cause = err;
  while (cause?.cause !== undefined) cause = cause.cause;
  return cause?.code ?? cause?.message ?? String(cause);
}

try {
  await main();
} catch (err) {
  // One line for a person, not a stack trace: a service that is down (or a
  // wrong --url) is the common case.
  if (err instanceof RailyardError && err.reason === "NETWORK_ERROR") {
    console.error(`play.mjs: cannot reach the service at ${args.url} (${networkCause(err)})`);
    process.exit(1);
  }
  if (err instanceof RailyardError) {
    console.error(`play.mjs: the service at ${args.url} refused: ${err.code}${err.reason ? ` ${err.reason}` : ""}: ${err.message}`);
    process.exit(1);
  }
  throw err;
}
