# agyharness. `make test` is what CI runs (.ci/run).
GO ?= go
FUZZTIME ?= 10s
PKGS := ./...

.PHONY: test lint vet staticcheck fuzz bench soak proto

# One package at a time (-p 1): the simulation and campaign tests run many
# fake agys each, and two such packages at once overload 2 cores.
test: vet
	$(GO) test -race -p 1 -timeout 15m $(PKGS)
	@# Several cluster nodes in one process: without -race (hostcluster/node_test.go says why).
	$(GO) test -p 1 -timeout 5m ./hostcluster/

vet:
	$(GO) vet $(PKGS)

# gofmt, vet and staticcheck (pinned in go.mod as a tool: `go tool staticcheck`).
lint: vet staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

staticcheck:
	$(GO) tool staticcheck $(PKGS)

# Each fuzz target for FUZZTIME (go test -fuzz takes one target at a time).
# CI runs it with the default 10 s a target. Go 1.26's fuzzing coordinator
# can report its own -fuzztime deadline as a failure ("context deadline
# exceeded", no input written: golang/go#75804, fixed in Go 1.27): such a
# run is reported and passed over; any other failure, or one that wrote a
# failing input under testdata/fuzz, fails.
fuzz:
	@set -e; log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for f in $$(git grep -l '^func Fuzz' -- '*_test.go'); do \
	  pkg=./$$(dirname $$f); \
	  for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
	    echo "fuzz $$pkg $$t"; \
	    rc=0; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg >$$log 2>&1 || rc=$$?; \
	    cat $$log; \
	    if [ $$rc -ne 0 ]; then \
	      if grep -qx '    context deadline exceeded' $$log && [ -z "$$(git status --porcelain -- $$pkg/testdata/fuzz/$$t)" ]; then \
	        echo "fuzz $$pkg $$t: the fuzzing coordinator's own deadline (golang/go#75804), no failing input: passed over"; \
	      else exit $$rc; fi; \
	    fi; \
	  done; \
	done

# The Go benchmarks, a short fault campaign, the performance run of
# docs/PERFORMANCE.md (fakes in a separate process, 1,000 idle sessions),
# then its floors: the same streams read and decoded with no harness, and
# read only (the transport alone); then the cluster campaign (docs/SCALING.md),
# across nodes and through each session's own node.
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	$(GO) run ./cmd/agyharness bench --sessions 50 --duration 20s --seed 1 --json
	$(GO) run ./cmd/agyharness bench --sessions 220 --poll-sessions 20 --duration 20s --seed 1 --faults none \
	  --turn-kinds essay --chunk-delay 200ms --default-intervals --external-fakes --idle-sessions 1000 --json
	$(GO) run ./cmd/agyharness bench --floor --sessions 200 --duration 20s --seed 1 --faults none \
	  --turn-kinds essay --chunk-delay 200ms --external-fakes --frame-cost=false --json
	$(GO) run ./cmd/agyharness bench --floor --floor-raw --sessions 200 --duration 20s --seed 1 --faults none \
	  --turn-kinds essay --chunk-delay 200ms --external-fakes --frame-cost=false --json
	$(GO) run ./cmd/agyharness bench --cluster 3 --sessions 300 --duration 20s --faults none --seed 1 --json
	$(GO) run ./cmd/agyharness bench --cluster 3 --cluster-local --sessions 300 --duration 20s --faults none --seed 1 --json

# The long campaign, for people before a release (about 11 minutes).
soak:
	$(GO) run ./cmd/agyharness bench --sessions 200 --duration 10m --seed 42 --json

# Regenerates the Go code of the cluster protocol from its .proto file (needs
# protoc, Debian's protobuf-compiler, and protoc-gen-go at go.mod's
# google.golang.org/protobuf version:
# go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.33.0).
proto:
	protoc --go_out=. --go_opt=module=github.com/agyharness/agyharness hostcluster/clusterpb/hostcluster.proto
