#!/usr/bin/env node
// Plays Railyard over gRPC with @grpc/grpc-js: a client stack independent of
// grpcio's C core (Node's own HTTP/2 from its `http2` module, HPACK from
// nghttp2, protobufjs messages), against service/transports/grpc/server.py.
//
//   node play.mjs 127.0.0.1:PORT PROTO_DIR [--max-header-bytes N] [--max-message-bytes M]
//
// PROTO_DIR is the repository's proto/ (railyard/v1/game_service.proto);
// N and M the server's Settings.max_header_bytes and max_body_bytes
// (defaults 4096 and 1048576). Each check below
// throws on failure: the script then prints `play.mjs: check failed: ...` on
// stderr and exits 1. On success it prints one JSON line (the summary that
// tests/test_interop_grpc_js.py reads) and exits 0.

import { createRequire } from 'node:module';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { fileURLToPath } from 'node:url';

import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const GRPC_JS_VERSION = require('@grpc/grpc-js/package.json').version;

// A whole run takes a few seconds; past this something hangs (the Python
// side's own timeout is 60 s: this one says which step it was in).
const OVERALL_TIMEOUT_MS = 50_000;
// A game of one round for two has well under this many moves.
const MAX_MOVES = 2_000;
const SEED = 'grpc-js-interop';
// grpc.StatusCode's names by number, for messages.
const CODE_NAMES = Object.fromEntries(Object.entries(grpc.status).map(([k, v]) => [v, k]));

class CheckFailed extends Error {}

function check(condition, what) {
  if (!condition) throw new CheckFailed(what);
}

function show(value) {
  return JSON.stringify(value, (_, v) => (Buffer.isBuffer(v) ? `<${v.length} bytes>` : v));
}

// ------------------------------------------------------------------ arguments

function parseArguments(argv) {
  const positional = [];
  let maxHeaderBytes = 4096;
  let maxMessageBytes = 1 << 20;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--max-header-bytes') {
      maxHeaderBytes = Number(argv[++i]);
    } else if (argv[i] === '--max-message-bytes') {
      maxMessageBytes = Number(argv[++i]);
    } else {
      positional.push(argv[i]);
    }
  }
  if (
    positional.length !== 2 ||
    !/^[^:]+:\d+$/.test(positional[0]) ||
    !(maxHeaderBytes > 0 && maxMessageBytes > 0)
  ) {
    process.stderr.write(
      'usage: node play.mjs HOST:PORT PROTO_DIR [--max-header-bytes N] [--max-message-bytes M]\n',
    );
    process.exit(2);
  }
  return { target: positional[0], protoDir: positional[1], maxHeaderBytes, maxMessageBytes };
}

// ------------------------------------------------------------------ protos

// Field names in lowerCamelCase, int64 as numbers (versions are small),
// enums by name, defaults filled in, and each oneof's set member named
// (move.action === 'play', event.kind === 'snapshot').
const LOAD = { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true };

function loadProtos(protoDir) {
  const railyard = grpc.loadPackageDefinition(
    protoLoader.loadSync('railyard/v1/game_service.proto', { ...LOAD, includeDirs: [protoDir] }),
  ).railyard.v1;
  const health = grpc.loadPackageDefinition(
    protoLoader.loadSync('grpc/health/v1/health.proto', {
      ...LOAD,
      includeDirs: [path.join(HERE, 'protos')],
    }),
  ).grpc.health.v1;
  // google.rpc.Status and ErrorInfo, for grpc-status-details-bin.
  const rpc = new protobuf.Root();
  rpc.resolvePath = (_, target) => path.join(HERE, 'protos', target);
  rpc.loadSync(['google/rpc/status.proto', 'google/rpc/error_details.proto']);
  return {
    GameService: railyard.GameService,
    Health: health.Health,
    Status: rpc.lookupType('google.rpc.Status'),
    ErrorInfo: rpc.lookupType('google.rpc.ErrorInfo'),
  };
}

// ------------------------------------------------------------------ calls

