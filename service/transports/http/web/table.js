// The Railyard web table: create a game, play it (pass-and-play on one screen
// or one seat per browser through a per-seat link), watch it live over SSE
// (WatchGame), and verify the deals at the end. Plain ES modules, no build.
//
// A seat's token lives in the URL fragment (#game=ID&seat=S&token=T), which
// browsers never send to the server, or, for a pass-and-play table, in this
// browser's localStorage. The page only ever asks for the views of the seats
// it holds a token for, so no other seat's tile reaches it.
//
// Tables (docs/tables.md): a table with open seats is shared by its join link,
// #join=<gameId> for a public table, #join=<gameId>&code=<joinCode> for a
// private one (#join=-&code=<joinCode>: by the code alone). Whoever opens it
// sees the seats fill (seatJoined / seatLeft / gameStarted over SSE) and may
// take a seat; the token a join, a creation or a rematch hands out is kept in
// localStorage (with the host token and the join code, for the host) and the
// address becomes #game=<gameId>, which names no secret: a reload resumes
// the seat, and the address bar can be shared as a spectator's link.

import { verifyDeals } from "/web/verify.js";

const $ = (id) => document.getElementById(id);
const BOT_LEVELS = ["BOT_LEVEL_RANDOM", "BOT_LEVEL_GREEDY", "BOT_LEVEL_EXPERT"];
const GAME_NAMES = {
  GAME_MEXICAN_TRAIN: "Mexican Train",
  GAME_BLOCK: "Block",
  GAME_DRAW: "Draw",
  GAME_ALL_FIVES: "All Fives",
  GAME_BERGEN: "Bergen",
  GAME_MATADOR: "Matador",
  GAME_CHICKEN_FOOT: "Chicken Foot",
};
const TRAIN_GAMES = new Set(["GAME_MEXICAN_TRAIN", "GAME_CHICKEN_FOOT"]);

const state = {
  gameId: null,
  tokens: {}, // seat -> token, the seats this page plays
  activeSeat: null, // whose hand is shown
  revealed: false, // pass-and-play: the active seat pressed "show my hand"
  view: null,
  legal: [],
  legalVersion: null,
  selected: null, // "a-b" of the chosen hand tile
  busy: false,
  events: [],
  eventCounts: new Map(), // how many times each event text was seen, by source
  knownSha: null,
  watch: null,
  refreshTimer: null,
  stopped: false,
  // What the table shows (setView's key of it): a refresh that brings nothing
  // new does not rebuild the page. A rebuild between a tap's press and its
  // release swallows the tap (the click lands on no button): the events of a
  // move arrive over SSE just as its answer renders, and their refresh came
  // while the next tile or target was being tapped.
  shown: null,
  // The newest version a move's answer brought, before it renders.
  answered: -1,
  // Tables: the join code this page was given (its link, or the host's own).
  joinCode: null,
  joining: false, // opened by a join link: offer a seat while the table waits
  hostToken: null,
  pollTimer: null, // GetGame now and then: a waiting table, a finished game's rematch
  pollFor: null, // the status polled for
  polls: 0,
};
const WAITING = "GAME_STATUS_WAITING";
const FINISHED = "GAME_STATUS_FINISHED";
// What a table change (not a move: `version` stays) is announced by.
const TABLE_EVENTS = ["seatJoined", "seatLeft", "gameStarted"];

// ------------------------------------------------------------------ HTTP

class ApiError extends Error {
  constructor(status, body) {
    const info = (body?.details ?? []).find((d) => d.reason) ?? {};
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.reason = info.reason ?? "";
    this.rule = info.metadata?.rule ?? "";
  }
}

async function api(method, path, { token, body } = {}) {
  const headers = { accept: "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
  });
  const text = await response.text();
  const data = text ? JSON.parse(text) : {};
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

const gamePath = (suffix = "") => `/v1/games/${encodeURIComponent(state.gameId)}${suffix}`;
const tokenOf = (seat) => (seat === null || seat === undefined ? null : state.tokens[seat] ?? null);

// ------------------------------------------------------------------ tiles

const tileKey = (t) => {
  const a = t?.a ?? 0;
  const b = t?.b ?? 0;
  return a <= b ? `${a}-${b}` : `${b}-${a}`;
};

function tileElement(t, tag = "span") {
  const el = document.createElement(tag);
  const a = t?.a ?? 0;
  const b = t?.b ?? 0;
  el.className = "tile" + (a === b ? " double" : "");
  el.dataset.tile = tileKey(t);
  el.setAttribute("aria-label", `${a}-${b}`);
  for (const v of [a, b]) {
    const half = document.createElement("span");
    half.className = "half";
    half.textContent = String(v);
    el.append(half);
  }
  return el;
}

function refKey(ref) {
  if (!ref) return "?";
  const end = ref.end ?? 0;
  if (ref.line !== undefined) return `l.${end}`;
  if (ref.mexican !== undefined) return `m${ref.mexican}.${end}`;
  return `p${ref.seat ?? 0}.${end}`;
}

// ------------------------------------------------------------------ setup

const SEAT_KINDS = [
  ["", "person here"],
  ["open", "open: for a friend"],
  ...BOT_LEVELS.map((l) => [l, `bot: ${l.slice(10).toLowerCase()}`]),
];

async function showSetup() {
  $("setup").hidden = false;
  $("table").hidden = true;
  $("status-line").textContent = "";
  delete document.body.dataset.status;
  delete document.body.dataset.game;
  const select = $("preset");
  try {
    const { rulesets = [] } = await api("GET", "/v1/rulesets");
    select.replaceChildren();
    for (const r of rulesets) {
      const option = document.createElement("option");
      const game = r.game ?? "GAME_MEXICAN_TRAIN";
      option.value = r.preset;
      option.dataset.game = game;
      option.dataset.rules = JSON.stringify(r);
      option.textContent = `${GAME_NAMES[game] ?? game} — ${r.preset}`;
      select.append(option);
    }
  } catch (error) {
    showErrorIn("create-error", error);
  }
  select.onchange = describePreset;
  describePreset();
  if ($("bot-level").children.length === 0) {
    for (const level of BOT_LEVELS) {
      const option = document.createElement("option");
      option.value = level;
      option.textContent = level.slice(10).toLowerCase();
      $("bot-level").append(option);
    }
    $("bot-level").value = "BOT_LEVEL_GREEDY";
  }
  if ($("seats").children.length === 0) {
    addSeat("You", "");
    addSeat("Bot 1", "BOT_LEVEL_GREEDY");
  }
  $("add-seat").onclick = () => addSeat(`Bot ${$("seats").children.length}`, "BOT_LEVEL_GREEDY").focus();
  $("add-open-seat").onclick = () => addSeat("", "open").focus();
  $("setup-form").onsubmit = (e) => {
    e.preventDefault();
    createTable();
  };
  $("code-form").onsubmit = (e) => {
    e.preventDefault();
    const code = $("code-input").value.trim();
    if (code) location.hash = `join=-&code=${encodeURIComponent(code)}`;
  };
  $("public-refresh").onclick = () => loadPublicTables(true);
  $("public-more").onclick = () => loadPublicTables(false);
  await loadPublicTables(true);
}

