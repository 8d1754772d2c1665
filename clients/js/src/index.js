// @railyard/client: the Railyard HTTP/JSON API (../../../shared/API.md) from
// JavaScript, in Node.js 20+ and in browsers, with nothing but fetch.
//
// JSON is the canonical proto3 mapping, passed through as the server writes
// it: lowerCamelCase names, enums as names, int64 as strings, and fields at
// their zero value left out (a tile {a: 0, b: 5} arrives as {"b": 5}, seat 0
// as no `seat`, version 0 as no `version`). The helpers below read such
// fields with their defaults filled in.

import { SseParser } from "./sse.js";

export { SseParser };

/** gRPC status code numbers -> names (google.rpc.Code). */
export const GRPC_CODES = Object.freeze([
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
]);

// For answers without a google.rpc.Status body (a proxy's 502 page, say):
// the gRPC project's HTTP -> gRPC mapping, so `code` is always set.
const HTTP_TO_CODE = {
  400: "INTERNAL",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "UNIMPLEMENTED",
  429: "UNAVAILABLE",
  502: "UNAVAILABLE",
  503: "UNAVAILABLE",
  504: "UNAVAILABLE",
};

// gRPC code -> HTTP status as grpc-gateway maps it (API.md), for errors that
// arrive inside an event stream, whose HTTP status was already 200.
const CODE_TO_HTTP = {
  INVALID_ARGUMENT: 400,
  FAILED_PRECONDITION: 400,
  OUT_OF_RANGE: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  ABORTED: 409,
  ALREADY_EXISTS: 409,
  RESOURCE_EXHAUSTED: 429,
  CANCELLED: 499,
  UNIMPLEMENTED: 501,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
};

const ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo";

/**
 * Every failed call: a non-2xx answer (its google.rpc.Status body unpacked),
 * an error event inside a watch stream, or a network failure (code
 * UNAVAILABLE, reason NETWORK_ERROR, httpStatus 0).
 */
export class RailyardError extends Error {
  constructor(message, fields = {}) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.name = "RailyardError";
    /** HTTP status of the answer; 0 when no answer arrived. */
    this.httpStatus = fields.httpStatus ?? 0;
    /** gRPC code name, e.g. FAILED_PRECONDITION. */
    this.code = fields.code ?? "UNKNOWN";
    /** ErrorInfo reason, e.g. ILLEGAL_MOVE; "" when the server sent none. */
    this.reason = fields.reason ?? "";
    /** ErrorInfo metadata (string values). */
    this.metadata = fields.metadata ?? {};
    /** The RULES.md id a refused move broke (metadata.rule), if any. */
    this.rule = this.metadata.rule;
    /** Seconds to wait before retrying (429: Retry-After), if given. */
    this.retryAfter = fields.retryAfter;
    /** The google.rpc.Status body as received, when there was one. */
    this.status = fields.status;
  }
}

/** A google.rpc.Status (JSON) -> RailyardError. */
export function errorFromStatus(status, httpStatus, retryAfter) {
  const code = GRPC_CODES[status.code] ?? "UNKNOWN";
  const info = (status.details ?? []).find((d) => d && d["@type"] === ERROR_INFO_TYPE) ?? {};
  const metadata = info.metadata ?? {};
  if (retryAfter === undefined && metadata.retryAfterSeconds !== undefined) {
    retryAfter = Number(metadata.retryAfterSeconds);
  }
  return new RailyardError(status.message || `${code} (HTTP ${httpStatus})`, {
    httpStatus: httpStatus ?? CODE_TO_HTTP[code] ?? 500,
    code,
    reason: info.reason ?? "",
    metadata,
    retryAfter,
    status,
  });
}

function isStatus(body) {
  return body !== null && typeof body === "object" && typeof body.code === "number";
}

async function errorFromResponse(response) {
  const text = await response.text().catch(() => "");
  const header = response.headers.get("retry-after");
  const retryAfter = header !== null && /^[0-9]+$/.test(header.trim()) ? Number(header) : undefined;
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (isStatus(body)) return errorFromStatus(body, response.status, retryAfter);
  // Not a Status (a proxy or load balancer answered): keep what it said.
  const snippet = text.trim().slice(0, 500);
  return new RailyardError(`HTTP ${response.status} ${response.statusText}${snippet ? `: ${snippet}` : ""}`, {
    httpStatus: response.status,
    code: HTTP_TO_CODE[response.status] ?? "UNKNOWN",
    retryAfter,
  });
}

