# Two commands on a fresh machine with Python 3.11+ and make:
#   make up    installs everything, runs the stack on embedded defaults, and ingests quickstart data
#   make test  installs everything and runs the whole test suite
PYTHON ?= python3
UV_VERSION ?= 0.13.9
UV := .tools/bin/uv
# The suite's workers (pytest-xdist), one test file at a time each. Most of a test's time is waiting on processes
# it started (APIs, Spark jobs, PostgreSQL), so two workers fill CI's 2 cores; each worker is its own pytest
# session with its own PostgreSQL and Spark Connect server (tests/fixtures). TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2

.PHONY: up down status test test-fast bench lint install browser

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

.venv/.synced: $(UV) pyproject.toml uv.lock */pyproject.toml shared/*/pyproject.toml
	$(UV) sync --frozen
	@touch $@

install: .venv/.synced

up: install
	$(UV) run strata up --quickstart

down: install
	$(UV) run strata down

status: install
	$(UV) run strata status

test: install browser
	$(UV) run ruff check .
	$(UV) run pytest -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30

# The console's browser test drives Debian's Chromium (never a downloaded browser). Installed here when missing and
# apt-get can (as root, ~1 minute); elsewhere the test skips and says why. Under CI=true a failed install fails.
browser:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "installing chromium for the console's browser test (apt-get)"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	      || { echo "chromium could not be installed: the console's browser test will be skipped"; \
	           [ "$$CI" != true ]; }; \
	  else \
	    echo "no chromium, and no apt-get as root to install it: the console's browser test will be skipped"; \
	  fi; \
	fi

# Tests that need no PostgreSQL, Spark or S3 server (pure logic, file formats, the merge kernel, the proxy against a
# fake upstream): nothing is started, and a test that would start one fails naming it.
test-fast: install
	STRATA_TEST_WITHOUT_SERVICES=1 $(UV) run pytest -p no:cacheprovider -m "not postgres and not spark and not s3" tests

bench: install
	$(UV) sync --frozen --group bench
	$(UV) run --group bench python -m bench.run

lint: install
	$(UV) run ruff check .