function describePreset() {
  const option = $("preset").selectedOptions[0];
  if (!option) return;
  const rules = JSON.parse(option.dataset.rules);
  const parts = [];
  if (rules.setMax) parts.push(`double-${rules.setMax}`);
  if (rules.rounds) parts.push(`${rules.rounds} rounds`);
  if (rules.targetScore) parts.push(`to ${rules.targetScore} points`);
  if (rules.teams) parts.push("two teams of two (4 seats)");
  $("preset-note").textContent = parts.join(", ");
  const trains = TRAIN_GAMES.has(option.dataset.game);
  $("rounds").disabled = !trains;
  $("target").disabled = trains;
}

function addSeat(name, kind) {
  const li = document.createElement("li");
  li.className = "seat-row";
  const input = document.createElement("input");
  input.className = "seat-name";
  input.value = name;
  input.maxLength = 40;
  const select = document.createElement("select");
  select.className = "seat-kind";
  for (const [value, label] of SEAT_KINDS) {
    const option = document.createElement("option");
    option.value = value;
    option.textContent = label;
    select.append(option);
  }
  select.value = kind;
  const remove = document.createElement("button");
  remove.type = "button";
  remove.textContent = "✕";
  remove.className = "seat-remove";
  remove.onclick = () => {
    li.remove();
    seatsChanged();
  };
  select.onchange = seatsChanged;
  li.append(input, select, remove);
  $("seats").append(li);
  seatsChanged();
  return select;
}

/** Labels the seat rows by their number; an open seat has no name to type;
 * the table's settings show while a seat is open. */
function seatsChanged() {
  const rows = [...document.querySelectorAll(".seat-row")];
  rows.forEach((li, i) => {
    const input = li.querySelector(".seat-name");
    const open = li.querySelector(".seat-kind").value === "open";
    input.setAttribute("aria-label", `seat ${i + 1}: name`);
    li.querySelector(".seat-kind").setAttribute("aria-label", `seat ${i + 1}: person, open or bot`);
    li.querySelector(".seat-remove").setAttribute("aria-label", `remove seat ${i + 1}`);
    input.disabled = open;
    input.placeholder = open ? "a friend" : "";
  });
  $("table-settings").hidden = !rows.some((li) => li.querySelector(".seat-kind").value === "open");
}

async function createTable() {
  hideErrorIn("create-error");
  const option = $("preset").selectedOptions[0];
  const ruleset = { preset: option.value };
  const rounds = $("rounds").value.trim();
  const target = $("target").value.trim();
  if (rounds && !$("rounds").disabled) ruleset.rounds = Number(rounds);
  if (target && !$("target").disabled) ruleset.targetScore = Number(target);
  const players = [...document.querySelectorAll(".seat-row")].map((li) => {
    const kind = li.querySelector(".seat-kind").value;
    if (kind === "open") return { open: true };
    const player = { displayName: li.querySelector(".seat-name").value.trim() || "Player" };
    if (kind) player.bot = kind;
    return player;
  });
  const body = { ruleset, players, requestId: crypto.randomUUID() };
  // A table (open seats): its settings. A game with every seat decided stays as before.
  const isTable = players.some((p) => p.open);
  if (isTable) body.table = { visibility: $("visibility").value, botLevel: $("bot-level").value };
  const seed = $("seed").value;
  if (seed) body.seed = seed;
  $("create").disabled = true;
  try {
    const created = await api("POST", "/v1/games", { body });
    const seats = created.seats ?? [];
    const tokens = Object.fromEntries(seats.map((s) => [s.seat ?? 0, s.token]));
    const gameId = created.game.gameId;
    const kept = remember(gameId, {
      tokens,
      seedSha256: created.game.seedSha256,
      ...(created.hostToken ? { hostToken: created.hostToken } : {}),
      ...(created.joinCode ? { joinCode: created.joinCode } : {}),
    });
    if (isTable && kept) {
      location.hash = `game=${encodeURIComponent(gameId)}`;
    } else if (seats.length === 1) {
      location.hash = fragment(gameId, seats[0].seat ?? 0, seats[0].token);
    } else {
      location.hash = `game=${encodeURIComponent(gameId)}`;
    }
  } catch (error) {
    showErrorIn("create-error", error);
  } finally {
    $("create").disabled = false;
  }
}

const fragment = (gameId, seat, token) =>
  `game=${encodeURIComponent(gameId)}&seat=${seat}&token=${encodeURIComponent(token)}`;

/** Merges `data` into what this browser keeps for `gameId` (tokens merge by
 * seat; a null token forgets its seat); whether it could be kept. */
function remember(gameId, data) {
  try {
    const old = JSON.parse(localStorage.getItem(`railyard:${gameId}`) ?? "{}");
    const merged = { ...old, ...data };
    if (data.tokens) {
      merged.tokens = { ...(old.tokens ?? {}), ...data.tokens };
      for (const [seat, token] of Object.entries(merged.tokens)) if (!token) delete merged.tokens[seat];
    }
    localStorage.setItem(`railyard:${gameId}`, JSON.stringify(merged));
    return true;
  } catch {
    // private mode: the fragment still carries a single seat's token
    return false;
  }
}

function recall(gameId) {
  try {
    return JSON.parse(localStorage.getItem(`railyard:${gameId}`) ?? "{}");
  } catch {
    return {};
  }
}

function rememberName(name) {
  try {
    localStorage.setItem("railyard:name", name);
  } catch {
    // private mode: the name is typed again next time
  }
}

function recallName() {
  try {
    return localStorage.getItem("railyard:name") ?? "";
  } catch {
    return "";
  }
}

/** Goes to `hash` (without its "#"), opening it again if the page is there already. */
function go(hash) {
  if (location.hash === `#${hash}`) route();
  else location.hash = hash;
}

// ------------------------------------------------------------------ public tables

let nextPageToken = "";

