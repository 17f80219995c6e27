# restoregraph — every target works on a fresh machine with Go installed.
GO        ?= go
PKGS      ?= ./...
# The library's go.mod asks for the oldest releases it builds and passes its tests with
# (what a backup tool embedding it must take at least); deps/newest.mod, a second module
# file, for the newest releases the project tests, which the other modules and the
# servers build with. make test vets, tests and benchmarks the library at the newest;
# make test-floor at its floor (CI runs it after make test).
NEWEST    := -modfile=deps/newest.mod
# The CLI is a module of its own, so that its command-line dependencies stay out of the
# library's go.mod.
CLI       := cmd/restoregraph
# The integration tests are a module of their own too: they build kube-apiserver and
# kube-controller-manager from k8s.io/kubernetes, cached outside the tree.
KUBE_VERSION := $(shell sed -n 's/^\tk8s.io\/kubernetes \(v[0-9.]*\)$$/\1/p' test/go.mod)
KUBE_BIN     ?= $(HOME)/.cache/restoregraph/kube-$(KUBE_VERSION)
export RESTOREGRAPH_KUBE_BIN := $(KUBE_BIN)
# Everything that speaks Velero is a module of its own too (velero: its objects and
# buckets, the plugin host, the controller); its tests run the velero command, built
# from test/velero (pinned to Velero's dependencies), cached the same way.
VELERO       := velero
# The demo is a program of its own, with the workload generators and Graphviz (as
# WebAssembly) that the command does not link.
DEMO         := demo
VELERO_VERSION := $(shell sed -n 's/^\tgithub.com\/vmware-tanzu\/velero \(v[0-9.]*\)$$/\1/p' test/velero/go.mod)
VELERO_BIN   ?= $(HOME)/.cache/restoregraph/velero-$(VELERO_VERSION)
export RESTOREGRAPH_VELERO_BIN := $(VELERO_BIN)
# The Velero stack of the integration tests: the Velero server (the same velero command)
# with its AWS object-store plugin, pinned in test/velero/go.mod; an S3 server and fake
# nodes, each built from its own module at a pinned version with go install (their
# go.mod files have no replace directives, so the build is exactly the released one).
AWS_PLUGIN_VERSION := $(shell sed -n 's/^\tgithub.com\/vmware-tanzu\/velero-plugin-for-aws \(v[0-9.]*\).*$$/\1/p' test/velero/go.mod)
VERSITYGW_VERSION  := v1.8.0
KWOK_VERSION       := v0.8.0
S3_BIN       ?= $(HOME)/.cache/restoregraph/versitygw-$(VERSITYGW_VERSION)
KWOK_BIN     ?= $(HOME)/.cache/restoregraph/kwok-$(KWOK_VERSION)
export RESTOREGRAPH_S3_BIN := $(S3_BIN)
export RESTOREGRAPH_KWOK_BIN := $(KWOK_BIN)
# The CSI stack of the volume tests: the snapshot controller, csi-snapshotter and the
# external provisioner, each built from its module at the version its build module pins
# (test/csi/*), with the VolumeSnapshot CRDs copied beside them from the snapshotter's
# client module. The tests build their own CSI driver (test/csi/driver).
SNAPSHOTTER_VERSION := $(shell sed -n 's/^\tgithub.com\/kubernetes-csi\/external-snapshotter\/v8 \(v[0-9.]*\).*$$/\1/p' test/csi/snapshotter/go.mod)
PROVISIONER_VERSION := $(shell sed -n 's/^\tgithub.com\/kubernetes-csi\/external-provisioner\/v6 \(v[0-9.]*\).*$$/\1/p' test/csi/provisioner/go.mod)
CSI_BIN      ?= $(HOME)/.cache/restoregraph/csi-snapshotter-$(SNAPSHOTTER_VERSION)-provisioner-$(PROVISIONER_VERSION)
export RESTOREGRAPH_CSI_BIN := $(CSI_BIN)
# The servers and tools the tests run are linked without symbol tables and DWARF (-s -w):
# nobody debugs them, and their links are the slowest step of a cold build.
TOOL_LDFLAGS := -s -w
# The other DAG walkers and the chart library are in a module of their own too.
PEERS        := bench/peers
BENCH_OUT    ?= docs/bench
FUZZTIME  ?= 15s
BENCHTIME ?= 1x
BENCH     ?= .

