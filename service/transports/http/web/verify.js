// Re-deals a finished game from its revealed seed (API.md "Deal shuffle",
// MT-FAIR-1) with WebCrypto SHA-256 and BigInt u64 words, and replays the
// public log (GetGameLog) against those deals: every tile a seat played must
// have been dealt or drawn to it, draws come from the front of the boneyard,
// each round's engine and starter follow from the deal, Mexican Train and
// Chicken Foot round scores are the pips left in each hand, and the seed's
// SHA-256 is the one the game showed from its start.
//
// An ES module with no DOM: the table imports it, and node (20+, which has
// globalThis.crypto.subtle) can run it too.

const TWO64 = 1n << 64n;
const encoder = new TextEncoder();

export async function sha256Hex(text) {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// API.md step 1: SHA-256(seed 0x00 label 0x00 counter[8, big-endian]) as u64 words.
class Words {
  constructor(seed, label) {
    const s = encoder.encode(seed);
    const l = encoder.encode(label);
    this.message = new Uint8Array(s.length + 1 + l.length + 1 + 8);
    this.message.set(s, 0);
    this.message.set(l, s.length + 1);
    this.counterAt = s.length + 1 + l.length + 1;
    this.counter = 0n;
    this.words = [];
  }

  async next() {
    if (this.words.length === 0) {
      new DataView(this.message.buffer).setBigUint64(this.counterAt, this.counter, false);
      this.counter += 1n;
      const digest = new DataView(await crypto.subtle.digest("SHA-256", this.message));
      for (let i = 0; i < 32; i += 8) this.words.push(digest.getBigUint64(i, false));
    }
    return this.words.shift();
  }
}

// API.md steps 2 and 3: Fisher-Yates from the last index down, rejection sampling.
export async function shuffle(seed, label, items) {
  const words = new Words(seed, label);
  for (let i = items.length - 1; i >= 1; i--) {
    const n = BigInt(i + 1);
    const limit = TWO64 - (TWO64 % n);
    let x;
    do x = await words.next();
    while (x >= limit);
    const j = Number(x % n);
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

/** The tiles of a double-`max` set in canonical order, as "a-b" with a <= b. */
export function canonical(max) {
  const tiles = [];
  for (let a = 0; a <= max; a++) for (let b = a; b <= max; b++) tiles.push(`${a}-${b}`);
  return tiles;
}

const key = (tile) => {
  const a = tile?.a ?? 0;
  const b = tile?.b ?? 0;
  return a <= b ? `${a}-${b}` : `${b}-${a}`;
};
const halves = (k) => k.split("-").map(Number);
const pips = (k) => halves(k)[0] + halves(k)[1];
const kindOf = (event) => Object.keys(event).find((k) => k !== "version");

/**
 * Checks a finished game's log (GetGameLog JSON) against the deals its seed
 * gives. `view` (optional): the caller's final GameView (hand counts, the
 * boneyard, the caller's own hand are compared too). `knownSha256`
 * (optional): the seedSha256 the game showed before it was over.
 * Returns { ok, problems: [sentence], rounds, leftovers }, where leftovers
 * lists, for each round that ended, the tiles left in each seat's hand
 * ({ round, reason, hands: [["a-b", ...] by seat] }): what the views never
 * show (MT-VIS-3, CL-VIS-1), known to everyone once the seed is out.
 */
export async function verifyDeals(log, view = null, knownSha256 = null) {
  const problems = [];
  const seed = log.seed;
  if (!seed) return { ok: false, problems: ["the log has no seed: the game is not over"], rounds: 0 };
  const sha = await sha256Hex(seed);
  if (sha !== log.seedSha256) problems.push(`SHA-256 of the seed is ${sha}, the log says ${log.seedSha256}`);
  if (knownSha256 && sha !== knownSha256)
    problems.push(`SHA-256 of the seed is ${sha}, the game showed ${knownSha256} before it ended`);

  const rules = log.ruleset ?? {};
  const game = rules.game ?? "GAME_MEXICAN_TRAIN";
  const trains = game === "GAME_MEXICAN_TRAIN" || game === "GAME_CHICKEN_FOOT";
  const setMax = rules.setMax ?? (trains ? 12 : 6);
  const canon = canonical(setMax);
  const players = view?.players?.length ?? seatsSeen(log.events);
  const handSize = rules.handSize;
  if (!handSize) {
    return { ok: false, problems: [...problems, "the ruleset does not say the hand size"], rounds: 0 };
  }
  const setAside = rules.enginePlacement !== "ENGINE_PLACEMENT_HOLDER_PLAYS";
  const firstEngine = rules.firstEngine ?? setMax;
  const drawFirst = (rules.firstPlayer ?? "FIRST_PLAYER_DRAW") === "FIRST_PLAYER_DRAW";
  const blankValue = rules.doubleBlankValue ?? 0;

  let round = 0;
  let hands = [];
  let boneyard = [];
  let needDeal = true;
  let starter = 0;
  let lastWinner = -1;
  let engineTile = null;
  const leftovers = [];

  const deal = async () => {
    round += 1;
    engineTile = trains ? `${firstEngine - (round - 1)}-${firstEngine - (round - 1)}` : null;
    const tiles = trains && setAside ? canon.filter((t) => t !== engineTile) : [...canon];
    await shuffle(seed, `round:${round}:deal`, tiles);
    if (tiles.length < players * handSize) {
      problems.push(`round ${round}: ${players} hands of ${handSize} do not fit in ${tiles.length} tiles`);
    }
    hands = [];
    for (let s = 0; s < players; s++) hands.push(new Set(tiles.slice(s * handSize, (s + 1) * handSize)));
    boneyard = tiles.slice(players * handSize);
    needDeal = false;
  };

  const expectedStarter = async () => {
    if (trains) {
      if (!setAside) {
        const holder = hands.findIndex((h) => h.has(engineTile));
        if (holder >= 0) hands[holder].delete(engineTile); // MT-ENG-1: placed, not played
        return holder;
      }
      if (round > 1) return (starter + 1) % players;
      if (!drawFirst) return 0;
      // MT-ENG-1 draw: contender j takes shuffled tile j; ties draw again.
      let contenders = [...Array(players).keys()];
      for (let k = 1; k < 1000; k++) {
        const drawn = await shuffle(seed, `round:1:first-player:${k}`, canon.filter((t) => t !== engineTile));
        const totals = contenders.map((_, j) => pips(drawn[j]));
        const best = Math.max(...totals);
        contenders = contenders.filter((_, j) => totals[j] === best);
        if (contenders.length === 1) return contenders[0];
      }
      return -1;
    }
    if (rules.opening === "OPENING_SEAT0_ANY") return 0;
    if (lastWinner >= 0) return lastWinner;
    // CL-START-1: the highest double; with none, the heaviest tile.
    for (let v = setMax; v >= 0; v--) {
      const seat = hands.findIndex((h) => h.has(`${v}-${v}`));
      if (seat >= 0) return seat;
    }
    let best = null;
    hands.forEach((h, seat) => {
      for (const t of h) {
        const [a, b] = halves(t);
        const rank = [a + b, b, seat];
        if (!best || compare(rank, best.rank) > 0) best = { rank, seat };
      }
    });
    return best ? best.seat : 0;
  };

  for (const event of log.events ?? []) {
    const kind = kindOf(event);
    const body = event[kind] ?? {};
    if (kind === "gameEnded") {
      if (body.seed !== undefined && body.seed !== seed) problems.push("gameEnded names another seed");
      continue;
    }
    if (needDeal) await deal();
    const seat = body.seat ?? 0;
    if (kind === "tileDrawn") {
      if (boneyard.length === 0) {
        problems.push(`round ${round}: seat ${seat} drew from an empty boneyard`);
        continue;
      }
      const tile = boneyard.shift();
      if (body.tile && key(body.tile) !== tile) {
        problems.push(`round ${round}: seat ${seat} drew ${key(body.tile)}, the deal gives ${tile}`);
      }
      hands[seat]?.add(tile);
    } else if (kind === "roundStarted") {
      if ((body.round ?? 0) !== round) problems.push(`round ${round} is logged as round ${body.round ?? 0}`);
      if (trains && key(body.engine) !== engineTile) {
        problems.push(`round ${round}: the engine is ${key(body.engine)}, the rules give ${engineTile}`);
      }
      const expected = await expectedStarter();
      const logged = body.starter ?? 0;
      if (expected !== logged) problems.push(`round ${round}: seat ${logged} started, the deal says seat ${expected}`);
      starter = logged;
    } else if (kind === "tilePlayed") {
      const tile = key(body.tile);
      if (!hands[seat]?.has(tile)) {
        problems.push(`round ${round}: seat ${seat} played ${tile}, which the deal and its draws never gave it`);
      } else {
        hands[seat].delete(tile);
      }
    } else if (kind === "roundEnded") {
      const scores = body.scores ?? [];
      leftovers.push({ round, reason: body.reason ?? "", hands: hands.map((h) => [...h].sort(byTile)) });
      if (trains) {
        hands.forEach((h, s) => {
          let left = 0;
          for (const t of h) left += t === "0-0" ? blankValue : pips(t);
          if ((scores[s] ?? 0) !== left) {
            problems.push(`round ${round}: seat ${s} scored ${scores[s] ?? 0}, the deal leaves ${left} in its hand`);
          }
        });
      } else {
        lastWinner = body.winner ?? -1;
        if (body.reason === "ROUND_END_REASON_DOMINO" && lastWinner >= 0 && hands[lastWinner]?.size !== 0) {
          problems.push(`round ${round}: seat ${lastWinner} dominoed with ${hands[lastWinner].size} tiles left by the deal`);
        }
      }
      needDeal = true;
    }
  }

  if (view && !needDeal) {
    (view.players ?? []).forEach((p, s) => {
      const count = p.handCount ?? 0;
      if (hands[s] && hands[s].size !== count) {
        problems.push(`seat ${s} holds ${count} tiles at the end, the deal leaves ${hands[s].size}`);
      }
    });
    if ((view.boneyardCount ?? 0) !== boneyard.length) {
      problems.push(`the boneyard holds ${view.boneyardCount ?? 0} tiles, the deal leaves ${boneyard.length}`);
    }
    const mine = view.viewerSeat ?? 0;
    if (view.hand && hands[mine]) {
      const shown = view.hand.map(key).sort().join(" ");
      const dealt = [...hands[mine]].sort().join(" ");
      if (shown !== dealt) problems.push(`your hand is ${shown}, the deal leaves ${dealt}`);
    }
  }
  return { ok: problems.length === 0, problems, rounds: round, leftovers };
}

/** Canonical order: by the lower half, then the higher. */
function byTile(x, y) {
  const [a, b] = halves(x);
  const [c, d] = halves(y);
  return a - c || b - d;
}

function compare(x, y) {
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return 0;
}

function seatsSeen(events) {
  let n = 0;
  for (const e of events ?? []) {
    const re = e.roundEnded;
    if (re?.scores) n = Math.max(n, re.scores.length);
  }
  return n;
}
