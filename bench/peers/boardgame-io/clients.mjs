// The load generator of bench/peers/service.py: players of the dominoes of
// game.mjs against a boardgame.io server (server.mjs), in a process of its own.
//
//   node clients.mjs --server URL --variant seat|match [--matches M]
//                    [--concurrency C] [--players P] [--seed S]
//
// First creates M matches through the lobby API (create, then a join per
// seat for its credentials) and prints {"event":"ready"}; then C matches are
// played at a time, each slot taking the next match when its match ends,
// every move chosen uniformly among the legal ones, one move in flight per
// match (the next only once the server's update arrived):
//
// - seat: one boardgame.io Client (boardgame.io/client with the SocketIO
//   transport) per seat, as real players: its own socket, synced as its
//   seat, moving when the state it is sent says it is its turn;
// - match: one socket.io connection per match drives every seat. The
//   boardgame.io Client cannot (one playerID per client; changing it
//   re-syncs), so this speaks its socket.io protocol: one "sync" as seat 0,
//   then an "update" per move with the moving seat's playerID and
//   credentials. It sees only seat 0's view, so it replays the match with
//   game.mjs's rules from the deal's seed (as bench/service.py scripts our
//   games) and checks the server's ends and current player against it.
//
// Sockets are websocket-only (no long-polling first) and one connection
// each (forceNew: socket.io-client would otherwise share one). On SIGTERM,
// or once every match is played, prints one JSON line and exits: moves sent,
// matches finished, errors, slots left without a match, sockets opened, its
// own CPU seconds.
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { Dominoes, GAME_NAME, RULES, deal, legalMoves, randomFrom } from './game.mjs';

const require = createRequire(import.meta.url);
const { Client } = require('boardgame.io/client');
const { SocketIO } = require('boardgame.io/multiplayer');
const { io } = require('socket.io-client');

const { values: args } = parseArgs({
  options: {
    server: { type: 'string' },
    variant: { type: 'string' },
    matches: { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '50' },
    players: { type: 'string', default: '4' },
    seed: { type: 'string', default: '1' },
  },
});
const fail = (message) => {
  console.error(`clients.mjs: ${message}`);
  process.exit(2);
};
const count = (name) => {
  const n = Number(args[name]);
  if (!Number.isInteger(n) || n < 1) fail(`--${name} must be a whole number >= 1, got ${args[name]}`);
  return n;
};
if (!args.server) fail('--server URL is required');
if (args.variant !== 'seat' && args.variant !== 'match') fail('--variant must be seat or match');
const server = args.server.replace(/\/$/, '');
const matchCount = count('matches');
const concurrency = count('concurrency');
const numPlayers = count('players');
const STALL_MS = 15000;
const socketOpts = { transports: ['websocket'], forceNew: true, reconnection: false };

const stats = { moves: 0, matches_done: 0, errors: 0, first_error: '', sockets: 0, idle_slots: 0 };

