// The deal verifier (MT-FAIR-1): re-deal a finished game from its revealed
// seed with API.md's shuffle and check the public log (GetGameLog) against
// it. The same checks as the Python client's railyard_client/verify.py:
// the seed's SHA-256 is the commitment, every round's engine and (round 1,
// drawn) first player are the seed's, every tile a seat played was dealt to
// it or drawn by it from the front of the boneyard, and Mexican Train's
// round scores are the pips left in hand. SHA-256 is WebCrypto's
// (crypto.subtle: Node.js 20+ and browsers), so every function is async.
//
// JSON is the canonical proto3 mapping: zero values are absent ({"b": 5} is
// 0-5, a missing seat is seat 0), so every read below fills in the default.

const TWO64 = 1n << 64n;
const encoder = new TextEncoder();

const LINE_GAMES = new Set(["GAME_BLOCK", "GAME_DRAW", "GAME_ALL_FIVES", "GAME_BERGEN", "GAME_MATADOR"]);

/** The log does not follow from the seed. */
export class DealMismatchError extends Error {
  constructor(message) {
    super(message);
    this.name = "DealMismatchError";
  }
}

function subtle() {
  const found = globalThis.crypto?.subtle;
  if (!found) throw new Error("WebCrypto (crypto.subtle) is not available here");
  return found;
}

async function sha256(bytes) {
  return new Uint8Array(await subtle().digest("SHA-256", bytes));
}

