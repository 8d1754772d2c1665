// The board of each game, drawn from a GameView (API.md), with the legal
// targets of the selected hand tile as buttons on the board itself.
//
// DOM hooks (stable: tests and front-end authors read them):
//
//   .board[data-board="train" | "chicken-foot" | "line"]   the root, in #board
//       data-game: the ruleset's game; data-layout: "two-sided" | "one-sided"
//   Train boards (Mexican Train; Chicken Foot):
//     .hub[data-engine="a-b"]               the station and its engine double
//     .arm.train[data-arm="<train>"]         one per train: "p<seat>" for a
//                                            player's train, "m<i>" for Mexican
//                                            train i (Chicken Foot: line i)
//         data-owner="<seat>" (personal trains), data-marker="true" (open to
//         all), data-current="true" (its owner is to play), data-side
//     .branch[data-branch="<end>"]          a run of tiles: 0 is the trunk from
//                                            the station; a foot's branch (MT-DBL-7)
//         data-parent="<parentEnd>" and data-from-double="<a-b>" (the double
//         it leaves), nested in its parent's .toes
//     .open-end[data-target="<train>.<end>"][data-value="<n>"]  an open end
//     .tile.open-double[data-answers]       an unsatisfied double
//     svg.marker[role=img]                  a train marker (its name says why)
//   Line boards (Block, Draw, All Fives, Bergen, Matador, teams):
//     .line                                 the line of play, in .line-row rows
//                                            (data-dir="ltr" | "rtl": the snake)
//     .line-end[data-end="left" | "right"][data-value="<n>"]  its two ends,
//                                            present once a tile is down
//     .ends-count[data-count="<n>"]         All Fives: the ends' sum (CL-A5-1);
//                                            Bergen: data-header (CL-BERGEN-1)
//   Tiles: .tile[data-tile="a-b"] (tiles.js), data-index (order along its run),
//     .tile.fresh (placed by another player since the board last changed),
//     .tile.arrive (animating in just now)
//   Targets: button.target[data-target="<train>.<end>" | "l.<end>"]
//     [data-notation="<move>"][data-points="<n>" (All Fives, Bergen)]
//
// The line view has no spinner (CL-LINE-1: a double is laid across and does
// not branch), so a line board has two ends only.

import { isDouble, tileElement, tileKey, tileName, trainIcon } from "./tiles.js";

const svgNS = "http://www.w3.org/2000/svg";

const el = (tag, className, text) => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
};

const hidden = (text) => el("span", "visually-hidden", text);

// ------------------------------------------------------------------ names

const playerName = (view, seat) => {
  const p = (view.players ?? []).find((q, i) => (q.seat ?? i) === seat);
  return p?.displayName || `Seat ${seat + 1}`;
};

const possessive = (name) => (name.endsWith("s") ? `${name}'` : `${name}'s`);

/** The train a ref names, as a person says it: "your train", "Bob's train",
 * "the Mexican train", "line 3" (Chicken Foot's lines, counted from 1). */
export function trainName(ref, view, viewer = null) {
  if (ref?.line !== undefined) return "the line";
  if (ref?.mexican !== undefined) {
    const index = ref.mexican ?? 0;
    if (view.ruleset?.game === "GAME_CHICKEN_FOOT") return `line ${index + 1}`;
    const several = (view.trains ?? []).filter((t) => t.ref?.mexican !== undefined).length > 1;
    return several ? `Mexican train ${index + 1}` : "the Mexican train";
  }
  const seat = ref?.seat ?? 0;
  return seat === viewer ? "your train" : `${possessive(playerName(view, seat))} train`;
}

/** Where a move's target is, in words: "Bob's train", "the left end (6)",
 * "the double 5–5 on line 2", "line 2 (branch 4)". */
export function targetName(ref, view, viewer = null) {
  const end = ref?.end ?? 0;
  if (ref?.line !== undefined) {
    const value = (view.line?.openEnds ?? [])[end];
    const side = end === 0 ? "the left end" : "the right end";
    return value === undefined ? "the table" : `${side} (${value})`;
  }
  const name = trainName(ref, view, viewer);
  const open = (view.openDoubles ?? []).find((d) => sameTarget(d.train, ref));
  if (open) return `the double ${open.value ?? 0}–${open.value ?? 0} on ${name}`;
  const train = (view.trains ?? []).find((t) => sameTrain(t.ref, ref));
  return train?.branches?.length && end > 0 ? `${name} (branch ${end})` : name;
}