async function post(path, body) {
  const answer = await fetch(`${server}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!answer.ok) throw new Error(`POST ${path}: ${answer.status} ${await answer.text()}`);
  return answer.json();
}

async function createMatch(i) {
  const seed = `bgio-${args.seed}-${i}`;
  const { matchID } = await post(`/games/${GAME_NAME}/create`, {
    numPlayers,
    setupData: { seed },
    unlisted: true,
  });
  const credentials = [];
  for (let seat = 0; seat < numPlayers; seat++) {
    const joined = await post(`/games/${GAME_NAME}/${matchID}/join`, {
      playerID: String(seat),
      playerName: `bench ${seat}`,
    });
    credentials.push(joined.playerCredentials);
  }
  return { matchID, seed, credentials };
}

// Resolves with an error message, or null once the match is over; gives up
// on a match whose server stays silent for STALL_MS (a refused move gets no
// answer from boardgame.io, only a line on its stderr).
function watchdog(match, cleanup, resolve) {
  let timer = null;
  let settled = false;
  const finish = (error) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    cleanup();
    resolve(error);
  };
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => finish(`match ${match.matchID}: no update for ${STALL_MS} ms`), STALL_MS);
  };
  arm();
  return { finish, arm, settled: () => settled };
}

function playSeats(match) {
  return new Promise((resolve) => {
    const clients = [];
    const over = new Set();
    const watch = watchdog(match, () => clients.forEach((c) => c.stop()), resolve);
    match.credentials.forEach((credentials, seat) => {
      const playerID = String(seat);
      const rnd = randomFrom(`${match.seed}/${playerID}`);
      const client = Client({
        game: Dominoes,
        numPlayers,
        matchID: match.matchID,
        playerID,
        credentials,
        multiplayer: SocketIO({ server, socketOpts }),
        debug: false,
      });
      let answered = -1;
      client.subscribe((state) => {
        if (!state || watch.settled()) return;
        if (state.ctx.gameover !== undefined) {
          over.add(playerID);
          if (over.size === numPlayers) watch.finish(null);
          return;
        }
        if (state.ctx.currentPlayer !== playerID || state._stateID === answered) return;
        answered = state._stateID;
        watch.arm();
        const { G } = state;
        const options = legalMoves(G.hands[playerID], G.ends, G.boneyard, G.drew);
        const [name, moveArgs] = options[Math.floor(rnd() * options.length)];
        stats.moves += 1;
        // Not from inside the client's own dispatch.
        setImmediate(() => client.moves[name](...moveArgs));
      });
      clients.push(client);
      stats.sockets += 1;
      client.start();
    });
  });
}

function playDriven(match) {
  return new Promise((resolve) => {
    const G = deal(match.seed, numPlayers);
    let seat = '0';
    const rnd = randomFrom(`${match.seed}/driver`);
    const socket = io(`${server}/${GAME_NAME}`, socketOpts);
    stats.sockets += 1;
    const watch = watchdog(match, () => socket.close(), resolve);
    const step = (state) => {
      if (watch.settled()) return;
      watch.arm();
      if (state.ctx.gameover !== undefined) return watch.finish(null);
      const [left, right] = state.G.ends;
      if (state.ctx.currentPlayer !== seat || left !== G.ends[0] || right !== G.ends[1]) {
        return watch.finish(`match ${match.matchID}: the replay differs from the server at state ${state._stateID}`);
      }
      const options = legalMoves(G.hands[seat], G.ends, G.boneyard.length, G.drew);
      const [name, moveArgs] = options[Math.floor(rnd() * options.length)];
      const mover = seat;
      if (RULES[name](G, mover, ...moveArgs) === 'next') seat = String((Number(seat) + 1) % numPlayers);
      const credentials = match.credentials[Number(mover)];
      const action = { type: 'MAKE_MOVE', payload: { type: name, args: moveArgs, playerID: mover, credentials } };
      stats.moves += 1;
      socket.emit('update', action, state._stateID, match.matchID, mover);
    };
    socket.on('connect', () => socket.emit('sync', match.matchID, '0', match.credentials[0], numPlayers));
    socket.on('sync', (_matchID, syncInfo) => step(syncInfo.state));
    socket.on('update', (_matchID, state) => step(state));
    socket.on('connect_error', (err) => watch.finish(`match ${match.matchID}: ${err.message}`));
  });
}

const play = args.variant === 'seat' ? playSeats : playDriven;

function summary() {
  const cpu = process.cpuUsage();
  return JSON.stringify({ event: 'done', ...stats, cpu_s: (cpu.user + cpu.system) / 1e6 });
}
const exit = () => process.stdout.write(`${summary()}\n`, () => process.exit(0));
process.on('SIGTERM', exit);

const started = Date.now();
const queue = [];
for (let next = 0; next < matchCount; ) {
  const batch = [];
  for (let k = 0; k < 8 && next < matchCount; k++) batch.push(createMatch(next++));
  queue.push(...(await Promise.all(batch)));
}
console.log(JSON.stringify({ event: 'ready', matches: queue.length, setup_s: (Date.now() - started) / 1000 }));

async function slot() {
  for (let match = queue.shift(); match; match = queue.shift()) {
    const error = await play(match);
    if (error) {
      stats.errors += 1;
      if (!stats.first_error) stats.first_error = error;
    } else {
      stats.matches_done += 1;
    }
  }
  stats.idle_slots += 1;
  if (stats.idle_slots === concurrency) exit();
}
for (let c = 0; c < concurrency; c++) slot();
