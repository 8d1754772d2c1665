// index.d.ts keeps step with what the service sends: every Ruleset option of
// every preset (the classic games' and Chicken Foot's included) is declared,
// and so is every preset name and event kind.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { eventKind } from "../src/index.js";
import { NEEDS_SERVICE, client } from "../test-support/helpers.js";

const DECLARATIONS = readFileSync(new URL("../src/index.d.ts", import.meta.url), "utf8");

/** The body of `export interface NAME { ... }` or `export type NAME = ...;`. */
function declared(kind, name) {
  const pattern =
    kind === "interface"
      ? new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`)
      : new RegExp(`export type ${name} =([\\s\\S]*?);`);
  const found = DECLARATIONS.match(pattern);
  assert.ok(found, `index.d.ts declares no ${kind} ${name}`);
  return found[1];
}

describe("index.d.ts against the service", { skip: NEEDS_SERVICE }, () => {
  test("every preset's name and every option it resolves are declared", async () => {
    const { rulesets } = await client().listRulesets();
    const fields = declared("interface", "Ruleset");
    const names = declared("type", "PresetName");
    const games = declared("type", "GameKind");
    for (const ruleset of rulesets) {
      assert.ok(names.includes(`"${ruleset.preset}"`), `PresetName lacks ${ruleset.preset}`);
      assert.ok(games.includes(`"${ruleset.game}"`), `GameKind lacks ${ruleset.game}`);
      for (const key of Object.keys(ruleset)) {
        assert.match(fields, new RegExp(`\\n  ${key}\\?:`), `Ruleset lacks ${key} (preset ${ruleset.preset})`);
      }
    }
    assert.ok(rulesets.some((r) => r.centerLines !== undefined), "a preset resolves centerLines");
  });

  test("every event kind eventKind() knows is declared", () => {
    const kinds = declared("type", "GameEventKind");
    for (const kind of ["snapshot", "tilePlayed", "pointsScored", "gameEnded", "seatJoined", "seatLeft", "gameStarted"]) {
      assert.ok(kinds.includes(`"${kind}"`), kind);
      assert.equal(eventKind({ [kind]: {} }), kind);
    }
  });
});