const sameTrain = (x, y) =>
  x?.line !== undefined
    ? y?.line !== undefined
    : x?.mexican !== undefined
      ? y?.mexican !== undefined && (x.mexican ?? 0) === (y.mexican ?? 0)
      : y?.mexican === undefined && y?.line === undefined && (x?.seat ?? 0) === (y?.seat ?? 0);
const sameTarget = (x, y) => sameTrain(x, y) && (x?.end ?? 0) === (y?.end ?? 0);

/** "p1", "m0", "l": a train's id (TrainRef's notation, API.md). */
export function trainId(ref) {
  if (ref?.line !== undefined) return "l";
  if (ref?.mexican !== undefined) return `m${ref.mexican ?? 0}`;
  return `p${ref?.seat ?? 0}`;
}

/** "p1.0", "m3.2", "l.1": a target (a train and one of its ends). */
export const targetKey = (ref) => `${trainId(ref)}.${ref?.end ?? 0}`;

// ------------------------------------------------------------------ line scoring

const half = (t, which) => t?.[which] ?? 0;

/** The line after `tile` joins end `end` (0 left, 1 right), oriented as the
 * view orients line tiles ({a: left half, b: right half}). `exposed` is a
 * Matador move's open number (CL-MAT-1), when it names one. */
export function lineAfter(tiles, tile, end, exposed) {
  const a = tile?.a ?? 0;
  const b = tile?.b ?? 0;
  if (tiles.length === 0) return [{ a: Math.min(a, b), b: Math.max(a, b) }]; // CL-LINE-1: low half left
  const value = end === 0 ? half(tiles[0], "a") : half(tiles.at(-1), "b");
  let open;
  if (exposed !== undefined) open = exposed;
  else if (a === value) open = b;
  else if (b === value) open = a;
  else open = a + value === 7 ? b : a; // Matador: the touching number and the end's make 7
  return end === 0 ? [{ a: open, b: open === a ? b : a }, ...tiles] : [...tiles, { a: open === a ? b : a, b: open }];
}

/** CL-A5-1: the ends' count. A double at an end counts both halves; a lone
 * tile counts both its numbers (a lone opening double, its two halves). */
export function fivesCount(tiles) {
  if (tiles.length === 0) return null;
  if (tiles.length === 1) return half(tiles[0], "a") + half(tiles[0], "b");
  const left = tiles[0];
  const right = tiles.at(-1);
  return (isDouble(left) ? 2 : 1) * half(left, "a") + (isDouble(right) ? 2 : 1) * half(right, "b");
}

/** CL-A5-1: what a placement that leaves `tiles` scores: the count, when it is a positive multiple of 5. */
export function fivesPoints(tiles) {
  const count = fivesCount(tiles) ?? 0;
  return count > 0 && count % 5 === 0 ? count : 0;
}

/** CL-BERGEN-1: "double" (2: both ends the same number; a lone opening
 * double), "triple" (3: one end a double, the other its number) or "". */
export function bergenHeader(tiles) {
  if (tiles.length === 0) return "";
  if (tiles.length === 1) return isDouble(tiles[0]) ? "double" : "";
  const left = tiles[0];
  const right = tiles.at(-1);
  if (half(left, "a") !== half(right, "b")) return "";
  return isDouble(left) || isDouble(right) ? "triple" : "double";
}

const BERGEN_POINTS = { "": 0, double: 2, triple: 3 };

/** The points a legal play would score at once (All Fives, Bergen), or null (a game without them). */
export function pointsOf(move, view) {
  const game = view.ruleset?.game;
  const play = move?.play;
  if (!play || play.train?.line === undefined) return null;
  if (game !== "GAME_ALL_FIVES" && game !== "GAME_BERGEN") return null;
  const after = lineAfter(view.line?.tiles ?? [], play.tile, play.train.end ?? 0, play.exposed);
  return game === "GAME_ALL_FIVES" ? fivesPoints(after) : BERGEN_POINTS[bergenHeader(after)];
}

// ------------------------------------------------------------------ targets

/**
 * The buttons that play `moves` (the legal plays of the selected tile on one
 * target). `arrow` is the button's sign ("◀", "▶"); the accessible name says
 * the tile, the target and what the play scores or leaves open.
 */
