// Hand-written declarations for @railyard/client. The JSON shapes are the
// canonical proto3 JSON of proto/railyard/v1/game_service.proto (API.md):
// lowerCamelCase names, enums as their names, int64 as decimal strings.
//
// Zero values are omitted on the wire: a field typed `x?: number` below may
// be absent because it is 0 (tile halves, seat 0, version 0, counts), and a
// `boolean?` because it is false. Fields declared `optional` in the proto
// (currentSeat, viewerSeat, Ruleset options, Branch.parentEnd/openEnd) are
// present whenever set, 0 included. Use versionOf(), tileOf(), seatOf() to
// read them with defaults.

/** An int64 as the server writes it: a decimal string. */
export type Int64 = string;
/** An int64 as the client accepts it on input. */
export type Int64Input = string | number | bigint;

/** GAME_STATUS_WAITING: a table with open seats, dealt but not started (tables.md). */
export type GameStatus =
  | "GAME_STATUS_UNSPECIFIED"
  | "GAME_STATUS_IN_PROGRESS"
  | "GAME_STATUS_FINISHED"
  | "GAME_STATUS_WAITING";
export type BotLevel = "BOT_LEVEL_UNSPECIFIED" | "BOT_LEVEL_RANDOM" | "BOT_LEVEL_GREEDY" | "BOT_LEVEL_EXPERT";
export type GameKind =
  | "GAME_UNSPECIFIED"
  | "GAME_MEXICAN_TRAIN"
  | "GAME_BLOCK"
  | "GAME_DRAW"
  | "GAME_ALL_FIVES"
  | "GAME_BERGEN"
  | "GAME_MATADOR"
  | "GAME_CHICKEN_FOOT";
export type HandSizeTable =
  | "HAND_SIZE_TABLE_UNSPECIFIED"
  | "HAND_SIZE_TABLE_STANDARD"
  | "HAND_SIZE_TABLE_BY_SET"
  | "HAND_SIZE_TABLE_PUREMCO_DOUBLE9"
  | "HAND_SIZE_TABLE_DOUBLE6";
export type EnginePlacement = "ENGINE_PLACEMENT_UNSPECIFIED" | "ENGINE_PLACEMENT_SET_ASIDE" | "ENGINE_PLACEMENT_HOLDER_PLAYS";
export type FirstPlayer = "FIRST_PLAYER_UNSPECIFIED" | "FIRST_PLAYER_DRAW" | "FIRST_PLAYER_SEAT0";
export type FirstTurn = "FIRST_TURN_UNSPECIFIED" | "FIRST_TURN_SINGLE" | "FIRST_TURN_CHAIN";
export type DoubleFollowup = "DOUBLE_FOLLOWUP_UNSPECIFIED" | "DOUBLE_FOLLOWUP_ANY_TRAIN" | "DOUBLE_FOLLOWUP_COVER_OWN";
export type DoubleAnswer = "DOUBLE_ANSWER_UNSPECIFIED" | "DOUBLE_ANSWER_ONE" | "DOUBLE_ANSWER_CHICKEN_FOOT";
export type KnockRule = "KNOCK_RULE_UNSPECIFIED" | "KNOCK_RULE_NONE" | "KNOCK_RULE_PENALTY";
export type DrawReason = "DRAW_REASON_UNSPECIFIED" | "DRAW_REASON_MOVE" | "DRAW_REASON_PENALTY" | "DRAW_REASON_ENGINE_SEARCH";
export type RoundEndReason = "ROUND_END_REASON_UNSPECIFIED" | "ROUND_END_REASON_DOMINO" | "ROUND_END_REASON_BLOCKED";
/** How a classic game's first hand opens (CL-START-1). */
export type Opening = "OPENING_UNSPECIFIED" | "OPENING_HIGHEST_DOUBLE" | "OPENING_SEAT0_ANY";
/** What a blocked hand scores in a classic game. */
export type BlockedScoring = "BLOCKED_SCORING_UNSPECIFIED" | "BLOCKED_SCORING_DIFFERENCE" | "BLOCKED_SCORING_OPPONENTS_TOTAL";
/** Why points were scored during play (All Fives, Bergen). */
export type PointsReason =
  | "POINTS_REASON_UNSPECIFIED"
  | "POINTS_REASON_FIVES"
  | "POINTS_REASON_DOUBLE_HEADER"
  | "POINTS_REASON_TRIPLE_HEADER"
  | "POINTS_REASON_HAND_WON";