function bearer(token) {
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${token}`);
  return metadata;
}

// A unary call as a promise: its answer, or its grpc-js ServiceError.
function unary(client, method, request, { metadata = new grpc.Metadata(), ...options } = {}) {
  return new Promise((resolve, reject) => {
    client[method](request, metadata, options, (error, response) =>
      error ? reject(error) : resolve(response),
    );
  });
}

// The error a call must fail with.
async function failure(what, promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new CheckFailed(`${what}: the call succeeded`);
}

// A server stream's messages as they come, and its end: {code, details,
// error} once grpc-js reports its status (for a failed call, 'error' comes
// first, then 'status').
class Watch {
  constructor(call) {
    this.call = call;
    this.events = [];
    this.error = null;
    this.waiters = [];
    this.ended = new Promise((resolve) => {
      call.on('error', (error) => {
        this.error = error;
      });
      call.on('status', (status) => {
        resolve({ code: status.code, details: status.details, error: this.error });
        this.wake();
      });
    });
    call.on('data', (event) => {
      this.events.push(event);
      this.wake();
    });
  }

  wake() {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  // Waits until `count` events arrived (the stream's end or `ms` first: a failure).
  async until(count, what, ms = 10_000) {
    const deadline = Date.now() + ms;
    let ended = false;
    this.ended.then(() => {
      ended = true;
    });
    while (this.events.length < count) {
      check(!ended, `${what}: the stream ended after ${this.events.length} of ${count} events`);
      const left = deadline - Date.now();
      check(left > 0, `${what}: ${this.events.length} of ${count} events after ${ms} ms`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.events[count - 1];
  }
}

// `promise`'s value, or null if it takes more than `ms` (its timer cleared
// either way: a pending one would keep node from exiting).
async function within(promise, ms) {
  let timer;
  try {
    return await Promise.race([
      promise,
      new Promise((resolve) => {
        timer = setTimeout(() => resolve(null), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function watch(client, request, { metadata = new grpc.Metadata(), ...options } = {}) {
  return new Watch(client.WatchGame(request, metadata, options));
}

// ------------------------------------------------------------------ errors

// Checks a refusal as API.md defines it: the status code, grpc-message, and
// the google.rpc.Status in grpc-status-details-bin (same code and message,
// one ErrorInfo of domain railyard.dev with `reason`). The reason and
// ErrorInfo metadata are returned.
function decodeError(protos, what, error, wantCode, wantReason) {
  check(
    error.code === wantCode,
    `${what}: code ${CODE_NAMES[error.code]} (${show(error.details)}), not ${CODE_NAMES[wantCode]}`,
  );
  const raw = error.metadata.get('grpc-status-details-bin');
  check(raw.length === 1, `${what}: ${raw.length} grpc-status-details-bin trailers, not 1`);
  check(
    Buffer.isBuffer(raw[0]) && raw[0].length > 0,
    `${what}: grpc-status-details-bin is ${show(raw[0])}, not bytes`,
  );
  check(
    raw[0].includes(Buffer.from(wantReason)),
    `${what}: grpc-status-details-bin does not contain ${wantReason}`,
  );
  const status = protos.Status.decode(raw[0]);
  check(status.code === wantCode, `${what}: google.rpc.Status code ${status.code}`);
  check(
    status.message === error.details,
    `${what}: google.rpc.Status message ${show(status.message)}, ` +
      `grpc-message ${show(error.details)}`,
  );
  check(status.details.length === 1, `${what}: ${status.details.length} details, not 1`);
  const [detail] = status.details;
  check(
    detail.type_url === 'type.googleapis.com/google.rpc.ErrorInfo',
    `${what}: a detail of type ${detail.type_url}`,
  );
  const info = protos.ErrorInfo.toObject(protos.ErrorInfo.decode(detail.value), { defaults: true });
  check(info.domain === 'railyard.dev', `${what}: ErrorInfo domain ${show(info.domain)}`);
  check(info.reason === wantReason, `${what}: ErrorInfo reason ${info.reason}, not ${wantReason}`);
  return { code: CODE_NAMES[error.code], reason: info.reason, metadata: info.metadata };
}

// The call must fail as decodeError checks: its grpc-message (details),
// ErrorInfo metadata, and `CODE REASON` for the summary.
async function refusal(protos, what, promise, wantCode, wantReason) {
  const error = await failure(what, promise);
  const { code, reason, metadata } = decodeError(protos, what, error, wantCode, wantReason);
  return { details: error.details, metadata, summary: `${code} ${reason}` };
}

// ------------------------------------------------------------------ the checks

function checkEventVersions(events, after, what) {
  let last = after;
  for (const event of events) {
    check(
      event.version >= last && event.version > after,
      `${what}: version ${event.version} after ${last} (snapshot ${after})`,
    );
    last = event.version;
  }
}

async function listRulesets(game) {
  const { rulesets } = await unary(game, 'ListRulesets', {});
  check(Array.isArray(rulesets) && rulesets.length > 0, `ListRulesets: ${show(rulesets)}`);
  const presets = rulesets.map((r) => r.preset);
  check(presets.includes('standard') && presets.includes('pagat'), `presets ${show(presets)}`);
  return presets;
}

async function createGame(game, players, options = {}) {
  const created = await unary(
    game,
    'CreateGame',
    {
      ruleset: { preset: 'pagat', rounds: 1 },
      players: players.map((name) => ({ displayName: name })),
      seed: SEED,
    },
    options,
  );
  const view = created.game;
  check(/^\w+$/.test(view.gameId), `CreateGame: game id ${show(view.gameId)}`);
  check(view.version === 0, `CreateGame: version ${view.version}`);
  check(view.status === 'GAME_STATUS_IN_PROGRESS', `CreateGame: status ${view.status}`);
  check(view.players.length === players.length, `CreateGame: ${view.players.length} players`);
  check(view.seedFromCaller === true && view.seed === '', 'CreateGame: the seed is hidden');
  check(
    created.seats.map((s) => s.seat).join() === players.map((_, i) => i).join(),
    `CreateGame: seats ${show(created.seats.map((s) => s.seat))}`,
  );
  check(
    created.seats.every((s) => s.token.length >= 32),
    'CreateGame: short seat tokens',
  );
  const tokens = Object.fromEntries(created.seats.map((s) => [s.seat, s.token]));
  return { view, tokens };
}

// A whole game, the seat to move playing its last legal move (as
// tests/test_grpc.py does), with a spectator's WatchGame open from before the
// first move: it must see every public event, in version order, and end OK
// with the game.
async function playWholeGame(protos, game) {
  const { view: created, tokens } = await createGame(game, ['Ada', 'Grace']);
  const gameId = created.gameId;
  const watcher = watch(game, { gameId }); // afterVersion absent: live from the snapshot on
  const snapshot = await watcher.until(1, 'WatchGame snapshot');
  check(snapshot.kind === 'snapshot', `WatchGame's first event is ${snapshot.kind}`);
  check(snapshot.version === 0 && snapshot.snapshot.gameId === gameId, 'the snapshot is v0');
  check(snapshot.snapshot.viewerSeat === undefined, "a spectator's snapshot names no seat");

  let view = created;
  let moves = 0;
  const notations = [];
  while (view.status !== 'GAME_STATUS_FINISHED') {
    check(moves < MAX_MOVES, `the game is not over after ${moves} moves`);
    const seat = view.currentSeat;
    check(seat in tokens, `current seat ${seat}`);
    const metadata = bearer(tokens[seat]);
    const legal = await unary(game, 'ListLegalMoves', { gameId }, { metadata });
    check(legal.moves.length > 0, `no legal move for seat ${seat} at version ${view.version}`);
    check(
      legal.version === view.version,
      `legal moves at ${legal.version}, view at ${view.version}`,
    );
    const pick = legal.moves[legal.moves.length - 1];
    const applied = await unary(
      game,
      'ApplyMove',
      { gameId, move: pick.move, expectedVersion: legal.version },
      { metadata },
    );
    check(
      applied.game.version >= view.version + 1,
      `ApplyMove ${pick.notation}: version ${applied.game.version} after ${view.version}`,
    );
    check(applied.game.viewerSeat === seat, `ApplyMove answered seat ${applied.game.viewerSeat}`);
    checkEventVersions(applied.events, view.version, `ApplyMove ${pick.notation}'s events`);
    check(applied.events.length > 0, `ApplyMove ${pick.notation}: no event`);
    notations.push(pick.notation);
    view = applied.game;
    moves++;
  }
  check(view.seed === SEED && view.winners.length > 0, 'the finished game shows seed and winners');

  // The watch ends by itself with the game: status OK, after the game_ended event.
  const end = await within(watcher.ended, 10_000);
  check(
    end !== null,
    `WatchGame did not end within 10 s of the game (${watcher.events.length} events)`,
  );
  check(end.code === grpc.status.OK, `WatchGame ended ${CODE_NAMES[end.code]}: ${end.details}`);
  const live = watcher.events.slice(1);
  checkEventVersions(live, 0, 'WatchGame');
  check(
    live.every((e) => e.kind !== 'snapshot'),
    'a second snapshot',
  );
  check(live.at(-1)?.kind === 'gameEnded', `the watch's last event is ${live.at(-1)?.kind}`);
  check(live.at(-1).version === view.version, 'the watch ends at the final version');

  // The same events as the public log past version 0 (the deal's, which
  // the snapshot stands for), one for one.
  const log = await unary(game, 'GetGameLog', { gameId });
  check(log.seed === SEED, `GetGameLog seed ${show(log.seed)}`);
  const logged = log.events.filter((e) => e.version > 0);
  const differs = logged.findIndex((e, i) => !isDeepStrictEqual(e, live[i]));
  check(
    differs === -1 && live.length === logged.length,
    `WatchGame's ${live.length} events are not GetGameLog's ${logged.length} past version 0: ` +
      `event ${differs}: ${show(live[differs])} vs ${show(logged[differs])}`,
  );
  return {
    gameId,
    moves,
    finalVersion: view.version,
    winners: view.winners,
    watchEvents: live.length,
    watchEnd: CODE_NAMES[end.code],
    firstMoves: notations.slice(0, 5),
  };
}