.PHONY: all test test-faults test-chaos test-floor unit plugins tidy align release release-check release-gomod deploy platforms integration integration-bins bench-integration etcd lint fmt bench fuzz demo pictures velero-stack fixtures docs

all: test

## test: lint, every unit test with the race detector, the Velero module's tests, then the integration tests (what CI runs)
test: lint unit plugins integration

# go test runs without its own vet (-vet=off): lint has run go vet, a superset of its
# checks, over the same packages and their tests, and go test -race would vet every
# dependency once more from source.
unit:
	@# At the newest releases, whose compile with -race the velero and test modules share.
	$(GO) test $(NEWEST) -race -vet=off -count=1 -timeout 20m $(PKGS)
	@# Memory bounds are measured without the race detector (their files build with !race).
	$(GO) test $(NEWEST) -vet=off -count=1 -run 'MemoryIsBounded' ./backup
	cd $(CLI) && $(GO) test -race -vet=off -count=1 -timeout 20m ./...
	cd $(PEERS) && $(GO) test -race -vet=off -count=1 ./...
	cd $(DEMO) && $(GO) test -race -vet=off -count=1 ./...

## lint: gofmt, the modules on one version of what they share (make align), and go vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	cd release && $(GO) run ./cmd/align -repo .. -check
	$(GO) vet $(NEWEST) $(PKGS)
	cd $(CLI) && $(GO) vet ./...
	cd test && $(GO) vet ./...
	cd $(VELERO) && $(GO) vet ./...
	cd $(DEMO) && $(GO) vet ./...
	cd $(PEERS) && $(GO) vet ./...
	cd test/velero && $(GO) vet ./...
	cd test/csi/driver && $(GO) vet ./...

## test-floor: go vet and the unit tests of the library at the oldest releases its go.mod asks for (a compile of
## Kubernetes' libraries of their own, apart from make test's; CI runs it after make test)
test-floor:
	$(GO) vet $(PKGS)
	$(GO) test -vet=off -count=1 -timeout 20m $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

## tidy: go mod tidy of the library at its floor and at the newest releases
tidy:
	$(GO) mod tidy
	$(GO) mod tidy $(NEWEST)

## align: raise the modules make test compiles (the library at the newest, the command, velero, demo, the tests and
## the CSI sidecars' builds) to one version of each module they share, the highest any takes: a cold build then
## compiles what they share once (make lint checks it)
align:
	cd release && $(GO) run ./cmd/align -repo ..

## plugins: the velero module (the plugin host, locations, records, the controller) against plugins built with Velero's framework and the velero command, and the library built inside Velero's module graph
plugins: $(VELERO_BIN)/.built
	cd $(VELERO) && $(GO) test -race -vet=off -count=1 -timeout 20m ./...
	@# The library embedded in Velero v1.18.3's module graph: a restore of a backup Velero
	@# wrote, and none of Velero's requirements raised (its compile is the velero command's).
	cd test/velero && $(GO) test -vet=off -count=1 ./cmd/embedded

# -X sets what `velero version` prints: the server refuses nothing without it, but a
# client and server that both say "<no value>" hide which Velero answered.
$(VELERO_BIN)/.built:
	@mkdir -p $(VELERO_BIN)
	@echo "building velero $(VELERO_VERSION) into $(VELERO_BIN) (a few minutes when cold)"
	cd test/velero && $(GO) build -ldflags "$(TOOL_LDFLAGS) -X github.com/vmware-tanzu/velero/pkg/buildinfo.Version=$(VELERO_VERSION)" \
	  -o $(VELERO_BIN)/ github.com/vmware-tanzu/velero/cmd/velero
	@touch $@

## velero-stack: the Velero server and its AWS plugin, the S3 server, kube-scheduler and kwok, built once into ~/.cache
velero-stack: $(VELERO_BIN)/.built $(VELERO_BIN)/plugins/.aws-$(AWS_PLUGIN_VERSION) $(S3_BIN)/.built $(KWOK_BIN)/.built $(KUBE_BIN)/.scheduler