/** ListGames: the first page (`reset`), or the next one appended. */
async function loadPublicTables(reset) {
  hideErrorIn("public-error");
  const list = $("public-list");
  const query = new URLSearchParams({ pageSize: "10" });
  if (!reset && nextPageToken) query.set("pageToken", nextPageToken);
  $("public-more").disabled = true;
  try {
    const { games = [], nextPageToken: next = "" } = await api("GET", `/v1/games?${query}`);
    if (reset) list.replaceChildren();
    for (const summary of games) list.append(publicTableItem(summary));
    if (reset && games.length === 0) {
      const li = document.createElement("li");
      li.className = "note";
      li.textContent = "No public table is waiting for players just now.";
      list.append(li);
    }
    nextPageToken = next;
    $("public-more").hidden = !next;
  } catch (error) {
    showErrorIn("public-error", error);
  } finally {
    $("public-more").disabled = false;
  }
}

function publicTableItem(summary) {
  const li = document.createElement("li");
  li.className = "public-table";
  li.dataset.game = summary.gameId;
  const game = summary.ruleset?.game ?? "GAME_MEXICAN_TRAIN";
  const names = (summary.players ?? []).map((p) => (p.open ? "open seat" : p.displayName || `Seat ${(p.seat ?? 0) + 1}`));
  const open = summary.openSeats ?? 0;
  const text = document.createElement("span");
  text.textContent = `${GAME_NAMES[game] ?? game} (${summary.ruleset?.preset ?? ""}): ${names.join(", ")} · ${open} open seat${open === 1 ? "" : "s"}`;
  const join = document.createElement("a");
  join.className = "button-link";
  join.href = `#join=${encodeURIComponent(summary.gameId)}`;
  join.textContent = "Join";
  const host = names.find((n) => n !== "open seat");
  join.setAttribute("aria-label", `Join the ${GAME_NAMES[game] ?? game} table${host ? ` of ${host}` : ""}`);
  li.append(text, " ", join);
  return li;
}

// ------------------------------------------------------------------ the table

async function openTable(params) {
  stopWatching();
  const joinId = params.get("join");
  const gameId = params.get("game") ?? (joinId && joinId !== "-" ? joinId : null);
  Object.assign(state, {
    gameId,
    tokens: {},
    activeSeat: null,
    revealed: false,
    view: null,
    legal: [],
    selected: null,
    shown: null,
    answered: -1,
    events: [],
    eventCounts: new Map(),
    joinCode: null,
    joining: params.has("join"),
    hostToken: null,
    joinFocused: false,
    pollFor: null,
    polls: 0,
  });
  const saved = gameId ? recall(gameId) : {};
  if (params.has("token")) {
    state.tokens = { [Number(params.get("seat") ?? 0)]: params.get("token") };
  } else {
    state.tokens = Object.fromEntries(Object.entries(saved.tokens ?? {}).map(([k, v]) => [Number(k), v]));
  }
  state.knownSha = saved.seedSha256 ?? null;
  state.hostToken = saved.hostToken ?? null;
  // Typed in any case, with dashes or spaces (docs/tables.md): kept as the service wrote it.
  const code = params.get("code")?.toUpperCase().replace(/[^0-9A-Z]/g, "");
  state.joinCode = code || saved.joinCode || null;
  // A join link of a table this browser sits at already: its seat, and an
  // address that names no code.
  if (state.joining && gameId && Object.keys(state.tokens).length) {
    history.replaceState(null, "", `#game=${encodeURIComponent(gameId)}`);
  }
  $("setup").hidden = true;
  $("table").hidden = false;
  $("ending").hidden = true;
  $("verify-result").textContent = "";
  $("events").replaceChildren();
  for (const id of ["error", "join-error", "start-error", "leave-error", "rematch-error"]) hideErrorIn(id);
  $("leave-confirm").hidden = true;
  // Nothing of the game shown before: tests and people wait for this game's own view.
  delete document.body.dataset.status;
  delete document.body.dataset.version;
  document.body.dataset.game = gameId ?? "";
  $("join-name").value ||= recallName();
  renderLinks();
  const seats = Object.keys(state.tokens).map(Number);
  state.activeSeat = seats.length ? seats[0] : null;
  state.revealed = seats.length <= 1;
  if (!gameId) {
    // By the code alone: nothing to show before the join says which game it is.
    renderTableShell();
    renderLobby(null);
    return;
  }
  await refresh();
  watch();
}

/** The table's parts before any view came (a private table joined by its code alone). */
function renderTableShell() {
  for (const id of ["players", "board", "hand-area", "scores", "seat-box", "events-box"]) $(id).hidden = true;
  $("cover").hidden = true;
  $("turn-line").textContent = "";
  $("status-line").textContent = "";
}

function renderLinks() {
  const seats = Object.entries(state.tokens);
  const list = $("link-list");
  list.replaceChildren();
  $("links").hidden = seats.length < 2;
  for (const [seat, token] of seats) {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = `${location.origin}/#${fragment(state.gameId, seat, token)}`;
    a.textContent = `seat ${seat}`;
    a.target = "_blank";
    a.rel = "noopener";
    li.append(a);
    list.append(li);
  }
}

/** GetGame and ListLegalMoves for the active seat, then a render. */
async function refresh() {
  clearTimeout(state.refreshTimer);
  state.refreshTimer = null;
  clearTimeout(state.pollTimer);
  state.pollTimer = null;
  if (!state.gameId) return;
  const gameId = state.gameId;
  const token = state.revealed ? tokenOf(state.activeSeat) : null;
  try {
    const view = await api("GET", gamePath(), { token });
    if (state.busy || gameId !== state.gameId) return; // a move is under way: its answer renders
    let legal = [];
    let legalVersion = view.version ?? "0";
    if (token && view.status !== FINISHED && view.status !== WAITING && (view.currentSeat ?? 0) === state.activeSeat) {
      const answer = await api("GET", gamePath("/legal-moves"), { token });
      legal = answer.moves ?? [];
      legalVersion = answer.version ?? "0";
    }
    if (gameId !== state.gameId) return;
    setView(view, legal, legalVersion);
  } catch (error) {
    if (gameId !== state.gameId) return;
    if (!state.view && state.joining && Object.keys(state.tokens).length === 0) {
      // A table that keeps spectators out can still be joined with its link.
      renderTableShell();
      renderLobby(null, error);
      return;
    }
    showError(error);
    schedulePoll(); // (a passing failure does not end the polling)
  }
}

/**
 * GetGame now and then where the watch stream does not tell: a finished game
 * this page played, until it names its rematch (the stream ends with the
 * game). Every 2 s for five minutes, then every 10 s.
 */
function schedulePoll() {
  const view = state.view;
  if (state.pollTimer || !view) return;
  const rematchDue = view.status === FINISHED && !view.rematchGameId && Object.keys(state.tokens).length > 0;
  if (!rematchDue) return;
  if (state.pollFor !== view.status) {
    state.pollFor = view.status;
    state.polls = 0;
  }
  state.polls += 1;
  state.pollTimer = setTimeout(refresh, state.polls < 150 ? 2000 : 10000);
}