// A second game, where one move is played and then nothing more happens: the
// refusals, a seat's watch cancelled by the client, a watch past its deadline.
async function errorsCancelAndDeadline(protos, game) {
  const { view, tokens } = await createGame(game, ['Edsger', 'Barbara']);
  const gameId = view.gameId;
  const mover = view.currentSeat;
  const other = 1 - mover;
  const metadata = bearer(tokens[mover]);
  const legal = await unary(game, 'ListLegalMoves', { gameId }, { metadata });
  const applied = await unary(
    game,
    'ApplyMove',
    { gameId, move: legal.moves[0].move, expectedVersion: 0 },
    { metadata },
  );
  const version = applied.game.version;
  check(version >= 1, `the first move left version ${version}`);
  const draw = { draw: {} };
  const versionNow = async () => (await unary(game, 'GetGame', { gameId })).version;

  const errors = {};
  const { ABORTED, NOT_FOUND, UNAUTHENTICATED, INVALID_ARGUMENT, FAILED_PRECONDITION } =
    grpc.status;
  const toMove = applied.game.currentSeat;
  const asMover = { metadata: bearer(tokens[toMove]) };
  // A stale expectedVersion: ABORTED, nothing applied.
  const stale = await refusal(
    protos,
    'ApplyMove at a stale expectedVersion',
    unary(game, 'ApplyMove', { gameId, move: draw, expectedVersion: 0 }, asMover),
    ABORTED,
    'VERSION_MISMATCH',
  );
  check(
    stale.metadata.expectedVersion === '0' && stale.metadata.currentVersion === String(version),
    `VERSION_MISMATCH metadata ${show(stale.metadata)}`,
  );
  check(
    stale.details === `expectedVersion 0 is not the game's version ${version}`,
    `VERSION_MISMATCH message ${show(stale.details)}`,
  );
  errors.staleVersion = stale.summary;
  // A game that does not exist.
  const missingId = '0'.repeat(20);
  const missing = await refusal(
    protos,
    'GetGame of no game',
    unary(game, 'GetGame', { gameId: missingId }),
    NOT_FOUND,
    'GAME_NOT_FOUND',
  );
  check(missing.metadata.gameId === missingId, `GAME_NOT_FOUND metadata ${show(missing.metadata)}`);
  check(missing.details === `no game '${missingId}'`, `GAME_NOT_FOUND ${show(missing.details)}`);
  errors.noGame = missing.summary;
  // grpc-message is percent-encoded UTF-8: a game id with %, spaces and
  // characters outside ASCII comes back as it went, in the message and in
  // the google.rpc.Status alike.
  const oddId = 'nö%41 gäme 😀';
  const odd = await refusal(
    protos,
    'GetGame of an odd id',
    unary(game, 'GetGame', { gameId: oddId }),
    NOT_FOUND,
    'GAME_NOT_FOUND',
  );
  check(odd.details === `no game '${oddId}'`, `grpc-message of an odd id: ${show(odd.details)}`);
  errors.oddId = odd.summary;
  // A move with no seat token.
  errors.noToken = (
    await refusal(
      protos,
      'ApplyMove without a token',
      unary(game, 'ApplyMove', { gameId, move: draw }),
      UNAUTHENTICATED,
      'UNAUTHENTICATED',
    )
  ).summary;
  // A malformed move (no action set).
  errors.emptyMove = (
    await refusal(
      protos,
      'ApplyMove of an empty move',
      unary(game, 'ApplyMove', { gameId, move: {} }, asMover),
      INVALID_ARGUMENT,
      'INVALID_ARGUMENT',
    )
  ).summary;
  // Not this seat's turn.
  const notYours = toMove === mover ? other : mover;
  errors.outOfTurn = (
    await refusal(
      protos,
      'ApplyMove out of turn',
      unary(game, 'ApplyMove', { gameId, move: draw }, { metadata: bearer(tokens[notYours]) }),
      FAILED_PRECONDITION,
      'NOT_YOUR_TURN',
    )
  ).summary;
  check((await versionNow()) === version, 'a refused move changed the game');

  // A seat's watch (its bearer token on a server stream), cancelled by the client.
  const seatWatch = watch(game, { gameId, afterVersion: 0 }, { metadata: bearer(tokens[toMove]) });
  const seatSnapshot = await seatWatch.until(1, "a seat's WatchGame");
  check(seatSnapshot.kind === 'snapshot', `a seat's watch began with ${seatSnapshot.kind}`);
  check(seatSnapshot.snapshot.viewerSeat === toMove, "the seat's snapshot is its own view");
  check(seatSnapshot.snapshot.hand.length > 0, "the seat's snapshot shows its hand");
  // afterVersion 0: every event since the start follows the snapshot (the first move's).
  const replayed = applied.events.length;
  await seatWatch.until(1 + replayed, 'the events after version 0');
  checkEventVersions(seatWatch.events.slice(1), 0, "the seat's watch");
  seatWatch.call.cancel();
  const cancelled = await within(seatWatch.ended, 10_000);
  check(cancelled !== null, 'a cancelled watch did not end within 10 s');
  check(
    cancelled.code === grpc.status.CANCELLED && cancelled.error?.code === grpc.status.CANCELLED,
    `a cancelled watch ended ${CODE_NAMES[cancelled.code]}: ${cancelled.details}`,
  );
  // The channel goes on serving after the reset.
  check((await versionNow()) === version, 'GetGame after the cancel');

  // A watch on this quiet game, with a deadline of 300 ms.
  const begun = Date.now();
  const late = watch(game, { gameId }, { deadline: Date.now() + 300 });
  const lateSnapshot = await late.until(1, 'a watch with a deadline');
  check(lateSnapshot.kind === 'snapshot', `the deadline watch began with ${lateSnapshot.kind}`);
  const expired = await within(late.ended, 10_000);
  const took = Date.now() - begun;
  check(expired !== null, 'a watch with a 300 ms deadline had not ended after 10 s');
  check(
    expired.code === grpc.status.DEADLINE_EXCEEDED,
    `a watch past its deadline ended ${CODE_NAMES[expired.code]}: ${expired.details}`,
  );
  check(late.events.length === 1, `the quiet game's watch had ${late.events.length} events`);
  check(took >= 250 && took < 5_000, `the 300 ms deadline ended the watch after ${took} ms`);
  // grpc-js's own timer ends the call above at its deadline, at the moment
  // the server's would: to see the server's end a call at its deadline, the
  // grpc-timeout header goes as metadata, with no deadline in grpc-js.
  const serverBegun = Date.now();
  const timeout = new grpc.Metadata();
  timeout.set('grpc-timeout', '300m');
  const timed = watch(game, { gameId }, { metadata: timeout });
  check((await timed.until(1, 'a watch with grpc-timeout')).kind === 'snapshot', 'its snapshot');
  const timedOut = await within(timed.ended, 10_000);
  const serverTook = Date.now() - serverBegun;
  check(timedOut !== null, 'a watch with grpc-timeout 300m had not ended after 10 s');
  check(
    timedOut.code === grpc.status.DEADLINE_EXCEEDED && timedOut.details === 'Deadline Exceeded',
    `the server's deadline ended a watch ${CODE_NAMES[timedOut.code]}: ${show(timedOut.details)}`,
  );
  check(
    serverTook >= 250 && serverTook < 5_000,
    `grpc-timeout 300m ended it after ${serverTook} ms`,
  );
  // A unary call with a deadline it meets (grpc-timeout parsed, not refused).
  const inTime = await unary(game, 'GetGame', { gameId }, { deadline: Date.now() + 5_000 });
  check(inTime.version === version, 'GetGame with a 5 s deadline');

  return {
    errors,
    cancelled: CODE_NAMES[cancelled.code],
    deadline: {
      code: CODE_NAMES[expired.code],
      // Whose timer ended it: grpc-js's own ("Deadline exceeded after
      // 0.3s ...") or the server's ("Deadline Exceeded"): they race.
      details: expired.details,
      ms: took,
    },
    serverDeadline: { code: CODE_NAMES[timedOut.code], details: timedOut.details, ms: serverTook },
  };
}