/** ListRulesets' presets: Mexican Train's, then one per classic game (and their teams), then Chicken Foot's. */
export type PresetName =
  | "standard"
  | "pagat"
  | "university_games"
  | "cover_own"
  | "by_set"
  | "house"
  | "chicken_foot"
  | "block"
  | "block_teams"
  | "draw"
  | "draw_teams"
  | "all_fives"
  | "all_fives_teams"
  | "bergen"
  | "matador"
  | "chicken_foot_game";

/** A domino a-b; an omitted half is 0. a <= b except in a train's tiles (a touches the previous tile). */
export interface Tile {
  a?: number;
  b?: number;
}

/** Where a tile goes: exactly one of seat / mexican / line (seat: 0 is sent as present). */
export interface TrainRef {
  seat?: number;
  /** A Mexican train's index; under Chicken Foot, a station line's. */
  mexican?: number;
  /** The single line of play of the classic games. */
  line?: Record<string, never>;
  /** Which open end when the target has several (a chicken foot; a classic line's
   * left 0 / right 1); omitted = 0. */
  end?: number;
}

export interface PlayMove {
  tile?: Tile;
  train?: TrainRef;
  /** MT-KNOCK-1. */
  announceLastTile?: boolean;
  /** Matador (CL-MAT-1): the number a matador that may face either way leaves
   * open ("1-6@l0:6"); absent where the placement allows one way only. */
  exposed?: number;
}

/** One move: exactly one of play / draw / pass / endTurn. */
export type Move =
  | { play: PlayMove }
  | { draw: Record<string, never> }
  | { pass: Record<string, never> }
  | { endTurn: Record<string, never> };

export interface LegalMove {
  move: Move;
  /** Text form: "5-12@p0", "12-12@m0", "6-6@l1", "1-6@l0:6", "draw", "pass", "end". */
  notation: string;
}

/** Every option of RULES.md; every field may be left out on input (the preset's value is used). */
export interface Ruleset {
  preset?: PresetName | string;
  game?: GameKind;
  setMax?: number;
  handSize?: number;
  handSizeTable?: HandSizeTable;
  rounds?: number;
  firstEngine?: number;
  enginePlacement?: EnginePlacement;
  firstPlayer?: FirstPlayer;
  firstTurn?: FirstTurn;
  mexicanTrains?: number;
  doubleFollowup?: DoubleFollowup;
  openDoublesBlock?: boolean;
  maxDoublesPerTurn?: number;
  doubleAnswer?: DoubleAnswer;
  endOnDouble?: boolean;
  knockRule?: KnockRule;
  knockPenalty?: number;
  doubleBlankValue?: number;
  // The classic games and Chicken Foot (API.md); an option a game does not
  // have is refused (INVALID_ARGUMENT).
  opening?: Opening;
  /** Draw, All Fives, Matador: tiles left in the boneyard that are never drawn (CL-DRAW-1). */
  boneyardReserve?: number;
  blockedScoring?: BlockedScoring;
  /** CL-SC-2: the score that ends the game (then rounds is not used). */
  targetScore?: number;
  /** CL-TEAM-1: 2v2, seats 0+2 against 1+3. */
  teams?: boolean;
  /** Chicken Foot (CL-CF-1): how many lines start at the station. */
  centerLines?: number;
}

export interface Player {
  displayName?: string;
  /** Absent: a person. */
  bot?: BotLevel;
  /** A person's seat left open for joinGame: the game waits until every open
   * seat is taken, or its host starts it (tables.md). */
  open?: boolean;
}

/** Whether a table with open seats is listed (absent: private). */
export type Visibility = "VISIBILITY_UNSPECIFIED" | "VISIBILITY_PUBLIC" | "VISIBILITY_PRIVATE";
/** Who may watch without a seat token (absent: allowed). */
export type Spectators =
  | "SPECTATORS_UNSPECIFIED"
  | "SPECTATORS_ALLOWED"
  | "SPECTATORS_SEATED_ONLY"
  | "SPECTATORS_NONE";
