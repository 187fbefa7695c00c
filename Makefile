# Each verb is one line; `make install` then `make test` is the whole development loop.
VENV := .venv
BIN := $(VENV)/bin
UV := $(shell command -v uv 2>/dev/null || echo $(BIN)/uv)
MBOX ?=
RESUME ?=

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
	name=$$(docker compose config | sed -n 's/^name: //p'); ids=$$(docker ps -aq --filter "label=gmail-stats.stack=$$name"); [ -z "$$ids" ] || docker rm $$(docker stop $$ids) >/dev/null; docker compose down

logs:
	docker compose logs -f

scan:
	docker compose run --rm --service-ports ingester scan $(if $(RESUME),--resume $(RESUME))

import:
	@test -n "$(MBOX)" || { echo 'usage: make import MBOX=/path/to/file.mbox' >&2; exit 2; }; dir=$$(cd "$$(dirname -- "$(MBOX)")" && pwd) && docker compose run --rm --volume "$$dir:/mbox:ro" --env GMAIL_STATS_HOST_MBOX="$$dir/$$(basename -- "$(MBOX)")" ingester import "/mbox/$$(basename -- "$(MBOX)")" $(if $(RESUME),--resume $(RESUME))
