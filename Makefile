# restoregraph — every target works on a fresh machine with Go installed.
GO        ?= go
PKGS      ?= ./...
FUZZTIME  ?= 15s
BENCHTIME ?= 1x
BENCH     ?= .

.PHONY: all test unit lint fmt bench fuzz demo

all: test

## test: lint, then every unit test with the race detector (what CI runs)
test: lint unit

unit:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

## lint: gofmt and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

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

## demo: the Cluster API restore demo (not built yet: see the issue on the CLI and demo)
demo:
	@echo "make demo: the Cluster API restore demo is not built yet" >&2; exit 2