function setView(view, legal, legalVersion) {
  // A refresh that was under way while a move went through answers late: keep the newer.
  if (state.view && Number(view.version ?? 0) < Number(state.view.version ?? 0)) return;
  if (!state.knownSha && view.seedSha256) {
    state.knownSha = view.seedSha256;
    remember(state.gameId, { seedSha256: view.seedSha256 });
  }
  state.view = view;
  state.legal = legal;
  state.legalVersion = legalVersion;
  // Here, not in refresh: a refresh that lands during a move is dropped, and
  // the move's answer (setView too) is then all that shows the game's end.
  schedulePoll();
  if (state.selected && !legal.some((m) => m.move.play && tileKey(m.move.play.tile) === state.selected)) {
    state.selected = null;
  }
  // Pass-and-play: hand the screen over when another of our people is to move.
  const current = view.currentSeat ?? 0;
  const seats = Object.keys(state.tokens).map(Number);
  const playing = view.status !== FINISHED && view.status !== WAITING;
  if (seats.length > 1 && playing && seats.includes(current) && current !== state.activeSeat) {
    state.activeSeat = current;
    state.revealed = false;
    state.legal = [];
    // Covered: keep the table, not the previous person's hand (nor mark them "you").
    const { hand: _hand, viewerSeat: _viewer, ...table } = view;
    state.view = table;
  }
  // Table changes (a seat taken or given up, a rematch) leave `version` as it is.
  const seatsShown = (view.players ?? []).map((p) => `${p.displayName ?? ""}/${p.open ? 1 : 0}/${p.bot ?? ""}`);
  const shown = [
    view.version ?? "0",
    view.status,
    view.rematchGameId ?? "",
    ...seatsShown,
    state.activeSeat,
    state.revealed,
    state.legalVersion,
    ...state.legal.map((m) => m.notation),
  ].join("|");
  if (shown === state.shown) return;
  state.shown = shown;
  render();
}

/** Whether the stream's ``version`` is newer than what the table shows or a move's answer brought. */
function isNews(version) {
  return !state.view || Number(version ?? 0) > Math.max(Number(state.view.version ?? 0), state.answered);
}

function scheduleRefresh() {
  if (state.refreshTimer || state.busy) return;
  state.refreshTimer = setTimeout(refresh, 60);
}

// ------------------------------------------------------------------ render

function render() {
  const view = state.view;
  if (!view) return;
  const game = view.ruleset?.game ?? "GAME_MEXICAN_TRAIN";
  const finished = view.status === FINISHED;
  const waiting = view.status === WAITING;
  const rounds = view.roundsTotal ? `round ${view.round ?? 1} of ${view.roundsTotal}` : `hand ${view.round ?? 1}` + (view.targetScore ? `, to ${view.targetScore}` : "");
  $("status-line").textContent = waiting
    ? `${GAME_NAMES[game] ?? game} · waiting for players`
    : `${GAME_NAMES[game] ?? game} · ${rounds} · boneyard ${view.boneyardCount ?? 0} · v${view.version ?? 0}`;
  document.body.dataset.status = finished ? "finished" : waiting ? "waiting" : "playing";
  document.body.dataset.version = view.version ?? "0";
  document.body.dataset.round = String(view.round ?? 1);
  document.body.dataset.game = state.gameId;
  for (const id of ["scores", "events-box"]) $(id).hidden = false;
  // Waiting: dealt, not started; the lobby lists the seats, and there is no board nor hand to show.
  $("board").hidden = waiting;
  $("players").hidden = waiting;
  renderLobby(view);
  renderPlayers(view);
  if (TRAIN_GAMES.has(game)) renderTrains(view);
  else renderLine(view);
  renderHand(view);
  renderSeatBox(view);
  renderScores(view);
  renderEnding(view);
}

const seatName = (p, i) => (p.open ? "open seat" : p.displayName || `Seat ${(p.seat ?? i) + 1}`);

/**
 * The waiting table: its join link (for whoever may share it), its seats as
 * they fill, a Join form for a page that holds no seat, and the host's
 * "Start now with bots". `view` null: a table not seen (joined by its code
 * alone, or one that keeps spectators out; `refused` says why).
 */
function renderLobby(view, refused = null) {
  const waiting = view?.status === WAITING;
  const seated = Object.keys(state.tokens).length > 0;
  const joinable = !seated && (view === null || waiting);
  // (A join link of a table that started or ended says so.)
  $("lobby").hidden = !(waiting || (state.joining && !seated));
  const players = view?.players ?? [];
  const open = players.filter((p) => p.open).length;
  const game = view?.ruleset?.game;
  $("lobby-title").textContent = game ? `${GAME_NAMES[game] ?? game} table` : "Table";
  const status = $("lobby-status");
  if (view === null) {
    status.textContent = refused
      ? `This table does not show itself to spectators (${refused.reason || refused.message}); you can still join it.`
      : "A private table: join it with your name.";
  } else if (waiting) {
    status.textContent = `Waiting for players: ${open} open seat${open === 1 ? "" : "s"} of ${players.length}.`;
  } else {
    status.textContent =
      view.status === FINISHED ? "This table's game is over." : "This table has started: you can watch it.";
  }

  const link = joinLink(view);
  $("share").hidden = !(waiting && link);
  if (link && $("join-link").value !== link) $("join-link").value = link;
  $("copy-link").onclick = copyJoinLink;

  const list = $("seat-list");
  list.replaceChildren();
  list.hidden = !waiting;
  for (const [i, p] of players.entries()) {
    const seat = p.seat ?? i;
    const li = document.createElement("li");
    li.dataset.seat = seat;
    li.className = p.open ? "seat open" : "seat";
    const mine = seat in state.tokens ? " (you)" : "";
    const bot = p.bot ? ` · bot ${p.bot.slice(10).toLowerCase()}` : "";
    li.textContent = `Seat ${seat + 1}: ${p.open ? "open" : p.displayName || "?"}${bot}${mine}`;
    list.append(li);
  }

  $("join-form").hidden = !joinable;
  if (joinable) {
    const select = $("join-seat");
    const chosen = select.value;
    select.replaceChildren();
    const any = document.createElement("option");
    any.value = "";
    any.textContent = "the first open seat";
    select.append(any);
    for (const [i, p] of players.entries()) {
      const seat = String(p.seat ?? i);
      // A seat chosen here and taken meanwhile stays chosen: the join then says SEAT_TAKEN.
      if (!p.open && seat !== chosen) continue;
      const option = document.createElement("option");
      option.value = seat;
      option.textContent = `seat ${Number(seat) + 1}${p.open ? "" : ` (taken by ${p.displayName || "someone"})`}`;
      select.append(option);
    }
    select.value = chosen;
    $("join-seat-label").hidden = players.length === 0;
    // Opened by a join link: the name is what to type first.
    if (state.joining && !state.joinFocused) {
      state.joinFocused = true;
      $("join-name").focus();
    }
    $("join-form").onsubmit = (e) => {
      e.preventDefault();
      join();
    };
  }

  $("host-box").hidden = !(waiting && state.hostToken);
  $("start-now").onclick = startNow;
}