export type LeaveReason = "LEAVE_REASON_UNSPECIFIED" | "LEAVE_REASON_LEFT" | "LEAVE_REASON_TIMEOUTS";

/** How a table seats people and spectators (CreateGameRequest.table; tables.md). */
export interface TableSettings {
  visibility?: Visibility;
  /** Plays open seats at the host's start, and the seats of people who leave (absent: greedy). */
  botLevel?: BotLevel;
  spectators?: Spectators;
  /** Spectators see the game this many versions late (at most 1000). */
  spectatorDelay?: number;
  /** A person whose turn timer runs out this many times in a row is replaced by a bot (needs turnTimeoutSeconds). */
  maxTimeouts?: number;
}

export interface CreateGameRequest {
  ruleset?: Ruleset;
  players: Player[];
  seed?: string;
  requestId?: string;
  /** Seconds a person has for each move (1..86400); absent: no timer. */
  turnTimeoutSeconds?: number;
  /** Open seats' table: visibility, bots' level, spectators. */
  table?: TableSettings;
}

export interface SeatToken {
  /** Omitted for seat 0: use seatOf(). */
  seat?: number;
  token: string;
}

export interface CreateGameResponse {
  game: GameView;
  /** One entry per person's seat (bot seats get no token); omitted when there is
   * none, and in a replay. */
  seats?: SeatToken[];
  /** True when this answers a repeated requestId: the game the first request
   * created, whose tokens only that first answer carried. */
  replayed?: boolean;
  /** A table's host credential (startGame), when it has settings or open seats; only in the answer that created it. */
  hostToken?: string;
  /** A private table's join code (joinGame), when it has open seats. */
  joinCode?: string;
}

export interface JoinGameRequest {
  /** A public table's id; with joinCode, a private one's. */
  gameId?: string;
  /** A private table's join code (any case, dashes and spaces ignored). */
  joinCode?: string;
  /** The seat wanted; absent: the lowest open seat. */
  seat?: number;
  displayName?: string;
}

export interface JoinGameResponse {
  /** The joiner's view: no hand until the table starts. */
  game: GameView;
  /** The seat taken and its token, shown only here. */
  seat: SeatToken;
}

export interface StartGameResponse {
  /** The table's public view, started. */
  game: GameView;
}

export interface LeaveGameResponse {
  /** The table's public view after the seat was given up. */
  game: GameView;
}

export interface RematchResponse {
  /** The caller's view of the new game. */
  game: GameView;
  /** The caller's seat in the new game and its token; absent once that seat's token was handed out. */
  seat?: SeatToken;
}

export interface ListGamesOptions {
  /** At most this many tables (absent or 0: 50; above 100: 100). */
  pageSize?: number;
  /** The nextPageToken of the previous page. */
  pageToken?: string;
  signal?: AbortSignal;
}

/** A listed table. */
export interface GameSummary {
  gameId: string;
  ruleset: Ruleset;
  /** Every seat: its name, whether it is open, its bot level. */
  players: PlayerView[];
  openSeats?: number;
  /** RFC 3339. */
  createTime: string;
}

export interface ListGamesResponse {
  /** Oldest first; absent when there is none. */
  games?: GameSummary[];
  /** Absent on the last page. */
  nextPageToken?: string;
}

export interface PlayerView {
  seat?: number;
  displayName?: string;
  handCount?: number;
  marker?: boolean;
  /** The total over the rounds played. */
  score?: number;
  roundScores?: number[];
  bot?: BotLevel;
  /** A seat waiting for someone to join. */
  open?: boolean;
}

export interface Branch {
  end?: number;
  /** Absent for the trunk. */
  parentEnd?: number;
  tiles?: Tile[];
  /** Absent once closed. */
  openEnd?: number;
}

export interface TrainView {
  ref: TrainRef;
  tiles?: Tile[];
  openEnds?: number[];
  marker?: boolean;
  branches?: Branch[];
}