export function targetButtons(moves, view, { play, viewer = null, arrow = "▶" } = {}) {
  return moves.map((m) => {
    const p = m.move.play ?? {};
    const button = el("button", "target");
    button.type = "button";
    button.dataset.notation = m.notation;
    button.dataset.target = targetKey(p.train);
    // The accessible name holds the visible words (for speech input) and says the rest.
    const parts = [];
    const words = [];
    if (p.exposed !== undefined) parts.push(`leaves ${p.exposed}`);
    if (p.announceLastTile) parts.push("say “last tile”");
    const points = pointsOf(m.move, view);
    if (points !== null) {
      button.dataset.points = String(points);
      parts.push(`+${points}`);
    }
    const where = targetName(p.train, view, viewer);
    words.push(parts.length ? `play ${tileName(p.tile)} on ${where}` : `play ${tileName(p.tile)} here, on ${where}`);
    if (p.exposed !== undefined) words.push(`leaves ${p.exposed}`);
    if (p.announceLastTile) words.push("say “last tile”");
    if (points !== null) words.push(`+${points} points`);
    const label = el("span", "target-label", parts.length ? parts.join(" · ") : "here");
    const sign = el("span", "target-arrow", arrow);
    sign.setAttribute("aria-hidden", "true");
    if (arrow === "◀") button.append(sign, label);
    else button.append(label, sign);
    button.setAttribute("aria-label", words.join(", "));
    button.title = words.join(", ");
    button.onclick = () => {
      notePlayedHere(p.tile);
      play?.(m);
    };
    return button;
  });
}

/** How a hand tile's legal targets read: "playable on your train and the Mexican train". */
export function playableWhere(moves, view, viewer = null) {
  const names = [];
  for (const m of moves) {
    const train = m.move.play?.train;
    if (!train) continue;
    const name = train.line !== undefined ? (train.end ?? 0) === 0 ? "the left end" : "the right end" : targetName(train, view, viewer);
    if (!names.includes(name)) names.push(name);
  }
  if (names.length === 0) return "";
  if (names.length === 2 && names.every((n) => n.endsWith(" end"))) return "playable on either end";
  const list = names.length === 1 ? names[0] : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
  return `playable on ${list}`;
}

// ------------------------------------------------------------------ moves seen

// What the board showed last, so that what others played since is drawn
// arriving (and ringed until the board changes again), and what this page
// played is not: the player saw it go down.
const memory = { game: null, round: null, tiles: new Set(), fresh: new Set(), arriving: new Set(), mine: new Set() };

/** A tile this page is playing: it lands without the arrival animation. */
export function notePlayedHere(tile) {
  memory.mine.add(tileKey(tile));
}

function noteBoard(view, keys) {
  const same = memory.game === view.gameId && memory.round === (view.round ?? 1) && memory.tiles.size > 0;
  if (!same) {
    memory.fresh = new Set();
    memory.arriving = new Set();
    if (memory.game !== view.gameId || memory.round !== (view.round ?? 1)) memory.mine = new Set();
  } else {
    const added = [...keys].filter((k) => !memory.tiles.has(k));
    // A reload or a long absence brings many at once: those are not "just played".
    if (added.length > 0) {
      memory.fresh = new Set(added.filter((k) => !memory.mine.has(k)));
      memory.arriving = added.length <= 12 ? new Set(memory.fresh) : new Set();
    } else {
      memory.arriving = new Set();
    }
  }
  memory.game = view.gameId;
  memory.round = view.round ?? 1;
  memory.tiles = keys;
}

function boardTile(t, index, { upright = false, extra = "" } = {}) {
  const key = tileKey(t);
  const fresh = memory.fresh.has(key);
  const tile = tileElement(t, { upright, label: `${tileName(t)}${extra}${fresh ? ", just played" : ""}` });
  tile.dataset.index = String(index);
  if (fresh) tile.classList.add("fresh");
  if (memory.arriving.has(key)) tile.classList.add("arrive");
  return tile;
}

// ------------------------------------------------------------------ the board

let observed = null; // the ResizeObserver of the board box, and what it redraws
let lastWidth = 0;

/**
 * Draws `view`'s board into `box` (#board). `ctx`: `targets` (Map of target
 * key to the selected tile's legal moves there), `play` (plays a legal move),
 * `viewer` (the seat whose hand the page shows, or null). Returns the target
 * keys it drew buttons for (the rest go elsewhere).
 */
