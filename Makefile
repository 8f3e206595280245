# Herald: two commands do everything on a fresh Debian machine.
#   make run    install what is missing, start RabbitMQ, build, run herald-api and herald-sms-worker
#   make test   the same set-up, then the whole test suite (formatting and declared imports checked first)
.PHONY: run test stop build bench bench-pair setup lint

run:
	@scripts/setup.sh
	@scripts/run.sh

test:
	@scripts/test.sh

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
	swift format lint --strict --recursive --parallel Sources Tests Package.swift
