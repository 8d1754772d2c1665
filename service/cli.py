"""The ``railyard`` command.

* ``railyard serve``: the service (gRPC and HTTP), configured by flags and
  environment (flags win): ``--grpc-port``/``RAILYARD_GRPC_PORT``,
  ``--http-port``/``RAILYARD_HTTP_PORT``, ``--redis-url``/``REDIS_URL`` ...
* ``railyard arena``: bots against bots on the engine alone (no service),
  e.g. ``railyard arena --bots expert,greedy,greedy,greedy --games 100
  --jobs 2``; prints per bot level the rounds won share with its 95%
  interval, the mean round score and game total, and decision times
  (``engine/arena.py`` says how each figure is computed); ``--duplicate``
  plays each deal once per seating and compares the bots deal by deal.
* ``railyard ladder``: a pool of bots (levels, ``module:function`` bots,
  remote programs through the API) rated with openskill on duplicate deals,
  e.g. ``railyard ladder --bots random,greedy,mybot:choose --deals 20``
  (``service/ladder/pool.py`` says how tables are chosen and bots rated).

Playing in the terminal and load tests are a client's work:
``railyard-play`` and ``railyard-loadtest``, from the Python client
(``railyard_client.play``, ``railyard_client.loadtest``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from typing import Any

from pydantic import ValidationError

import engine
from service.settings import Settings

Write = Callable[[str], None]


# ------------------------------------------------------------------ serve


def _serve(args: argparse.Namespace) -> int:
    overrides = {
        name: value
        for name, value in (
            ("host", args.host),
            ("grpc_port", args.grpc_port),
            ("http_port", args.http_port),
            ("redis_url", args.redis_url),
            ("game_ttl", args.game_ttl),
            ("request_ttl", args.request_ttl),
            ("caller_seeds", args.caller_seeds),
            ("rate_limit", args.rate_limit),
            ("rate_limit_scope", args.rate_limit_scope),
            ("trusted_proxies", args.trusted_proxies),
            ("bot_processes", args.bot_processes),
            ("bot_cpu_limit", args.bot_cpu_limit),
            ("bots_only", args.bots_only),
            ("max_watchers", args.max_watchers),
            ("max_log_reads", args.max_log_reads),
            ("workers", args.workers),
            ("log_level", args.log_level),
            ("log_format", args.log_format),
            ("cors_origins", args.cors_origins),
            ("max_connections", args.max_connections),
            ("grpc_max_connections", args.grpc_max_connections),
            ("max_header_bytes", args.max_header_bytes),
            ("max_headers", args.max_headers),
            ("header_timeout", args.header_timeout),
            ("body_timeout", args.body_timeout),
            ("idle_timeout", args.idle_timeout),
            ("grpc_idle_timeout", args.grpc_idle_timeout),
            ("max_body_bytes", args.max_body_bytes),
            ("grpc_max_streams", args.grpc_max_streams),
            ("grpc_max_connection_age", args.grpc_max_connection_age),
            ("tls_cert", args.tls_cert),
            ("tls_key", args.tls_key),
            ("tls_client_ca", args.tls_client_ca),
            ("webhooks_file", args.webhooks_file),
            ("webhook_allow_private", args.webhook_allow_private),
            ("webhook_timeout", args.webhook_timeout),
            ("webhook_concurrency", args.webhook_concurrency),
        )
        if value is not None
    }
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        # Without the input pydantic would quote: the start of every setting,
        # API keys included.
        for error in exc.errors(include_url=False, include_input=False):
            where = ".".join(map(str, error["loc"])) or "settings"
            print(f"railyard serve: bad setting: {where}: {error['msg']}", file=sys.stderr)
        return 2
    from service.ops.serve import StartupError, serve
    from service.ops.telemetry import configure_logging
    from service.ops.workers import WorkersRefusedError, supervise, worker_count

    try:
        workers = worker_count(settings)
    except WorkersRefusedError as exc:
        print(f"railyard serve: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level, settings.log_format, settings.log_secrets())

    try:
        if workers > 1:
            return supervise(settings, workers)
        asyncio.run(serve(settings))
    except (OSError, StartupError) as exc:
        logging.getLogger("railyard").error("cannot start: %s", exc)
        return 1
    return 0


# ------------------------------------------------------------------ arena


def _option_value(text: str) -> Any:
    """A ``--option`` value: a whole number, true/false, none, or the text."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "auto"):
        return None
    try:
        return int(lowered)
    except ValueError:
        return text.strip()