/** The link that joins this table: its id, and for a private table its code (if this page knows it). */
function joinLink(view) {
  if (!view || !state.gameId) return "";
  const base = `${location.origin}/#join=${encodeURIComponent(state.gameId)}`;
  if (view.table?.visibility === "VISIBILITY_PUBLIC") return base;
  return state.joinCode ? `${base}&code=${encodeURIComponent(state.joinCode)}` : "";
}

async function copyJoinLink() {
  const input = $("join-link");
  const out = $("copy-result");
  try {
    await navigator.clipboard.writeText(input.value);
    out.textContent = "Copied.";
  } catch {
    // No clipboard access (an insecure origin, or refused): leave it selected to copy by hand.
    input.focus();
    input.select();
    out.textContent = "Selected: copy it with Ctrl+C (⌘C).";
  }
}

function renderPlayers(view) {
  const box = $("players");
  box.replaceChildren();
  for (const [i, p] of (view.players ?? []).entries()) {
    const seat = p.seat ?? i;
    const card = document.createElement("div");
    card.className = "player";
    card.dataset.seat = seat;
    const waiting = view.status === WAITING;
    if (seat === (view.currentSeat ?? 0) && view.status !== FINISHED && !waiting) card.classList.add("current");
    if (seat === view.viewerSeat || (view.viewerSeat === undefined && seat === 0 && "hand" in view)) card.classList.add("me");
    // Waiting, no view shows a hand: "you" is the seat this page holds.
    else if (waiting && Object.keys(state.tokens).length === 1 && seat in state.tokens) card.classList.add("me");
    if (p.open) card.classList.add("open");
    const name = document.createElement("strong");
    name.textContent = p.open ? "Open seat" : p.displayName || `Seat ${seat}`;
    const meta = document.createElement("span");
    const bot = p.bot ? ` · bot ${p.bot.slice(10).toLowerCase()}` : "";
    meta.textContent = waiting
      ? p.open ? " waiting for a player" : bot
      : ` ${p.handCount ?? 0} tiles · ${p.score ?? 0} pts${p.marker ? " · marker out" : ""}${bot}`;
    card.append(name, meta);
    box.append(card);
  }
  if (view.teams?.length) {
    const teams = document.createElement("div");
    teams.className = "teams";
    teams.textContent = view.teams.map((t, i) => `team ${i}: seats ${(t.seats ?? [0]).join("+")} · ${t.score ?? 0} pts`).join("  |  ");
    box.append(teams);
  }
}

/** The legal plays of the selected tile, by target key. */
function targetsOfSelected() {
  const byTarget = new Map();
  if (!state.selected) return byTarget;
  for (const m of state.legal) {
    const play = m.move.play;
    if (!play || tileKey(play.tile) !== state.selected) continue;
    const k = refKey(play.train);
    if (!byTarget.has(k)) byTarget.set(k, []);
    byTarget.get(k).push(m);
  }
  return byTarget;
}

function targetButtons(moves, label) {
  return moves.map((m) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "target";
    button.dataset.notation = m.notation;
    button.textContent = moves.length > 1 || label === undefined ? m.notation : label;
    button.title = m.notation;
    button.onclick = () => play(m);
    return button;
  });
}

function renderTrains(view) {
  const board = $("board");
  board.replaceChildren();
  const targets = targetsOfSelected();
  const used = new Set();
  const engine = document.createElement("div");
  engine.className = "station";
  // CL-CF-1: Chicken Foot's round double is the station its lines start from.
  const station = view.ruleset?.game === "GAME_CHICKEN_FOOT" ? "Station " : "Engine ";
  engine.append(station, tileElement(view.engine ?? { a: 0, b: 0 }));
  board.append(engine);
  const names = new Map((view.players ?? []).map((p, i) => [p.seat ?? i, p.displayName || `Seat ${p.seat ?? i}`]));
  for (const train of view.trains ?? []) {
    const ref = train.ref ?? {};
    const base = ref.mexican !== undefined ? `m${ref.mexican}` : `p${ref.seat ?? 0}`;
    const row = document.createElement("div");
    row.className = "train";
    row.dataset.train = base;
    if (train.marker) row.classList.add("marked");
    const title = document.createElement("div");
    title.className = "train-name";
    const game = view.ruleset?.game;
    title.textContent =
      ref.mexican !== undefined
        ? game === "GAME_CHICKEN_FOOT"
          ? `Line ${ref.mexican}` // numbered as moves write it (@m<line>, API.md)
          : `Mexican train${(view.trains ?? []).filter((t) => t.ref?.mexican !== undefined).length > 1 ? ` ${ref.mexican}` : ""}`
        : `${(ref.seat ?? 0) === state.activeSeat ? "Your" : `${names.get(ref.seat ?? 0)}'s`} train${train.marker ? " (open to all)" : ""}`;
    row.append(title);
    const branches = train.branches?.length ? train.branches : [{ end: 0, tiles: train.tiles ?? [], openEnd: (train.openEnds ?? [])[0] }];
    for (const branch of branches) {
      const end = branch.end ?? 0;
      const line = document.createElement("div");
      line.className = "branch";
      line.dataset.target = `${base}.${end}`;
      if (train.branches?.length) {
        const label = document.createElement("span");
        label.className = "branch-name";
        label.textContent = end === 0 ? "trunk" : `branch ${end} (from ${branch.parentEnd ?? 0})`;
        line.append(label);
      }
      for (const t of branch.tiles ?? []) line.append(tileElement(t));
      const k = `${base}.${end}`;
      if (targets.has(k)) {
        line.append(...targetButtons(targets.get(k), "▶ here"));
        used.add(k);
      }
      row.append(line);
    }
    board.append(row);
  }
  for (const d of view.openDoubles ?? []) {
    const note = document.createElement("div");
    note.className = "note";
    note.textContent = `open double ${d.value ?? 0}-${d.value ?? 0} on ${refKey(d.train).split(".")[0]}`;
    board.append(note);
  }
  renderLeftoverTargets(targets, used);
}