// The server's side of flow control: a channel whose streams' windows are
// 1 KiB (grpc-js's grpc-node.flow_control_window: SETTINGS_INITIAL_WINDOW_SIZE),
// so that every answer above it waits for Node's WINDOW_UPDATEs. The whole
// game's log, and a watch replaying it from version 0, must come whole and
// equal to what the default window gave. Then many calls at once on one
// connection (streams multiplexed).
async function smallWindowAndMultiplexing(protos, target, game, gameId) {
  const window = 1024;
  const client = new protos.GameService(target, grpc.credentials.createInsecure(), {
    'grpc-node.flow_control_window': window,
  });
  try {
    const log = await unary(game, 'GetGameLog', { gameId });
    const logBytes = protos.GameService.service.GetGameLog.responseSerialize(log).length;
    check(logBytes > 2 * window, `the log is only ${logBytes} bytes`);
    const slow = await unary(client, 'GetGameLog', { gameId });
    check(isDeepStrictEqual(slow, log), `GetGameLog through a ${window} B window differs`);
    const replay = watch(client, { gameId, afterVersion: 0 });
    const end = await within(replay.ended, 10_000);
    check(end !== null, `a replaying watch through a ${window} B window did not end`);
    check(
      end.code === grpc.status.OK,
      `the replaying watch ended ${CODE_NAMES[end.code]}: ${end.details}`,
    );
    const replayed = replay.events.slice(1);
    const logged = log.events.filter((e) => e.version > 0);
    check(
      replay.events[0]?.kind === 'snapshot' && isDeepStrictEqual(replayed, logged),
      `the replaying watch's ${replayed.length} events are not the log's ${logged.length}`,
    );
    // Many calls in flight at once on one connection.
    const many = 50;
    const views = await Promise.all(
      Array.from({ length: many }, () => unary(client, 'GetGame', { gameId })),
    );
    check(
      views.every((v) => v.gameId === gameId),
      `${many} concurrent GetGames`,
    );
    return { window, logBytes, replayedEvents: replayed.length, concurrentCalls: many };
  } finally {
    client.close();
  }
}