export function renderBoard(box, view, ctx) {
  const game = view.ruleset?.game ?? "GAME_MEXICAN_TRAIN";
  const kind = game === "GAME_CHICKEN_FOOT" ? "chicken-foot" : game === "GAME_MEXICAN_TRAIN" ? "train" : "line";
  const keys = new Set();
  if (kind === "line") for (const t of view.line?.tiles ?? []) keys.add(tileKey(t));
  else for (const train of view.trains ?? []) for (const b of branchesOf(train)) for (const t of b.tiles ?? []) keys.add(tileKey(t));
  noteBoard(view, keys);
  const width = innerWidth(box);
  let room = width;
  let used;
  let root;
  // The snake's rows are cut from estimated widths; a row that still comes
  // out wider than the table (long target buttons at an end) is cut again.
  for (let attempt = 0; attempt < 3; attempt++) {
    used = new Set();
    root = el("div", `board board-${kind === "line" ? "line" : "trains"}`);
    root.dataset.board = kind;
    root.dataset.game = game;
    if (kind === "line") buildLine(root, view, ctx, used, room);
    else buildTrains(root, view, ctx, used, room, kind);
    box.replaceChildren(root);
    const over = kind === "line" ? Math.max(0, ...[...root.querySelectorAll(".line-row")].map(rowOverflow)) : 0;
    if (over <= 1) break;
    room -= over + 16;
  }
  box.classList.add("has-board");
  requestAnimationFrame(() => afterLayout(root));
  watchSize(box, () => renderBoard(box, view, ctx));
  lastWidth = width;
  return used;
}

/** How far a row's tiles and buttons reach past its edges (either side: a right-to-left row overflows leftwards). */
function rowOverflow(row) {
  const box = row.getBoundingClientRect();
  let left = box.left;
  let right = box.right;
  for (const kid of row.children) {
    const r = kid.getBoundingClientRect();
    left = Math.min(left, r.left);
    right = Math.max(right, r.right);
  }
  return box.left - left + (right - box.right);
}

function innerWidth(box) {
  const style = getComputedStyle(box);
  const w = box.clientWidth - parseFloat(style.paddingLeft || "0") - parseFloat(style.paddingRight || "0");
  return w > 0 ? w : Math.min(window.innerWidth, 1100);
}

/** Redraws when the board's width changes (a phone turned, a window resized): the snake and the arms fit anew. */
function watchSize(box, redraw) {
  if (!observed || observed.box !== box) {
    observed?.observer.disconnect();
    const observer = new ResizeObserver(() => {
      const width = innerWidth(box);
      if (Math.abs(width - lastWidth) > 24 && !box.hidden) observed.redraw();
      else if (box.firstElementChild) afterLayout(box.firstElementChild);
    });
    observer.observe(box);
    observed = { box, observer, redraw };
  }
  observed.redraw = redraw;
}

function afterLayout(root) {
  if (!root.isConnected) return;
  for (const content of root.querySelectorAll(".arm-content")) drawToes(content);
  if (root.dataset.board !== "line") {
    drawSpokes(root);
    for (const track of root.querySelectorAll(".arm-track")) showOpenEnd(track);
  }
}

// ------------------------------------------------------------------ trains

function branchesOf(train) {
  if (train.branches?.length) return train.branches;
  return [{ end: 0, tiles: train.tiles ?? [], openEnd: (train.openEnds ?? [])[0] }];
}

// Tile widths in units of --u (a half's side), borders and gaps included.
const ALONG = 2.15;
const ACROSS = 1.15;
const runUnits = (tiles) => tiles.reduce((sum, t) => sum + (isDouble(t) ? ACROSS : ALONG), 0);

/** How wide a branch and its toes are, in units: the widest path to a tip. */
function treeUnits(branch, kidsOf) {
  const kids = kidsOf.get(branch.end ?? 0) ?? [];
  const toes = kids.length ? 1.2 + Math.max(...kids.map((k) => treeUnits(k, kidsOf))) : 0;
  return runUnits(branch.tiles ?? []) + toes + 2.6; // the open end's target
}

