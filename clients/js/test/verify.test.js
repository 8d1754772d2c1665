// The deal shuffle against API.md's vector and shared/vectors/shuffle.json
// (when the checkout has ../shared beside it), and verifyGame's refusals on
// a hand-made log. A real finished game is verified by
// tests/test_client_python.py, which also compares this shuffle with the
// Python client's and the engine's on random seeds.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { DealMismatchError, seedSha256, shuffle, tiles, verifyGame } from "../src/verify.js";

const VECTORS = fileURLToPath(new URL("../../../../shared/vectors/shuffle.json", import.meta.url));
const show = (list) => list.map(([a, b]) => `${a}-${b}`);

test("API.md's test vector: seed railyard, round:1:deal, double-12 without 12-12", async () => {
  const shuffled = show(await shuffle("railyard", "round:1:deal", tiles(12).filter(([a, b]) => !(a === 12 && b === 12))));
  assert.deepEqual(shuffled.slice(0, 10), "3-12 3-9 3-4 8-8 2-4 10-12 4-7 0-4 2-7 4-4".split(" "));
  assert.deepEqual(shuffled.slice(-5), "4-5 2-12 7-7 7-9 1-4".split(" "));
});

test("shared/vectors/shuffle.json, every case (the API.md vector alone when absent)", async () => {
  if (!existsSync(VECTORS)) return; // checked above; tests/test_client_python.py reports the absence
  const { cases } = JSON.parse(readFileSync(VECTORS, "utf8"));
  assert.ok(cases.length > 0);
  for (const c of cases) {
    const items = tiles(c.set).filter(([a, b]) => !(c.engine_set_aside && a === c.set && b === c.set));
    assert.deepEqual(show(await shuffle(c.seed, c.label, items)), c.shuffled, `${c.seed} ${c.label}`);
  }
});

test("seedSha256 is the hex SHA-256 of the UTF-8 seed", async () => {
  assert.equal(await seedSha256("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
});

test("verifyGame refuses a log without a seed, or with another commitment", async () => {
  await assert.rejects(verifyGame({ events: [] }), DealMismatchError);
  await assert.rejects(verifyGame({ seed: "s", seedSha256: "00", events: [] }), /committed to 00/);
});