async function healthCheck(protos, target) {
  const health = new protos.Health(target, grpc.credentials.createInsecure());
  try {
    const answers = {};
    for (const service of ['', 'railyard.v1.GameService']) {
      const { status } = await unary(health, 'Check', { service });
      check(status === 'SERVING', `Health.Check(${show(service)}): ${status}`);
      answers[service || '(server)'] = status;
    }
    const unknown = await failure(
      'Health.Check of no service',
      unary(health, 'Check', { service: 'nope.Nope' }),
    );
    check(
      unknown.code === grpc.status.NOT_FOUND,
      `Health.Check of no service: ${CODE_NAMES[unknown.code]}`,
    );
    // Health.Watch: SERVING at once, then the client cancels.
    const watching = health.Watch({ service: '' });
    const first = await new Promise((resolve, reject) => {
      watching.once('data', resolve);
      watching.once('error', reject);
    });
    check(first.status === 'SERVING', `Health.Watch said ${first.status}`);
    watching.on('error', () => {});
    watching.cancel();
    answers.watch = first.status;
    // Health.List (an empty request; its answer's bytes are not read here).
    const identity = (buffer) => buffer;
    await new Promise((resolve, reject) =>
      health.makeUnaryRequest(
        '/grpc.health.v1.Health/List',
        identity,
        identity,
        Buffer.alloc(0),
        (error, answer) => (error ? reject(error) : resolve(answer)),
      ),
    );
    answers['/grpc.health.v1.Health/List'] = 'OK';
    // A method the server never had.
    for (const method of ['/railyard.v1.GameService/Nope']) {
      const missing = await failure(
        method,
        new Promise((resolve, reject) =>
          health.makeUnaryRequest(method, identity, identity, Buffer.alloc(0), (error, answer) =>
            error ? reject(error) : resolve(answer),
          ),
        ),
      );
      check(
        missing.code === grpc.status.UNIMPLEMENTED,
        `${method}: ${CODE_NAMES[missing.code]} ${show(missing.details)}`,
      );
      answers[method] = CODE_NAMES[missing.code];
    }
    return answers;
  } finally {
    health.close();
  }
}