export interface OpenDouble {
  train: TrainRef;
  value?: number;
  answers?: number;
}

/** A classic game's line of play. */
export interface LineView {
  /** From the left end to the right, each {a: left half, b: right half}. */
  tiles?: Tile[];
  /** [left, right]; empty before the opening. */
  openEnds?: number[];
}

/** CL-TEAM-1: a team's seats and score. */
export interface TeamView {
  seats?: number[];
  score?: number;
}

export interface TurnView {
  owesTile?: boolean;
  drewThisTurn?: boolean;
  firstTurn?: boolean;
}

/** What a caller sees of a game (MT-VIS). */
export interface GameView {
  gameId: string;
  /** Omitted while 0: use versionOf(). */
  version?: Int64;
  status: GameStatus;
  ruleset: Ruleset;
  round?: number;
  roundsTotal?: number;
  engine?: Tile;
  /** The seat to move; absent once the game is over (present when 0). */
  currentSeat?: number;
  boneyardCount?: number;
  players: PlayerView[];
  /** Omitted in a classic game (see `line`). */
  trains?: TrainView[];
  openDoubles?: OpenDouble[];
  turn?: TurnView;
  /** Only in the seat's own view. */
  hand?: Tile[];
  /** Absent for spectators (present when 0). */
  viewerSeat?: number;
  seedSha256: string;
  /** Only once finished. */
  seed?: string;
  /** Seats, once finished. */
  winners?: number[];
  /** True when CreateGame's caller chose the seed (and so can compute every hand). */
  seedFromCaller?: boolean;
  /** A classic game's line (trains is then empty). */
  line?: LineView;
  /** When teams play. */
  teams?: TeamView[];
  /** When the game runs to a target score (roundsTotal is then 0). */
  targetScore?: number;
  /** CreateGame's turnTimeoutSeconds; absent: no timer. */
  turnTimeoutSeconds?: number;
  /** When the person to move runs out of time (RFC 3339); absent without a timer. */
  turnDeadline?: string;
  /** The table's settings (the join code is never shown). */
  table?: TableSettings;
  /** A finished game's next game, once a seat asked for it (rematch). */
  rematchGameId?: string;
  /** A spectator's view held back by the table's spectatorDelay, by this many versions. */
  delayedBy?: number;
}

export interface ListLegalMovesResponse {
  /** Absent when it is not the caller's turn. */
  moves?: LegalMove[];
  version?: Int64;
}

export interface ApplyMoveResponse {
  game: GameView;
  events?: GameEvent[];
}

export interface GetGameLogResponse {
  events?: GameEvent[];
  /** Only once the game is over (MT-FAIR-1). */
  seed?: string;
  seedSha256: string;
  ruleset: Ruleset;
}

export interface ListRulesetsResponse {
  rulesets: Ruleset[];
}

export interface TilePlayed {
  seat?: number;
  tile?: Tile;
  train?: TrainRef;
}
export interface TileDrawn {
  seat?: number;
  /** Only in the drawer's own stream (MT-DR-3). */
  tile?: Tile;
  reason?: DrawReason;
}
export interface SeatEvent {
  seat?: number;
}
export interface DoubleSatisfied {
  train?: TrainRef;
  value?: number;
  dead?: boolean;
}
export interface RoundStarted {
  round?: number;
  engine?: Tile;
  starter?: number;
}
export interface RoundEnded {
  round?: number;
  reason?: RoundEndReason;
  scores?: number[];
  /** A classic hand's winner; absent on a tie (present when 0). */
  winner?: number;
}
/** Points scored during play (All Fives, Bergen). */
export interface PointsScored {
  seat?: number;
  /** When teams play: the seat's team (present when 0). */
  team?: number;
  points?: number;
  reason?: PointsReason;
}
export interface GameEnded {
  totals?: number[];
  winners?: number[];
  seed?: string;
}
/** Someone took an open seat, or a rematch seat was claimed. */
export interface SeatJoined {
  seat?: number;
  displayName?: string;
}
/** A seat was given up: open again before the start, else played by `bot`. */
export interface SeatLeft {
  seat?: number;
  reason?: LeaveReason;
  /** Absent before the start. */
  bot?: BotLevel;
}
/** A waiting table started; bots play the seats that were still open. */
export interface GameStarted {
  botSeats?: number[];
}

