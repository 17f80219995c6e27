# restoregraph — every target works on a fresh machine with Go installed.
GO        ?= go
PKGS      ?= ./...
# The CLI is a module of its own, so that its command-line dependencies stay out of the
# library's go.mod.
CLI       := cmd/restoregraph
# The integration tests are a module of their own too: they build kube-apiserver and
# kube-controller-manager from k8s.io/kubernetes, cached outside the tree.
KUBE_VERSION := $(shell sed -n 's/^\tk8s.io\/kubernetes \(v[0-9.]*\)$$/\1/p' test/go.mod)
KUBE_BIN     ?= $(HOME)/.cache/restoregraph/kube-$(KUBE_VERSION)
export RESTOREGRAPH_KUBE_BIN := $(KUBE_BIN)
# Velero's plugin host is a module of its own too (plugin/velerohost); its tests run the
# velero command, built from test/velero (pinned to Velero's dependencies), cached the same way.
HOST         := plugin/velerohost
VELERO_VERSION := $(shell sed -n 's/^\tgithub.com\/vmware-tanzu\/velero \(v[0-9.]*\)$$/\1/p' test/velero/go.mod)
VELERO_BIN   ?= $(HOME)/.cache/restoregraph/velero-$(VELERO_VERSION)
export RESTOREGRAPH_VELERO_BIN := $(VELERO_BIN)
# The other DAG walkers and the chart library are in a module of their own too.
PEERS        := bench/peers
BENCH_OUT    ?= docs/bench
FUZZTIME  ?= 15s
BENCHTIME ?= 1x
BENCH     ?= .

.PHONY: all test unit plugins integration bench-integration etcd lint fmt bench fuzz demo pictures

all: test

## test: lint, every unit test with the race detector, the Velero plugin host's tests, then the integration tests (what CI runs)
test: lint unit plugins integration

unit:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	cd $(CLI) && $(GO) test -race -count=1 -timeout 20m ./...
	cd $(PEERS) && $(GO) test -race -count=1 ./...

## lint: gofmt and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	cd $(CLI) && $(GO) vet ./...
	cd test && $(GO) vet ./...
	cd $(HOST) && $(GO) vet ./...
	cd $(PEERS) && $(GO) vet ./...
	cd test/velero && $(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

## plugins: the Velero plugin host against plugins built with Velero's framework and the velero command
plugins: $(VELERO_BIN)/.built
	cd $(HOST) && $(GO) test -race -count=1 -timeout 20m ./...

$(VELERO_BIN)/.built:
	@mkdir -p $(VELERO_BIN)
	@echo "building velero $(VELERO_VERSION) into $(VELERO_BIN) (a minute or two when cold)"
	cd test/velero && $(GO) build -o $(VELERO_BIN)/ github.com/vmware-tanzu/velero/cmd/velero
	@touch $@

## integration: the tests against a real kube-apiserver, etcd and garbage collector
integration: etcd $(KUBE_BIN)/.built
	cd test && $(GO) test -race -count=1 -timeout 20m ./...

## bench-integration: two workloads of 5,000 objects into the real server three ways, unthrottled, a 10,000-object backup, the CLI restoring 100,000 objects, and 10,000 Services created, one run each
bench-integration: etcd $(KUBE_BIN)/.built
	cd test && $(GO) test -run '^$$' -bench 'Integration(Restore|Backup|CLIRestore|Services)' -benchtime 1x -timeout 30m ./...

## etcd: Debian's etcd-server, installed when missing
etcd:
	@command -v etcd >/dev/null || { \
	  echo "installing Debian's etcd-server"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq etcd-server >/dev/null; }

# One stamp for both binaries: a rule with two targets would run its recipe twice. The
# directory is named after the Kubernetes version, so a new version builds anew; a fresh
# clone (whose go.mod is always newer) does not.
$(KUBE_BIN)/.built:
	@mkdir -p $(KUBE_BIN)
	@echo "building kube-apiserver and kube-controller-manager $(KUBE_VERSION) into $(KUBE_BIN) (several minutes when cold)"
	cd test && $(GO) build -o $(KUBE_BIN)/ k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
	@touch $@

## bench: every benchmark once per size (BENCH=regexp BENCHTIME=5x to narrow or repeat), then
## the strategy and overhead tables and chart into BENCH_OUT (docs/bench)
bench:
	@mkdir -p out
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -benchmem -timeout 60m $(PKGS) > out/bench.txt || { cat out/bench.txt; exit 1; }
	cd $(PEERS) && $(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -timeout 60m . > ../../out/bench-peers.txt || { cat ../../out/bench-peers.txt; exit 1; }
	cat out/bench.txt out/bench-peers.txt
	cat out/bench.txt out/bench-peers.txt | (cd $(PEERS) && $(GO) run ./cmd/benchreport -out ../../$(BENCH_OUT))

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