# The plugin directory holds only plugins: Velero runs every executable in it.
$(VELERO_BIN)/plugins/.aws-$(AWS_PLUGIN_VERSION):
	@mkdir -p $(VELERO_BIN)/plugins
	@echo "building velero-plugin-for-aws $(AWS_PLUGIN_VERSION) into $(VELERO_BIN)/plugins (a few minutes when cold)"
	cd test/velero && $(GO) build -ldflags "$(TOOL_LDFLAGS)" -o $(VELERO_BIN)/plugins/velero-plugin-for-aws github.com/vmware-tanzu/velero-plugin-for-aws/velero-plugin-for-aws
	@touch $@

$(S3_BIN)/.built:
	@mkdir -p $(S3_BIN)
	@echo "building versitygw $(VERSITYGW_VERSION) into $(S3_BIN) (a few minutes when cold)"
	GOBIN=$(S3_BIN) GOFLAGS=-mod=mod $(GO) install -ldflags "$(TOOL_LDFLAGS)" github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)
	@touch $@

$(KWOK_BIN)/.built:
	@mkdir -p $(KWOK_BIN)
	@echo "building kwok $(KWOK_VERSION) into $(KWOK_BIN) (a few minutes when cold)"
	GOBIN=$(KWOK_BIN) GOFLAGS=-mod=mod $(GO) install -ldflags "$(TOOL_LDFLAGS)" sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)
	@# The release's own stages: nodes Ready with a heartbeat, Pods Running, Succeeded, deleted.
	@mkdir -p $(KWOK_BIN)/stages
	cd $$($(GO) env GOMODCACHE)/sigs.k8s.io/kwok@$(KWOK_VERSION)/kustomize/stage && \
	  install -m 644 node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml \
	    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml $(KWOK_BIN)/stages/
	@touch $@

$(KUBE_BIN)/.scheduler: $(KUBE_BIN)/.built
	@echo "building kube-scheduler $(KUBE_VERSION) into $(KUBE_BIN)"
	cd test && $(GO) build -ldflags "$(TOOL_LDFLAGS)" -o $(KUBE_BIN)/ k8s.io/kubernetes/cmd/kube-scheduler
	@touch $@

## integration: the tests against a real kube-apiserver, etcd and garbage collector, and beside the real Velero server
## (the faults of test-faults apart)
FAULT_TESTS := ^(TestRestoreOutlastsServerRestarts|TestAnOutageLongerThanTheItemTimeout|TestRestoreThroughACutConnection|TestRestoreUnderPriorityAndFairness|TestRestoreMeetsQuotaAndWebhook|TestConcurrentOperationsOneKilled)$$
integration: integration-bins
	cd test && $(GO) test -race -vet=off -count=1 -timeout 30m -skip '$(FAULT_TESTS)' ./...

# What integration runs: etcd, the Kubernetes binaries, the Velero stack and the CSI stack.
integration-bins: etcd $(KUBE_BIN)/.built velero-stack $(CSI_BIN)/.built

$(CSI_BIN)/.built:
	@mkdir -p $(CSI_BIN)/crds
	@echo "building the CSI snapshotter $(SNAPSHOTTER_VERSION) and provisioner $(PROVISIONER_VERSION) into $(CSI_BIN) (a few minutes when cold)"
	cd test/csi/snapshotter && $(GO) build -ldflags "$(TOOL_LDFLAGS)" -o $(CSI_BIN)/ \
	  github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter
	cd test/csi/provisioner && $(GO) build -ldflags "$(TOOL_LDFLAGS)" -o $(CSI_BIN)/ github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner
	cd test/csi/snapshotter && install -m 644 $$($(GO) list -m -f '{{.Dir}}' github.com/kubernetes-csi/external-snapshotter/client/v8)/config/crd/snapshot.storage.k8s.io_*.yaml $(CSI_BIN)/crds/
	@touch $@