interface EventBase {
  /** The game's version after the move that caused it; omitted while 0: use versionOf(). */
  version?: Int64;
}

/** One event: `version` plus exactly one kind. */
export type GameEvent = EventBase &
  (
    | { snapshot: GameView }
    | { tilePlayed: TilePlayed }
    | { tileDrawn: TileDrawn }
    | { passed: SeatEvent }
    | { markerPlaced: SeatEvent }
    | { markerRemoved: SeatEvent }
    | { doubleSatisfied: DoubleSatisfied }
    | { turnStarted: SeatEvent }
    | { roundStarted: RoundStarted }
    | { roundEnded: RoundEnded }
    | { gameEnded: GameEnded }
    | { pointsScored: PointsScored }
    | { turnTimedOut: { seat?: number } }
    | { seatJoined: SeatJoined }
    | { seatLeft: SeatLeft }
    | { gameStarted: GameStarted }
  );

export type GameEventKind =
  | "snapshot"
  | "tilePlayed"
  | "tileDrawn"
  | "passed"
  | "markerPlaced"
  | "markerRemoved"
  | "doubleSatisfied"
  | "turnStarted"
  | "roundStarted"
  | "roundEnded"
  | "gameEnded"
  | "pointsScored"
  | "turnTimedOut"
  | "seatJoined"
  | "seatLeft"
  | "gameStarted";

/** google.rpc.Status in JSON, as every error body is. */
export interface RpcStatus {
  code: number;
  message?: string;
  details?: Array<{ "@type": string; reason?: string; domain?: string; metadata?: Record<string, string> }>;
}

export type GrpcCodeName =
  | "OK"
  | "CANCELLED"
  | "UNKNOWN"
  | "INVALID_ARGUMENT"
  | "DEADLINE_EXCEEDED"
  | "NOT_FOUND"
  | "ALREADY_EXISTS"
  | "PERMISSION_DENIED"
  | "RESOURCE_EXHAUSTED"
  | "FAILED_PRECONDITION"
  | "ABORTED"
  | "OUT_OF_RANGE"
  | "UNIMPLEMENTED"
  | "INTERNAL"
  | "UNAVAILABLE"
  | "DATA_LOSS"
  | "UNAUTHENTICATED";

export declare const GRPC_CODES: readonly GrpcCodeName[];

/** Every failed call. */
export declare class RailyardError extends Error {
  constructor(
    message: string,
    fields?: {
      httpStatus?: number;
      code?: GrpcCodeName;
      reason?: string;
      metadata?: Record<string, string>;
      retryAfter?: number;
      status?: RpcStatus;
      cause?: unknown;
    },
  );
  name: "RailyardError";
  /** HTTP status; 0 when no answer arrived (network failure). */
  httpStatus: number;
  /** gRPC code name; UNAVAILABLE for network failures. */
  code: GrpcCodeName;
  /** ErrorInfo reason (GAME_NOT_FOUND, ILLEGAL_MOVE, ...); NETWORK_ERROR for network failures; "" if none. */
  reason: string;
  /** ErrorInfo metadata. */
  metadata: Record<string, string>;
  /** metadata.rule: the RULES.md id a refused move broke. */
  rule: string | undefined;
  /** Seconds to wait (429 Retry-After), when given. */
  retryAfter: number | undefined;
  /** The Status body as received, when there was one. */
  status: RpcStatus | undefined;
}

export declare function errorFromStatus(status: RpcStatus, httpStatus?: number, retryAfter?: number): RailyardError;

export interface SseMessage {
  /** The `event:` field, "message" when none. */
  type: string;
  data: string;
  /** The last `id:` seen. */
  id: string;
}

/** Incremental Server-Sent Events parser (WHATWG rules). */
export declare class SseParser {
  lastEventId: string;
  retry: number | undefined;
  comments: number;
  push(text: string): SseMessage[];
  /** End of stream: an unfinished event is discarded. */
  finish(): SseMessage[];
}

