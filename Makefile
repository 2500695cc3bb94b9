# landlord - the two commands that matter are `make run` and `make test` (see README.md).
SHELL := /bin/bash
.DEFAULT_GOAL := build

RUN_DIR ?= $(CURDIR)/build/run-cluster
JOBS ?= 2

.PHONY: deps build asan tsan fuzz-build test unit tsan-unit e2e check format format-check checksrc \
	check-functions check-rbac check-chart check-webhooks check-pb \
	fuzz run cluster-up cluster-down bench clean

deps:
	@scripts/install-deps.sh

build:
	@cmake --preset release >/dev/null
	@cmake --build --preset release -j $(JOBS)

asan:
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)

tsan:
	@cmake --preset tsan >/dev/null
	@cmake --build --preset tsan -j $(JOBS)

fuzz-build:
	@cmake --preset fuzz >/dev/null
	@cmake --build --preset fuzz -j $(JOBS)

# Unit tests (cmocka, one executable per module) under ASan+UBSan.
unit: asan
	@ctest --preset asan -L unit -j $(JOBS)

# The unit tests under ThreadSanitizer: landlord runs I/O, reflector, worker and timer threads.
tsan-unit: tsan
	@ctest --preset tsan -L unit -j $(JOBS)

# End-to-end tests against a fresh local control plane, landlord running least-privilege.
e2e: build
	@python3 -m pytest tests/e2e -v -p no:cacheprovider --durations=20

format-check:
	@scripts/format.sh --check

format:
	@scripts/format.sh

checksrc:
	@scripts/checksrc.sh

check-functions:
	@scripts/check-functions.sh

# deploy/rbac.yaml's bind rule is what scripts/render-rbac.py renders for the default roles, and
# landlord's ClusterRole holds no escalate and no "*".
check-rbac:
	@scripts/render-rbac.py --check

# deploy/chart/files holds byte-for-byte copies of deploy/crds, deploy/policies and
# deploy/rbac.yaml; with the pinned Helm built, the chart also lints and renders.
check-chart:
	@scripts/chart-files.sh

# deploy/webhooks.json (embedded into landlord, registered with --webhook-url) is the chart's
# rendering of templates/webhooks.yaml, with the pinned Helm when it is built.
check-webhooks:
	@scripts/render-webhooks.py

# The proxy's protobuf descriptors (src/proxy/pb_descriptors.c) are generated from k8s.io/api;
# skipped when the Go module cache lacks the pinned version.
check-pb:
	@scripts/gen-pb-descriptors.py --check

check: format-check checksrc check-functions check-rbac check-chart check-webhooks check-pb

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
