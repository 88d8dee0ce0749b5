# regdesk: `make run` to try it, `make test` to check it. Everything installs into .venv, at
# the versions locked in uv.lock (`make lock` updates them), by uv, itself pinned here.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
UV_VERSION := 0.13.8
TOOLS := .tools
UV := $(TOOLS)/bin/uv
# uv installs into .venv with this machine's Python, never one it downloads, and compiles what it
# installs to bytecode then, on every core: otherwise the first processes to import each library
# compile it, several of them at once (a fresh clone's `make test`: 6 min 04 s, now 5 min 44 s).
SYNC := UV_PROJECT_ENVIRONMENT=$(VENV) UV_PYTHON_DOWNLOADS=never $(UV) sync --locked --compile-bytecode --python $(PYTHON)
# Python keeps the bytecode it compiles (__pycache__, ignored by git): some machines set
# PYTHONDONTWRITEBYTECODE, and then every process compiles every module it imports again, which
# was two fifths of the start of a `regdesk serve` and of each of the tests' server processes.
unexport PYTHONDONTWRITEBYTECODE
# Two test processes, each given whole files in the order tests/conftest.py puts them, the
# longest first (RUN_FIRST). pytest-xdist would otherwise hand out the files with the most tests
# first, and a long file of few tests, taken last, kept one process busy 8 s after the other
# had finished.
XDIST := -n 2 --dist loadfile --no-loadscope-reorder
RUNTIME_STAMP := $(VENV)/.runtime-stamp
DEV_STAMP := $(VENV)/.dev-stamp

.PHONY: install install-runtime lock upgrade run test coverage fuzz lint style format docs bench soak clean

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet uv==$(UV_VERSION)

# The service and the development tools (tests, lint, types, browsers' driver), exactly the lock.
$(DEV_STAMP): pyproject.toml uv.lock | $(UV)
	$(SYNC) --extra dev
	touch $@

# The service alone; development tools already installed are left in place.
$(RUNTIME_STAMP): pyproject.toml uv.lock | $(UV)
	$(SYNC) --inexact
	touch $@

install: $(DEV_STAMP)

install-runtime: $(RUNTIME_STAMP)

## uv.lock after a change of pyproject.toml: what it adds is locked, the rest stays as it is
lock: | $(UV)
	UV_PYTHON_DOWNLOADS=never $(UV) lock --python $(PYTHON)

## uv.lock moved to the newest versions pyproject.toml allows (then `make test`, and commit it)
upgrade: | $(UV)
	UV_PYTHON_DOWNLOADS=never $(UV) lock --upgrade --python $(PYTHON)

## Migrate, load demo data on first start, serve on http://127.0.0.1:8000
run: install-runtime
	$(BIN)/regdesk db upgrade
	$(BIN)/regdesk demo --if-empty
	$(BIN)/regdesk serve

## Lint, then every test (PostgreSQL runs too when REGDESK_TEST_POSTGRES_URL is set) with the
## types checked beside them: mypy runs at the lowest priority while the tests run, on the CPU
## they leave idle (they wait on servers, browsers and databases for about a quarter of it), and
## says what it found after them; either failing fails `make test`.
test: style
	@mkdir -p build
	@nice -n 19 $(BIN)/mypy > build/mypy.txt 2>&1 & types=$$!; \
	$(BIN)/pytest $(XDIST); tests=$$?; \
	wait $$types; typed=$$?; echo "mypy:"; cat build/mypy.txt; \
	exit $$(( tests != 0 || typed != 0 ))

## Every test, with line coverage of src/: a summary here, every line in build/coverage.json
coverage: install
	$(BIN)/pytest $(XDIST) --cov=regdesk --cov-report=term \
		--cov-report=json:build/coverage.json

## Fuzz the API from its own /openapi.json, longer than `make test` does (tests/fuzz): a new
## seed each run unless REGDESK_FUZZ_SEED is set; inputs tried go to build/fuzz.json. And the
## whole cross products of attacks where `make test` sends a covering sample
## (REGDESK_HOSTILE_INPUT=full): every hostile payload in every field
## (tests/security/test_input.py), every forged token to every form (tests/security/test_csrf.py).
## And two servers delivering 10,000 webhook events where `make test` has them deliver 500
## (tests/webhooks/test_two_processes.py, REGDESK_TEST_WEBHOOK_EVENTS)
fuzz: install
	REGDESK_FUZZ_EXAMPLES=$${REGDESK_FUZZ_EXAMPLES:-500} \
	REGDESK_FUZZ_SEED=$${REGDESK_FUZZ_SEED:-$$(date +%s)} \
	REGDESK_HOSTILE_INPUT=full \
	REGDESK_TEST_WEBHOOK_EVENTS=$${REGDESK_TEST_WEBHOOK_EVENTS:-10000} \
	$(BIN)/pytest tests/fuzz tests/security/test_input.py tests/security/test_csrf.py \
		tests/webhooks/test_two_processes.py

## Lint: the style (ruff), then the types (mypy)
lint: style
	$(BIN)/mypy

style: install
	$(BIN)/ruff check src tests bench docs/hooks
	$(BIN)/ruff format --check src tests bench docs/hooks

format: install
	$(BIN)/ruff format src tests bench docs/hooks
	$(BIN)/ruff check --fix src tests bench docs/hooks

## The manual (docs/, mkdocs.yml): built strictly into build/site, then served on
## http://127.0.0.1:8001 as pages change. `make test` builds it too (tests/docs).
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict --dev-addr 127.0.0.1:8001

## Benchmarks: report only, never fail; results in build/bench.json (wrk from Debian's packages)
bench: install
	command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk)
	$(BIN)/python -m bench

## Soak: SOAK_SECONDS (180) of mixed traffic per database against one server; fails if a request
## was lost or duplicated, a refresh chain broke, a 5xx came or memory grew. build/soak.json
soak: install
	$(BIN)/python -m bench.soak

clean:
	rm -rf build .pytest_cache .mypy_cache .ruff_cache $(TOOLS)
