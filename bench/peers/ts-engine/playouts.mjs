// Random playouts on the TypeScript Mexican Train engine of
// JamesAtIntegratnIO/mexican-train (server/game.ts), for bench/peers/engine.py.
//
//   node playouts.mjs --engine-dir DIR [--games N] [--players P] [--max M] [--seed S]
//                     [--warmup G] [--warmup-seconds S]
//
// That engine is not published on npm (its package.json is "private"), so it
// is read from a checkout (DIR holds its server/ and shared/); esbuild, pinned
// in package.json, bundles its TypeScript once, before anything is timed.
//
// Prints one JSON line: the actions taken (every call that changes the game:
// lay the engine, draw while hunting for it, draw, play, pass), the process
// CPU seconds they took (process.cpuUsage, user + system: V8's compiler and
// collector threads too), their ratio, and the warm-up that came first. One
// round per game (the first, with the double-`max` engine), as ours.
//
// The same game as ours, played the same way:
// - one legal-move search a turn, as our playout's one legal_moves() call:
//   the turn is decided from the phase, that search and the boneyard, never
//   through Game.prompt(), which would run the search a second time;
// - the marker comes off its train when the owner plays a tile on that train
//   (our MT-TR-4). The engine never lowers it by itself: Game.marker() is the
//   player's to call, so a harness that never calls it leaves every train
//   open once marked, which shortens the round (80 actions, not 90). Lowering
//   it is part of the play, not an action of its own, as in ours;
// - a warm-up long enough for V8's optimising compiler (the default: at least
//   3,000 rounds and 2 CPU-seconds; 20 rounds read ~15% slower), as ours
//   warms up before its clock starts.
import { build } from 'esbuild';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';

const { values: args } = parseArgs({
  options: {
    'engine-dir': { type: 'string' },
    games: { type: 'string', default: '200' },
    players: { type: 'string', default: '4' },
    max: { type: 'string', default: '12' },
    seed: { type: 'string', default: '1' },
    warmup: { type: 'string', default: '3000' },
    'warmup-seconds': { type: 'string', default: '2' },
  },
});

const engineDir = args['engine-dir'];
if (!engineDir) {
  console.error('playouts.mjs: --engine-dir DIR is required (a checkout of JamesAtIntegratnIO/mexican-train)');
  process.exit(2);
}
const numArg = (name, whole) => {
  const n = Number(args[name]);
  if (!(whole ? Number.isInteger(n) : Number.isFinite(n)) || n < 0) {
    console.error(`playouts.mjs: --${name} must be a ${whole ? 'whole ' : ''}number >= 0, got ${JSON.stringify(args[name])}`);
    process.exit(2);
  }
  return n;
};
const games = numArg('games', true);
const players = numArg('players', true);
const max = numArg('max', true);
const warmup = numArg('warmup', true);
const warmupSeconds = numArg('warmup-seconds', false);
const seed = numArg('seed', true);

// mulberry32: the engine shuffles and floats the engine double with
// Math.random and takes no generator, so a seeded one stands in for it; the
// harness's own choices come from the same stream.
function mulberry32(a) {
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const entry = resolve(engineDir, 'server', 'game.ts');
const outDir = mkdtempSync(join(tmpdir(), 'railyard-peer-'));
const bundle = join(outDir, 'game.mjs');
try {
  const result = await build({
    entryPoints: [entry], bundle: true, format: 'esm', platform: 'node',
    target: 'node20', write: false, logLevel: 'silent',
  });
  writeFileSync(bundle, result.outputFiles[0].contents);
} catch (err) {
  console.error(`playouts.mjs: cannot build ${entry}: ${err.message}`);
  process.exit(2);
}
const { Game } = await import(pathToFileURL(bundle).href);
rmSync(outDir, { recursive: true, force: true });

const seats = Array.from({ length: players }, (_, i) => ({ id: `p${i}`, name: `P${i}` }));

// Counted across a run, to show the game played: markers lowered (the rule
// is played), and the actions of the hunt for the engine (laying it, and the
// draws for it), which ours does not have (it sets the engine aside).
let markersDown = 0;
let huntActions = 0;

// One round to its end, every action chosen uniformly among the legal ones
// (a legal play when there is one: the engine refuses a draw or a pass then).
function playRound(rnd) {
  const g = new Game({ players: seats, game: 'mexicanTrain', max });
  const engineTile = `${g.engine}-${g.engine}`;
  let actions = 0;
  while (g.status === 'playing') {
    const p = g.current;
    if (g.phase === 'seeking') {
      // The hunt for the round's double: lay it if dealt or drawn, else draw.
      if (p.hand.includes(engineTile)) g.layEngine(p.id);
      else g.draw(p.id);
      huntActions++;
    } else {
      const moves = g.legalMoves(p);
      if (moves.length) {
        const m = moves[Math.floor(rnd() * moves.length)];
        g.play(p.id, m.tile, m.train, m.seg);
        // MT-TR-4: a tile on one's own train takes its marker off.
        if (m.train === p.id && g.status === 'playing' && g.train(p.id).open) {
          g.marker(p.id, false);
          markersDown++;
        }
      } else if (g.boneyard.length && !g.drewThisTurn) g.draw(p.id);
      else g.pass(p.id);
    }
    actions++;
  }
  return actions;
}

const cpu = () => {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1e6;
};

const rnd = mulberry32(seed);
Math.random = rnd;
// Warm-up: lets V8 optimise the hot paths before the clock starts (at least
// `warmup` rounds and `warmupSeconds` of CPU), as our side warms up first.
const warmStart = cpu();
let warmGames = 0;
let warmActions = 0;
while (warmGames < warmup || cpu() - warmStart < warmupSeconds) {
  warmActions += playRound(rnd);
  warmGames++;
}
const warmCpu = cpu() - warmStart;
markersDown = 0;
huntActions = 0;

const before = process.cpuUsage();
let actions = 0;
for (let i = 0; i < games; i++) actions += playRound(rnd);
const used = process.cpuUsage(before);
const cpuSeconds = (used.user + used.system) / 1e6;
console.log(JSON.stringify({
  engine: 'JamesAtIntegratnIO/mexican-train', node: process.version,
  games, players, max, seed, moves: actions, cpu_s: cpuSeconds,
  moves_per_cpu_s: cpuSeconds > 0 ? actions / cpuSeconds : 0,
  moves_per_round: games > 0 ? actions / games : 0,
  hunt_moves_per_round: games > 0 ? huntActions / games : 0,
  markers_down_per_round: games > 0 ? markersDown / games : 0,
  warmup_games: warmGames, warmup_cpu_s: warmCpu,
  warmup_moves_per_cpu_s: warmCpu > 0 ? warmActions / warmCpu : 0,
}));
