// Random playouts on the TypeScript Mexican Train engine of
// JamesAtIntegratnIO/mexican-train (server/game.ts), for bench/peers/engine.py.
//
//   node playouts.mjs --engine-dir DIR [--games N] [--players P] [--max M] [--seed S]
//
// That engine is not published on npm (its package.json is "private"), so it
// is read from a checkout (DIR holds its server/ and shared/); esbuild, pinned
// in package.json, bundles its TypeScript once, before anything is timed.
//
// Prints one JSON line: the actions taken (every call that changes the game:
// lay the engine, draw while hunting for it, draw, play, pass), the process
// CPU seconds they took (process.cpuUsage, user + system), and their ratio.
// One round per game (the first, with the double-`max` engine), as ours.
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
    warmup: { type: 'string', default: '20' },
  },
});

const engineDir = args['engine-dir'];
if (!engineDir) {
  console.error('playouts.mjs: --engine-dir DIR is required (a checkout of JamesAtIntegratnIO/mexican-train)');
  process.exit(2);
}
const intArg = (name) => {
  const n = Number(args[name]);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`playouts.mjs: --${name} must be a whole number, got ${JSON.stringify(args[name])}`);
    process.exit(2);
  }
  return n;
};
const games = intArg('games');
const players = intArg('players');
const max = intArg('max');
const warmup = intArg('warmup');
const seed = intArg('seed');

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

// One round to its end, every action chosen uniformly among the legal ones
// (a legal play when there is one: the engine refuses a draw or a pass then).
function playRound(rnd) {
  const g = new Game({ players: seats, game: 'mexicanTrain', max });
  let actions = 0;
  while (g.status === 'playing') {
    const p = g.current;
    const prompt = g.prompt();
    if (prompt === 'engine') g.layEngine(p.id);
    else if (prompt === 'seek') g.draw(p.id);
    else if (prompt === 'play') {
      const moves = g.legalMoves(p);
      const m = moves[Math.floor(rnd() * moves.length)];
      g.play(p.id, m.tile, m.train, m.seg);
    } else if (prompt === 'draw') g.draw(p.id);
    else g.pass(p.id);
    actions++;
  }
  return actions;
}

const rnd = mulberry32(seed);
Math.random = rnd;
// Warm-up: lets V8 optimise the hot paths before the clock starts, as our
// side's first repeat warms CPython's caches.
for (let i = 0; i < warmup; i++) playRound(rnd);

const before = process.cpuUsage();
let actions = 0;
for (let i = 0; i < games; i++) actions += playRound(rnd);
const used = process.cpuUsage(before);
const cpuSeconds = (used.user + used.system) / 1e6;
console.log(JSON.stringify({
  engine: 'JamesAtIntegratnIO/mexican-train', node: process.version,
  games, players, max, seed, moves: actions, cpu_s: cpuSeconds,
  moves_per_cpu_s: cpuSeconds > 0 ? actions / cpuSeconds : 0,
}));