## test-faults: restores through faults of the real control plane (kube-apiserver killed and started again after 5 s
## and 60 s, etcd after 5 s, and an outage longer than --item-timeout, finished by the same command run again), of the network (connections reset and stalled), of its policies (429s of API Priority and
## Fairness, a ResourceQuota, a webhook that denies and times out), and of other writers (a restore SIGKILLed while
## another waits and a backup runs); CI runs it after make test
test-faults: etcd $(KUBE_BIN)/.built
	cd test && $(GO) test -race -vet=off -count=1 -timeout 30m -run '$(FAULT_TESTS)' .

## test-chaos: two controller replicas carry out 50 Restores (49 of the Velero-written fixture, one of 5,005 objects)
## calmly, then again while a seeded driver SIGKILLs a replica, restarts kube-apiserver, kills etcd's leader and
## another of its three members, and cuts and stalls connections; then the command, SIGKILLed and run again from its
## journal until it ends (RESTOREGRAPH_CHAOS_SEED=N replays a run's faults); CI runs it after test-faults
test-chaos: integration-bins
	cd test && RESTOREGRAPH_CHAOS=1 $(GO) test -race -vet=off -count=1 -timeout 30m -run '^TestChaos$$' -v .

## fixtures: the backups the real Velero server writes of an application namespace and a Cluster API fleet, into testdata/velero
fixtures: etcd $(KUBE_BIN)/.built velero-stack
	rm -rf testdata/velero && mkdir -p testdata/velero
	cd test && RESTOREGRAPH_WRITE_VELERO_FIXTURES=$(CURDIR)/testdata/velero $(GO) test -count=1 -timeout 20m -run '^TestVeleroSideBySide$$' .

## bench-integration: two workloads of 5,000 objects into the real server three ways, unthrottled, a 10,000-object backup, the CLI restoring 100,000 objects and a million (over an hour), 10,000 Services created, Velero's restore beside restoregraph's of backups the real Velero server wrote (about 1,100 and 10,300 objects; 10 and 100 claims by CSI snapshot), three real platforms (cert-manager, Cluster API beside it, Kyverno) restored by the command, the controller and Velero, what the managed fields' patch costs the server at 10,300, one run each, and what reading a backup from a file, by URL and by name costs
bench-integration: integration-bins
	cd test && $(GO) test -run '^$$' -bench 'Integration(Restore|Backup|CLIRestore|Services|Velero|Sources)' -benchtime 1x -timeout 300m ./...

## etcd: Debian's etcd-server, installed when missing
etcd:
	@command -v etcd >/dev/null || { \
	  echo "installing Debian's etcd-server"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq etcd-server >/dev/null; }

# One stamp for the three binaries (one go build, so that they link side by side; .scheduler
# stays for caches made before the scheduler was built here): a rule with several targets
# would run its recipe for each. The directory is named after the Kubernetes version, so
# a new version builds anew; a fresh clone (whose go.mod is always newer) does not.
$(KUBE_BIN)/.built:
	@mkdir -p $(KUBE_BIN)
	@echo "building kube-apiserver, kube-controller-manager and kube-scheduler $(KUBE_VERSION) into $(KUBE_BIN) (several minutes when cold)"
	cd test && $(GO) build -ldflags "$(TOOL_LDFLAGS)" -o $(KUBE_BIN)/ k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
	@touch $@
	@touch $(KUBE_BIN)/.scheduler