function renderLine(view) {
  const board = $("board");
  board.replaceChildren();
  const targets = targetsOfSelected();
  const used = new Set();
  const row = document.createElement("div");
  row.className = "line";
  row.dataset.train = "l";
  const slot = (end) => {
    const box = document.createElement("span");
    box.className = "line-end";
    box.dataset.target = `l.${end}`;
    const k = `l.${end}`;
    if (targets.has(k)) {
      box.append(...targetButtons(targets.get(k), end === 0 ? "◀ here" : "here ▶"));
      used.add(k);
    }
    return box;
  };
  row.append(slot(0));
  const tiles = view.line?.tiles ?? [];
  if (tiles.length === 0) {
    const empty = document.createElement("span");
    empty.className = "note";
    empty.textContent = "no tile played yet";
    row.append(empty);
  }
  for (const t of tiles) row.append(tileElement(t));
  row.append(slot(1));
  board.append(row);
  const ends = view.line?.openEnds ?? [];
  if (ends.length) {
    const note = document.createElement("div");
    note.className = "note";
    note.textContent = `open ends ${ends[0] ?? 0} and ${ends[1] ?? 0}`;
    board.append(note);
  }
  renderLeftoverTargets(targets, used);
}

function renderLeftoverTargets(targets, used) {
  const box = $("other-moves");
  box.replaceChildren();
  for (const [k, moves] of targets) if (!used.has(k)) box.append(...targetButtons(moves));
}

function renderHand(view) {
  const hand = $("hand");
  const actions = $("actions");
  hand.replaceChildren();
  actions.replaceChildren();
  const finished = view.status === FINISHED;
  const waiting = view.status === WAITING;
  const seats = Object.keys(state.tokens).map(Number);
  const current = view.currentSeat ?? 0;
  const names = (view.players ?? []).map((p, i) => p.displayName || `Seat ${p.seat ?? i}`);
  // Pass-and-play cover: the next person shows their own hand.
  const covered = seats.length > 1 && !state.revealed && !finished && !waiting;
  $("cover").hidden = !covered;
  if (covered) {
    $("cover-text").textContent = `Pass the screen to ${names[state.activeSeat]}.`;
    $("cover-show").textContent = `I am ${names[state.activeSeat]}: show my hand`;
    $("cover-show").onclick = () => {
      state.revealed = true;
      refresh();
    };
  }
  $("hand-area").hidden = seats.length === 0 || covered || waiting;
  $("hand-title").textContent =
    seats.length > 1 && state.activeSeat !== null ? `${names[state.activeSeat]}'s hand` : "Your hand";
  const myTurn = !finished && !waiting && state.activeSeat === current && state.legal.length > 0;
  $("turn-line").textContent = finished || waiting
    ? ""
    : myTurn
      ? "Your turn: pick a tile, then where it goes."
      : `Waiting for ${names[current] ?? `seat ${current}`}…`;
  if (view.turn?.owesTile && myTurn) $("turn-line").textContent += " A double is open: answer it.";
  const playable = new Set(state.legal.filter((m) => m.move.play).map((m) => tileKey(m.move.play.tile)));
  // Covered: the previous person's hand is not even put in the page.
  for (const t of covered ? [] : view.hand ?? []) {
    const button = tileElement(t, "button");
    button.type = "button";
    button.classList.add("hand-tile");
    const k = tileKey(t);
    if (playable.has(k)) button.classList.add("playable");
    if (k === state.selected) button.classList.add("selected");
    button.disabled = !playable.has(k) || state.busy;
    button.onclick = () => {
      // Selects (never toggles off): a repeated or doubled tap keeps the tile
      // chosen and its targets shown; another tile or a move changes it.
      state.selected = k;
      render();
    };
    hand.append(button);
  }
  for (const m of state.legal) {
    const kind = Object.keys(m.move)[0];
    if (kind === "play") continue;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "action";
    button.dataset.action = kind;
    button.textContent = { draw: "Draw", pass: "Pass", endTurn: "End turn" }[kind] ?? m.notation;
    button.disabled = state.busy;
    button.onclick = () => play(m);
    actions.append(button);
  }
}

function renderScores(view) {
  const box = $("scores");
  box.replaceChildren();
  const players = view.players ?? [];
  const rounds = Math.max(0, ...players.map((p) => (p.roundScores ?? []).length));
  if (rounds === 0) return;
  const table = document.createElement("table");
  table.className = "score-table";
  const head = table.createTHead().insertRow();
  for (const text of ["", ...Array.from({ length: rounds }, (_, i) => `${i + 1}`), "total"]) {
    const th = document.createElement("th");
    th.textContent = text;
    head.append(th);
  }
  const body = table.createTBody();
  for (const [i, p] of players.entries()) {
    const row = body.insertRow();
    row.insertCell().textContent = p.displayName || `Seat ${p.seat ?? i}`;
    for (let r = 0; r < rounds; r++) row.insertCell().textContent = String((p.roundScores ?? [])[r] ?? "");
    row.insertCell().textContent = String(p.score ?? 0);
  }
  const title = document.createElement("h2");
  title.textContent = "Scores";
  box.append(title, table);
}

function renderEnding(view) {
  const finished = view.status === "GAME_STATUS_FINISHED";
  $("ending").hidden = !finished;
  if (!finished) return;
  const names = (view.players ?? []).map((p, i) => p.displayName || `Seat ${p.seat ?? i}`);
  const winners = (view.winners ?? []).map((s) => names[s]);
  $("winners").textContent = winners.length ? `Winner: ${winners.join(" and ")}` : "No winner";
  $("seed-shown").textContent = view.seed ?? "";
  $("sha-shown").textContent = view.seedSha256 ?? "";
  if (view.seedFromCaller) $("sha-shown").textContent += " (the seed was chosen by the table's creator)";
  $("verify").onclick = verify;
  renderAgain(view);
}

/**
 * "Play again": the first click anywhere creates the rematch (Rematch), and
 * each page's click claims its own seats of it. A page whose players have not
 * asked yet sees the finished game name its rematch (schedulePoll) and offers
 * "Join the rematch"; a spectator gets a link to watch it.
 */
function renderAgain(view) {
  const seated = Object.keys(state.tokens).length > 0;
  const next = view.rematchGameId ?? "";
  $("again").hidden = !seated && !next;
  $("rematch").hidden = !seated;
  $("rematch").textContent = next ? "Join the rematch" : "Play again";
  $("rematch").onclick = rematch;
  $("again-note").textContent = next
    ? seated
      ? "A rematch is on: take your seat in it."
      : "A rematch is on."
    : "";
  const watchLink = $("watch-rematch");
  watchLink.hidden = !next || seated;
  if (next) watchLink.href = `#game=${encodeURIComponent(next)}`;
}

