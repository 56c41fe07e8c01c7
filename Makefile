# nodeprof build. Targets:
#   make deps    install missing Debian packages (apt-get, needs root): deps-run, deps-test
#                and deps-bench together; each of those is what its job needs
#   make         build build/nodeprof
#   make test    deps-test + build + every test (unit, unit under ASan/UBSan, fuzz smoke, integration)
#   make run     deps-run + build + start the agent on its embedded default
#   make bench   deps-bench + build + benchmarks (results in bench/results/)
#   make fuzz    long fuzzing runs (FUZZ_SECONDS per target)
#   make manifests, make docker-check   see mk/chart.mk
#
# Sources are found by wildcard: a new .c file under lib/, agent/, k8s/ or relabel/ is part of
# the agent; tests/unit/test_*.c is a unit test; tests/harness/*.c is a test harness
# (build/harness/*); tests/fuzz/fuzz_*.c is a fuzz target; bpf/*.bpf.c is a BPF program
# with a generated skeleton. Nothing needs registering here.

VERSION := 0.1.0
BUILD ?= build
CC ?= gcc
CLANG ?= clang
BPFTOOL ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
PYTHON ?= python3

# The Debian 12 packages each job needs, one per line (merges stay easy). `make run`
# installs the first list only: the toolchain and the -dev libraries a build needs (their
# runtime libraries come with them) and the CA certificates https:// pushes need.
DEB_RUN_PACKAGES := \
	make \
	gcc \
	binutils \
	clang \
	llvm \
	bpftool \
	pkg-config \
	python3 \
	libbpf-dev \
	libelf-dev \
	zlib1g-dev \
	liblzma-dev \
	libjansson-dev \
	libcurl4-openssl-dev \
	libyaml-dev \
	libssl-dev \
	libpcre2-dev \
	libicu-dev \
	libwebsockets-dev \
	libiberty-dev \
	ca-certificates

# What `make test` adds: cmocka and Valgrind (unit tests), clang's libFuzzer runtime
# (fuzz targets), g++ and the binutils/xz/openssl tools that build test programs, files
# and certificates, perf (the unwinding tests' reference), Debian's python3.11 (a
# workload), Go and the Go packages of the chart renderer and the relabel oracle,
# Chromium (UI tests), debootstrap (make docker-check), Node.js (the V8 tests' workloads: any
# version the machine's sources give; `make node18` adds Debian's 18 beside it), OpenJDK 17
# (the Java workloads, compiled by the tests with javac; jcmd is the JVM's own view they compare with), perl
# (the Perl workloads; its libperl brings threads.pm and the CORE headers the layout test compiles against),
# Ruby 3.1 (the Ruby workloads; its headers check the Ruby layout's public-header offsets),
# PHP's CLI and php-fpm (the PHP workloads) and php8.2-dev (the Zend headers the layout test compiles against).
DEB_TEST_PACKAGES := \
	libcmocka-dev \
	valgrind \
	libclang-rt-14-dev \
	g++ \
	xz-utils \
	openssl \
	linux-perf \
	python3.11 \
	php-cli \
	php-fpm \
	php8.2-dev \
	golang-go \
	golang-github-masterminds-sprig-dev \
	golang-k8s-sigs-yaml-dev \
	golang-github-xeipuuv-gojsonschema-dev \
	chromium \
	debootstrap \
	procps \
	iproute2 \
	curl \
	nodejs \
	openjdk-17-jdk \
	perl \
	ruby3.1 \
	ruby3.1-dev

# What `make bench` adds: the peers it measures against (bpftrace, perf, llvm-symbolizer
# comes with llvm, addr2line with binutils), elfutils' libdw (the CFI benchmark's other
# side) and the workloads' tools.
DEB_BENCH_PACKAGES := \
	bpftrace \
	linux-perf \
	libdw-dev \
	g++ \
	python3.11 \
	xz-utils \
	openssl \
	procps

DEB_PACKAGES := $(sort $(DEB_RUN_PACKAGES) $(DEB_TEST_PACKAGES) $(DEB_BENCH_PACKAGES))

PKGS := libbpf libelf zlib liblzma jansson libcurl libpcre2-8 libwebsockets openssl yaml-0.1
# ICU is compiled against but not linked: lib/icu.c dlopens it on first use (it and
# its libstdc++ cost ~1.5 MB resident), by the soname of the version whose headers we use.
ICU_PKG := icu-uc
# Recursive (=) on purpose: evaluated only when compiling, i.e. after `make deps` ran.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) $(ICU_PKG) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
ICU_MAJOR = $(firstword $(subst ., ,$(shell pkg-config --modversion $(ICU_PKG) 2>/dev/null)))
ICU_CFLAGS = -DNP_ICU_SONAME=\"libicuuc.so.$(ICU_MAJOR)\"