function networkError(err, what) {
  return new RailyardError(`${what} failed: ${err?.message ?? err}`, {
    code: "UNAVAILABLE",
    reason: "NETWORK_ERROR",
    cause: err,
  });
}

function isAbort(err, signal) {
  return signal?.aborted === true || err?.name === "AbortError";
}

// ------------------------------------------------------------------ zero-value helpers

/** A version (int64: a JSON string, a number, a bigint, or absent = 0) as a number. */
export function toVersion(value) {
  if (value === undefined || value === null || value === "") return 0;
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new TypeError(`not an integer version: ${String(value)}`);
  return n;
}

/**
 * The version of a GameView, GameEvent, ListLegalMovesResponse or
 * ApplyMoveResponse (its game's), as a number. proto3 JSON leaves version 0
 * out, so an absent version is 0.
 */
export function versionOf(x) {
  if (x === undefined || x === null) return 0;
  if (x.game !== undefined && x.version === undefined && x.gameId === undefined) return toVersion(x.game.version);
  return toVersion(x.version);
}

/** An int64 for a request: a decimal string (numbers are accepted, checked). */
export function int64String(value, name = "version") {
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "number" && Number.isSafeInteger(value)) return String(value);
  if (typeof value === "string" && /^-?[0-9]{1,19}$/.test(value.trim())) return value.trim();
  throw new TypeError(`${name} must be an integer (number, bigint or decimal string), not ${String(value)}`);
}

/** A tile with both halves (an omitted half is 0). */
export function tileOf(tile) {
  return { a: tile?.a ?? 0, b: tile?.b ?? 0 };
}

/** A tile's text form, "5-12" (halves as sent: train tiles keep their orientation). */
export function tileText(tile) {
  const t = tileOf(tile);
  return `${t.a}-${t.b}`;
}

/** The seat of a PlayerView, SeatToken or event body (tilePlayed, turnStarted, ...); omitted = 0. */
export function seatOf(x) {
  return x?.seat ?? 0;
}

/**
 * The seat to move, or undefined once the game is over. currentSeat is an
 * `optional` field, so it is present even when 0.
 */
export function currentSeatOf(view) {
  return view?.currentSeat;
}

/** True once a GameView's status is GAME_STATUS_FINISHED. */
export function isFinished(view) {
  return view?.status === "GAME_STATUS_FINISHED";
}

const EVENT_KINDS = [
  "snapshot",
  "tilePlayed",
  "tileDrawn",
  "passed",
  "markerPlaced",
  "markerRemoved",
  "doubleSatisfied",
  "turnStarted",
  "roundStarted",
  "roundEnded",
  "gameEnded",
  "pointsScored",
  "turnTimedOut",
  "seatJoined",
  "seatLeft",
  "gameStarted",
];

/** Which kind a GameEvent is ("tilePlayed", "gameEnded", ...), or undefined for an unknown one. */
export function eventKind(event) {
  return EVENT_KINDS.find((k) => event?.[k] !== undefined);
}