/** "Leave table" for a seat this page holds, while the game waits or goes on. */
function renderSeatBox(view) {
  const seated = state.activeSeat !== null && tokenOf(state.activeSeat) !== null;
  $("seat-box").hidden = !seated || view.status === FINISHED;
  if (!seated) return;
  const several = Object.keys(state.tokens).length > 1;
  const name = view.players?.[state.activeSeat]?.displayName || `seat ${state.activeSeat + 1}`;
  $("leave").textContent = several ? `Leave table (${name})` : "Leave table";
  $("leave-question").textContent =
    view.status === WAITING
      ? "Give up your seat? It opens again for someone else."
      : "Give up your seat? A bot plays it from the next turn, and this page only watches.";
  $("leave").onclick = () => {
    $("leave-confirm").hidden = false;
    $("leave-no").focus();
  };
  $("leave-no").onclick = () => {
    $("leave-confirm").hidden = true;
    $("leave").focus();
  };
  $("leave-yes").onclick = leave;
}

// ------------------------------------------------------------------ table actions

/** JoinGame: by the game's id (a public table), its code, or both; the token is kept in this browser. */
async function join() {
  hideErrorIn("join-error");
  const name = $("join-name").value.trim();
  const body = {};
  if (name) body.displayName = name;
  if (state.joinCode) body.joinCode = state.joinCode;
  const seat = $("join-seat").value;
  if (seat !== "") body.seat = Number(seat);
  $("join").disabled = true;
  try {
    const path = `/v1/games/${state.gameId ? encodeURIComponent(state.gameId) : "-"}/join`;
    const answer = await api("POST", path, { body });
    if (name) rememberName(name);
    const gameId = answer.game.gameId;
    const taken = answer.seat?.seat ?? 0;
    const kept = remember(gameId, {
      tokens: { [taken]: answer.seat.token },
      seedSha256: answer.game.seedSha256,
      // Kept to join again after leaving (the share link of a private table needs it too).
      ...(state.joinCode ? { joinCode: state.joinCode } : {}),
    });
    go(kept ? `game=${encodeURIComponent(gameId)}` : fragment(gameId, taken, answer.seat.token));
  } catch (error) {
    showErrorIn("join-error", error);
    $("join").focus();
  } finally {
    $("join").disabled = false;
  }
}

/** StartGame with the host token: the open seats go to bots. */
async function startNow() {
  hideErrorIn("start-error");
  $("start-now").disabled = true;
  try {
    await api("POST", gamePath("/start"), { token: state.hostToken });
    await refresh();
  } catch (error) {
    showErrorIn("start-error", error);
  } finally {
    $("start-now").disabled = false;
  }
}

/** LeaveGame for the active seat; this page then forgets its token and watches. */
async function leave() {
  hideErrorIn("leave-error");
  const seat = state.activeSeat;
  $("leave-yes").disabled = true;
  try {
    await api("POST", gamePath("/leave"), { token: tokenOf(seat) });
    remember(state.gameId, { tokens: { [seat]: null } });
    // (A token in the address, a seat link's, goes with it: such a page holds only that one.)
    go(`game=${encodeURIComponent(state.gameId)}`);
  } catch (error) {
    showErrorIn("leave-error", error);
  } finally {
    $("leave-yes").disabled = false;
  }
}

/** Rematch with each token this page holds: the new game's seats, once each. */
async function rematch() {
  hideErrorIn("rematch-error");
  $("rematch").disabled = true;
  try {
    let nextId = null;
    const tokens = {};
    for (const [seat, token] of Object.entries(state.tokens)) {
      const answer = await api("POST", gamePath("/rematch"), { token });
      nextId = answer.game.gameId;
      // No seat in the answer: this seat's was claimed already (by another tab?).
      if (answer.seat?.token) tokens[answer.seat.seat ?? Number(seat)] = answer.seat.token;
    }
    const seats = Object.entries(tokens);
    if (seats.length === 0) {
      showErrorIn("rematch-error", "Your seat in the rematch was claimed already (from another page?): you can watch it.");
      $("watch-rematch").hidden = false;
      $("watch-rematch").href = `#game=${encodeURIComponent(nextId)}`;
      return;
    }
    const kept = remember(nextId, { tokens });
    go(kept || seats.length > 1 ? `game=${encodeURIComponent(nextId)}` : fragment(nextId, seats[0][0], seats[0][1]));
  } catch (error) {
    showErrorIn("rematch-error", error);
  } finally {
    $("rematch").disabled = false;
  }
}

// ------------------------------------------------------------------ moves

async function play(legalMove) {
  if (state.busy) return;
  state.busy = true;
  hideError();
  const token = tokenOf(state.activeSeat);
  try {
    const answer = await api("POST", gamePath("/moves"), {
      token,
      body: { move: legalMove.move, expectedVersion: state.legalVersion, requestId: crypto.randomUUID() },
    });
    state.selected = null;
    state.shown = null; // the selection is gone: the next view renders
    for (const e of answer.events ?? []) addEvent(e, "move");
    const view = answer.game;
    state.answered = Math.max(state.answered, Number(view.version ?? 0));
    state.busy = false;
    let legal = [];
    let version = view.version ?? "0";
    if (view.status !== "GAME_STATUS_FINISHED" && (view.currentSeat ?? 0) === state.activeSeat) {
      const moves = await api("GET", gamePath("/legal-moves"), { token });
      legal = moves.moves ?? [];
      version = moves.version ?? "0";
    }
    setView(view, legal, version);
  } catch (error) {
    state.busy = false;
    state.selected = null; // choose again, on the game as it is now
    state.shown = null;
    showError(error);
    await refresh();
  }
}

function showError(error) {
  const box = $("error");
  box.hidden = false;
  box.replaceChildren();
  const reason = document.createElement("strong");
  reason.textContent = error.reason || "error";
  box.append(reason);
  if (error.rule) {
    const rule = document.createElement("span");
    rule.className = "rule";
    rule.textContent = ` [${error.rule}]`;
    box.append(rule);
  }
  box.append(`: ${error.message}`);
}

function hideError() {
  $("error").hidden = true;
}

/** A refusal shown in the box beside the control that caused it: the reason, then the service's message. */
function showErrorIn(id, error) {
  const box = $(id);
  box.hidden = false;
  box.replaceChildren();
  if (typeof error === "string") {
    box.textContent = error;
    return;
  }
  const reason = document.createElement("strong");
  reason.textContent = error.reason || "error";
  box.append(reason, `: ${error.message}`);
}