function buildTrains(root, view, ctx, used, width, kind) {
  const trains = view.trains ?? [];
  const twoSided = width >= 760 && trains.length > 1;
  root.dataset.layout = twoSided ? "two-sided" : "one-sided";
  const rightCount = twoSided ? Math.ceil(trains.length / 2) : trains.length;
  const units = trains.map((train) => {
    const branches = branchesOf(train);
    return treeUnits(branches[0], kidsByParent(branches));
  });
  const rightUnits = Math.max(6, ...units.slice(0, rightCount));
  const leftUnits = twoSided ? Math.max(6, ...units.slice(rightCount)) : 0;
  // The station, the gaps beside it and the arms' padding.
  const fixed = twoSided ? 220 : 130;
  // Tiles as large as the longest trains allow; past the smallest readable
  // size an arm scrolls (and opens at its open end) instead.
  const fit = Math.floor((width - fixed) / (leftUnits + rightUnits)) - 2;
  const u = Math.max(twoSided ? 22 : 20, Math.min(twoSided ? 32 : 28, fit));
  root.style.setProperty("--u", `${u}px`);

  const layout = el("div", "train-layout");
  layout.append(buildHub(view, kind));
  // Each side as wide as its longest arm needs.
  if (twoSided) layout.style.gridTemplateColumns = `minmax(0, ${leftUnits}fr) auto minmax(0, ${rightUnits}fr)`;
  const right = el("div", "arms arms-right");
  const left = el("div", "arms arms-left");
  trains.forEach((train, i) => {
    const side = i < rightCount ? "right" : "left"; // (one-sided: every arm runs rightwards)
    (side === "right" ? right : left).append(buildArm(train, view, ctx, used, side, kind));
  });
  layout.append(right);
  if (left.children.length) layout.append(left);
  const spokes = document.createElementNS(svgNS, "svg");
  spokes.setAttribute("class", "spokes");
  spokes.setAttribute("aria-hidden", "true");
  root.append(spokes, layout);
}

function buildHub(view, kind) {
  const engine = view.engine ?? { a: 0, b: 0 };
  const hub = el("div", "hub");
  hub.dataset.engine = tileKey(engine);
  const plate = el("div", "hub-plate");
  // CL-CF-1: Chicken Foot's round double is the station its lines start from.
  const word = kind === "chicken-foot" ? "Station" : "Engine";
  plate.append(tileElement(engine, { upright: true, label: `${word} ${tileName(engine)}` }));
  hub.append(plate, el("div", "hub-name", `${word} ${tileName(engine)}`));
  return hub;
}

function kidsByParent(branches) {
  const kids = new Map();
  for (const b of branches) {
    if ((b.end ?? 0) === 0) continue;
    const parent = b.parentEnd ?? 0;
    if (!kids.has(parent)) kids.set(parent, []);
    kids.get(parent).push(b);
  }
  return kids;
}

function buildArm(train, view, ctx, used, side, kind) {
  const ref = train.ref ?? {};
  const id = trainId(ref);
  const mexican = ref.mexican !== undefined;
  const arm = el("section", "arm train");
  arm.dataset.arm = id;
  arm.dataset.side = side;
  arm.setAttribute("role", "group");
  const playing = view.status === "GAME_STATUS_IN_PROGRESS";
  const name = trainName(ref, view, ctx.viewer);
  const title = name.replace(/^the /, "").replace(/^./, (c) => c.toUpperCase());
  const head = el("header", "arm-head");
  const label = el("span", "arm-name", title);
  head.append(label);
  const notes = [];
  if (!mexican) {
    arm.dataset.owner = String(ref.seat ?? 0);
    if ((ref.seat ?? 0) === ctx.viewer) arm.classList.add("mine");
    if (playing && (ref.seat ?? 0) === (view.currentSeat ?? 0)) {
      arm.dataset.current = "true";
      arm.classList.add("current");
      head.append(el("span", "tag tag-turn", "to play"));
      notes.push("to play");
    }
  }
  if (train.marker) {
    arm.dataset.marker = "true";
    arm.classList.add("marked");
    // MT-TR-4: the marker opens a player's train to everyone.
    head.append(trainIcon("marker: open to all"), el("span", "tag", "open to all"));
    notes.push("marker out: open to all");
  } else if (mexican && kind === "train") {
    // MT-TR-2: a Mexican train is always open.
    head.append(trainIcon("open to all", "marker mexican"));
  }
  const branches = branchesOf(train);
  const kids = kidsByParent(branches);
  const tilesCount = branches.reduce((n, b) => n + (b.tiles?.length ?? 0), 0);
  const open = (view.openDoubles ?? []).filter((d) => sameTrain(d.train, ref));
  for (const d of open) {
    const text = `open double ${d.value ?? 0}–${d.value ?? 0}`;
    head.append(el("span", "tag tag-double", text));
    notes.push(text);
  }
  const ends = branches.filter((b) => b.openEnd !== undefined).map((b) => b.openEnd);
  arm.setAttribute(
    "aria-label",
    `${title}: ${tilesCount ? `${tilesCount} tile${tilesCount === 1 ? "" : "s"}` : "not started"}` +
      (ends.length ? `, open end${ends.length > 1 ? "s" : ""} ${ends.join(", ")}` : "") +
      (notes.length ? `; ${notes.join("; ")}` : ""),
  );
  const track = el("div", "arm-track");
  const content = el("div", "arm-content");
  const info = { id, ref, view, ctx, used, side, kids, byEnd: new Map(branches.map((b) => [b.end ?? 0, b])), open };
  content.append(buildBranch(branches[0], info));
  const links = document.createElementNS(svgNS, "svg");
  links.setAttribute("class", "links");
  links.setAttribute("aria-hidden", "true");
  content.prepend(links);
  track.append(content);
  arm.append(head, track);
  return arm;
}

