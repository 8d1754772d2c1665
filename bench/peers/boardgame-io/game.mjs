// A small domino game for boardgame.io, for bench/peers/service.py: the work
// its server does per move should be a domino move's, so the rules are a
// line of play, not tic-tac-toe.
//
// Double-12 set without the 12-12 (set aside as the engine, as ours does,
// MT-SETUP-2), 15 tiles a hand for 2-4 players, the rest the boneyard. One
// line with two open ends, both 12 at first. On a turn a seat plays a tile
// that matches an end (the turn ends), or, holding none, draws one tile and
// then plays it or passes; with the boneyard empty it passes at once. The
// round ends when a hand is empty or every seat passed in a row; the lowest
// pip count wins. Hands and the boneyard are hidden (playerView).
//
// The rules are plain functions over a plain state, called by the
// boardgame.io moves on the server and by the one-socket-per-match driver
// of clients.mjs, which mirrors each match to choose legal moves for every
// seat (it sees only one seat's view from the server).
import { createRequire } from 'node:module';

// boardgame.io ships CommonJS under directories ESM cannot import.
const require = createRequire(import.meta.url);
const { INVALID_MOVE } = require('boardgame.io/core');

export const GAME_NAME = 'dominoes';
export const MAX_PIP = 12;
export const HAND_SIZE = 15;

// mulberry32 seeded from a string (FNV-1a): the deal is a function of the
// match's setupData.seed, as ours is of its seed, so a driver can replay it.
export function randomFrom(seed) {
  let a = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) a = Math.imul(a ^ seed.charCodeAt(i), 16777619);
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function deal(seed, numPlayers) {
  const tiles = [];
  for (let a = 0; a <= MAX_PIP; a++) {
    for (let b = a; b <= MAX_PIP; b++) if (a !== MAX_PIP || b !== MAX_PIP) tiles.push([a, b]);
  }
  const rnd = randomFrom(seed);
  for (let i = tiles.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [tiles[i], tiles[j]] = [tiles[j], tiles[i]];
  }
  const hands = {};
  for (let p = 0; p < numPlayers; p++) hands[String(p)] = tiles.splice(0, HAND_SIZE);
  return { hands, boneyard: tiles, ends: [MAX_PIP, MAX_PIP], line: [], drew: false, passes: 0 };
}

const matches = (tile, end) => tile[0] === end || tile[1] === end;

// Every legal move of a seat as [name, args], from what the seat sees: its
// hand, the ends, the boneyard's size and whether it drew this turn.
export function legalMoves(hand, ends, boneyardSize, drew) {
  const out = [];
  hand.forEach((tile, index) => {
    if (matches(tile, ends[0])) out.push(['play', [index, 0]]);
    if (ends[1] !== ends[0] && matches(tile, ends[1])) out.push(['play', [index, 1]]);
  });
  if (out.length > 0) return out;
  return boneyardSize > 0 && !drew ? [['draw', []]] : [['pass', []]];
}

const pips = (hand) => hand.reduce((sum, [a, b]) => sum + a + b, 0);

// The rules: each returns false when the move is illegal, else changes G
// and returns what follows: 'continue' (same seat), 'next' (turn over) or
// 'over' (G.result set).
export function play(G, seat, index, end) {
  const hand = G.hands[seat];
  const tile = hand[index];
  if (!tile || (end !== 0 && end !== 1) || !matches(tile, G.ends[end])) return false;
  G.ends[end] = tile[0] === G.ends[end] ? tile[1] : tile[0];
  hand.splice(index, 1);
  G.line.push([tile[0], tile[1], end]);
  G.drew = false;
  G.passes = 0;
  if (hand.length === 0) {
    G.result = { winner: seat };
    return 'over';
  }
  return 'next';
}

export function draw(G, seat) {
  const hand = G.hands[seat];
  if (G.drew || G.boneyard.length === 0 || hand.some((t) => matches(t, G.ends[0]) || matches(t, G.ends[1]))) {
    return false;
  }
  hand.push(G.boneyard.pop());
  G.drew = true;
  return 'continue';
}

export function pass(G, seat) {
  const hand = G.hands[seat];
  if ((!G.drew && G.boneyard.length > 0) || hand.some((t) => matches(t, G.ends[0]) || matches(t, G.ends[1]))) {
    return false;
  }
  G.drew = false;
  G.passes += 1;
  const seats = Object.keys(G.hands);
  if (G.passes === seats.length) {
    const best = seats.reduce((a, b) => (pips(G.hands[b]) < pips(G.hands[a]) ? b : a));
    G.result = { winner: best, blocked: true };
    return 'over';
  }
  return 'next';
}

export const RULES = { play, draw, pass };

// A boardgame.io move over a rule. `client: false`: only the server runs it
// (a client cannot draw: it does not see the boneyard).
const move = (rule) => ({
  move: ({ G, playerID, events }, ...args) => {
    const outcome = rule(G, playerID, ...args);
    if (outcome === false) return INVALID_MOVE;
    if (outcome === 'next') events.endTurn();
  },
  client: false,
});

export const Dominoes = {
  name: GAME_NAME,
  minPlayers: 2,
  maxPlayers: 4,
  setup: ({ ctx }, setupData) => deal(String(setupData?.seed ?? 'dominoes'), ctx.numPlayers),
  moves: { play: move(play), draw: move(draw), pass: move(pass) },
  endIf: ({ G }) => G.result,
  // A seat sees its own hand, the size of the others' and of the boneyard.
  playerView: ({ G, playerID }) => {
    const hands = {};
    for (const seat of Object.keys(G.hands)) {
      hands[seat] = seat === playerID ? G.hands[seat] : G.hands[seat].length;
    }
    return { ...G, hands, boneyard: G.boneyard.length };
  },
};