## bench: every benchmark once per size (BENCH=regexp BENCHTIME=5x to narrow or repeat), then
## the strategy and overhead tables and chart into BENCH_OUT (docs/bench)
bench:
	@mkdir -p out
	$(GO) test $(NEWEST) -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -benchmem -timeout 120m $(PKGS) > out/bench.txt || { cat out/bench.txt; exit 1; }
	cd $(PEERS) && $(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -timeout 60m . > ../../out/bench-peers.txt || { cat ../../out/bench-peers.txt; exit 1; }
	cat out/bench.txt out/bench-peers.txt
	cat out/bench.txt out/bench-peers.txt | (cd $(PEERS) && $(GO) run ./cmd/benchreport -out ../../$(BENCH_OUT))

## release: the command for linux and darwin, amd64 and arm64, static, with SHA256SUMS, and the controller's image
## (the command and Velero's) for linux/amd64 and linux/arm64 as an OCI image layout, all in out/release, built
## without a container daemon
## (VERSION=v1.2.3 names them; push the image with crane push or skopeo copy --all)
VERSION           ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
IMAGE_PLATFORMS   ?= linux/amd64 linux/arm64
release: release-check
	rm -rf out/release && mkdir -p out/release
	@set -e; for p in $(RELEASE_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; dir=out/release/$${os}_$${arch}; mkdir -p $$dir; \
	  echo "building restoregraph $(VERSION) for $$os/$$arch"; \
	  (cd $(CLI) && CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath \
	    -ldflags "-s -w -X main.releaseVersion=$(VERSION)" -o $(CURDIR)/$$dir/restoregraph .); \
	  tar -C $$dir --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
	    -czf out/release/restoregraph_$(VERSION)_$${os}_$${arch}.tar.gz restoregraph; \
	done
	cd out/release && sha256sum restoregraph_*.tar.gz > SHA256SUMS
	@# Velero's own command for the image, which the controller runs for Velero's built-in
	@# actions: from Velero's module at the version test/velero pins, with its dependencies.
	@set -e; for p in $(IMAGE_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; mkdir -p out/release/$${os}_$${arch}; \
	  echo "building velero $(VELERO_VERSION) for $$os/$$arch"; \
	  (cd test/velero && CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath \
	    -ldflags "-s -w -X github.com/vmware-tanzu/velero/pkg/buildinfo.Version=$(VELERO_VERSION)" \
	    -o $(CURDIR)/out/release/$${os}_$${arch}/velero github.com/vmware-tanzu/velero/cmd/velero); \
	done
	cd release && $(GO) run ./cmd/image -out $(CURDIR)/out/release/image -version $(VERSION) \
	  $(foreach p,$(IMAGE_PLATFORMS),-platform $(p)=$(CURDIR)/out/release/$(subst /,_,$(p))/restoregraph \
	    -velero $(p)=$(CURDIR)/out/release/$(subst /,_,$(p))/velero)
	@# go install ...@VERSION of a release, from a module proxy holding the release commit's modules.
	cd release && RESTOREGRAPH_GOINSTALL=1 $(GO) test -count=1 -run '^TestGoInstallAtARelease$$' ./gomod

# What make release builds from, checked first: the image's writer, the release's go.mod
# files, and the chart (rendered, linted, restoregraph.yaml current); and the platforms'
# manifests the integration tests install, current with test/platforms. Apart from make test:
# Helm and go-containerregistry take minutes to compile cold, and CI runs make release.
release-check:
	cd release && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd deploy && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd test/platforms && $(GO) vet ./... && $(GO) test -count=1 ./...

## release-gomod: the nested modules' go.mod files as a release commit has them (VERSION=v1.2.3): requiring the
## library and the velero module at VERSION, with no replace directive, which go install ...@VERSION refuses
release-gomod:
	cd release && $(GO) run ./cmd/gomod -repo .. -version $(VERSION)

## deploy: deploy/restoregraph.yaml, the Helm chart rendered with its default values (its test checks it is current)
deploy:
	cd deploy && $(GO) test -count=1 -run '^TestRenderedIsCurrent$$' . -update

## platforms: testdata/platforms, the install manifests of the platforms the integration tests restore (cert-manager),
## rendered from their projects' modules at the versions test/platforms/go.mod pins (its test checks they are current)
platforms:
	cd test/platforms && $(GO) test -count=1 -run '^TestRenderedIsCurrent$$' . -update

## docs: docs/reference/cli.md from the command's definitions (the unit tests check that it is current)
docs:
	cd $(CLI) && $(GO) test -count=1 -run '^TestReferenceIsGenerated$$' . -update

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
	cd $(DEMO) && $(GO) run . capi --out ../out/demo $(DEMOFLAGS)

## pictures: the README's pictures, from a one-cluster demo (Graphviz runs in process)
pictures:
	cd $(DEMO) && $(GO) run . capi --clusters 1 --out ../out/pictures
	cp out/pictures/plan.svg docs/plan.svg
	cp out/pictures/timeline.svg docs/timeline.svg