function buildBranch(branch, info) {
  const end = branch.end ?? 0;
  const node = el("div", "branch");
  node.dataset.branch = String(end);
  if (end > 0) {
    const parent = info.byEnd.get(branch.parentEnd ?? 0);
    node.dataset.parent = String(branch.parentEnd ?? 0);
    const double = (parent?.tiles ?? []).at(-1);
    if (double) node.dataset.fromDouble = tileKey(double);
  }
  const run = el("div", "run");
  const tiles = branch.tiles ?? [];
  const openHere = info.open.find((d) => (d.train?.end ?? 0) === end);
  tiles.forEach((t, i) => {
    const last = i === tiles.length - 1;
    const isOpen = last && openHere && isDouble(t) && (t.a ?? 0) === (openHere.value ?? 0);
    // MT-DBL-1 / CL-CF-1: doubles lie across the train.
    const tile = boardTile(t, i, { upright: isDouble(t), extra: isOpen ? ", open double" : "" });
    if (isOpen) {
      tile.classList.add("open-double");
      tile.dataset.answers = String(openHere.answers ?? 0);
    }
    run.append(tile);
  });
  if (tiles.length === 0) run.append(el("span", "empty-arm", "not started"));
  node.append(run);
  const key = `${info.id}.${end}`;
  const slot = branch.openEnd !== undefined || info.ctx.targets?.has(key) ? openEnd(key, branch.openEnd, info) : null;
  const kids = info.kids.get(end) ?? [];
  if (kids.length) {
    const toes = el("div", "toes");
    for (const kid of kids) toes.append(buildBranch(kid, info));
    // A foot still being answered: its next toe goes where the buttons are.
    if (slot) toes.append(slot);
    node.append(toes);
  } else if (slot) {
    node.append(slot);
  }
  return node;
}

function openEnd(key, value, info) {
  const slot = el("span", "open-end");
  slot.dataset.target = key;
  if (value !== undefined) slot.dataset.value = String(value);
  const moves = info.ctx.targets?.get(key);
  if (moves?.length) {
    slot.classList.add("has-target");
    slot.append(...targetButtons(moves, info.view, { play: info.ctx.play, viewer: info.ctx.viewer, arrow: info.side === "left" ? "◀" : "▶" }));
    info.used.add(key);
  }
  return slot;
}

/** The open end with a target (else the last one) scrolled into its arm's view: the end of a long train is where play happens. */
function showOpenEnd(track) {
  // A train longer than its arm scrolls: by keyboard too, so it takes the focus then.
  const scrolls = track.scrollWidth > track.clientWidth + 1;
  if (scrolls) {
    track.tabIndex = 0;
    track.setAttribute("role", "group");
    track.setAttribute("aria-label", `${track.closest(".arm")?.querySelector(".arm-name")?.textContent ?? "train"}: scrolls sideways`);
  } else {
    track.removeAttribute("tabindex");
    track.removeAttribute("role");
    track.removeAttribute("aria-label");
  }
  if (!scrolls) return;
  const end = track.querySelector(".open-end.has-target") ?? [...track.querySelectorAll(".tile")].at(-1);
  if (!end) return;
  const box = track.getBoundingClientRect();
  const r = end.getBoundingClientRect();
  const margin = 16;
  if (r.right > box.right - margin) track.scrollLeft += r.right - box.right + margin;
  else if (r.left < box.left + margin) track.scrollLeft -= box.left + margin - r.left;
}

