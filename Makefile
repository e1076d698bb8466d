# tock's developer entry points. README opens with `make run` and `make test`.
SERVICES := dashboard scheduler worker
MODULES  := $(shell go list -m -f '{{.Dir}}')
# Every package of every workspace module (a module may have none yet).
PKGS     := $(shell go list $(addsuffix /...,$(MODULES)) 2>/dev/null | grep -v -e /e2e/chaos -e /e2e/isolation)
# Executions per fuzz target. A count, not a duration: Go 1.26's fuzzer can
# fail with a spurious "context deadline exceeded" when a duration runs out
# (golang/go#75804, fixed in Go 1.27).
FUZZTIME ?= 50000x
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)

.PHONY: build run test lint modules unit e2e fuzz clean chaos containers browser bench bench-quick bench-1m generate

## build: compile bin/dashboard, bin/scheduler, bin/worker and the command line bin/tock
build:
	@mkdir -p bin
	@for s in $(SERVICES); do go build -ldflags '$(LDFLAGS)' -o bin/$$s ./services/$$s || exit 1; done
	@go build -ldflags '$(LDFLAGS)' -o bin/tock ./cli
	@echo "built bin/dashboard bin/scheduler bin/worker bin/tock"

## run: start Postgres and Redis if needed, then all three services
# At a terminal, the script runs as a job of its own (bash -m), which Ctrl-C
# reaches and make does not: the script stops the services once and exits
# 0, and make with it, instead of make dying of the signal (exit 130).
run: build
	@if [ -t 0 ]; then bash -m -c 'bash scripts/dev/run.sh; exit $$?'; else bash scripts/dev/run.sh; fi

## test: gofmt, go vet, then every module's tests (unit, integration, end-to-end)
test: lint
	@echo "== tests: unit, integration, end-to-end and browser (about 9 minutes on 2 cores; a package prints ok when it passes)"
	go run ./scripts/pgpeak -max 40 -- go test -count=1 -timeout 20m $(PKGS)
	@echo "== the Helm chart: helm lint and template of three profiles, decoded strictly; every README setting through values"
	cd deployments/helm/check && GOWORK=off go test -count=1 ./...

## modules: fetch every module's dependencies from the Go module proxy, saying so first: on a fresh machine this takes a few minutes, which go vet and go test would otherwise spend silently
modules:
	@echo "== Go modules: fetched from the module proxy if missing (a few minutes on a fresh machine, nothing afterwards)"
	@go mod download
	@cd deployments/helm/check && GOWORK=off go mod download

## generate: copy the OpenAPI document the dashboard serves to sdk/go/openapi.json and generate the clients' types from it (sdk/go/types_gen.go, sdk/typescript/src/schema.gen.ts, sdk/python/src/tock/types_gen.py); `make test` fails while any is stale
generate:
	go generate ./services/dashboard/api/ ./sdk/go/
	python3 sdk/python/scripts/generate.py
	cd sdk/typescript && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && npm run --silent generate

## lint: gofmt and go vet over every module (and the Helm chart's checks, a module of their own outside the workspace)
lint: modules
	@echo "== gofmt and go vet"
	@out=$$(gofmt -l $(MODULES) deployments/helm/check); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet $(PKGS)
	cd deployments/helm/check && GOWORK=off go vet ./...

## unit: the fast tests only (no end-to-end)
unit:
	go test -count=1 $(filter-out %/e2e %/e2e/browser,$(PKGS))

## e2e: the end-to-end tests only, verbose, with their lateness figures
e2e:
	go test -count=1 -v -timeout 20m ./e2e/...

## fuzz: run every fuzz target for FUZZTIME (50000x executions) each: cron, RRULE, members, job JSON, job URLs, API job bodies, bulk bodies, labels, notify
fuzz:
	cd pkg && go test -run='^$$' -fuzz='^FuzzCron$$' -fuzztime=$(FUZZTIME) ./schedule/
	cd pkg && go test -run='^$$' -fuzz='^FuzzRRule$$' -fuzztime=$(FUZZTIME) ./schedule/
	cd pkg && go test -run='^$$' -fuzz='^FuzzParseMember$$' -fuzztime=$(FUZZTIME) ./job/
	cd pkg && go test -run='^$$' -fuzz='^FuzzSpecBuild$$' -fuzztime=$(FUZZTIME) ./jobspec/
	cd pkg && go test -run='^$$' -fuzz='^FuzzCheckURL$$' -fuzztime=$(FUZZTIME) ./jobtype/
	cd services/dashboard && go test -run='^$$' -fuzz='^FuzzDecodeJob$$' -fuzztime=$(FUZZTIME) ./api/
	cd services/dashboard && go test -run='^$$' -fuzz='^FuzzBulkRequest$$' -fuzztime=$(FUZZTIME) ./api/
	cd services/dashboard && go test -run='^$$' -fuzz='^FuzzDeadLetterRequest$$' -fuzztime=$(FUZZTIME) ./api/
	cd pkg && go test -run='^$$' -fuzz='^FuzzLabels$$' -fuzztime=$(FUZZTIME) ./jobspec/
	cd pkg && go test -run='^$$' -fuzz='^FuzzNotify$$' -fuzztime=$(FUZZTIME) ./jobspec/
	cd pkg && go test -run='^$$' -fuzz='^FuzzFlow$$' -fuzztime=$(FUZZTIME) ./jobspec/
	cd pkg && go test -run='^$$' -fuzz='^FuzzDebounce$$' -fuzztime=$(FUZZTIME) ./jobspec/

## browser: the dashboard's pages in headless Chromium (/usr/bin/chromium) on the real services; TOCK_SCREENSHOTS_DIR keeps the PNGs
browser:
	go test -count=1 -v -timeout 10m ./e2e/browser/...

## containers: build the dashboard, scheduler and worker images (deployments/Containerfile.runtime, FROM scratch around binaries built here) and run the spine test through them as containers, as docker-compose.yml runs them (podman with runc; installed when missing)
containers:
	bash scripts/dev/containers.sh

## chaos: the fault suite on private Postgres and Redis (kills, stalls and restarts under load, one row per fault), then the tenant isolation tests (hanging targets, a 100,000-job burst, aborts), one package at a time as they measure lateness
chaos:
	go test -count=1 -v -p 1 -timeout 25m ./e2e/chaos/... ./e2e/isolation/...

## bench: the benchmark on the real services and the local Postgres and Redis; writes bench/results/latest.json (ARGS=-quick, -workers 4...)
bench: build
	@bash -c 'source scripts/dev/services.sh && ensure_postgres && ensure_redis'
	go run ./scripts/bench -bin bin $(ARGS)

## bench-quick: the benchmark's small version (about a minute), as CI runs it; fails when a process's CPU per job is over bench/budget.json ("CPU per job over budget") in two runs in a row (a run over budget is run once more: scripts/dev/bench-quick.sh); its figures go to bench/results/quick.json (not tracked), so CI leaves the tree clean
bench-quick:
	bash scripts/dev/bench-quick.sh $(ARGS)

## bench-1m: the 1M test, for people (about 4 minutes): 1,000,000 pending jobs, then 1,000,000 due within one minute; time and peak memory
bench-1m:
	$(MAKE) bench ARGS='-ingest-bulk 1000000 -burst 1000000 -burst-spread 60s -steady-for 10s -out bench/results/1m.json $(ARGS)'

clean:
	rm -rf bin
