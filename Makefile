# restoregraph — every target works on a fresh machine with Go installed.
GO        ?= go
PKGS      ?= ./...
# The CLI is a module of its own, so that its command-line dependencies stay out of the
# library's go.mod.
CLI       := cmd/restoregraph
FUZZTIME  ?= 15s
BENCHTIME ?= 1x
BENCH     ?= .

.PHONY: all test unit lint fmt bench fuzz demo pictures

all: test

## test: lint, then every unit test with the race detector (what CI runs)
test: lint unit

unit:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	cd $(CLI) && $(GO) test -race -count=1 -timeout 20m ./...

## lint: gofmt and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	cd $(CLI) && $(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

## bench: every benchmark once per size (BENCH=regexp BENCHTIME=5x to narrow or repeat)
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -benchmem -timeout 60m $(PKGS)

## fuzz: each fuzz target for FUZZTIME
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

## demo: the Cluster API restore demo on the embedded API server; pictures in out/demo
demo:
	cd $(CLI) && $(GO) run . demo capi --out ../../out/demo $(DEMOFLAGS)

## pictures: the README's pictures, from a one-cluster demo (needs Graphviz's dot)
pictures:
	cd $(CLI) && $(GO) run . demo capi --clusters 1 --out ../../out/pictures
	cp out/pictures/plan.svg docs/plan.svg
	cp out/pictures/timeline.svg docs/timeline.svg