/** Rails from the station to each arm's first tile. */
function drawSpokes(root) {
  const svg = root.querySelector(":scope > .spokes");
  const hub = root.querySelector(".hub-plate");
  if (!svg || !hub) return;
  const base = root.getBoundingClientRect();
  svg.setAttribute("width", String(root.scrollWidth));
  svg.setAttribute("height", String(root.scrollHeight));
  svg.replaceChildren();
  const h = hub.getBoundingClientRect();
  const cx = h.left + h.width / 2 - base.left;
  const cy = h.top + h.height / 2 - base.top;
  const radius = h.width / 2;
  for (const arm of root.querySelectorAll(".arm")) {
    const track = arm.querySelector(".arm-track");
    const first = arm.querySelector(".branch[data-branch='0'] > .run > *");
    if (!track || !first) continue;
    const t = track.getBoundingClientRect();
    const f = first.getBoundingClientRect();
    const leftward = arm.dataset.side === "left" && root.dataset.layout === "two-sided";
    const x = (leftward ? t.right : t.left) - base.left;
    const y = f.top + f.height / 2 - base.top;
    const angle = Math.atan2(y - cy, x - cx);
    const sx = cx + Math.cos(angle) * radius;
    const sy = cy + Math.sin(angle) * radius;
    const bend = (x - sx) * 0.55;
    const d = `M${sx.toFixed(1)} ${sy.toFixed(1)} C${(sx + bend).toFixed(1)} ${sy.toFixed(1)} ${(x - bend).toFixed(1)} ${y.toFixed(1)} ${x.toFixed(1)} ${y.toFixed(1)}`;
    for (const cls of ["sleepers", "rails"]) {
      const path = document.createElementNS(svgNS, "path");
      path.setAttribute("d", d);
      path.setAttribute("class", cls + (arm.classList.contains("current") ? " current" : ""));
      svg.append(path);
    }
  }
}

/** Curved toes from each double of a foot to the first tile of each branch leaving it. */
function drawToes(content) {
  const svg = content.querySelector(":scope > .links");
  if (!svg) return;
  svg.replaceChildren();
  const toes = content.querySelectorAll(".branch[data-from-double]");
  if (toes.length === 0) return;
  const base = content.getBoundingClientRect();
  svg.setAttribute("width", String(content.scrollWidth));
  svg.setAttribute("height", String(content.scrollHeight));
  for (const toe of toes) {
    const parent = toe.parentElement?.closest(".branch");
    const double = parent?.querySelector(":scope > .run > .tile:last-child");
    const first = toe.querySelector(":scope > .run > *");
    if (!double || !first) continue;
    const d = double.getBoundingClientRect();
    const f = first.getBoundingClientRect();
    const rtl = f.left < d.left;
    const x0 = (rtl ? d.left : d.right) - base.left;
    const y0 = d.top + d.height / 2 - base.top;
    const x1 = (rtl ? f.right : f.left) - base.left;
    const y1 = f.top + f.height / 2 - base.top;
    const bend = (x1 - x0) * 0.6;
    const path = document.createElementNS(svgNS, "path");
    path.setAttribute(
      "d",
      `M${x0.toFixed(1)} ${y0.toFixed(1)} C${(x0 + bend).toFixed(1)} ${y0.toFixed(1)} ${(x1 - bend).toFixed(1)} ${y1.toFixed(1)} ${x1.toFixed(1)} ${y1.toFixed(1)}`,
    );
    path.setAttribute("class", "toe");
    svg.append(path);
  }
}

// ------------------------------------------------------------------ the line

function buildLine(root, view, ctx, used, width) {
  const game = view.ruleset?.game;
  const tiles = view.line?.tiles ?? [];
  const ends = view.line?.openEnds ?? [];
  const u = width >= 900 ? 30 : width >= 600 ? 27 : 23;
  root.style.setProperty("--u", `${u}px`);
  root.dataset.layout = "snake";

  const info = lineInfo(view, ctx);
  if (info) root.append(info);

  const line = el("div", "line");
  line.dataset.train = "l";
  line.setAttribute("role", "group");
  line.setAttribute("aria-label", tiles.length ? `the line: ${tiles.length} tile${tiles.length === 1 ? "" : "s"}, ends ${ends.join(" and ")}` : "the line: empty");
  if (tiles.length === 0) {
    const empty = el("div", "line-empty");
    empty.append(el("span", "note", "No tile played yet."));
    const moves = ctx.targets?.get("l.0");
    if (moves?.length) {
      empty.append(...targetButtons(moves, view, { play: ctx.play, viewer: ctx.viewer }));
      used.add("l.0");
    }
    line.append(empty);
    root.append(line);
    return;
  }

  // The snake: rows that fill the table's width, each turning back at its edge.
  const px = (units) => units * (u + 1.5);
  const endWidth = px(2.8) + (ctx.targets?.size ? 64 : 0);
  const capacity = Math.max(px(ALONG * 3), width - 2.4 * u - 12); // (the line's side padding holds the turns)
  const rows = [[]];
  let used0 = endWidth;
  tiles.forEach((t, i) => {
    const w = px(isDouble(t) ? ACROSS : ALONG) + (i === tiles.length - 1 ? endWidth : 0);
    if (used0 + w > capacity && rows.at(-1).length) {
      rows.push([]);
      used0 = 0;
    }
    rows.at(-1).push(i);
    used0 += w;
  });
  rows.forEach((indices, r) => {
    const row = el("div", "line-row");
    row.dataset.row = String(r);
    row.dataset.dir = r % 2 === 0 ? "ltr" : "rtl";
    if (r === 0) row.append(lineEnd(0, ends[0], view, ctx, used));
    for (const i of indices) row.append(boardTile(tiles[i], i, { upright: isDouble(tiles[i]) })); // CL-LINE-1: doubles across
    if (r === rows.length - 1) row.append(lineEnd(1, ends[1], view, ctx, used, row.dataset.dir));
    else {
      const turn = el("span", "turn");
      turn.setAttribute("aria-hidden", "true");
      row.append(turn);
    }
    line.append(row);
  });
  if (rows.length === 1) line.classList.add("one-row");
  root.append(line);
}

