// Declarations for @railyard/client/bot.
import type { ApplyMoveResponse, GameEvent, GameView, LegalMove, RailyardClient } from "./index.js";

/** Picks one of the legal moves (it must return an element of `moves`, never a move of its own). */
export type Chooser = (
  moves: LegalMove[],
  context: { gameId: string; version: number },
) => LegalMove | undefined | Promise<LegalMove | undefined>;

/** The heaviest play (announced when offered), else draw, else endTurn, else pass. */
export declare function greedyChooser(moves: LegalMove[]): LegalMove | undefined;

export interface PlayTurnOptions {
  /** Safety stop for one turn (default 200). */
  maxMoves?: number;
  /** VERSION_MISMATCH answers tolerated before giving up (default 10). */
  maxConflicts?: number;
  /** Retries of one move after UNAVAILABLE / RESOURCE_EXHAUSTED, same requestId (default 3). */
  networkRetries?: number;
  retryDelayMs?: number;
}

export interface PlayedTurn {
  /** The moves applied, in order (empty: it was not this seat's turn). */
  moves: LegalMove[];
  /** The seat's view after the last move. */
  game: GameView | undefined;
  /** Every event the moves caused (bot moves that followed included). */
  events: GameEvent[];
}

/**
 * Plays one turn of the token's seat and stops when that turn ends, even when
 * server bots then moved inside the same request and the seat is to move
 * again; nothing if it is not its turn.
 */
export declare function playTurn(
  client: RailyardClient,
  gameId: string,
  token: string,
  chooser?: Chooser,
  options?: PlayTurnOptions,
): Promise<PlayedTurn>;

export type { ApplyMoveResponse };
