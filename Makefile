# Everything a developer or CI runs. `make run` and `make test` install what is missing first.
SHELL := /bin/bash
NPX := npx --no-install
export NODE_OPTIONS ?= --no-warnings=ExperimentalWarning

.PHONY: install install-server run test check generate check-generated lint long-lines folder-cycles format typecheck migration \
	bench bench-bombs bench-funnels fuzz soak bench-hog bench-10m clean

## `make run` installs only the packages the server and the CLI need (`npm ci --omit=dev`: 242 of the 844
## packages, 328 of 810 MB), so a fresh clone answers sooner; every other target installs the development ones
## too. Each install leaves a stamp in node_modules, which npm ci deletes, so a stamp goes with the install it
## describes. A current full install serves `make run` as it is.
FULL := node_modules/.installed-full
SERVER := node_modules/.installed-server

## tap builds its test class from the plugins package.json names only when a run finds them changed, and that run
## still loads the old set: on a fresh install every test process of the first run loaded ts-node besides tsx
## (about 1.5 CPU-s each). Building it here makes the first run like every later one.
$(FULL): package.json package-lock.json
	npm ci --no-audit --no-fund
	$(NPX) tap build
	touch $@

$(SERVER): package.json package-lock.json
	[ $(FULL) -nt package.json ] && [ $(FULL) -nt package-lock.json ] || npm ci --omit=dev --no-audit --no-fund
	touch $@

install: $(FULL)
install-server: $(SERVER)

run: install-server
	npm start

test: install
	npm test

## The contract: lint, bundle into generated/openapi.json, type it into generated/api.d.ts, and map
## each operationId to its path (generated/operation-paths.ts).
generate: install
	$(NPX) redocly lint openapi.yaml --format=stylish
	$(NPX) redocly bundle openapi.yaml -o generated/openapi.json
	$(NPX) openapi-typescript generated/openapi.json -o generated/api.d.ts
	node scripts/operation-paths.mjs

## A new migration from the Drizzle schema: make migration name=add_dashboards
migration: install
	$(NPX) drizzle-kit generate --name $(name)

## Fails when generated/ or drizzle/ is not what the spec and the schema produce.
check-generated: generate
	$(NPX) drizzle-kit generate --name stale_schema_check
	$(NPX) drizzle-kit check
	@if [ -n "$$(git status --porcelain -- generated drizzle)" ]; then \
	  git status --porcelain -- generated drizzle; git --no-pager diff --stat -- generated drizzle; \
	  echo "generated/ or drizzle/ is stale: run make generate (or make migration) and commit the result"; exit 1; fi

typecheck: install
	$(NPX) tsc -p .

## Biome (configured in biome.json): format check at 120 columns, lint rules, and the layering of
## src/README.md as import rules.
lint: install
	$(NPX) biome ci --max-diagnostics=50 .

## Fails on a line over 120 columns that the formatter cannot wrap (long strings, SQL, regexes, comments).
long-lines:
	@node scripts/long-lines.mjs

## No two folders of src/ import each other, through any chain (src/README.md, "The layers").
folder-cycles:
	@node scripts/folder-cycles.mjs

## Formats everything and applies Biome's safe fixes.
format: install
	$(NPX) biome check --write .

check: check-generated lint long-lines folder-cycles typecheck

## Stops a test run's embedded PostgreSQL if an interrupted run left it going, then removes its files.
clean:
	-[ -x node_modules/.bin/tsx ] && DATABASE_URL= node --import tsx test/helpers/teardown.ts
	rm -rf .tap node_modules/.cache

## Throughput and latency of the API against same-run baselines; writes bench/results.md.
bench: install
	npm run -s build
	$(NPX) tsx bench/run.ts
	$(NPX) tsx bench/bombs.ts
	$(MAKE) bench-funnels

## A 3-step FunnelsQuery and a RetentionQuery over 1,000,000 events in a database of their own on DATABASE_URL,
## against the funnel written by hand; writes bench/results-query-kinds-funnels.md.
bench-funnels: install
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres} $(NPX) tsx bench/query-kinds-funnels.ts
	$(NPX) biome format --write bench/results-query-kinds-funnels.md >/dev/null

## Hog functions under load (issue #31): transformations' cost on ingestion, destination throughput and lag.
bench-hog: install
	npm run -s build
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres} $(NPX) tsx bench/hog-functions.ts
	$(NPX) biome format --write bench/results-hog-functions.md >/dev/null

## /_health p99 while 4 capture decompression bombs are decoded (baseline: idle); writes bench/results-bombs.md.
bench-bombs: install
	npm run -s build
	$(NPX) tsx bench/bombs.ts

## 10,000,000 events on DATABASE_URL (about 6 GB of disk, not in CI): size, aggregates, listing; bench/results-10m.md.
bench-10m: install
	npm run -s build
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres} $(NPX) tsx bench/ten-million.ts
	$(NPX) biome format --write bench/results-10m.md >/dev/null

## The fuzz test's long profile: FUZZ_RUNS requests per operation (default 2000); FUZZ_SEED=<n> reproduces a run.
fuzz: install
	FUZZ_RUNS=$${FUZZ_RUNS:-2000} bash scripts/test.sh --timeout=0 test/fuzz.test.ts test/fuzz-other-half.test.ts

## Mixed read/write load for SOAK_DURATION seconds (default 60): fails on any error or on RSS growth over 50%.
soak: install
	npm run -s build
	$(NPX) tsx bench/soak.ts