function lineEnd(end, value, view, ctx, used, dir = "ltr") {
  const side = end === 0 ? "left" : "right";
  const box = el("div", "line-end");
  box.dataset.end = side;
  box.dataset.target = `l.${end}`;
  if (value !== undefined) box.dataset.value = String(value);
  const chip = el("span", "end-chip");
  chip.append(hidden(`${side} end: `), el("span", "end-value", String(value ?? "")));
  const caption = el("span", "end-caption", `${side} end`);
  caption.setAttribute("aria-hidden", "true");
  chip.append(caption);
  if (view.ruleset?.game === "GAME_MATADOR" && value !== undefined) {
    // CL-MAT-1: an end takes the number that makes 7 with it; 0 (and past 7) only a matador.
    const needs = value === 0 || value > 7 ? "a matador" : `a ${7 - value}`;
    chip.append(el("span", "end-needs", `takes ${needs}`));
  }
  const moves = ctx.targets?.get(`l.${end}`);
  const buttons = moves?.length ? targetButtons(moves, view, { play: ctx.play, viewer: ctx.viewer, arrow: end === 0 || dir === "rtl" ? "◀" : "▶" }) : [];
  if (buttons.length) used.add(`l.${end}`);
  if (end === 0) box.append(...buttons, chip);
  else box.append(chip, ...buttons);
  return box;
}

/** All Fives and Bergen: the ends' count now, and what the selected tile would score at each end. */
function lineInfo(view, ctx) {
  const game = view.ruleset?.game;
  if (game !== "GAME_ALL_FIVES" && game !== "GAME_BERGEN") return null;
  const tiles = view.line?.tiles ?? [];
  const box = el("div", "line-info");
  const count = el("p", "ends-count");
  if (game === "GAME_ALL_FIVES") {
    // CL-A5-1
    const total = fivesCount(tiles);
    if (total === null) count.textContent = "Ends count: no tile yet. A play scores when the ends add up to a multiple of 5.";
    else {
      count.dataset.count = String(total);
      const scoring = total > 0 && total % 5 === 0;
      count.append("Ends count ", el("strong", "count", String(total)), scoring ? " — a multiple of 5" : " — not a multiple of 5");
      if (scoring) count.classList.add("scoring");
    }
  } else {
    // CL-BERGEN-1
    const header = bergenHeader(tiles);
    count.dataset.header = header || "none";
    const ends = view.line?.openEnds ?? [];
    if (!tiles.length) count.textContent = "Ends: no tile yet. Both ends alike: a double header (2); with a double: a triple header (3).";
    else {
      count.append(`Ends ${ends[0] ?? 0} and ${ends[1] ?? 0}`);
      if (header) count.append(" — ", el("strong", "count", header === "double" ? "double header" : "triple header"));
      if (header) count.classList.add("scoring");
    }
  }
  box.append(count);
  const previews = [];
  for (const [key, moves] of ctx.targets ?? []) {
    for (const m of moves) {
      const points = pointsOf(m.move, view);
      if (points === null) continue;
      const where = key === "l.0" ? (tiles.length ? "left end" : "opening") : "right end";
      previews.push(`${where}: ${points ? `scores ${points}` : "no points"}`);
    }
  }
  if (previews.length && ctx.selected) {
    const preview = el("p", "play-preview", `${ctx.selected.replace("-", "–")} — ${previews.join(", ")}`);
    box.append(preview);
  }
  return box;
}