function hideErrorIn(id) {
  $(id).hidden = true;
  $(id).replaceChildren();
}

// ------------------------------------------------------------------ events (SSE)

function describe(e) {
  const kind = Object.keys(e).find((k) => k !== "version");
  const b = e[kind] ?? {};
  const name = (s) => state.view?.players?.[s ?? 0]?.displayName || `seat ${s ?? 0}`;
  switch (kind) {
    case "tilePlayed":
      return `${name(b.seat)} played ${b.tile?.a ?? 0}-${b.tile?.b ?? 0} on ${refKey(b.train)}`;
    case "tileDrawn":
      return `${name(b.seat)} drew${b.tile ? ` ${b.tile.a ?? 0}-${b.tile.b ?? 0}` : " a tile"}`;
    case "passed":
      return `${name(b.seat)} passed`;
    case "markerPlaced":
      return `${name(b.seat)}'s train is open to all`;
    case "markerRemoved":
      return `${name(b.seat)}'s train is closed again`;
    case "doubleSatisfied":
      return `the double ${b.value ?? 0} is answered`;
    case "turnStarted":
      return `${name(b.seat)}'s turn`;
    case "roundStarted":
      return `round ${b.round ?? 0} starts${b.engine ? ` (engine ${b.engine.a ?? 0}-${b.engine.b ?? 0})` : ""}, ${name(b.starter)} first`;
    case "roundEnded":
      return `round ${b.round ?? 0} ends (${(b.reason ?? "").replace("ROUND_END_REASON_", "").toLowerCase()}): ${(b.scores ?? []).join(" / ")}`;
    case "pointsScored":
      return `${name(b.seat)} scores ${b.points ?? 0} (${(b.reason ?? "").replace("POINTS_REASON_", "").toLowerCase()})`;
    case "turnTimedOut":
      return `${name(b.seat)} ran out of time: the service plays their turn`;
    case "gameEnded":
      return `game over: ${(b.totals ?? []).join(" / ")}`;
    case "seatJoined":
      return `${b.displayName || name(b.seat)} sat down at seat ${(b.seat ?? 0) + 1}`;
    case "seatLeft":
      return `${name(b.seat)} left${b.reason === "LEAVE_REASON_TIMEOUTS" ? " (out of time too often)" : ""}${b.bot ? `: a ${b.bot.slice(10).toLowerCase()} bot plays on` : ""}`;
    case "gameStarted":
      return `the game starts${b.botSeats?.length ? `: bots play seat ${b.botSeats.map((s) => s + 1).join(", ")}` : ""}`;
    default:
      return kind;
  }
}

/**
 * One event in the events list, from a move's answer ("move") or the watch
 * stream ("watch"), which both carry the same events: an event is shown once
 * however many sources bring it, yet two alike in one version (a knock
 * penalty's draws) are both shown.
 */
function addEvent(e, source) {
  const version = Number(e.version ?? 0);
  // Pass-and-play: the list stays on screen when it is handed over, so a drawn
  // tile (in the answer to the drawer's own move) is not named there.
  const shared = Object.keys(state.tokens).length > 1;
  const text = describe(shared && e.tileDrawn ? { ...e, tileDrawn: { seat: e.tileDrawn.seat } } : e);
  const key = `${version}|${text}`;
  const fromSource = (state.eventCounts.get(`${source}|${key}`) ?? 0) + 1;
  state.eventCounts.set(`${source}|${key}`, fromSource);
  const shown = state.eventCounts.get(key) ?? 0;
  if (fromSource <= shown) return;
  state.eventCounts.set(key, shown + 1);
  state.events.push({ version, text });
  const li = document.createElement("li");
  li.textContent = `v${version} ${text}`;
  $("events").prepend(li);
  while ($("events").children.length > 200) $("events").lastChild.remove();
}

function stopWatching() {
  if (state.watch) state.watch.abort();
  state.watch = null;
  clearTimeout(state.pollTimer);
  state.pollTimer = null;
}

/** WatchGame over SSE with fetch (EventSource cannot send a bearer token). */
async function watch() {
  const controller = new AbortController();
  state.watch = controller;
  const seats = Object.keys(state.tokens).map(Number);
  // One seat: its own stream (its draws show their tile); pass-and-play: a spectator's.
  const token = seats.length === 1 ? state.tokens[seats[0]] : null;
  let after = null;
  let ended = false;
  while (!controller.signal.aborted && !ended) {
    try {
      const query = after === null ? "" : `?afterVersion=${after}`;
      const headers = { accept: "text/event-stream" };
      if (token) headers.authorization = `Bearer ${token}`;
      const response = await fetch(gamePath(`/events${query}`), { headers, signal: controller.signal, cache: "no-store" });
      if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => ({})));
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const data = block
            .split("\n")
            .filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5).trimStart())
            .join("\n");
          if (!data) continue;
          const event = JSON.parse(data);
          after = event.version ?? "0";
          if (event.snapshot) {
            // A waiting table's changes keep its version: a stream that
            // reconnected may have missed some, which a fresh view shows.
            if (isNews(event.snapshot.version) || state.view?.status === WAITING) scheduleRefresh();
            continue;
          }
          addEvent(event, "watch");
          if (event.gameEnded) ended = true;
          if (isNews(event.version) || TABLE_EVENTS.some((k) => k in event)) scheduleRefresh();
        }
      }
    } catch (error) {
      if (controller.signal.aborted) return;
      if (error instanceof ApiError && error.status < 500 && error.status !== 429) {
        showError(error);
        return;
      }
    }
    if (!ended && !controller.signal.aborted) await new Promise((r) => setTimeout(r, 1000));
  }
  if (ended) scheduleRefresh();
}

// ------------------------------------------------------------------ verify

async function verify() {
  const out = $("verify-result");
  out.className = "";
  out.textContent = "verifying…";
  try {
    const log = await api("GET", gamePath("/log"));
    const result = await verifyDeals(log, state.view, state.knownSha);
    if (result.ok) {
      out.className = "verified";
      out.textContent = `verified: ${result.rounds} deal${result.rounds === 1 ? "" : "s"} recomputed from the seed match the log and the seed's SHA-256`;
    } else {
      out.className = "mismatch";
      out.textContent = `mismatch: ${result.problems.join("; ")}`;
    }
  } catch (error) {
    out.className = "mismatch";
    out.textContent = `could not verify: ${error.message}`;
  }
}

// ------------------------------------------------------------------ start

function route() {
  hideError();
  const params = new URLSearchParams(location.hash.slice(1));
  if (params.get("game") || params.get("join")) openTable(params);
  else {
    stopWatching();
    showSetup();
  }
}

window.addEventListener("hashchange", route);
route();
