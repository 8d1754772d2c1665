// Domino tiles drawn as inline SVG: pips for 0 to 12 (the layouts boxed
// double-six to double-twelve sets print, one colour per number as those sets
// do), numerals for the halves past 12 (double-15 and double-18 sets), where
// a dozen or more pips in a half stop being countable at a glance.
//
// A tile is an HTML element (a <span>, or a <button> in the hand) holding two
// square <svg> halves, so that CSS alone lays it along a line (halves side by
// side), upright (halves stacked: a double crosswise in a line, a tile in the
// hand's rack) or mirrored (a line running right to left). Its accessible name
// reads "6–11"; colour is never the only signal (the pips or the numeral
// carry the number).
//
// DOM hooks: .tile[data-tile="a-b"] (a <= b, as the API writes a tile),
// data-a / data-b (the halves as laid: a first), .tile.double, .tile.upright.
// No inline style attribute anywhere: the service's CSP allows none.

const SVG = "http://www.w3.org/2000/svg";

/**
 * One colour per number, 1 to 12 (0 has no pips), each at least 4:1 against
 * the tile's ivory face (WCAG's 3:1 for graphics, with room for the face's
 * shading). Where a boxed set's colour is too light to read on ivory (its
 * yellow, its light blue), a darker shade of it stands in.
 */
export const PIP_COLOURS = [
  "#222222", // 0: no pips; the numeral of a half past 12 is drawn in ink
  "#0b6e99", // 1 sky blue
  "#2e7d32", // 2 green
  "#c62828", // 3 red
  "#6d4c41", // 4 brown
  "#1a3fa6", // 5 blue
  "#8a6a00", // 6 yellow, darkened to ochre
  "#7b1fa2", // 7 purple
  "#00695c", // 8 teal
  "#ad1457", // 9 pink
  "#bf360c", // 10 orange
  "#212121", // 11 black
  "#546e7a", // 12 grey
];

/** The largest number drawn with pips; past it a half shows its numeral. */
export const MAX_PIPS = 12;

// Pip centres in a 100×100 half, for a half standing upright (the long side of
// its tile vertical): the usual layouts, a 3×3 grid up to 9 and a 3×4 grid
// (three columns of four rows) for 10 to 12. A tile laid along a line turns
// its halves a quarter, as a real tile would be.
const C3 = [24, 50, 76];
const R4 = [16, 39, 61, 84];
const grid3 = (cells) => cells.map(([c, r]) => [C3[c], C3[r]]);
const PIPS = {
  0: [],
  1: grid3([[1, 1]]),
  2: grid3([[0, 0], [2, 2]]),
  3: grid3([[0, 0], [1, 1], [2, 2]]),
  4: grid3([[0, 0], [2, 0], [0, 2], [2, 2]]),
  5: grid3([[0, 0], [2, 0], [1, 1], [0, 2], [2, 2]]),
  6: grid3([[0, 0], [2, 0], [0, 1], [2, 1], [0, 2], [2, 2]]),
  7: grid3([[0, 0], [2, 0], [0, 1], [1, 1], [2, 1], [0, 2], [2, 2]]),
  8: grid3([[0, 0], [1, 0], [2, 0], [0, 1], [2, 1], [0, 2], [1, 2], [2, 2]]),
  9: grid3([[0, 0], [1, 0], [2, 0], [0, 1], [1, 1], [2, 1], [0, 2], [1, 2], [2, 2]]),
  // 10 to 12: four down each side, and 2, 3 or 4 down the middle.
  10: [...R4.map((y) => [C3[0], y]), [50, 39], [50, 61], ...R4.map((y) => [C3[2], y])],
  11: [...R4.map((y) => [C3[0], y]), [50, 27], [50, 50], [50, 73], ...R4.map((y) => [C3[2], y])],
  12: [...R4.map((y) => [C3[0], y]), ...R4.map((y) => [50, y]), ...R4.map((y) => [C3[2], y])],
};

