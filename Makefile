# landlord - the two commands that matter are `make run` and `make test` (see README.md).
SHELL := /bin/bash
.DEFAULT_GOAL := build

RUN_DIR ?= $(CURDIR)/build/run-cluster
JOBS ?= 2

.PHONY: deps build asan fuzz-build test unit e2e check format format-check checksrc \
	fuzz run cluster-up cluster-down bench clean

deps:
	@scripts/install-deps.sh

build:
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)

asan:
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)

fuzz-build:
	@cmake --preset fuzz >/dev/null
	@cmake --build --preset fuzz -j $(JOBS)

# Unit tests (cmocka, one executable per module) under ASan+UBSan.
unit: asan
	@ctest --preset asan -L unit -j $(JOBS)

# End-to-end tests against a fresh local control plane, landlord running least-privilege.
e2e: build
	@python3 -m pytest tests/e2e -v -p no:cacheprovider

format-check:
	@scripts/format.sh --check

format:
	@scripts/format.sh

checksrc:
	@scripts/checksrc.sh

check: format-check checksrc

test: deps check unit e2e

# Run every fuzz target for FUZZ_SECONDS each (default 30).
fuzz: fuzz-build
	@scripts/run-fuzzers.sh $${FUZZ_SECONDS:-30}

cluster-up: deps
	@scripts/cluster-up.sh "$(RUN_DIR)"

cluster-down:
	@tests/cluster/stop.sh "$(RUN_DIR)"

run: deps build
	@scripts/run.sh "$(RUN_DIR)"

bench: deps build
	@python3 bench/run.py

clean:
	rm -rf build