WARN := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter -Wstrict-prototypes -Wformat=2
BASE_CFLAGS := -std=gnu11 -g -D_GNU_SOURCE -DNP_VERSION=\"$(VERSION)\" -I. -I$(BUILD)/gen $(WARN)
OPT ?= -O2
SAN ?=
ifeq ($(SAN),1)
  OPT := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
  LDSAN := -fsanitize=address,undefined
endif
CFLAGS_ALL = $(BASE_CFLAGS) $(OPT) $(PKG_CFLAGS) $(ICU_CFLAGS) $(EXTRA_CFLAGS)
LDLIBS_ALL = $(PKG_LIBS) -l:libiberty.a -lstdc++ -lpthread -lm $(LDSAN)

LIB_SRCS := $(filter-out agent/main.c,$(wildcard lib/*.c agent/*.c agent/*/*.c agent/*/*/*.c k8s/*.c relabel/*.c))
LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/gen/%.skel.h,$(BPF_SRCS))
GEN_HDRS = $(SKELS) $(EXTRA_GEN_HDRS)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
UNIT_HELPERS := $(wildcard tests/unit/helpers/*.c)
UNIT_HELPER_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(UNIT_HELPERS))
HARNESS_SRCS := $(wildcard tests/harness/*.c)
HARNESS_BINS := $(patsubst tests/harness/%.c,$(BUILD)/harness/%,$(HARNESS_SRCS))
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)

# Plain `make` builds the agent, whatever the included fragments define first.
.DEFAULT_GOAL := all

-include mk/*.mk

# Keep the BPF objects and unit-test helper objects: make would otherwise delete them as
# intermediates and rebuild them every time.
.SECONDARY: $(BPF_OBJS) $(SKELS) $(UNIT_HELPER_OBJS)

.PHONY: all deps deps-run deps-test deps-bench test run bench fuzz unit unit-asan fuzz-build clean check-root
all: $(BUILD)/nodeprof

# Installs the missing packages of a list (apt-get, needs root); nothing when all are there.
deps: DEB_WANT = $(DEB_PACKAGES)
deps-run: DEB_WANT = $(DEB_RUN_PACKAGES)
deps-test: DEB_WANT = $(DEB_RUN_PACKAGES) $(DEB_TEST_PACKAGES)
deps-bench: DEB_WANT = $(DEB_RUN_PACKAGES) $(DEB_BENCH_PACKAGES)
deps deps-run deps-test deps-bench:
	@missing=""; for p in $(sort $(DEB_WANT)); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "make $@: these packages are missing; run as root to install them:$$missing" >&2; exit 1; fi; \
	  echo "make $@: installing$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q --no-install-recommends $$missing >/dev/null || \
	    { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $$missing >/dev/null; } || \
	    { echo "make $@: apt-get failed for:$$missing" >&2; exit 1; }; \
	fi

$(BUILD)/obj/%.o: %.c | $(GEN_HDRS)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(BUILD)/libnodeprof.a: $(LIB_OBJS)
	@rm -f $@
	@ar rcs $@ $^

# main.c's _gnutls_global_init_skip must be visible to libgnutls (see there).
$(BUILD)/nodeprof: $(BUILD)/obj/agent/main.o $(BUILD)/libnodeprof.a
	@echo "  LD      $@"
	@$(CC) -o $@ $^ -Wl,--export-dynamic-symbol=_gnutls_global_init_skip $(LDLIBS_ALL)

# BPF: compiled with clang for the bpf target; the skeleton embeds the object in the binary.
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror -Ibpf -I. -I$(BUILD)/gen \
	-I/usr/include/$(shell gcc -dumpmachine)
$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(BUILD)/gen/bpf_runtime_headers.h
	@mkdir -p $(dir $@)
	@echo "  BPF     $<"
	@$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# The BPF header of every runtime the table in bpf/runtime.h gives a BPF side (kind CHAIN or
# JIT), so that adding a runtime is its row, its header and its folder: nothing else to list.
$(BUILD)/gen/bpf_runtime_headers.h: bpf/runtime.h
	@mkdir -p $(dir $@)
	@sed -n 's/^[[:space:]]*X(\([a-z0-9_]*\), *[A-Z0-9_]*, *[0-9]*, *\(CHAIN\|JIT\),.*/#include "\1.h"/p' $< > $@.tmp
	@test -s $@.tmp || { echo "no runtime rows read from $<" >&2; rm -f $@.tmp; exit 1; }
	@mv $@.tmp $@

$(BUILD)/gen/%.skel.h: $(BUILD)/bpf/%.bpf.o
	@mkdir -p $(dir $@)
	@echo "  SKEL    $@"
	@$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@.tmp && mv $@.tmp $@

# Helpers shared by unit tests (tests/unit/helpers/*.c, declared in tests/unit/*_test.h)
# are compiled once and linked into every unit test.
$(BUILD)/tests/test_%: tests/unit/test_%.c $(UNIT_HELPER_OBJS) $(BUILD)/libnodeprof.a | $(GEN_HDRS)
	@mkdir -p $(dir $@)
	@echo "  TEST    $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(UNIT_HELPER_OBJS) $(BUILD)/libnodeprof.a -lcmocka $(LDLIBS_ALL)

# Test harnesses: small programs that drive one module from the integration tests.
$(BUILD)/harness/%: tests/harness/%.c $(BUILD)/libnodeprof.a | $(GEN_HDRS)
	@mkdir -p $(dir $@)
	@echo "  HARNESS $@"
	@$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libnodeprof.a $(LDLIBS_ALL)

unit: $(UNIT_BINS) $(HARNESS_BINS) $(BUILD)/nodeprof

unit-asan:
	$(MAKE) --no-print-directory BUILD=build/asan SAN=1 unit

# Fuzz targets: clang + libFuzzer over the same sources, built in their own tree. Every
# sanitizer finding aborts (-fno-sanitize-recover=all): undefined behaviour is a crash
# the fuzzer reports and the smoke run fails on, not a line in a log.
FUZZ_BUILD := build/fuzz
FUZZ_SAN := -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
fuzz-build:
	@mkdir -p $(FUZZ_BUILD); echo '$(FUZZ_SAN)' | cmp -s - $(FUZZ_BUILD)/sanitizers || \
	  { rm -rf $(FUZZ_BUILD)/obj $(FUZZ_BUILD)/libnodeprof.a $(FUZZ_BUILD)/fuzzers; \
	    echo '$(FUZZ_SAN)' > $(FUZZ_BUILD)/sanitizers; }
	$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(CLANG) \
	  OPT="-O1 $(FUZZ_SAN) -fsanitize=fuzzer-no-link" \
	  EXTRA_CFLAGS="-Wno-unused-command-line-argument" $(FUZZ_BUILD)/libnodeprof.a
	@mkdir -p $(FUZZ_BUILD)/fuzzers
	@for f in $(FUZZ_SRCS); do \
	  n=$$(basename $$f .c); \
	  if [ ! $(FUZZ_BUILD)/fuzzers/$$n -nt $$f ] || [ $(FUZZ_BUILD)/libnodeprof.a -nt $(FUZZ_BUILD)/fuzzers/$$n ]; then \
	    echo "  FUZZ $$n"; \
	    $(CLANG) $(BASE_CFLAGS) -I$(FUZZ_BUILD)/gen -O1 $(FUZZ_SAN) -fsanitize=fuzzer \
	      $(PKG_CFLAGS) -o $(FUZZ_BUILD)/fuzzers/$$n $$f $(FUZZ_BUILD)/libnodeprof.a $(PKG_LIBS) \
	      -l:libiberty.a -lstdc++ -lpthread -lm || exit 1; \
	  fi; \
	done

# The campaign: every target for FUZZ_SECONDS with its corpus; the runner writes what it
# did (executions, exec/s, coverage, findings) to bench/results/fuzz.md.
FUZZ_SECONDS ?= 600
fuzz: deps-test
	$(MAKE) --no-print-directory fuzz-build
	$(PYTHON) tests/run.py --only fuzz --fuzz-seconds $(FUZZ_SECONDS) --fuzz-record bench/results/fuzz.md

test: deps-test
	$(MAKE) --no-print-directory all unit
	$(MAKE) --no-print-directory unit-asan
	$(MAKE) --no-print-directory fuzz-build
	$(MAKE) --no-print-directory node18
	$(PYTHON) tests/run.py

# The agent on its embedded default: every process of this host, in the local UI
# (it prints the URL; Ctrl-C stops it). RUN_ARGS adds options, e.g. RUN_ARGS="--config x.alloy".
run: deps-run
	$(MAKE) --no-print-directory all
	./$(BUILD)/nodeprof run $(RUN_ARGS)

# The harnesses too: bench/k8s and bench/node drive build/harness/k8s_targets.
bench: deps-bench
	$(MAKE) --no-print-directory all $(HARNESS_BINS)
	$(PYTHON) bench/run.py $(BENCH_ARGS)

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