/** A fresh requestId (up to 64 characters, as API.md allows). */
export function newRequestId() {
  const c = globalThis.crypto;
  if (c && typeof c.randomUUID === "function") return c.randomUUID();
  // Insecure browser contexts lack randomUUID; uniqueness is all that matters here.
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}-${Math.random().toString(36).slice(2)}`;
}

const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });

// ------------------------------------------------------------------ the client

export class RailyardClient {
  /**
   * @param {string | {baseUrl: string, fetch?: typeof fetch, token?: string, headers?: Record<string,string>}} options
   *   the service's base URL (e.g. "http://127.0.0.1:8080"), or options: an
   *   injected fetch (tests, proxies, older runtimes), a default seat token,
   *   extra headers sent with every call.
   */
  constructor(options) {
    const opts = typeof options === "string" ? { baseUrl: options } : { ...options };
    if (!opts.baseUrl) throw new TypeError("RailyardClient needs a baseUrl");
    this.baseUrl = String(opts.baseUrl).replace(/\/+$/, "");
    const f = opts.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new TypeError("no fetch: pass one as options.fetch");
    // Bound: a browser's fetch throws "Illegal invocation" when called as a method of another object.
    this._fetch = opts.fetch ? opts.fetch : f.bind(globalThis);
    this.token = opts.token;
    this.headers = { ...(opts.headers ?? {}) };
  }

  _headers(token, extra) {
    const headers = { accept: "application/json", ...this.headers, ...extra };
    const t = token ?? this.token;
    if (t) headers.authorization = `Bearer ${t}`;
    return headers;
  }

  _path(gameId, suffix = "") {
    if (typeof gameId !== "string" || gameId === "") throw new TypeError("gameId must be a non-empty string");
    return `/v1/games/${encodeURIComponent(gameId)}${suffix}`;
  }

  async _call(method, path, { token, body, signal } = {}) {
    const headers = this._headers(token, body === undefined ? {} : { "content-type": "application/json" });
    let response;
    try {
      response = await this._fetch(this.baseUrl + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
    } catch (err) {
      if (isAbort(err, signal)) throw err;
      throw networkError(err, `${method} ${path}`);
    }
    if (!response.ok) throw await errorFromResponse(response);
    let text;
    try {
      text = await response.text();
    } catch (err) {
      if (isAbort(err, signal)) throw err;
      throw networkError(err, `reading the answer to ${method} ${path}`);
    }
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new RailyardError(`${method} ${path}: the answer is not JSON: ${text.slice(0, 200)}`, {
        httpStatus: response.status,
        code: "INTERNAL",
        cause: err,
      });
    }
  }

  /**
   * CreateGame: POST /v1/games. Returns {game, seats?: [{seat?, token}]}:
   * a token for each person's seat, none for a bot seat (`seats` is omitted
   * when there is no person).
   */
  createGame(request, { signal } = {}) {
    return this._call("POST", "/v1/games", { body: request ?? {}, signal });
  }

  /** GetGame: the caller's GameView (public, or public + the token's hand). */
  getGame(gameId, { token, signal } = {}) {
    return this._call("GET", this._path(gameId), { token, signal });
  }

  /** ListLegalMoves: {moves?: [{move, notation}], version?}; no moves when it is not the seat's turn. */
  listLegalMoves(gameId, { token, signal } = {}) {
    return this._call("GET", this._path(gameId, "/legal-moves"), { token, signal });
  }

  /**
   * ApplyMove. `move` is a Move ({play: ...}, {draw: {}}, ...) or a LegalMove
   * as ListLegalMoves returned it. expectedVersion (number, bigint or string)
   * is sent as a string; requestId makes a retry safe (the server answers a
   * repeat with its first answer and applies nothing again).
   */
  applyMove(gameId, move, { token, expectedVersion, requestId, signal } = {}) {
    if (move && typeof move === "object" && move.move !== undefined && move.notation !== undefined) {
      move = move.move; // a LegalMove
    }
    const body = { move };
    if (expectedVersion !== undefined && expectedVersion !== null) {
      body.expectedVersion = int64String(expectedVersion, "expectedVersion");
    }
    if (requestId !== undefined && requestId !== null) body.requestId = String(requestId);
    return this._call("POST", this._path(gameId, "/moves"), { token, body, signal });
  }

  /** GetGameLog: every public event from the start; the seed once the game is over. */
  getGameLog(gameId, { token, signal } = {}) {
    return this._call("GET", this._path(gameId, "/log"), { token, signal });
  }

  /** ListRulesets: the presets with their resolved options. */
  listRulesets({ signal } = {}) {
    return this._call("GET", "/v1/rulesets", { signal });
  }

  // ---------------------------------------------------------------- tables (tables.md)

  /**
   * JoinGame: take an open seat of a waiting table, a public one by its
   * `gameId`, a private one by its `joinCode` (alone, or with its id);
   * `seat`: that one, else the lowest open. Returns {game, seat: {seat?,
   * token}}: the seat's token is shown only in this answer (it is not kept
   * as the client's `token`). Not repeated by the client: JoinGame has no
   * requestId, and a lost answer may have taken the seat.
   */
  joinGame({ gameId, joinCode, seat, displayName } = {}, { signal } = {}) {
    if (!gameId && !joinCode) throw new TypeError("joinGame needs a gameId or a joinCode");
    const body = {};
    if (joinCode) body.joinCode = String(joinCode);
    if (seat !== undefined && seat !== null) body.seat = seat;
    if (displayName) body.displayName = String(displayName);
    // A private table by its code alone: gameId "-" (tables.md).
    return this._call("POST", this._path(gameId || "-", "/join"), { body, signal });
  }

  /**
   * StartGame: the table's host starts it now (`token`: its hostToken, else
   * the client's token); open seats are played by bots of the table's
   * level. Returns {game}: the public view.
   */
  startGame(gameId, { token, signal } = {}) {
    return this._call("POST", this._path(gameId, "/start"), { token, signal });
  }

  /**
   * ListGames: one page of the joinable public tables, oldest first
   * (pageSize absent or 0: 50; at most 100). Returns {games?: [GameSummary],
   * nextPageToken?}: pass nextPageToken back as pageToken for the next page;
   * it is absent on the last. iterGames() does that for you.
   */
  listGames({ pageSize, pageToken, signal } = {}) {
    const query = new URLSearchParams();
    if (pageSize !== undefined && pageSize !== null) query.set("pageSize", String(pageSize));
    if (pageToken) query.set("pageToken", String(pageToken));
    const search = query.toString();
    return this._call("GET", search ? `/v1/games?${search}` : "/v1/games", { signal });
  }

  /**
   * Every joinable public table, as an async iterator over the pages of
   * listGames. A table that stays joinable while it pages comes once; one
   * that fills up or starts meanwhile may not come at all.
   */
  async *iterGames({ pageSize, signal } = {}) {
    let pageToken;
    do {
      const page = await this.listGames({ pageSize, pageToken, signal });
      yield* (page.games ?? []);
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  /**
   * LeaveGame: give up the seat of `token`. Before the start it opens again;
   * during play a bot of the table's level takes it over and the token stops
   * working. Returns {game}: the public view.
   */
  leaveGame(gameId, { token, signal } = {}) {
    return this._call("POST", this._path(gameId, "/leave"), { token, signal });
  }

  /**
   * Rematch (a seat token of the finished game): the next game, the same
   * seats and rules with a new seed, created by the first call for it.
   * Returns {game, seat?: {seat?, token}}: the seat's new token, only to the
   * first presentation of its old one.
   */
  rematch(gameId, { token, signal } = {}) {
    return this._call("POST", this._path(gameId, "/rematch"), { token, signal });
  }

  /**
   * WatchGame as an async iterator of GameEvent: a snapshot (the caller's
   * view now), then every event with a version above afterVersion (absent:
   * above the snapshot's), in order, ending after gameEnded.
   *
   * When the connection drops before gameEnded, it reconnects (unless
   * `reconnect: false`) with Last-Event-ID and yields each event exactly
   * once: several events share one version (a move and the turn it starts),
   * so it resumes after the version before the last one seen and skips the
   * events of that version it already yielded. A reconnect's own snapshot is
   * not yielded. Breaking out of the loop, or aborting `signal`, closes the
   * connection.
   */
  watchGame(gameId, options = {}) {
    return this._watch(gameId, options);
  }

  async *_watch(
    gameId,
    {
      token,
      afterVersion,
      signal,
      reconnect = true,
      maxReconnects = 5,
      reconnectDelayMs = 200,
      idleTimeoutMs = 45_000,
    } = {},
  ) {
    const path = this._path(gameId, "/events");
    const firstAfter = afterVersion === undefined || afterVersion === null ? undefined : int64String(afterVersion, "afterVersion");
    let snapshotVersion; // set by the first snapshot
    let lastVersion; // the highest version yielded, and how many of its events were
    let yieldedAtLast = 0;
    let failures = 0;

    for (;;) {
      // Where this connection starts: see the doc comment.
      let resumeAfter = firstAfter;
      let skip = 0;
      if (lastVersion !== undefined) {
        resumeAfter = String(lastVersion - 1);
        skip = yieldedAtLast;
      } else if (snapshotVersion !== undefined && firstAfter === undefined) {
        resumeAfter = String(snapshotVersion);
      }
      const reconnecting = snapshotVersion !== undefined;
      const headers = this._headers(token, { accept: "text/event-stream" });
      let url = this.baseUrl + path;
      if (reconnecting) headers["last-event-id"] = resumeAfter;
      else if (resumeAfter !== undefined) url += `?afterVersion=${encodeURIComponent(resumeAfter)}`;

      // One controller per connection: the caller's signal, the idle timer and
      // an early return all close it.
      const connection = new AbortController();
      const onAbort = () => connection.abort(signal.reason);
      if (signal?.aborted) throw signal.reason;
      signal?.addEventListener("abort", onAbort, { once: true });
      let idle = false;
      let idleTimer;
      const arm = () => {
        clearTimeout(idleTimer);
        if (idleTimeoutMs > 0) {
          idleTimer = setTimeout(() => {
            idle = true; // the server sends a keep-alive at least every 15 s
            connection.abort(new Error(`no data for ${idleTimeoutMs} ms`));
          }, idleTimeoutMs);
        }
      };

      let dropped; // why this connection ended early, if it did
      let finishedSnapshot = false;
      try {
        let response;
        try {
          arm();
          response = await this._fetch(url, { method: "GET", headers, signal: connection.signal });
        } catch (err) {
          if (signal?.aborted) throw signal.reason ?? err;
          throw networkError(err, `GET ${path}`);
        }
        if (!response.ok) throw await errorFromResponse(response);
        if (!response.body) throw new RailyardError(`GET ${path}: no response body to stream`, { code: "INTERNAL" });

        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        const parser = new SseParser();
        try {
          for (;;) {
            let chunk;
            try {
              chunk = await reader.read();
            } catch (err) {
              if (signal?.aborted) throw signal.reason ?? err;
              dropped = networkError(idle ? new Error(`no data for ${idleTimeoutMs} ms`) : err, `watching ${gameId}`);
              break;
            }
            if (chunk.done) {
              parser.push(decoder.decode());
              parser.finish(); // a half-received event is dropped, and re-sent after a reconnect
              break;
            }
            arm();
            for (const message of parser.push(decoder.decode(chunk.value, { stream: true }))) {
              if (message.type === "error") {
                let status;
                try {
                  status = JSON.parse(message.data);
                } catch {
                  status = { code: 2, message: message.data };
                }
                throw errorFromStatus(status, undefined);
              }
              if (message.type !== "message") continue;
              const event = JSON.parse(message.data);
              if (event.snapshot !== undefined) {
                finishedSnapshot = isFinished(event.snapshot);
                if (snapshotVersion !== undefined) continue; // a reconnect's: the caller has one
                snapshotVersion = versionOf(event);
                failures = 0;
                // The caller's time is not the connection's silence.
                clearTimeout(idleTimer);
                yield event;
                arm();
                continue;
              }
              const version = versionOf(event);
              if (skip > 0 && version === lastVersion) {
                skip--;
                continue;
              }
              skip = 0;
              if (version === lastVersion) yieldedAtLast++;
              else {
                lastVersion = version;
                yieldedAtLast = 1;
              }
              failures = 0;
              clearTimeout(idleTimer);
              yield event;
              if (event.gameEnded !== undefined) return;
              arm();
            }
          }
        } finally {
          reader.cancel().catch(() => {});
        }
      } catch (err) {
        // A store outage (503, or an error event inside the stream) and a rate
        // limit on reconnecting are as transient as a drop.
        if (err instanceof RailyardError && (err.code === "UNAVAILABLE" || err.code === "RESOURCE_EXHAUSTED")) {
          dropped = err;
        } else throw err;
      } finally {
        clearTimeout(idleTimer);
        signal?.removeEventListener("abort", onAbort);
        connection.abort();
      }

      // A clean end without gameEnded: the game was already over when this
      // connection started (the server sends only the snapshot then), or the
      // server is shutting down (it says reconnect), or the game expired.
      if (dropped === undefined) {
        if (finishedSnapshot) return;
        dropped = new RailyardError(`the watch of ${gameId} ended before gameEnded`, {
          code: "UNAVAILABLE",
          reason: "NETWORK_ERROR",
        });
      }
      failures++;
      if (!reconnect || failures > maxReconnects) throw dropped;
      const backoff = Math.min(reconnectDelayMs * 2 ** (failures - 1), 5_000);
      await sleep(dropped.retryAfter !== undefined ? dropped.retryAfter * 1000 : backoff, signal);
    }
  }
}
