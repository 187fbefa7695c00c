# Each verb is one line. `make install` puts gmail-stats (runtime only) in .venv; `make test` and `make check` add the
# developer tools first (.ci/requirements/dev.txt). PYTHON=… picks the interpreter that creates .venv (3.11 or newer).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUNTIME := $(VENV)/.installed-runtime
DEV := $(VENV)/.installed-dev
MBOX ?=
RESUME ?=
ACCOUNT ?=
REFRESH ?=
ADDRESS ?=
# `make scan RESUME=4` / `make import MBOX=… RESUME=3` continue an interrupted run. A file name is data, never make
# or shell text: `$(value …)` takes MBOX and RESUME as typed (make does not expand `$(shell …)` in them), the recipes
# read them from the environment as "$$…" (the shell does not parse them), and MBOX and RESUME themselves are not
# exported (make would expand them to build the recipes' environment).
override MAKE_MBOX := $(value MBOX)
override MAKE_RESUME := $(value RESUME)
override MAKE_ACCOUNT := $(value ACCOUNT)
override MAKE_REFRESH := $(value REFRESH)
override MAKE_ADDRESS := $(value ADDRESS)
export MAKE_MBOX MAKE_RESUME MAKE_ACCOUNT MAKE_REFRESH MAKE_ADDRESS
unexport MBOX RESUME ACCOUNT REFRESH ADDRESS
RESUME_FLAG = $${MAKE_RESUME:+--resume "$$MAKE_RESUME"} $${MAKE_ACCOUNT:+--account "$$MAKE_ACCOUNT"}

.PHONY: install install-dev lock docs fmt check test bench secrets up down logs scan import runs account

install: $(RUNTIME)
	@echo "gmail-stats is installed in $(BIN); put it on your PATH with:  . $(BIN)/activate"

install-dev: $(DEV)

LOCKS := .ci/requirements
# What ruff and mypy check: the packages, the tests and benchmarks, and the docs generator.
CODE := shared ingester viewer tests bench docs/reference.py

$(RUNTIME): $(LOCKS)/runtime.txt $(LOCKS)/build.txt pyproject.toml .ci/install.sh
	sh .ci/install.sh "$(PYTHON)" $(VENV) $(LOCKS)/runtime.txt $(LOCKS)/build.txt && touch $@

$(DEV): $(LOCKS)/dev.txt pyproject.toml .ci/install.sh
	sh .ci/install.sh "$(PYTHON)" $(VENV) $(LOCKS)/dev.txt && touch $@ $(RUNTIME)

lock: $(DEV)
	sh .ci/lock.sh

docs: $(DEV)
	$(BIN)/python docs/reference.py

fmt: $(DEV)
	$(BIN)/ruff format $(CODE) && $(BIN)/ruff check --fix $(CODE)

check: $(DEV)
	$(BIN)/ruff format --check $(CODE) && $(BIN)/ruff check $(CODE) && $(BIN)/mypy $(CODE)

# One worker per core: each test file on one worker, all Docker and browser tests together on one (tests/conftest.py).
test: $(DEV)
	$(BIN)/pytest -n auto --dist loadgroup

bench: $(DEV)
	$(BIN)/python -m bench

# The containers' user (uid 10001) writes the token cache into ./secrets: a root container hands it the folder, keeping
# your group's access (mode 2770), so no `sudo chown` is needed. Docker Desktop maps ownership itself.
secrets:
	@mkdir -p secrets && docker compose run --rm --no-deps --user 0:0 --cap-add CHOWN --cap-add FOWNER --cap-add FSETID --entrypoint sh ingester -c "chown 10001:$$(id -g) /secrets && chmod 2770 /secrets" || echo "make secrets: could not give secrets/ to uid 10001; the scan may not save its token" >&2

up: secrets
	docker compose up --build --detach --wait && echo "gmail-stats viewer: http://$$(docker compose port viewer 7878)"

down:
	name=$$(docker compose config | sed -n 's/^name: //p'); ids=$$(docker ps -aq --filter "label=gmail-stats.stack=$$name"); [ -z "$$ids" ] || docker rm $$(docker stop $$ids) >/dev/null; docker compose down

logs:
	docker compose logs -f

scan: secrets
	sh docker/compose-run.sh --service-ports ingester scan $(RESUME_FLAG)

import:
	@test -n "$$MAKE_MBOX" || { echo 'usage: make import MBOX=/path/to/file.mbox [RESUME=RUN_ID]' >&2; exit 2; }; test -f "$$MAKE_MBOX" || { printf 'make import: %s: no such file\n' "$$MAKE_MBOX" >&2; exit 1; }; dir=$$(cd "$$(dirname -- "$$MAKE_MBOX")" && pwd) && name=$$(basename -- "$$MAKE_MBOX") && sh docker/compose-run.sh --volume "$$dir:/mbox:ro" --env GMAIL_STATS_HOST_MBOX="$$dir/$$name" ingester import "/mbox/$$name" $(RESUME_FLAG)

# An account's settings (`make account ACCOUNT=old ADDRESS=old.me@gmail.com`, `make account REFRESH=hourly`), or
# the list of accounts (`make account`); ACCOUNT= works with scan, import and runs too.
account:
	docker compose run --rm --no-deps ingester account $${MAKE_ACCOUNT:+--account "$$MAKE_ACCOUNT"} $${MAKE_REFRESH:+--refresh "$$MAKE_REFRESH"} $${MAKE_ADDRESS:+--address "$$MAKE_ADDRESS"} $$([ -n "$$MAKE_ACCOUNT$$MAKE_REFRESH$$MAKE_ADDRESS" ] || echo --list)

# The runs and their warnings, newest first, read from the stack's database volume (nothing is written).
runs:
	docker compose run --rm --no-deps ingester runs --verbose $${MAKE_ACCOUNT:+--account "$$MAKE_ACCOUNT"}