// Compressed requests: every message grpc-js sends on these channels is
// compressed (grpc-encoding gzip, deflate); the server answers identity. A
// message that inflates past the server's max_body_bytes (a few KiB on the
// wire) is refused RESOURCE_EXHAUSTED, and the connection serves on.
async function compressedCalls(protos, target, maxMessageBytes) {
  const results = {};
  for (const [name, algorithm] of [
    ['gzip', 2],
    ['deflate', 1],
  ]) {
    const client = new protos.GameService(target, grpc.credentials.createInsecure(), {
      'grpc.default_compression_algorithm': algorithm,
      'grpc.default_compression_level': 2,
    });
    try {
      const { view, tokens } = await createGame(client, [`${name} one`, `${name} two`]);
      const metadata = bearer(tokens[view.currentSeat]);
      const legal = await unary(client, 'ListLegalMoves', { gameId: view.gameId }, { metadata });
      const applied = await unary(
        client,
        'ApplyMove',
        { gameId: view.gameId, move: legal.moves[0].move, expectedVersion: legal.version },
        { metadata },
      );
      check(applied.game.version >= 1, `${name}: ApplyMove left version ${applied.game.version}`);
      const stale = await failure(
        `${name}: a stale ApplyMove`,
        unary(
          client,
          'ApplyMove',
          { gameId: view.gameId, move: legal.moves[0].move, expectedVersion: 0 },
          { metadata },
        ),
      );
      decodeError(
        protos,
        `${name}: a stale ApplyMove`,
        stale,
        grpc.status.ABORTED,
        'VERSION_MISMATCH',
      );
      const bomb = await failure(
        `${name}: a message inflating past the limit`,
        unary(client, 'CreateGame', {
          players: [{ displayName: 'Bomb' }, { displayName: 'Bomb' }],
          seed: 'b'.repeat(2 * maxMessageBytes),
        }),
      );
      check(
        bomb.code === grpc.status.RESOURCE_EXHAUSTED &&
          /Received message larger than max/.test(bomb.details),
        `${name}: a message inflating past the limit: ` +
          `${CODE_NAMES[bomb.code]} ${show(bomb.details)}`,
      );
      const after = await unary(client, 'GetGame', { gameId: view.gameId });
      check(after.version === applied.game.version, `${name}: GetGame after the refusal`);
      results[name] = {
        gameId: view.gameId,
        version: applied.game.version,
        inflated: CODE_NAMES[bomb.code],
      };
    } finally {
      client.close();
    }
  }
  return results;
}