def _in_pool(pool: Executor) -> Callable[[Callable[[Any], Any], Iterable[Any]], Iterator[Any]]:
    """A ``map`` over ``pool`` that yields each result as soon as it is done."""

    def mapper(job: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        futures = [pool.submit(job, i) for i in items]
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:
            # A failed game (a bot's error) stops the run: the games not yet
            # started are dropped, not played to no purpose.
            for future in futures:
                future.cancel()

    return mapper


def _rules(args: argparse.Namespace) -> engine.Rules:
    """The ruleset of ``--game``, ``--preset``, ``--option`` and ``--rounds``."""
    options = {}
    for item in args.option:
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--option {item!r}: write name=value")
        options[name.strip()] = _option_value(value)
    if args.rounds:
        options["rounds"] = args.rounds
    return engine.ruleset(args.preset or None, args.game or None, **options)


def _bot_list(text: str) -> tuple[str, ...]:
    return tuple(b.strip() for b in text.split(",") if b.strip())


def _progress(what: str, total: int) -> Callable[[int, int], None]:
    """A progress line on stderr (the table goes to stdout, which can be
    redirected alone): rewritten in place on a terminal, else every 5%."""
    start = time.perf_counter()
    tty = sys.stderr.isatty()
    step = max(1, total // 20)

    def progress(done: int, total: int) -> None:
        if not tty and done % step and done != total:
            return
        elapsed = time.perf_counter() - start
        left = elapsed / done * (total - done)
        line = f"{what}: {done}/{total} games, {elapsed:.0f} s, about {left:.0f} s left"
        print(f"\r{line}" if tty else line, end="" if tty else "\n", file=sys.stderr, flush=True)
        if tty and done == total:
            print(file=sys.stderr)

    return progress


def _fail(command: str, exc: Exception) -> None:
    # On a terminal the progress line is still open: the error starts a line of its own.
    start = "\n" if sys.stderr.isatty() else ""
    print(f"{start}railyard {command}: {exc}", file=sys.stderr)


def _arena(args: argparse.Namespace, write: Write = print) -> int:
    from engine.arena import ArenaConfig, BotError, report, run
    from service.ladder.module_bots import is_module_bot, module_bot

    bots = _bot_list(args.bots)
    try:
        rules = _rules(args)
        maker = module_bot if any(is_module_bot(b) for b in bots) else None
        config = ArenaConfig(bots, rules, args.games, args.seed, args.budget, args.duplicate, maker)
    except (engine.RailyardError, ValueError) as exc:
        print(f"railyard arena: {exc}", file=sys.stderr)
        return 2
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    start = time.perf_counter()
    progress = _progress("arena", config.games)
    try:
        if args.jobs > 1:
            # spawn: a fresh interpreter per worker, whatever this process has imported.
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
                records = run(config, clock=clock, progress=progress, mapper=_in_pool(pool))
        else:
            records = run(config, clock=clock, progress=progress)
    except BotError as exc:
        _fail("arena", exc)
        return 1
    write(report(config, records))
    write(
        f"{time.perf_counter() - start:.0f} s wall, {args.jobs} job(s); decision times: "
        f"{'process CPU' if args.clock == 'cpu' else 'wall clock'}"
    )
    return 0


def _arena_options(target: argparse.ArgumentParser) -> None:
    target.add_argument(
        "--bots",
        default="greedy,random,random,random",
        help="one bot per seat, comma-separated: a level (random, greedy, expert) or a "
        "module:function bot, railyard-bot --module's contract (default "
        "greedy,random,random,random); seats rotate every game",
    )
    target.add_argument(
        "--duplicate",
        action="store_true",
        help="play each deal once per seating of the bots (every bot in every seat of the "
        "same deal; --games must be a multiple of the seatings) and compare them deal by deal",
    )
    _rules_options(target)
    target.add_argument("--games", type=int, default=40, help="games to play (default 40)")
    target.add_argument(
        "--seed",
        default="arena",
        help="game g is dealt from SEED:g (--duplicate: deal d from SEED:d)",
    )
    target.add_argument(
        "--budget",
        type=int,
        default=None,
        help="expert budget in playout moves (default: the game's own, engine/expert.py)",
    )
    target.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    target.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="time decisions by the wall clock (default) or the process's CPU time",
    )


def _rules_options(target: argparse.ArgumentParser) -> None:
    target.add_argument(
        "--game", default="", choices=sorted(engine.GAMES), help="played by its own preset"
    )
    target.add_argument(
        "--preset", default="", choices=sorted(engine.PRESETS), help="default: standard"
    )
    target.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a ruleset option (repeatable), e.g. --option mexican_trains=2",
    )
    target.add_argument("--rounds", type=int, default=0, help="rounds a game (default: all)")