/** Lowercase hex SHA-256 of the UTF-8 seed (GameView.seedSha256). */
export async function seedSha256(seed) {
  return [...(await sha256(encoder.encode(seed)))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// API.md step 1: SHA-256(seed 0x00 label 0x00 counter as 8-byte big-endian),
// read 8 bytes at a time as big-endian unsigned 64-bit integers.
class Words {
  constructor(seed, label) {
    const s = encoder.encode(seed);
    const l = encoder.encode(label);
    this.prefix = new Uint8Array(s.length + l.length + 2);
    this.prefix.set(s, 0);
    this.prefix.set(l, s.length + 1);
    this.counter = 0n;
    this.words = [];
  }

  async next() {
    if (this.words.length === 0) {
      const message = new Uint8Array(this.prefix.length + 8);
      message.set(this.prefix, 0);
      new DataView(message.buffer).setBigUint64(this.prefix.length, this.counter, false);
      this.counter += 1n;
      const digest = new DataView((await sha256(message)).buffer);
      for (let i = 0; i < 32; i += 8) this.words.push(digest.getBigUint64(i, false));
    }
    return this.words.shift();
  }
}

// API.md step 2: a uniform integer below n, rejecting x >= 2^64 - (2^64 mod n).
async function uniform(words, n) {
  const big = BigInt(n);
  const limit = TWO64 - (TWO64 % big);
  for (;;) {
    const x = await words.next();
    if (x < limit) return Number(x % big);
  }
}

/** API.md step 3: shuffle `items` in place (Fisher-Yates from the last index down); returns it. */
export async function shuffle(seed, label, items) {
  const words = new Words(seed, label);
  for (let i = items.length - 1; i >= 1; i--) {
    const j = await uniform(words, i + 1);
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

/** Every tile [a, b] (a <= b) of the double-`setMax` set, in canonical order. */
export function tiles(setMax) {
  const out = [];
  for (let a = 0; a <= setMax; a++) for (let b = a; b <= setMax; b++) out.push([a, b]);
  return out;
}

const key = (t) => `${Math.min(t.a ?? 0, t.b ?? 0)}-${Math.max(t.a ?? 0, t.b ?? 0)}`;
const name = ([a, b]) => `${a}-${b}`;
const int = (value) => Number(value ?? 0);

async function firstPlayer(seed, setMax, players, engine) {
  // MT-ENG-1 draw: the highest pip total starts; ties draw again (next k).
  let contenders = [...Array(players).keys()];
  for (let k = 1; ; k++) {
    const drawn = await shuffle(seed, `round:1:first-player:${k}`, tiles(setMax).filter((t) => name(t) !== engine));
    const totals = contenders.map((_, j) => drawn[j][0] + drawn[j][1]);
    const best = Math.max(...totals);
    contenders = contenders.filter((_, j) => totals[j] === best);
    if (contenders.length === 1) return contenders[0];
  }
}

function rounds(events) {
  // A round ends with roundEnded; the next deal's engine-search draws come
  // before its roundStarted.
  const out = [[]];
  for (const event of events) {
    if (event.gameEnded !== undefined) break;
    out[out.length - 1].push(event);
    if (event.roundEnded !== undefined) out.push([]);
  }
  return out.filter((r) => r.length > 0);
}

/**
 * Check a finished game's log (GetGameLog's JSON) against its revealed seed.
 * `viewSeedSha256`: the commitment a view showed during the game, if known.
 * Resolves to {rounds, tilesPlayed, tilesDrawn}; rejects with DealMismatchError.
 */
export async function verifyGame(log, { viewSeedSha256 } = {}) {
  const seed = log.seed;
  if (!seed) throw new DealMismatchError("the log has no seed: the game is not over");
  const digest = await seedSha256(seed);
  for (const [where, commitment] of [["log", log.seedSha256], ["view", viewSeedSha256]]) {
    if (commitment !== undefined && commitment !== digest) {
      throw new DealMismatchError(`SHA-256 of the seed is ${digest}, the ${where} committed to ${commitment}`);
    }
  }
  const events = log.events ?? [];
  const ended = events.find((e) => e.gameEnded !== undefined)?.gameEnded;
  if (!ended) throw new DealMismatchError("the log has no gameEnded event");
  if (ended.seed && ended.seed !== seed) throw new DealMismatchError("gameEnded reveals another seed than the log's");
  const players = (ended.totals ?? []).length;
  const rules = log.ruleset ?? {};
  const lineGame = LINE_GAMES.has(rules.game);
  const handSize = int(rules.handSize);
  const setMax = int(rules.setMax);
  const setAside = !lineGame && rules.enginePlacement !== "ENGINE_PLACEMENT_HOLDER_PLAYS";
  const report = { rounds: 0, tilesPlayed: 0, tilesDrawn: 0 };

  for (const [index, round] of rounds(events).entries()) {
    const number = index + 1;
    const started = round.find((e) => e.roundStarted !== undefined)?.roundStarted;
    if (!started || int(started.round) !== number) throw new DealMismatchError(`round ${number}: no roundStarted for it in the log`);
    let engine;
    if (!lineGame) {
      engine = key(started.engine ?? {});
      // MT-RND-1: counting down from the first engine (the top double without one).
      const first = rules.firstEngine !== undefined ? int(rules.firstEngine) : setMax;
      const expected = first - (number - 1);
      if (engine !== `${expected}-${expected}`) throw new DealMismatchError(`round ${number}: engine ${engine}, the rules give ${expected}`);
    }
    const order = await shuffle(seed, `round:${number}:deal`, tiles(setMax).filter((t) => !(setAside && name(t) === engine)));
    const hands = [...Array(players).keys()].map((s) => new Set(order.slice(s * handSize, (s + 1) * handSize).map(name)));
    const boneyard = order.slice(players * handSize).map(name);
    if (number === 1 && setAside && rules.firstPlayer === "FIRST_PLAYER_DRAW") {
      if (int(started.starter) !== (await firstPlayer(seed, setMax, players, engine))) {
        throw new DealMismatchError(`round 1: seat ${int(started.starter)} started, the seed says another`);
      }
    }
    for (const event of round) {
      if (event.tileDrawn !== undefined) {
        const seat = int(event.tileDrawn.seat);
        if (boneyard.length === 0) throw new DealMismatchError(`v${int(event.version)}: seat ${seat} drew from an empty boneyard`);
        const tile = boneyard.shift();
        if (event.tileDrawn.tile !== undefined && key(event.tileDrawn.tile) !== tile) {
          throw new DealMismatchError(`v${int(event.version)}: seat ${seat} drew ${key(event.tileDrawn.tile)}, not ${tile}`);
        }
        hands[seat].add(tile);
        report.tilesDrawn++;
      } else if (event.tilePlayed !== undefined) {
        const seat = int(event.tilePlayed.seat);
        const tile = key(event.tilePlayed.tile ?? {});
        if (!hands[seat].delete(tile)) {
          throw new DealMismatchError(`v${int(event.version)}: seat ${seat} played ${tile}, which the seed did not give it`);
        }
        report.tilesPlayed++;
      } else if (event.roundEnded !== undefined && !lineGame) {
        // MT-SC-1: a round scores the pips left in hand (0-0 worth its option).
        if (!setAside) for (const hand of hands) hand.delete(engine); // the holder placed it (MT-ENG-1)
        const left = hands.map((hand) =>
          [...hand].reduce((sum, t) => {
            const [a, b] = t.split("-").map(Number);
            return sum + (a === 0 && b === 0 ? int(rules.doubleBlankValue) : a + b);
          }, 0),
        );
        const scores = (event.roundEnded.scores ?? []).map(int);
        if (scores.join() !== left.join()) {
          throw new DealMismatchError(`round ${number}: scores ${scores}, the hands the seed gives leave ${left}`);
        }
      }
    }
    report.rounds++;
  }
  return report;
}