// Metadata past the server's max_header_bytes (its HTTP/2
// SETTINGS_MAX_HEADER_LIST_SIZE, counted as RFC 9113 does: name + value +
// 32 a field). Node's http2 does not hold back a header list past the
// peer's advertised size (it sends it), so what the server does is seen:
// the call is refused RESOURCE_EXHAUSTED with no grpc-status-details-bin (a
// transport refusal), whether just over the limit or far past it, and the
// client's next call is served (on the same connection or a new one).
// And a message past max_body_bytes: refused RESOURCE_EXHAUSTED while
// grpc-js is still sending it; grpc-js must report the status, not a reset.
async function limits(protos, target, maxHeaderBytes, maxMessageBytes) {
  const client = new protos.GameService(target, grpc.credentials.createInsecure());
  const padded = (size) => {
    const metadata = new grpc.Metadata();
    metadata.set('x-padding', 'p'.repeat(size));
    return { metadata };
  };
  try {
    const under = Math.floor(maxHeaderBytes / 2);
    const fine = await unary(client, 'ListRulesets', {}, padded(under));
    check(fine.rulesets.length > 0, `${under} bytes of metadata`);

    const over = Math.floor(maxHeaderBytes * 1.5);
    const refused = await failure(
      `${over} bytes of metadata`,
      unary(client, 'ListRulesets', {}, padded(over)),
    );
    check(
      refused.code === grpc.status.RESOURCE_EXHAUSTED,
      `${over} bytes of metadata: ${CODE_NAMES[refused.code]} ${show(refused.details)}`,
    );
    check(
      refused.metadata.get('grpc-status-details-bin').length === 0,
      'a transport refusal with status details',
    );
    const after = await unary(client, 'ListRulesets', {});
    check(after.rulesets.length > 0, 'the connection serves on after a refused header list');

    const far = maxHeaderBytes * 5;
    const bomb = await failure(
      `${far} bytes of metadata`,
      unary(client, 'ListRulesets', {}, padded(far)),
    );
    check(
      bomb.code === grpc.status.RESOURCE_EXHAUSTED,
      `${far} bytes of metadata: ${CODE_NAMES[bomb.code]} ${show(bomb.details)}`,
    );
    const again = await unary(client, 'ListRulesets', {});
    check(again.rulesets.length > 0, 'a new connection serves after GOAWAY');

    const big = 3 * maxMessageBytes;
    const tooBig = await failure(
      `a ${big}-byte message`,
      unary(client, 'CreateGame', { players: [{ displayName: 'Big' }], seed: 's'.repeat(big) }),
    );
    check(
      tooBig.code === grpc.status.RESOURCE_EXHAUSTED &&
        /Received message larger than max \(\d+ vs\. \d+\)$/.test(tooBig.details) &&
        tooBig.details.endsWith(` vs. ${maxMessageBytes})`),
      `a ${big}-byte message: ${CODE_NAMES[tooBig.code]} ${show(tooBig.details)}`,
    );
    const still = await unary(client, 'ListRulesets', {});
    check(still.rulesets.length > 0, 'the connection serves on after a refused message');
    return {
      metadata: {
        [under]: 'OK',
        [over]: CODE_NAMES[refused.code],
        [far]: CODE_NAMES[bomb.code],
      },
      message: { [big]: CODE_NAMES[tooBig.code] },
    };
  } finally {
    client.close();
  }
}

