# Each verb is one line; `make install` then `make test` is the whole development loop.
VENV := .venv
BIN := $(VENV)/bin
UV := $(shell command -v uv 2>/dev/null || echo $(BIN)/uv)
MBOX ?=

.PHONY: install fmt check test bench up down logs scan import

install:
	python3 -m pip install --quiet --disable-pip-version-check "uv==0.13.9" && uv sync --frozen --all-groups --compile-bytecode

fmt:
	$(BIN)/ruff format shared ingester viewer tests bench && $(BIN)/ruff check --fix shared ingester viewer tests bench

check:
	$(BIN)/ruff format --check shared ingester viewer tests bench && $(BIN)/ruff check shared ingester viewer tests bench && $(BIN)/mypy shared ingester viewer bench

test:
	$(BIN)/pytest

bench:
	$(BIN)/python -m bench

up:
	docker compose up --build -d && echo "gmail-stats viewer: http://127.0.0.1:7878"

down:
	docker compose down

logs:
	docker compose logs -f

scan:
	docker compose run --rm --service-ports ingester scan

import:
	$(BIN)/gmail-stats import "$(MBOX)"
