# Herald: two commands do everything on a fresh Debian machine (`make help` lists every target).
#   make run    install what is missing, start RabbitMQ, build, run herald-api and the four workers
#   make test   the same set-up, then lint and the whole test suite
.PHONY: help run test unit stop build bench bench-pair setup lint

help:
	@echo "make run         install what is missing, start RabbitMQ, build, run herald-api and every worker"
	@echo "make test        the same set-up plus the suite's services, then lint and the whole suite"
	@echo "make unit        the tests that need no service (no broker, PostgreSQL or Python): the fast loop"
	@echo "make lint        swift format, the docs' links and anchors, and no history told in the tree"
	@echo "make build       set-up and a debug build"
	@echo "make bench       release build, then the performance table (ARGS=\"<suite> …\" for one suite)"
	@echo "make bench-pair  this tree against BASE=<commit>, loaded at the same time (RUNS=, SUITES=)"
	@echo "make setup       install what the suite needs, start nothing"
	@echo "make stop        stop the broker and PostgreSQL the scripts started"

run:
	@scripts/setup.sh
	@scripts/run.sh

test:
	@scripts/test.sh

unit:
	@scripts/unit.sh

stop:
	@scripts/broker.sh stop
	@scripts/postgres.sh stop

build:
	@scripts/setup.sh
	swift build

bench:
	@scripts/bench.sh $(ARGS)

# This tree against another commit, loaded together: make bench-pair BASE=<commit> [RUNS=5]
bench-pair:
	@BASE="$(BASE)" RUNS="$(RUNS)" SUITES="$(SUITES)" scripts/bench-pair.sh

setup:
	@scripts/setup.sh --test

lint:
	@scripts/lint.sh