async function main() {
  const { target, protoDir, maxHeaderBytes, maxMessageBytes } = parseArguments(
    process.argv.slice(2),
  );
  const protos = loadProtos(protoDir);
  const game = new protos.GameService(target, grpc.credentials.createInsecure());
  const summary = { ok: false, grpcJs: GRPC_JS_VERSION, node: process.version, target };
  let step = 'start';
  const timer = setTimeout(() => {
    process.stderr.write(`play.mjs: timed out after ${OVERALL_TIMEOUT_MS} ms in step ${step}\n`);
    process.exit(1);
  }, OVERALL_TIMEOUT_MS);
  try {
    step = 'ListRulesets';
    summary.rulesets = await listRulesets(game);
    step = 'a whole game';
    summary.game = await playWholeGame(protos, game);
    step = 'a small window';
    summary.flowControl = await smallWindowAndMultiplexing(
      protos,
      target,
      game,
      summary.game.gameId,
    );
    step = 'errors, cancel and deadline';
    Object.assign(summary, await errorsCancelAndDeadline(protos, game));
    step = 'health';
    summary.health = await healthCheck(protos, target);
    step = 'compression';
    summary.compression = await compressedCalls(protos, target, maxMessageBytes);
    step = 'limits';
    summary.limits = await limits(protos, target, maxHeaderBytes, maxMessageBytes);
    summary.ok = true;
  } catch (error) {
    const why =
      error instanceof CheckFailed
        ? `check failed: ${error.message}`
        : `unexpected error: ${error?.stack ?? error}` +
          (error?.code !== undefined ? ` (gRPC ${CODE_NAMES[error.code]}: ${error.details})` : '');
    process.stderr.write(`play.mjs: in step ${step}: ${why}\n`);
    process.exitCode = 1;
  } finally {
    clearTimeout(timer);
    game.close();
  }
  if (summary.ok) process.stdout.write(`${JSON.stringify(summary)}\n`);
}

await main();
