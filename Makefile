# One entry point for people and CI. Every target installs what it needs first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run play test lint typecheck docs unit engine proto lock bench bench-service bench-workers bench-peers clean

# The engine compiled in place with mypyc (scripts/build-engine; pure Python
# when no C compiler is there), rebuilt whenever an engine source changes.
ENGINE_BUILT := $(VENV)/.engine-built
ENGINE_SOURCES := engine/pyproject.toml $(shell find engine -name '*.py' -not -path '*/__pycache__/*')
# The engine's own tests: run a second time against the pure-Python engine,
# the reference, so both builds pass the same tests (`make unit`).
ENGINE_TESTS := $(addprefix tests/,test_engine_build.py test_bots.py test_errors.py \
  test_shuffle.py test_state.py test_properties.py test_transcripts.py \
  test_rules_doubles_end.py test_rules_setup_turns.py test_line_rules.py \
  test_line_properties.py test_line_bots.py test_line_openspiel.py \
  test_chicken_foot_rules.py test_chicken_foot_properties.py test_chicken_foot_bots.py)

# The virtualenv, exactly requirements.lock; rebuilt whenever it or pyproject.toml changes.
$(STAMP): pyproject.toml requirements.lock clients/python/pyproject.toml engine/pyproject.toml \
  api/python/pyproject.toml
	./scripts/bootstrap
	@touch $@

$(ENGINE_BUILT): $(STAMP) $(ENGINE_SOURCES)
	./scripts/build-engine
	@touch $@

## engine: compile the engine with mypyc now (RAILYARD_MYPYC=0: remove the compiled build)
engine: $(STAMP)
	./scripts/build-engine
	@touch $(ENGINE_BUILT)

## run: the service, gRPC on :50051 and HTTP on :8080 (REDIS_URL set: Redis; else in-process)
run: $(ENGINE_BUILT)
	$(BIN)/railyard serve

## play: a game in the terminal against bots: a service on free ports, and railyard-play against it
play: $(ENGINE_BUILT)
	@port=$$($(BIN)/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'); \
	$(BIN)/railyard serve --grpc-port $$port --http-port 0 --log-level warning & pid=$$!; \
	trap 'kill $$pid 2>/dev/null; wait $$pid 2>/dev/null' EXIT; \
	$(BIN)/python -c 'import grpc, sys; grpc.channel_ready_future(grpc.insecure_channel(sys.argv[1])).result(timeout=60)' 127.0.0.1:$$port \
	  && $(BIN)/railyard-play --url 127.0.0.1:$$port

## test: everything CI checks (lint, format, types, the documentation site, the whole test suite)
test: lint typecheck docs unit

# buf breaking: proto/ against the commit before HEAD, so a change that breaks
# the API's clients (a field renumbered or removed, an RPC gone) fails the
# build. That commit is missing from a shallow clone (`git clone --depth 1`),
# a repository's first commit and an unpacked archive: then the check is
# skipped, in one line.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	cd proto && ../$(BIN)/buf lint
	@if git rev-parse --verify --quiet 'HEAD~1^{commit}' >/dev/null 2>&1; then \
	  echo "cd proto && ../$(BIN)/buf breaking --against '../.git#ref=HEAD~1,subdir=proto'"; \
	  cd proto && ../$(BIN)/buf breaking --against '../.git#ref=HEAD~1,subdir=proto'; \
	else \
	  echo "lint: buf breaking skipped: HEAD has no parent commit here" \
	    "(a shallow clone, the first commit, or not a git checkout)"; \
	fi

## docs: build the documentation site into site/ (mkdocs build --strict)
# mkdocs.yml; strict: a broken link or anchor, or a missing include, fails it.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

## proto: regenerate api/python/railyard_api from proto/ (a test fails while it is stale)
proto: $(STAMP)
	./scripts/gen-proto

## lock: re-pin requirements.lock to pyproject.toml (pins that still fit stay; UPGRADE=1: newest)
# uv keeps the pins of the file it writes, so it writes a copy; the lock is
# replaced only when it changes (a new lock rebuilds .venv).
lock: $(STAMP)
	cp requirements.lock $(VENV)/requirements.lock.new
	$(BIN)/uv pip compile pyproject.toml --extra dev --universal --python-version 3.11 \
	  --generate-hashes --custom-compile-command 'make lock' --quiet \
	  --no-emit-package railyard-engine --no-emit-package railyard-api \
	  $(if $(UPGRADE),--upgrade) -o $(VENV)/requirements.lock.new
	cmp -s $(VENV)/requirements.lock.new requirements.lock \
	  && rm $(VENV)/requirements.lock.new || mv $(VENV)/requirements.lock.new requirements.lock

typecheck: $(STAMP)
	$(BIN)/mypy --strict engine/src/engine engine/src/railyard engine/setup.py api/python/railyard_api service \
	  clients/python/railyard_client bench

unit: $(ENGINE_BUILT)
	./scripts/install-redis
	./scripts/install-node
	./scripts/install-chromium
	./scripts/install-wrk
	$(BIN)/pytest -n 2 -m 'not flood' --doctest-modules engine/src/engine engine/src/railyard tests \
	  clients/python/railyard_client
	$(BIN)/pytest -m flood tests/test_grpc_floods.py
	RAILYARD_ENGINE=pure $(BIN)/pytest -n 2 --doctest-modules engine/src/engine engine/src/railyard $(ENGINE_TESTS)

## bench: the engine benchmark (ratios against a baseline measured in the same run)
bench: $(ENGINE_BUILT)
	$(BIN)/python bench/engine.py

## bench-service: N clients playing complete games against one process with Redis
bench-service: $(ENGINE_BUILT)
	./scripts/install-redis
	./scripts/install-wrk
	$(BIN)/python bench/service.py

## bench-workers: serve --workers 2 against one worker, server CPU per move side by side
bench-workers: $(ENGINE_BUILT)
	./scripts/install-redis
	./scripts/install-wrk
	$(BIN)/python bench/workers.py

## bench-peers: our service against boardgame.io (npm); our engine against the TS engine (PEER_ENGINE_DIR)
# Both parts run (the TS engine's only with PEER_ENGINE_DIR, a checkout: it is
# not on npm); the target fails if either missed its targets.
bench-peers: $(ENGINE_BUILT)
	./scripts/install-node
	./scripts/install-redis
	./scripts/install-wrk
	cd bench/peers/boardgame-io && npm ci --no-audit --no-fund
	@status=0; \
	$(BIN)/python bench/peers/service.py || status=1; \
	if [ -n "$(PEER_ENGINE_DIR)" ]; then \
	  (cd bench/peers/ts-engine && npm ci --no-audit --no-fund) \
	    && $(BIN)/python bench/peers/engine.py --peer-dir "$(PEER_ENGINE_DIR)" || status=1; \
	else \
	  echo "bench-peers: the TypeScript engine comparison is skipped: PEER_ENGINE_DIR is unset" \
	    "(a checkout of JamesAtIntegratnIO/mexican-train; it is not on npm)"; \
	fi; \
	exit $$status

clean:
	find engine -name '*.so' -delete
	rm -f engine/src/engine/compiled.json
	rm -rf $(VENV) build .mypy_cache .pytest_cache .ruff_cache .hypothesis