const low = (t) => Math.min(t?.a ?? 0, t?.b ?? 0);
const high = (t) => Math.max(t?.a ?? 0, t?.b ?? 0);

/** "a-b" with a <= b: the key the API and the tests use for a tile. */
export const tileKey = (t) => `${low(t)}-${high(t)}`;

/** The tile as a person reads it: "6–11" (an en dash, lowest first). */
export const tileName = (t) => `${low(t)}–${high(t)}`;

export const isDouble = (t) => (t?.a ?? 0) === (t?.b ?? 0);

/** One half: an <svg> of its pips, or of its numeral past 12. */
export function halfSvg(value) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 100 100");
  svg.setAttribute("class", "half");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  svg.dataset.value = String(value);
  if (value > MAX_PIPS) {
    const text = document.createElementNS(SVG, "text");
    text.setAttribute("x", "50");
    text.setAttribute("y", "53");
    text.setAttribute("text-anchor", "middle");
    text.setAttribute("dominant-baseline", "central");
    text.setAttribute("class", "numeral");
    text.setAttribute("fill", PIP_COLOURS[0]);
    text.textContent = String(value);
    svg.append(text);
    return svg;
  }
  const g = document.createElementNS(SVG, "g");
  g.setAttribute("class", "pips");
  const r = value >= 10 ? 8.5 : 10.5;
  for (const [cx, cy] of PIPS[value] ?? []) {
    const pip = document.createElementNS(SVG, "circle");
    pip.setAttribute("cx", String(cx));
    pip.setAttribute("cy", String(cy));
    pip.setAttribute("r", String(r));
    pip.setAttribute("fill", PIP_COLOURS[value]);
    g.append(pip);
  }
  svg.append(g);
  return svg;
}

/**
 * A tile. `t` is {a, b} as the API gives it (a missing half is 0); the halves
 * are drawn in that order (a first: on a train, the half touching the tile
 * before). Options: `tag` ("span" on the board, "button" in the hand),
 * `upright` (halves stacked: a double crosswise in a line, a hand tile),
 * `label` (the accessible name; default "a–b").
 */
export function tileElement(t, { tag = "span", upright = false, label } = {}) {
  const a = t?.a ?? 0;
  const b = t?.b ?? 0;
  const el = document.createElement(tag);
  el.className = "tile";
  if (a === b) el.classList.add("double");
  if (upright) el.classList.add("upright");
  el.dataset.tile = tileKey(t);
  el.dataset.a = String(a);
  el.dataset.b = String(b);
  if (tag !== "button") el.setAttribute("role", "img");
  el.setAttribute("aria-label", label ?? tileName(t));
  el.append(halfSvg(a), halfSvg(b));
  return el;
}

/**
 * A small train (SVG), for a train marker or a train open to everyone; its
 * accessible name is `label` ("open to all").
 */
export function trainIcon(label, className = "marker") {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 48 32");
  svg.setAttribute("class", className);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  const title = document.createElementNS(SVG, "title");
  title.textContent = label;
  svg.append(title);
  const parts = [
    // cab, boiler, chimney, cow-catcher
    ["rect", { x: 26, y: 4, width: 16, height: 18, rx: 2, class: "body" }],
    ["rect", { x: 6, y: 11, width: 22, height: 11, rx: 4, class: "body" }],
    ["rect", { x: 9, y: 3, width: 6, height: 9, rx: 1, class: "body" }],
    ["path", { d: "M6 22 L1 28 L8 28 Z", class: "body" }],
    ["rect", { x: 30, y: 7, width: 8, height: 6, rx: 1, class: "window" }],
    ["circle", { cx: 14, cy: 25, r: 5, class: "wheel" }],
    ["circle", { cx: 34, cy: 25, r: 5, class: "wheel" }],
  ];
  for (const [tag, attrs] of parts) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    svg.append(el);
  }
  return svg;
}