export interface CallOptions {
  /** A seat token; else the client's default token; else a spectator. */
  token?: string;
  signal?: AbortSignal;
}

export interface ApplyMoveOptions extends CallOptions {
  expectedVersion?: Int64Input;
  requestId?: string;
}

export interface WatchOptions extends CallOptions {
  /** Events with a version above this one (-1: from the deal); absent: those after the snapshot. */
  afterVersion?: Int64Input;
  /** Reconnect with Last-Event-ID when the connection drops before gameEnded, or is refused with 503 / 429 (default true). */
  reconnect?: boolean;
  /** Consecutive failed connections before giving up (default 5). */
  maxReconnects?: number;
  /** First reconnect delay, doubled per consecutive failure, capped at 5 s (default 200). */
  reconnectDelayMs?: number;
  /** No bytes (keep-alives included) for this long counts as a dropped connection (default 45000; 0: never). */
  idleTimeoutMs?: number;
}

export interface ClientOptions {
  baseUrl: string;
  fetch?: typeof fetch;
  /** Default seat token for calls that give none. */
  token?: string;
  headers?: Record<string, string>;
}

export declare class RailyardClient {
  constructor(options: string | ClientOptions);
  readonly baseUrl: string;
  token: string | undefined;
  headers: Record<string, string>;
  createGame(request: CreateGameRequest, options?: { signal?: AbortSignal }): Promise<CreateGameResponse>;
  getGame(gameId: string, options?: CallOptions): Promise<GameView>;
  listLegalMoves(gameId: string, options?: CallOptions): Promise<ListLegalMovesResponse>;
  applyMove(gameId: string, move: Move | LegalMove, options?: ApplyMoveOptions): Promise<ApplyMoveResponse>;
  getGameLog(gameId: string, options?: CallOptions): Promise<GetGameLogResponse>;
  listRulesets(options?: { signal?: AbortSignal }): Promise<ListRulesetsResponse>;
  /** Take an open seat of a waiting table; throws TypeError without gameId or joinCode. */
  joinGame(request: JoinGameRequest, options?: { signal?: AbortSignal }): Promise<JoinGameResponse>;
  /** `token`: the table's hostToken. */
  startGame(gameId: string, options?: CallOptions): Promise<StartGameResponse>;
  listGames(options?: ListGamesOptions): Promise<ListGamesResponse>;
  /** Every joinable public table, page after page of listGames. */
  iterGames(options?: Omit<ListGamesOptions, "pageToken">): AsyncGenerator<GameSummary, void, undefined>;
  leaveGame(gameId: string, options?: CallOptions): Promise<LeaveGameResponse>;
  /** `token`: a seat token of the finished game. */
  rematch(gameId: string, options?: CallOptions): Promise<RematchResponse>;
  /** A snapshot, then every later event once, in order, until gameEnded. */
  watchGame(gameId: string, options?: WatchOptions): AsyncGenerator<GameEvent, void, undefined>;
}

/** The version of a GameView, GameEvent, ListLegalMovesResponse, ApplyMoveResponse or CreateGameResponse; absent = 0. */
export declare function versionOf(x: { version?: Int64 } | { game: { version?: Int64 } } | undefined | null): number;
/** An int64 (string, number, bigint, absent = 0) as a safe integer number. */
export declare function toVersion(value: Int64Input | undefined | null): number;
/** An int64 for a request: a decimal string; throws TypeError for anything else. */
export declare function int64String(value: Int64Input, name?: string): string;
/** Both halves, omitted ones as 0. */
export declare function tileOf(tile: Tile | undefined | null): { a: number; b: number };
/** "5-12". */
export declare function tileText(tile: Tile | undefined | null): string;
/** The `seat` of a PlayerView, SeatToken or event body; omitted = 0. */
export declare function seatOf(x: { seat?: number } | undefined | null): number;
/** The seat to move; undefined once the game is over. */
export declare function currentSeatOf(view: GameView | undefined | null): number | undefined;
export declare function isFinished(view: GameView | undefined | null): boolean;
export declare function eventKind(event: GameEvent | undefined | null): GameEventKind | undefined;
/** A fresh idempotency key for applyMove / createGame. */
export declare function newRequestId(): string;