# ------------------------------------------------------------------ ladder


def _ladder(args: argparse.Namespace, write: Write = print) -> int:
    import json
    import shutil

    from engine.arena import BotError
    from service.ladder.pool import LadderConfig, RemoteBot, rate, report, run, schedule, to_json
    from service.ladder.remote import RemoteGameError, railyard_bot

    try:
        rules = _rules(args)
        remotes = tuple(RemoteBot.parse(text) for text in args.remote)
        for remote in remotes:
            if shutil.which(remote.argv[0]) is None:
                raise ValueError(f"--remote {remote.name}: no program {remote.argv[0]!r} found")
        if remotes and any(":" in bot for bot in _bot_list(args.bots)):
            railyard_bot()  # which plays module bots' seats through the service
        # A team preset seats four (CL-TEAM-1); any other game two, unless told.
        players = args.players or (4 if getattr(rules, "teams", False) else 2)
        config = LadderConfig(
            _bot_list(args.bots),
            rules,
            players,
            args.deals,
            args.seed,
            args.budget,
            remotes,
            args.url,
            args.turn_timeout,
            args.game_timeout,
        )
    except (engine.RailyardError, ValueError, RemoteGameError) as exc:
        print(f"railyard ladder: {exc}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    progress = _progress("ladder", len(schedule(config)))
    try:
        if args.jobs > 1:
            # spawn: a fresh interpreter per worker, whatever this process has imported.
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
                games = run(config, mapper=_in_pool(pool), remote_jobs=args.jobs, progress=progress)
        else:
            games = run(config, progress=progress)
    except (BotError, RemoteGameError) as exc:
        _fail("ladder", exc)
        return 1
    ladder = rate(config, games)
    write(json.dumps(to_json(ladder), indent=2) if args.json else report(ladder))
    # On stderr: stdout is the same for the same arguments.
    print(f"ladder: {time.perf_counter() - start:.0f} s wall, {args.jobs} job(s)", file=sys.stderr)
    return 0


def _ladder_options(target: argparse.ArgumentParser) -> None:
    target.add_argument(
        "--bots",
        default="random,greedy,expert",
        help="the pool, comma-separated: levels (random, greedy, expert) and module:function "
        "bots (railyard-bot --module's contract); default random,greedy,expert",
    )
    target.add_argument(
        "--remote",
        action="append",
        default=[],
        metavar="NAME=COMMAND",
        help="a remote bot joins the pool (repeatable): COMMAND is run once per seat it "
        "holds, without a shell, with {url}, {game}, {token} and {seat} filled in, e.g. "
        "'mine=railyard-bot --url {url} --game {game} --token={token} --module mybot:choose'",
    )
    target.add_argument(
        "--url", default="", help="the service remote bots play through (e.g. http://host:8080)"
    )
    _rules_options(target)
    target.add_argument(
        "--players",
        type=_positive(int),
        default=None,
        help="players a table (default 2; 4 for a team preset, a bot per team)",
    )
    target.add_argument(
        "--deals",
        type=_positive(int),
        default=10,
        help="deals, each played at every table in every seating (default 10)",
    )
    target.add_argument("--seed", default="ladder", help="deal d is dealt from SEED:d")
    target.add_argument(
        "--budget",
        type=int,
        default=None,
        help="expert budget in playout moves (default: the game's own, engine/expert.py)",
    )
    target.add_argument(
        "--jobs",
        type=_positive(int),
        default=1,
        help="processes for the games on the engine, and games through the service at once "
        "(default 1)",
    )
    target.add_argument(
        "--turn-timeout",
        type=int,
        default=30,
        help="seconds a remote bot has for a move before the service plays it as greedy "
        "(default 30; 0: no timer)",
    )
    target.add_argument(
        "--game-timeout",
        type=float,
        default=600.0,
        help="seconds a game through the service may take before the ladder stops (default 600)",
    )
    target.add_argument("--json", action="store_true", help="print the ladder as JSON")


# ------------------------------------------------------------------ main


def _positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its message
    return parse


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="railyard",
        # The module docstring, without its reStructuredText quoting.
        description=(__doc__ or "").replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="serve gRPC and HTTP")
    serve.add_argument(
        "--host",
        default=None,
        help="listen address (RAILYARD_HOST, 127.0.0.1; 0.0.0.0 for every interface)",
    )
    serve.add_argument("--grpc-port", type=int, default=None, help="RAILYARD_GRPC_PORT, 50051")
    serve.add_argument("--http-port", type=int, default=None, help="RAILYARD_HTTP_PORT, 8080")
    serve.add_argument("--redis-url", default=None, help="REDIS_URL; empty: in-process store")
    serve.add_argument("--game-ttl", type=float, default=None, help="seconds (RAILYARD_GAME_TTL)")
    serve.add_argument("--request-ttl", type=float, default=None, help="RAILYARD_REQUEST_TTL")
    serve.add_argument(
        "--caller-seeds",
        choices=["allow", "deny"],
        default=None,
        help="seeds chosen by CreateGame's caller (RAILYARD_CALLER_SEEDS; default allow)",
    )
    serve.add_argument("--rate-limit", type=float, default=None, help="requests/s per caller")
    serve.add_argument(
        "--rate-limit-scope",
        choices=["replica", "store"],
        default=None,
        help="per replica, or one limit shared through the store (RAILYARD_RATE_LIMIT_SCOPE)",
    )
    serve.add_argument(
        "--trusted-proxies",
        default=None,
        help="proxies whose Forwarded / X-Forwarded-For name the client, e.g. "
        "'10.0.0.0/8,::1' (RAILYARD_TRUSTED_PROXIES; default none)",
    )
    serve.add_argument(
        "--bot-processes",
        type=int,
        default=None,
        help="worker processes for bot play that does not fit a short slice of the event "
        "loop (RAILYARD_BOT_PROCESSES; default one per CPU; 0: a thread of this process)",
    )
    serve.add_argument(
        "--bot-cpu-limit",
        type=float,
        default=None,
        help="seconds of CPU the bot turns of one request may take, else it is refused "
        "(RAILYARD_BOT_CPU_LIMIT, 10)",
    )
    serve.add_argument(
        "--bots-only",
        choices=("background", "request"),
        default=None,
        help="where a game of bots only is played: by the replicas in the background, at "
        "full strength, or to its end inside CreateGame (RAILYARD_BOTS_ONLY, background)",
    )
    serve.add_argument(
        "--max-watchers",
        type=int,
        default=None,
        help="open WatchGame streams per process; more are refused with 429 / "
        "RESOURCE_EXHAUSTED (RAILYARD_MAX_WATCHERS, 2000)",
    )
    serve.add_argument(
        "--max-log-reads",
        type=int,
        default=None,
        help="reads of a game's whole history (GetGameLog, a WatchGame's replay) from the "
        "store at once per process; more are refused with 429 / RESOURCE_EXHAUSTED "
        "(RAILYARD_MAX_LOG_READS, 32)",
    )
    serve.add_argument(
        "--workers",
        type=_positive(int),
        default=None,
        help="processes serving the same ports, each a whole replica over the store "
        "(RAILYARD_WORKERS; default one per CPU with Redis, 1 with the in-process store, "
        "which refuses more)",
    )
    serve.add_argument("--log-level", default=None, help="RAILYARD_LOG_LEVEL, info")
    serve.add_argument(
        "--log-format",
        choices=["text", "json"],
        default=None,
        help="text lines, or one JSON object per line (RAILYARD_LOG_FORMAT, text)",
    )
    serve.add_argument(
        "--cors-origins",
        default=None,
        help="web origins allowed to call the HTTP API from a browser, comma-separated, "
        "or * (RAILYARD_CORS_ORIGINS; default none)",
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=None,
        help="HTTP connections open at once; one more gets 503 (RAILYARD_MAX_CONNECTIONS, 1000)",
    )
    serve.add_argument(
        "--grpc-max-connections",
        type=int,
        default=None,
        help="gRPC connections open at once (RAILYARD_GRPC_MAX_CONNECTIONS, 1000)",
    )
    serve.add_argument(
        "--max-header-bytes",
        type=int,
        default=None,
        help="bytes of an HTTP request head or of gRPC metadata (RAILYARD_MAX_HEADER_BYTES, 16384)",
    )
    serve.add_argument(
        "--max-headers",
        type=int,
        default=None,
        help="header fields of an HTTP request (RAILYARD_MAX_HEADERS, 100)",
    )
    serve.add_argument(
        "--header-timeout",
        type=float,
        default=None,
        help="seconds to receive a request head, and for gRPC's handshake "
        "(RAILYARD_HEADER_TIMEOUT, 10)",
    )
    serve.add_argument(
        "--body-timeout",
        type=float,
        default=None,
        help="seconds to receive a request body after its head (RAILYARD_BODY_TIMEOUT, 10)",
    )
    serve.add_argument(
        "--idle-timeout",
        type=int,
        default=None,
        help="seconds an HTTP keep-alive connection waits for a request (RAILYARD_IDLE_TIMEOUT, 5)",
    )
    serve.add_argument(
        "--grpc-idle-timeout",
        type=float,
        default=None,
        help="seconds a gRPC connection with no call open is kept (RAILYARD_GRPC_IDLE_TIMEOUT, 60)",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        default=None,
        help="bytes of a request body or gRPC message (RAILYARD_MAX_BODY_BYTES, 1048576)",
    )
    serve.add_argument(
        "--grpc-max-streams",
        type=int,
        default=None,
        help="streams one gRPC connection may open at once (RAILYARD_GRPC_MAX_STREAMS, 16)",
    )
    serve.add_argument(
        "--grpc-max-connection-age",
        type=float,
        default=None,
        help="seconds a gRPC connection lives before the server ends it with GOAWAY; its "
        "calls get RAILYARD_GRPC_CONNECTION_AGE_GRACE (60) to finish "
        "(RAILYARD_GRPC_MAX_CONNECTION_AGE, 3600)",
    )
    serve.add_argument(
        "--tls-cert",
        default=None,
        help="PEM certificate chain: TLS on both ports, with --tls-key (RAILYARD_TLS_CERT)",
    )
    serve.add_argument("--tls-key", default=None, help="its PEM private key (RAILYARD_TLS_KEY)")
    serve.add_argument(
        "--tls-client-ca",
        default=None,
        help="PEM CA certificates: mutual TLS, clients must present a certificate they "
        "signed (RAILYARD_TLS_CLIENT_CA)",
    )
    serve.add_argument(
        "--webhooks-file",
        default=None,
        help="a file of tenants' webhooks, '<tenant> <url> <secret>' a line "
        "(RAILYARD_WEBHOOKS_FILE; RAILYARD_WEBHOOKS holds more: no flag, a command line "
        "is no place for secrets)",
    )
    serve.add_argument(
        "--webhook-allow-private",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="let webhooks reach loopback, private and link-local addresses, over http:// too: "
        "tests and local receivers only (RAILYARD_WEBHOOK_ALLOW_PRIVATE; default no)",
    )
    serve.add_argument(
        "--webhook-timeout",
        type=float,
        default=None,
        help="seconds one webhook delivery may take in all (RAILYARD_WEBHOOK_TIMEOUT, 10)",
    )
    serve.add_argument(
        "--webhook-concurrency",
        type=int,
        default=None,
        help="webhook deliveries one process makes at once; "
        "RAILYARD_WEBHOOK_TENANT_CONCURRENCY (4) to one tenant (RAILYARD_WEBHOOK_CONCURRENCY, 16)",
    )
    _arena_options(sub.add_parser("arena", help="bots against bots on the engine alone"))
    _ladder_options(
        sub.add_parser("ladder", help="rate a pool of bots on duplicate deals (openskill)")
    )
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "arena":
        return _arena(args)
    if args.command == "ladder":
        return _ladder(args)
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
