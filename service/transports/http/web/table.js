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
import { playableWhere, renderBoard, targetButtons as boardTargetButtons } from "./board.js";
import { tileElement as drawTile, tileName } from "./tiles.js";

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
  // The round summary (track): hand counts since the newest view, how the
  // last round ended, and whether its summary was put away.
  live: null,
  lastRoundEnd: null,
  summaryClosed: null,
  lastPlayer: null, // the seat of the newest play: who went out, on a domino
  linePlays: -1, // plays on the line this hand (-1: the deal was before this page)
  turnSaid: null, // the "your turn" last announced
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

/** A tile drawn with its pips (tiles.js): laid along, or upright as a button in the hand. */
function tileElement(t, tag = "span") {
  return drawTile(t, { tag, upright: tag === "button" });
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

// What a person calls each preset, and what it plays like in one line.
// ListRulesets gives only preset ids and their options, so the names live
// here; a preset this table does not know yet shows its id, prettified.
const PRESETS = {
  standard: ["Mexican Train", "The box rules: trains from a central engine, one Mexican train open to all."],
  pagat: ["Mexican Train, chain start", "As pagat.com plays it: your first turn may lay a whole chain of tiles."],
  university_games: [
    "Mexican Train, loose doubles",
    "University Games' rules: a chain first turn, and an open double blocks nobody.",
  ],
  cover_own: ["Mexican Train, cover your own", "A double you play is covered on your own train first."],
  by_set: ["Mexican Train, set by players", "The set and hand size follow the number of players (double-9 to double-18)."],
  house: [
    "Mexican Train, house rules",
    "One double a turn, no going out on a double, say “knock” or draw 2, and 0–0 costs 50.",
  ],
  chicken_foot: ["Mexican Train with chicken feet", "Every double is answered by three tiles, a chicken foot."],
  block: ["Block", "No drawing: play a tile on either end of the line, or pass."],
  block_teams: ["Block for two teams", "Four players, partners sitting opposite; no drawing."],
  draw: ["Draw", "Can't play? Draw from the boneyard until you can."],
  draw_teams: ["Draw for two teams", "Four players, partners sitting opposite; draw until you can play."],
  all_fives: ["All Fives (Muggins)", "Score the ends' total whenever it is a multiple of five."],
  all_fives_teams: ["All Fives for two teams", "Four players, partners opposite; score the ends in fives."],
  bergen: ["Bergen", "Score for double and triple headers: both ends showing the same number."],
  matador: ["Matador", "Touching numbers add up to seven; the matadors (0–0, 1–6, 2–5, 3–4) go anywhere."],
  chicken_foot_game: ["Chicken Foot", "Six lines from the station double; every double grows a three-toed foot."],
};

/** "block_teams" -> "Block teams": a preset the name table does not know. */
const prettyId = (id) => {
  const words = String(id).replaceAll("_", " ").trim();
  return words ? words[0].toUpperCase() + words.slice(1) : "Game";
};

function presetName(preset, game) {
  const known = PRESETS[preset]?.[0];
  if (known) return known;
  const gameName = GAME_NAMES[game];
  const pretty = prettyId(preset);
  return gameName && !pretty.toLowerCase().startsWith(gameName.toLowerCase()) ? `${gameName}: ${pretty}` : pretty;
}

const LINE_GAMES_DOUBLE_SIX_MAX = 4; // CL-SET-1: 2 to 4 players with double-six

/**
 * The players a preset seats, [min, max], from its resolved options:
 * CL-TEAM-1 teams need exactly 4; CL-SET-1 a line game 2 to 4 with
 * double-six, else as many hands as the set holds; MT-SET-1 / MT-DEAL-1
 * Mexican Train 2 to 8 by the box's table, up to 14 when the set follows the
 * player count; CL-CF-1 Chicken Foot 2 to 8.
 */
function seatRange(rules) {
  const game = rules.game ?? "GAME_MEXICAN_TRAIN";
  if (rules.teams) return [4, 4];
  if (game === "GAME_CHICKEN_FOOT") return [2, 8];
  if (game === "GAME_MEXICAN_TRAIN") return [2, rules.handSizeTable === "HAND_SIZE_TABLE_BY_SET" ? 14 : 8];
  const set = rules.setMax ?? 6;
  if (set === 6) return [2, LINE_GAMES_DOUBLE_SIX_MAX];
  const tiles = ((set + 1) * (set + 2)) / 2;
  return [2, Math.max(2, Math.floor(tiles / (rules.handSize || 7)))];
}

const selectedRules = () => {
  const option = $("preset").selectedOptions[0];
  return option ? JSON.parse(option.dataset.rules) : null;
};

async function showSetup() {
  $("setup").hidden = false;
  $("table").hidden = true;
  $("status-line").textContent = "";
  $("status-line").removeAttribute("title");
  document.title = "Railyard: a new table";
  delete document.body.dataset.status;
  delete document.body.dataset.game;
  const select = $("preset");
  try {
    const { rulesets = [] } = await api("GET", "/v1/rulesets");
    const chosen = select.value;
    select.replaceChildren();
    // One group per game, in the order ListRulesets lists them.
    const groups = new Map();
    for (const r of rulesets) {
      const game = r.game ?? "GAME_MEXICAN_TRAIN";
      if (!groups.has(game)) {
        const group = document.createElement("optgroup");
        group.label = GAME_NAMES[game] ?? prettyId(game.replace(/^GAME_/, "").toLowerCase());
        groups.set(game, group);
        select.append(group);
      }
      const option = document.createElement("option");
      option.value = r.preset;
      option.dataset.game = game;
      option.dataset.rules = JSON.stringify(r);
      option.textContent = presetName(r.preset, game);
      groups.get(game).append(option);
    }
    if (chosen) select.value = chosen;
  } catch (error) {
    showCreateError(error);
  }
  if ($("seats").children.length === 0) {
    addSeat("You", "");
    addSeat("Bot 1", "BOT_LEVEL_GREEDY");
  }
  select.onchange = () => describePreset(true);
  describePreset(false);
  if ($("bot-level").children.length === 0) {
    for (const level of BOT_LEVELS) {
      const option = document.createElement("option");
      option.value = level;
      option.textContent = level.slice(10).toLowerCase();
      $("bot-level").append(option);
    }
    $("bot-level").value = "BOT_LEVEL_GREEDY";
  }
  $("add-seat").onclick = () => addSeat(nextBotName(), "BOT_LEVEL_GREEDY").focus();
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

/** "Bot N" with the lowest N no seat is named already. */
function nextBotName() {
  const names = new Set([...document.querySelectorAll(".seat-name")].map((i) => i.value.trim()));
  let n = 1;
  while (names.has(`Bot ${n}`)) n += 1;
  return `Bot ${n}`;
}

/** The chosen preset's line of description, and the seats made to fit it
 * (`changed`: the person picked it, so say what changed). */
function describePreset(changed) {
  const rules = selectedRules();
  if (!rules) return;
  const option = $("preset").selectedOptions[0];
  const game = option.dataset.game;
  const parts = [];
  if (rules.setMax) parts.push(`double-${rules.setMax}`);
  if (rules.rounds) parts.push(`${rules.rounds} rounds`);
  if (rules.targetScore) parts.push(`first to ${rules.targetScore} points`);
  const [min, max] = seatRange(rules);
  parts.push(min === max ? `${min} players` : `${min} to ${max} players`);
  const line = PRESETS[rules.preset]?.[1] ?? "";
  $("preset-note").textContent = `${line}${line ? " " : ""}(${parts.join(", ")}.)`;
  const trains = TRAIN_GAMES.has(game);
  $("rounds").disabled = !trains;
  $("target").disabled = trains;
  // Each game has one of the two (MT-RND-1, CL-SC-2): the other is not shown at all.
  $("rounds").closest("label").hidden = !trains;
  $("target").closest("label").hidden = trains;
  // MT-RND-1 / CL-CF-1: a round per double from the top one down to 0-0
  // (by_set: the set follows the players, up to double-18).
  $("rounds").max = String(rules.setMax ? rules.setMax + 1 : 19);
  $("rounds").placeholder = rules.setMax ? `all ${rules.setMax + 1}` : "all";
  $("target").placeholder = trains ? "—" : String(rules.targetScore ?? "");
  fitSeats(changed);
}

/** Adds bots up to the preset's fewest players, takes trailing seats off
 * above its most, and keeps the seat buttons within those bounds. */
function fitSeats(announce) {
  const rules = selectedRules();
  if (!rules) return;
  const [min, max] = seatRange(rules);
  const before = document.querySelectorAll(".seat-row").length;
  while (document.querySelectorAll(".seat-row").length < min) addSeat(nextBotName(), "BOT_LEVEL_GREEDY");
  while (document.querySelectorAll(".seat-row").length > max) [...document.querySelectorAll(".seat-row")].at(-1).remove();
  seatsChanged();
  const after = document.querySelectorAll(".seat-row").length;
  const why = rules.teams
    ? "Two teams of two: partners sit opposite (seats 1 and 3 against seats 2 and 4)."
    : min === max
      ? `This game seats exactly ${min}.`
      : `This game seats ${min} to ${max} players.`;
  $("seat-note").textContent =
    announce && after !== before ? `${why} The table now has ${after} seats.` : why;
}

function addSeat(name, kind) {
  const li = document.createElement("li");
  li.className = "seat-row";
  const input = document.createElement("input");
  input.className = "seat-name";
  input.value = name;
  input.maxLength = 64; // the service's limit on a display name
  input.autocomplete = "off";
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
    // Focus stays in the seat list: on the next row's remove button, else the add button.
    const next = li.nextElementSibling ?? li.previousElementSibling;
    li.remove();
    seatsChanged();
    const target = next?.querySelector(".seat-remove:not([disabled])") ?? $("add-seat");
    target.focus();
  };
  select.onchange = seatsChanged;
  li.append(input, select, remove);
  $("seats").append(li);
  seatsChanged();
  return select;
}

/** Labels the seat rows by their number (and team); an open seat has no name
 * to type; the table's settings show while a seat is open; the add and
 * remove buttons stay within the preset's player counts. */
function seatsChanged() {
  const rows = [...document.querySelectorAll(".seat-row")];
  const rules = selectedRules();
  const [min, max] = rules ? seatRange(rules) : [1, 14];
  rows.forEach((li, i) => {
    const input = li.querySelector(".seat-name");
    const open = li.querySelector(".seat-kind").value === "open";
    // CL-TEAM-1: seats 0+2 and 1+3 are partners.
    const team = rules?.teams ? ` (team ${(i % 2) + 1})` : "";
    input.setAttribute("aria-label", `seat ${i + 1}${team}: name`);
    input.removeAttribute("aria-invalid");
    li.querySelector(".seat-kind").setAttribute("aria-label", `seat ${i + 1}${team}: person, open or bot`);
    const remove = li.querySelector(".seat-remove");
    remove.setAttribute("aria-label", `remove seat ${i + 1}`);
    remove.disabled = rows.length <= min;
    remove.title = remove.disabled ? `This game needs at least ${min} players` : "";
    li.dataset.team = rules?.teams ? String(i % 2) : "";
    li.dataset.label = rules?.teams ? `Seat ${i + 1} · team ${(i % 2) + 1}` : "";
    input.disabled = open;
    input.placeholder = open ? "a friend" : "";
  });
  for (const id of ["add-seat", "add-open-seat"]) {
    $(id).disabled = rows.length >= max;
    $(id).title = rows.length >= max ? `This game seats at most ${max}` : "";
  }
  $("table-settings").hidden = !rows.some((li) => li.querySelector(".seat-kind").value === "open");
}

/**
 * A refusal of the setup form, beside its Create button: what went wrong in
 * a sentence, the service's reason and rule id after it, and the field it
 * names marked invalid (so a screen reader says which one).
 */
function showCreateError(error) {
  const box = $("create-error");
  box.hidden = false;
  box.replaceChildren();
  for (const el of document.querySelectorAll("#setup-form [aria-invalid]")) el.removeAttribute("aria-invalid");
  const title = document.createElement("strong");
  title.textContent = "The table was not created: ";
  box.append(title, typeof error === "string" ? error : error.message);
  if (typeof error !== "string" && (error.reason || error.rule)) {
    const code = document.createElement("span");
    code.className = "rule";
    code.textContent = ` (${[error.reason, error.rule].filter(Boolean).join(", ")})`;
    box.append(code);
  }
  const text = typeof error === "string" ? error : error.message ?? "";
  const field =
    /players\[(\d+)\]/.exec(text)?.[1] !== undefined
      ? document.querySelectorAll(".seat-name")[Number(/players\[(\d+)\]/.exec(text)[1])]
      : /target.?score/i.test(text)
        ? $("target")
        : /\brounds\b/i.test(text)
          ? $("rounds")
          : /\bseed\b/i.test(text)
            ? $("seed")
            : null;
  field?.setAttribute("aria-invalid", "true");
  box.scrollIntoView({ block: "nearest" });
}

async function createTable() {
  hideErrorIn("create-error");
  for (const el of document.querySelectorAll("#setup-form [aria-invalid]")) el.removeAttribute("aria-invalid");
  const option = $("preset").selectedOptions[0];
  if (!option) {
    showCreateError("the list of games did not load: reload the page.");
    return;
  }
  const [min, max] = seatRange(JSON.parse(option.dataset.rules));
  const count = document.querySelectorAll(".seat-row").length;
  if (count < min || count > max) {
    // (The form keeps the count within bounds; this is for a hand-edited page.)
    showCreateError(`${option.textContent} seats ${min === max ? min : `${min} to ${max}`} players, not ${count}.`);
    return;
  }
  const ruleset = { preset: option.value };
  const rounds = $("rounds").value.trim();
  const target = $("target").value.trim();
  if (rounds && !$("rounds").disabled) ruleset.rounds = Number(rounds);
  if (target && !$("target").disabled) ruleset.targetScore = Number(target);
  const players = [...document.querySelectorAll(".seat-row")].map((li, i) => {
    const kind = li.querySelector(".seat-kind").value;
    if (kind === "open") return { open: true };
    const player = { displayName: li.querySelector(".seat-name").value.trim() || `Seat ${i + 1}` };
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
    showCreateError(error);
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
  text.textContent = `${presetName(summary.ruleset?.preset ?? "", game)}: ${names.join(", ")} · ${open} open seat${open === 1 ? "" : "s"}`;
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
    live: null,
    lastRoundEnd: null,
    summaryClosed: null,
    lastPlayer: null,
    linePlays: -1,
    turnSaid: null,
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
  $("deal-check").hidden = true;
  $("round-summary").hidden = true;
  $("verify-result").textContent = "";
  $("verify-result").className = "";
  $("leftovers").replaceChildren();
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
  trackView(view);
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
  const focus = focusMemo();
  const game = view.ruleset?.game ?? "GAME_MEXICAN_TRAIN";
  const finished = view.status === FINISHED;
  const waiting = view.status === WAITING;
  const gameName = presetName(view.ruleset?.preset ?? "", game);
  const rounds = view.roundsTotal
    ? `round ${view.round ?? 1} of ${view.roundsTotal}`
    : `hand ${view.round ?? 1}` + (view.targetScore ? `, first to ${view.targetScore}` : "");
  $("status-line").textContent = waiting
    ? `${gameName} · waiting for players`
    : finished
      ? `${gameName} · game over`
      : `${gameName} · ${rounds} · ${view.boneyardCount ?? 0} in the boneyard`;
  // The version is for testers and bug reports, not players: on hover and in body[data-version].
  $("status-line").title = `game ${state.gameId} · version ${view.version ?? 0}`;
  $("table-title").textContent = `${gameName} table`;
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
  renderSummary(view);
  renderEnding(view);
  renderTurnStatus(view, gameName);
  restoreFocus(focus);
}

// ------------------------------------------------------------------ keyboard

/**
 * What has the keyboard focus, by what names it across a re-render: a
 * render rebuilds the hand, the board's targets and the actions, and a
 * rebuilt button that had the focus would leave it on the page's body.
 */
function focusMemo() {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  return {
    el,
    tile: el.closest("#hand") ? el.closest("[data-tile]")?.dataset.tile : undefined,
    notation: el.dataset.notation,
    action: el.dataset.action,
    selected: state.selected,
  };
}

const shown = (el) => el && el.isConnected && !el.disabled && el.getClientRects().length > 0;

/**
 * Puts the focus back where a keyboard user expects it after a render: a
 * tile just chosen hands it to its first target; a button rebuilt gets it
 * back; one that went away (the tile played, the cover lifted) passes it to
 * the next thing to do: the cover's button, a playable tile, an action, or
 * else the hand's heading, from which Tab reaches the hand.
 */
function restoreFocus(memo) {
  if (!memo) return;
  if (memo.tile && state.selected === memo.tile && memo.selected !== memo.tile) {
    const target = document.querySelector("button.target:not([disabled])");
    if (target) {
      target.focus();
      return;
    }
  }
  if (shown(memo.el) && document.activeElement === memo.el) return;
  const again =
    (memo.tile && document.querySelector(`#hand [data-tile="${CSS.escape(memo.tile)}"]`)) ||
    (memo.notation && document.querySelector(`[data-notation="${CSS.escape(memo.notation)}"]`)) ||
    (memo.action && document.querySelector(`#actions [data-action="${CSS.escape(memo.action)}"]`)) ||
    (memo.el.id && $(memo.el.id));
  const next = [
    again,
    $("cover-show"),
    document.querySelector("#hand button.playable:not([disabled])"),
    document.querySelector("#actions button:not([disabled])"),
  ].find(shown);
  if (next) next.focus();
  else if (shown($("hand-title"))) $("hand-title").focus();
  else if (shown($("ending-title"))) $("ending-title").focus();
}

/** Arrow keys, Home and End move between the hand's tiles; Escape puts a chosen tile back. */
function handKeys(e) {
  if (e.key === "Escape" && state.selected) {
    const tile = state.selected;
    state.selected = null;
    render();
    document.querySelector(`#hand [data-tile="${CSS.escape(tile)}"]`)?.focus();
    e.preventDefault();
    return;
  }
  const moves = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1, Home: -Infinity, End: Infinity };
  if (!(e.key in moves) || !e.target.closest?.("#hand")) return;
  const tiles = [...document.querySelectorAll("#hand button:not([disabled])")];
  if (tiles.length === 0) return;
  const at = tiles.indexOf(e.target.closest("button"));
  const step = moves[e.key];
  const to = Number.isFinite(step) ? (at + step + tiles.length) % tiles.length : step < 0 ? 0 : tiles.length - 1;
  tiles[to].focus();
  e.preventDefault();
}

/** Says "your turn" to a screen reader once per turn (the events log says the rest), and in the tab's title. */
function renderTurnStatus(view, gameName) {
  const playing = view.status !== FINISHED && view.status !== WAITING;
  const mine = playing && state.activeSeat === (view.currentSeat ?? 0) && state.legal.length > 0;
  const names = playerNames(view);
  const text = !playing
    ? ""
    : mine
      ? `Your turn${Object.keys(state.tokens).length > 1 ? `, ${names[state.activeSeat]}` : ""}.`
      : "";
  const key = `${view.version}|${text}`;
  if (text && state.turnSaid !== key) $("turn-status").textContent = text;
  state.turnSaid = key;
  document.title = view.status === FINISHED
    ? `Game over: ${gameName} · Railyard`
    : `${mine ? "Your turn: " : ""}${gameName} · Railyard`;
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

/** Each seat's name as people see it ("Seat 3" for a seat without one). */
function playerNames(view) {
  return (view?.players ?? []).map((p, i) => p.displayName || `Seat ${(p.seat ?? i) + 1}`);
}

/** CL-TEAM-1: a team by its players' names ("Ann & Cy"). */
const teamName = (team, names) => (team.seats ?? []).map((s) => names[s] ?? `Seat ${s + 1}`).join(" & ");
const teamIndexOf = (view, seat) => (view.teams ?? []).findIndex((t) => (t.seats ?? []).includes(seat));

function renderPlayers(view) {
  const box = $("players");
  box.replaceChildren();
  const names = playerNames(view);
  const waiting = view.status === WAITING;
  // Teams: each team's box, by its players' names, holds its two seats and its score.
  const teamBoxes = (view.teams ?? []).map((t, i) => {
    const group = document.createElement("section");
    group.className = `team team-${i}`;
    group.dataset.team = String(i);
    const title = document.createElement("h2");
    title.className = "team-name";
    title.id = `team-title-${i}`;
    group.setAttribute("aria-labelledby", title.id);
    title.textContent = teamName(t, names);
    const score = document.createElement("span");
    score.className = "team-score";
    score.textContent = `${t.score ?? 0} points`;
    title.append(" ", score);
    group.append(title);
    box.append(group);
    return group;
  });
  for (const [i, p] of (view.players ?? []).entries()) {
    const seat = p.seat ?? i;
    const card = document.createElement("div");
    card.className = "player";
    card.dataset.seat = seat;
    const current = seat === (view.currentSeat ?? 0) && view.status !== FINISHED && !waiting;
    if (current) card.classList.add("current");
    if (seat === view.viewerSeat || (view.viewerSeat === undefined && seat === 0 && "hand" in view)) card.classList.add("me");
    // Waiting, no view shows a hand: "you" is the seat this page holds.
    else if (waiting && Object.keys(state.tokens).length === 1 && seat in state.tokens) card.classList.add("me");
    if (p.open) card.classList.add("open");
    const name = document.createElement("strong");
    name.textContent = p.open ? "Open seat" : names[i];
    const meta = document.createElement("span");
    meta.className = "player-meta";
    const bot = p.bot ? ` · bot ${p.bot.slice(10).toLowerCase()}` : "";
    const count = p.handCount ?? 0;
    const scored = view.teams?.length ? `${p.score ?? 0} scored` : `${p.score ?? 0} points`;
    meta.textContent = waiting
      ? p.open ? " waiting for a player" : bot
      : ` ${count} tile${count === 1 ? "" : "s"} · ${scored}${p.marker ? " · 🚂 train open to all" : ""}${bot}`;
    card.append(name, meta);
    if (current) {
      // Not by the border's colour alone: the seat to play says so.
      const tag = document.createElement("span");
      tag.className = "turn-tag";
      tag.textContent = "to play";
      card.append(" ", tag);
    }
    const team = teamIndexOf(view, seat);
    (team >= 0 ? teamBoxes[team] : box).append(card);
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

/** Buttons playing `moves` (one target's), named for people ("play 6–11 on Bob's train"). */
function targetButtons(moves) {
  return boardTargetButtons(moves, state.view, { play, viewer: state.activeSeat });
}

/** Mexican Train and Chicken Foot: the station and its trains (board.js). */
function renderTrains(view) {
  drawBoard(view);
}

/** The classic games: the line of play (board.js). */
function renderLine(view) {
  drawBoard(view);
}

function drawBoard(view) {
  const targets = targetsOfSelected();
  const used = renderBoard($("board"), view, {
    targets,
    play,
    viewer: state.activeSeat,
    selected: state.selected,
  });
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
  const movesOf = new Map(); // a hand tile's legal plays
  for (const m of state.legal) {
    if (!m.move.play) continue;
    const k = tileKey(m.move.play.tile);
    if (!movesOf.has(k)) movesOf.set(k, []);
    movesOf.get(k).push(m);
  }
  // Covered: the previous person's hand is not even put in the page.
  for (const t of covered ? [] : view.hand ?? []) {
    const k = tileKey(t);
    const moves = movesOf.get(k) ?? [];
    const where = playableWhere(moves, view, state.activeSeat);
    const button = drawTile(t, { tag: "button", upright: true, label: where ? `${tileName(t)}, ${where}` : tileName(t) });
    button.type = "button";
    button.classList.add("hand-tile");
    if (moves.length) {
      button.classList.add("playable");
      button.setAttribute("aria-pressed", String(k === state.selected));
    }
    if (k === state.selected) button.classList.add("selected");
    button.disabled = !moves.length || state.busy;
    button.onclick = (event) => {
      // Selects (never toggles off): a repeated or doubled tap keeps the tile
      // chosen and its targets shown; another tile or a move changes it.
      const chosen = state.selected !== k;
      state.selected = k;
      render();
      // Chosen by keyboard (a click without a pointer): on to its first target.
      if (chosen && event.detail === 0) document.querySelector("#board button.target, #other-moves button.target")?.focus();
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

const lowestWins = (view) => TRAIN_GAMES.has(view.ruleset?.game ?? "GAME_MEXICAN_TRAIN"); // MT-SC-2, CL-CF-1
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** A table's header cell (scope: its column or row). */
function headCell(row, text, scope = "col") {
  const th = document.createElement("th");
  th.scope = scope;
  th.textContent = text;
  row.append(th);
  return th;
}

/** The score sheet: a row per player (and per team), a column per hand or round, the totals. */
function renderScores(view) {
  const box = $("scores");
  box.replaceChildren();
  const players = view.players ?? [];
  const rounds = Math.max(0, ...players.map((p) => (p.roundScores ?? []).length));
  if (rounds === 0) return;
  const names = playerNames(view);
  const word = lowestWins(view) ? "Round" : "Hand";
  const winners = new Set(view.status === FINISHED ? view.winners ?? [] : []);
  const table = document.createElement("table");
  table.className = "score-table";
  const caption = table.createCaption();
  caption.textContent = lowestWins(view) ? "Points by round (the lowest total wins)" : "Points by hand (the highest total wins)";
  const head = table.createTHead().insertRow();
  headCell(head, "Player");
  for (let r = 1; r <= rounds; r++) headCell(head, `${word} ${r}`);
  headCell(head, "Total");
  const body = table.createTBody();
  for (const [i, p] of players.entries()) {
    const row = body.insertRow();
    const th = headCell(row, names[i], "row");
    if (winners.has(p.seat ?? i)) {
      row.classList.add("winner");
      th.append(" ★ winner");
    }
    for (let r = 0; r < rounds; r++) row.insertCell().textContent = String((p.roundScores ?? [])[r] ?? "");
    row.insertCell().textContent = String(p.score ?? 0);
  }
  if (view.teams?.length) {
    const foot = table.createTFoot();
    for (const t of view.teams) {
      const row = foot.insertRow();
      row.className = "team-row";
      const th = headCell(row, `Team ${teamName(t, names)}`, "row");
      if ((t.seats ?? []).some((s) => winners.has(s))) {
        row.classList.add("winner");
        th.append(" ★ winners");
      }
      for (let r = 0; r < rounds; r++) {
        const sum = (t.seats ?? []).reduce((n, s) => n + ((players[s]?.roundScores ?? [])[r] ?? 0), 0);
        row.insertCell().textContent = String(sum);
      }
      row.insertCell().textContent = String(t.score ?? 0);
    }
  }
  const title = document.createElement("h2");
  title.textContent = "Scores";
  const scroll = document.createElement("div");
  scroll.className = "score-scroll";
  // Scrolls sideways on a phone after many rounds: reachable by keyboard too.
  scroll.tabIndex = 0;
  scroll.setAttribute("role", "region");
  scroll.setAttribute("aria-label", "score sheet");
  scroll.append(table);
  box.append(title, scroll);
}

const BLOCKED = "ROUND_END_REASON_BLOCKED";

/**
 * Between hands (rounds): how the last one ended (domino or blocked, and
 * by whom), each seat's tiles left and points, the running totals, the
 * teams by name. The view never shows another seat's tiles (MT-VIS-3,
 * CL-VIS-1), so the tiles themselves appear at the game's end, dealt again
 * from the revealed seed ("Verify the deals").
 */
function renderSummary(view) {
  const end = state.lastRoundEnd;
  const box = $("round-summary");
  box.hidden = !end || state.summaryClosed === end.round || view.status === WAITING;
  if (box.hidden) return;
  const names = playerNames(view);
  const trains = lowestWins(view);
  const teams = view.teams ?? [];
  const word = trains ? "Round" : "Hand";
  const blocked = end.reason === BLOCKED;
  box.dataset.round = String(end.round);
  box.dataset.reason = blocked ? "blocked" : "domino";
  const of = trains && view.roundsTotal ? ` of ${view.roundsTotal}` : "";
  $("summary-title").textContent = `${word} ${end.round}${of} is over: ${blocked ? "blocked" : "domino!"}`;
  const who = (seat) => {
    const t = teamIndexOf(view, seat);
    return t >= 0 ? `${names[seat]} (team ${teamName(teams[t], names)})` : names[seat];
  };
  let why;
  if (trains) {
    why = blocked
      ? "Nobody could play and the boneyard was empty. Everyone scores the pips left in their hand."
      : `${end.wentOut === null ? "A player" : names[end.wentOut]} played ${their(names[end.wentOut] ?? "")} last tile. ` +
        "Everyone else scores the pips left in their hand.";
    why += " The lowest total wins the game.";
  } else if (blocked) {
    why =
      end.winner === null
        ? "Blocked: no tile in any hand fits either end, and the lowest hands tie, so nobody wins the hand."
        : `Blocked: no tile in any hand fits either end. ${who(end.winner)} had the lowest hand and ${verb(names[end.winner], "wins", "win")} it.`;
  } else {
    const w = end.winner === null ? "" : names[end.winner];
    why = `${end.winner === null ? "A player" : who(end.winner)} played ${their(w)} last tile and ${verb(w, "wins", "win")} the hand.`;
  }
  $("summary-reason").textContent = why;

  const table = document.createElement("table");
  table.className = `score-table summary-table${teams.length ? " with-teams" : ""}`;
  const caption = table.createCaption();
  caption.textContent = `${word} ${end.round}`;
  const head = table.createTHead().insertRow();
  headCell(head, "Player");
  if (teams.length) headCell(head, "Team");
  headCell(head, "Tiles left");
  headCell(head, trains ? "Pips left (points)" : "Points this hand");
  headCell(head, "Total so far");
  const body = table.createTBody();
  const totals = (view.players ?? []).map((p) => {
    const scores = p.roundScores ?? [];
    return scores.length >= end.round ? scores.slice(0, end.round).reduce((a, b) => a + b, 0) : null;
  });
  for (const [i, p] of (view.players ?? []).entries()) {
    const seat = p.seat ?? i;
    const row = body.insertRow();
    row.dataset.seat = String(seat);
    const th = headCell(row, names[i], "row");
    if (!blocked && (end.wentOut === seat || end.winner === seat)) th.append(" (out)");
    if (teams.length) row.insertCell().textContent = teamIndexOf(view, seat) >= 0 ? teamName(teams[teamIndexOf(view, seat)], names) : "";
    row.insertCell().textContent = end.counts ? String(end.counts[seat] ?? 0) : "—";
    row.insertCell().textContent = String(end.scores[seat] ?? 0);
    row.insertCell().textContent = totals[i] === null ? "…" : String(totals[i]);
  }
  if (teams.length) {
    const foot = table.createTFoot();
    for (const t of teams) {
      const row = foot.insertRow();
      row.className = "team-row";
      headCell(row, `Team ${teamName(t, names)}`, "row");
      row.insertCell();
      const seats = t.seats ?? [];
      row.insertCell().textContent = end.counts ? String(seats.reduce((n, s) => n + (end.counts[s] ?? 0), 0)) : "—";
      row.insertCell().textContent = String(seats.reduce((n, s) => n + (end.scores[s] ?? 0), 0));
      const known = seats.every((s) => totals[s] !== null);
      row.insertCell().textContent = known ? String(seats.reduce((n, s) => n + totals[s], 0)) : "…";
    }
  }
  const scroll = document.createElement("div");
  scroll.className = "score-scroll";
  // (A phone may scroll it sideways: reachable by keyboard too.)
  scroll.tabIndex = 0;
  scroll.setAttribute("role", "region");
  scroll.setAttribute("aria-label", `${word} ${end.round}'s points`);
  scroll.append(table);
  $("summary-body").replaceChildren(scroll);
  $("summary-close").onclick = () => {
    state.summaryClosed = end.round;
    box.hidden = true;
    const next = [document.querySelector("#hand button.playable:not([disabled])"), $("hand-title"), $("turn-line")].find(shown);
    next?.focus();
  };
}

/** The game's end: who won, by how much, the final standings; then the deals' check and "Play again". */
function renderEnding(view) {
  const finished = view.status === FINISHED;
  $("ending").hidden = !finished;
  $("deal-check").hidden = !finished;
  if (!finished) return;
  const names = playerNames(view);
  const winners = view.winners ?? [];
  const teams = view.teams ?? [];
  const players = view.players ?? [];
  const trains = lowestWins(view);
  // Standings: teams (CL-TEAM-1: one score per team) or players, best first.
  const sides = teams.length
    ? teams.map((t) => ({ name: teamName(t, names), seats: t.seats ?? [], score: t.score ?? 0, team: true }))
    : players.map((p, i) => ({ name: names[i], seats: [p.seat ?? i], score: p.score ?? 0, team: false }));
  sides.sort((x, y) => (trains ? x.score - y.score : y.score - x.score));
  const won = sides.filter((s) => s.seats.some((seat) => winners.includes(seat)));
  let title;
  let sentence;
  if (won.length === 0) {
    title = "Game over: no winner";
    sentence = "Nobody won this game.";
  } else if (won.length === 1) {
    const w = won[0];
    const many = w.team || w.seats.length > 1 || isYou(w.name);
    title = `Game over: ${w.name} ${many ? "win" : "wins"}!`;
    sentence = trains
      ? `${w.name} ${many ? "win" : "wins"} with the lowest total, ${plural(w.score, "point")}.`
      : `${w.name} ${many ? "win" : "wins"} with ${plural(w.score, "point")}` +
        (view.targetScore ? `, reaching ${view.targetScore}.` : ".");
  } else {
    const list = won.map((w) => w.name).join(" and ");
    title = `Game over: ${list} share the win`;
    sentence = `${list} share the win, tied on ${plural(won[0].score, "point")}.`;
  }
  $("ending-title").textContent = title;
  $("winners").textContent = sentence;
  const standings = document.createElement("ol");
  standings.className = "standings";
  standings.setAttribute("aria-label", "final standings");
  for (const side of sides) {
    const li = document.createElement("li");
    const isWinner = won.includes(side);
    li.className = isWinner ? "winner" : "";
    li.textContent = `${side.team ? `Team ${side.name}` : side.name}: ${plural(side.score, "point")}${isWinner ? " ★ winner" : ""}`;
    standings.append(li);
  }
  $("final-standings").replaceChildren(standings);
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
  const expected = state.legalVersion;
  try {
    const answer = await api("POST", gamePath("/moves"), {
      token,
      body: { move: legalMove.move, expectedVersion: expected, requestId: crypto.randomUUID() },
    });
    state.selected = null;
    state.shown = null; // the selection is gone: the next view renders
    for (const e of answer.events ?? []) addEvent(e, "move");
    const view = answer.game;
    // The summary of the hand before stays up until this seat's first move after it.
    if (state.lastRoundEnd && state.lastRoundEnd.version <= Number(expected ?? 0)) {
      state.summaryClosed = state.lastRoundEnd.round;
    }
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

const tileText = (t) => `${t?.a ?? 0}–${t?.b ?? 0}`;

// The setup form names the first seat "You": its sentences then read as
// English ("You score", "your train"), not "You scores", "You's train".
const isYou = (name) => name === "You";
const poss = (name) => (isYou(name) ? "your" : `${name}'s`);
const their = (name) => (isYou(name) ? "your" : "their");
const verb = (name, one, many) => (isYou(name) || name.includes(" & ") ? many : one);

/** Where a play went, in words: "Bob's train", "the Mexican train", "line 3", "the line's left end". */
function placeText(ref, seat) {
  const view = state.view;
  const names = playerNames(view);
  const end = ref?.end ?? 0;
  const branch = end ? ` (branch ${end})` : ""; // as the board names a foot's branches
  if (ref?.line !== undefined) return `the line's ${end === 0 ? "left" : "right"} end`;
  if (ref?.mexican !== undefined) {
    // CL-CF-1: the station's lines are Mexican trains by number.
    if (view?.ruleset?.game === "GAME_CHICKEN_FOOT") return `line ${ref.mexican + 1}${branch}`;
    const several = (view?.trains ?? []).filter((t) => t.ref?.mexican !== undefined).length > 1;
    return `${several ? `Mexican train ${ref.mexican + 1}` : "the Mexican train"}${branch}`;
  }
  const owner = ref?.seat ?? 0;
  const ownerName = names[owner] ?? `Seat ${owner + 1}`;
  const mover = names[seat] ?? "";
  return `${owner === seat ? `${their(mover)} own` : poss(ownerName)} train${branch}`;
}

const POINTS_WHY = {
  POINTS_REASON_FIVES: (n) => `the ends add up to ${n}`, // CL-A5-1
  POINTS_REASON_DOUBLE_HEADER: () => "a double header: both ends show the same number", // CL-BERGEN-1
  POINTS_REASON_TRIPLE_HEADER: () => "a triple header: a double at one end, its number at the other",
  POINTS_REASON_HAND_WON: () => "winning the hand",
};

/** An event in words, with the players' names. */
function describe(e) {
  const kind = Object.keys(e).find((k) => k !== "version");
  const b = e[kind] ?? {};
  const view = state.view;
  const names = playerNames(view);
  const name = (s) => names[s ?? 0] ?? `Seat ${(s ?? 0) + 1}`;
  const game = view?.ruleset?.game ?? "GAME_MEXICAN_TRAIN";
  const trains = TRAIN_GAMES.has(game);
  switch (kind) {
    case "tilePlayed":
      // CL-LINE-1: the hand's first tile opens the line (known once this page saw the deal).
      if (b.train?.line !== undefined && state.linePlays === 0) return `${name(b.seat)} opened the line with ${tileText(b.tile)}`;
      return `${name(b.seat)} played ${tileText(b.tile)} on ${placeText(b.train, b.seat ?? 0)}`;
    case "tileDrawn": {
      const what = b.tile ? tileText(b.tile) : "a tile";
      if (b.reason === "DRAW_REASON_PENALTY") return `${name(b.seat)} drew ${what} as a penalty (one tile left, and no knock)`;
      if (b.reason === "DRAW_REASON_ENGINE_SEARCH") return `${name(b.seat)} drew ${what} looking for the engine`;
      return `${name(b.seat)} drew ${what}`;
    }
    case "passed":
      return trains ? `${name(b.seat)} passed` : `${name(b.seat)} could not play and passed`;
    case "markerPlaced":
      return `${poss(name(b.seat))} train is open to all`;
    case "markerRemoved":
      return `${poss(name(b.seat))} train is closed again`;
    case "doubleSatisfied": {
      const double = `${b.value ?? 0}–${b.value ?? 0}`;
      return b.dead
        ? `the double ${double} on ${placeText(b.train, -1)} is dead: nobody can answer it`
        : `the double ${double} on ${placeText(b.train, -1)} is answered`;
    }
    case "turnStarted":
      return `${name(b.seat)}'s turn`;
    case "roundStarted":
      if (!trains) return `Hand ${b.round ?? 0} is dealt: ${name(b.starter)} ${verb(name(b.starter), "opens", "open")}`;
      return `Round ${b.round ?? 0} begins: the ${game === "GAME_CHICKEN_FOOT" ? "station" : "engine"} is ${tileText(b.engine)}, ${name(b.starter)} ${verb(name(b.starter), "starts", "start")}`;
    case "roundEnded": {
      const blocked = b.reason === BLOCKED;
      if (trains) {
        const out = blocked ? "blocked" : state.lastPlayer === null ? "domino" : `${name(state.lastPlayer)} went out`;
        const points = (b.scores ?? []).map((p, s) => `${name(s)} ${p ?? 0}`).join(", ");
        return `Round ${b.round ?? 0} is over (${out}): ${points}`;
      }
      const winner = "winner" in b ? `${name(b.winner)} ${verb(name(b.winner), "wins", "win")} it` : "nobody wins it";
      return `Hand ${b.round ?? 0} is over (${blocked ? "blocked" : "domino"}): ${winner}`;
    }
    case "pointsScored": {
      const team = "team" in b && view?.teams?.[b.team] ? ` for ${teamName(view.teams[b.team], names)}` : "";
      const why = POINTS_WHY[b.reason]?.(b.points ?? 0) ?? "points";
      return `${name(b.seat)} ${verb(name(b.seat), "scores", "score")} ${plural(b.points ?? 0, "point")}${team}: ${why}`;
    }
    case "turnTimedOut":
      return `${name(b.seat)} ran out of time: the service plays their turn`;
    case "gameEnded": {
      const winners = (b.winners ?? []).map(name);
      if (winners.length === 0) return "Game over: nobody wins";
      return `Game over: ${winners.join(" and ")} ${winners.length === 1 ? verb(winners[0], "wins", "win") : "win"}`;
    }
    case "seatJoined":
      return `${b.displayName || name(b.seat)} sat down at seat ${(b.seat ?? 0) + 1}`;
    case "seatLeft":
      return `${name(b.seat)} left${b.reason === "LEAVE_REASON_TIMEOUTS" ? " (out of time too often)" : ""}${b.bot ? `: a ${b.bot.slice(10).toLowerCase()} bot plays on` : ""}`;
    case "gameStarted":
      return `The game starts${b.botSeats?.length ? `: bots play seat ${b.botSeats.map((s) => s + 1).join(", ")}` : ""}`;
    default:
      return kind;
  }
}

/**
 * What the round summary needs from the events: each seat's tiles left (the
 * newest view's hand counts, less the tiles played and plus those drawn
 * since), who played last (who went out, on a domino), and how the round
 * ended.
 */
function track(e, version) {
  const live = state.live;
  const fresh = live && version > live.version;
  if (e.tilePlayed) {
    const seat = e.tilePlayed.seat ?? 0;
    state.lastPlayer = seat;
    if (state.linePlays >= 0) state.linePlays += 1;
    if (fresh) live.counts[seat] = (live.counts[seat] ?? 0) - 1;
  } else if (e.tileDrawn) {
    if (fresh) live.counts[e.tileDrawn.seat ?? 0] = (live.counts[e.tileDrawn.seat ?? 0] ?? 0) + 1;
  } else if (e.roundStarted) {
    state.linePlays = 0;
    state.lastPlayer = null;
  } else if (e.roundEnded) {
    const b = e.roundEnded;
    const round = b.round ?? 0;
    state.lastRoundEnd = {
      round,
      version,
      reason: b.reason ?? "",
      scores: b.scores ?? [],
      winner: "winner" in b ? b.winner ?? 0 : null,
      wentOut: b.reason === BLOCKED ? null : state.lastPlayer,
      // (Counted only from a view of this very round: a page that came in later does not know them.)
      counts: live && live.round === round ? [...live.counts] : null,
    };
    state.summaryClosed = null;
    state.live = null;
  }
}

/** The round tracker's starting point: the hand counts a view shows. */
function trackView(view) {
  if (view.status !== "GAME_STATUS_IN_PROGRESS") return;
  state.live = {
    round: view.round ?? 1,
    version: Number(view.version ?? 0),
    counts: (view.players ?? []).map((p) => p.handCount ?? 0),
  };
}

/**
 * One event in the "What happened" list, from a move's answer ("move") or
 * the watch stream ("watch"), which both carry the same events: an event is
 * shown once however many sources bring it, yet two alike in one version (a
 * knock penalty's draws) are both shown. One turn's draws, pass and marker
 * make one line ("Bob drew a tile and passed: their train is open to all").
 */
function addEvent(e, source) {
  const version = Number(e.version ?? 0);
  // Pass-and-play: the list stays on screen when it is handed over, so a drawn
  // tile (in the answer to the drawer's own move) is not named there.
  const shared = Object.keys(state.tokens).length > 1;
  const event = shared && e.tileDrawn ? { ...e, tileDrawn: { seat: e.tileDrawn.seat, reason: e.tileDrawn.reason } } : e;
  const key = `${version}|${JSON.stringify(event)}`;
  const fromSource = (state.eventCounts.get(`${source}|${key}`) ?? 0) + 1;
  state.eventCounts.set(`${source}|${key}`, fromSource);
  const seen = state.eventCounts.get(key) ?? 0;
  if (fromSource <= seen) return;
  state.eventCounts.set(key, seen + 1);
  const kind = Object.keys(event).find((k) => k !== "version");
  const text = describe(event); // before track(): "opened the line" counts the plays before this one
  track(event, version);
  state.events.push({ version, text });
  const seat = event[kind]?.seat ?? 0;
  const top = $("events").firstElementChild;
  const sameSeat = top && top.dataset.seat === String(seat);
  if (kind === "turnStarted") {
    // The players' cards say whose turn it is; a draw that ended its turn passed it on.
    if (top?.dataset.kind === "tileDrawn" && top.dataset.version === String(version) && !sameSeat) {
      top.textContent += " and passed";
      top.dataset.kind = "passed";
    }
    return;
  }
  if (sameSeat && kind === "markerPlaced" && ["tileDrawn", "passed"].includes(top.dataset.kind)) {
    const who = playerNames(state.view)[seat] ?? "";
    top.textContent += `${top.dataset.kind === "tileDrawn" ? " and passed" : ""}: ${their(who)} train is open to all`;
    top.dataset.kind = "markerPlaced";
    return;
  }
  const plainDraw = kind === "tileDrawn" && (event.tileDrawn.reason ?? "DRAW_REASON_MOVE") === "DRAW_REASON_MOVE";
  if (sameSeat && plainDraw && top.dataset.kind === "tileDrawn" && top.dataset.draws) {
    // CL-DRAW-1: draw after draw until a tile fits, one line: "Ann drew 3 tiles".
    const draws = JSON.parse(top.dataset.draws);
    draws.push(event.tileDrawn.tile ? tileText(event.tileDrawn.tile) : "");
    top.dataset.draws = JSON.stringify(draws);
    top.dataset.version = String(version);
    const who = playerNames(state.view)[seat] ?? `Seat ${seat + 1}`;
    top.textContent = draws.every(Boolean) ? `${who} drew ${draws.join(", ")}` : `${who} drew ${draws.length} tiles`;
    return;
  }
  if (sameSeat && kind === "passed" && top.dataset.kind === "tileDrawn") {
    top.textContent += " and passed";
    top.dataset.kind = "passed";
    return;
  }
  const li = document.createElement("li");
  li.textContent = text[0].toUpperCase() + text.slice(1);
  li.dataset.kind = kind;
  li.dataset.seat = String(seat);
  li.dataset.version = String(version);
  if (plainDraw) li.dataset.draws = JSON.stringify([event.tileDrawn.tile ? tileText(event.tileDrawn.tile) : ""]);
  if (kind === "roundEnded" || kind === "gameEnded") li.className = "milestone";
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
  $("leftovers").replaceChildren();
  try {
    const log = await api("GET", gamePath("/log"));
    const result = await verifyDeals(log, state.view, state.knownSha);
    if (result.ok) {
      out.className = "verified";
      out.textContent = `verified: ${result.rounds} deal${result.rounds === 1 ? "" : "s"} recomputed from the seed match the log and the seed's SHA-256`;
      renderLeftovers(result.leftovers ?? []);
    } else {
      out.className = "mismatch";
      out.textContent = `mismatch: ${result.problems.join("; ")}`;
    }
  } catch (error) {
    out.className = "mismatch";
    out.textContent = `could not verify: ${error.message}`;
  }
}

/** Every hand's tiles left at the end of each hand or round, dealt again
 * from the seed: shown only once the deals checked out. */
function renderLeftovers(leftovers) {
  const box = $("leftovers");
  box.replaceChildren();
  if (leftovers.length === 0) return;
  const view = state.view;
  const names = playerNames(view);
  const word = lowestWins(view) ? "Round" : "Hand";
  const title = document.createElement("h3");
  title.textContent = "Tiles left in every hand, dealt again from the seed";
  box.append(title);
  leftovers.forEach((ended, i) => {
    const details = document.createElement("details");
    details.className = "leftover";
    details.dataset.round = String(ended.round);
    details.open = i === leftovers.length - 1; // the last hand, open; the others a click away
    const summary = document.createElement("summary");
    summary.textContent = `${word} ${ended.round} (${ended.reason === BLOCKED ? "blocked" : "domino"})`;
    const list = document.createElement("ul");
    ended.hands.forEach((tiles, seat) => {
      const li = document.createElement("li");
      li.dataset.seat = String(seat);
      const who = document.createElement("strong");
      who.textContent = `${names[seat] ?? `Seat ${seat + 1}`}: `;
      li.append(who);
      if (tiles.length === 0) li.append("no tile (went out)");
      for (const k of tiles) {
        const [a, b] = k.split("-").map(Number);
        li.append(tileElement({ a, b }), " ");
      }
      const pips = tiles.reduce((n, k) => n + k.split("-").map(Number).reduce((x, y) => x + y, 0), 0);
      if (tiles.length) li.append(`${plural(pips, "pip")}`);
      list.append(li);
    });
    details.append(summary, list);
    box.append(details);
  });
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
document.addEventListener("keydown", handKeys);
route();
