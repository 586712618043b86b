# fastlocal - see README.md. "make" builds build/libfastlocal.so and build/fastlocal.
# "make test" and "make demo" install missing Debian packages first (make deps).

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
SYSCONFDIR ?= /etc
# The shim's directory: the Debian package uses $(LIBDIR)/fastlocal, where
# "fastlocal run" looks too (tools/preload_env.c).
SHIMDIR ?= $(LIBDIR)
# systemd reads units from /usr/local/lib/systemd/system as well as from
# /usr/lib/systemd/system, so the default follows PREFIX.
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
MANDIR  ?= $(PREFIX)/share/man
DESTDIR ?=

CC      ?= gcc
CLANG   ?= clang
BPFTOOL ?= bpftool
SAN     ?= 0

# SAN=1 builds everything with ASan+UBSan into build-san/ so that both trees
# can coexist; the test runner is told which one to use.
ifeq ($(SAN),1)
BUILD   ?= build-san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else
BUILD   ?= build
SANFLAGS :=
endif

OPT       ?= -O2 -g
# snprintf truncation of a message or path is handled where it matters (return
# values are checked); the warning fires on every bounded error message.
WARN      := -Wall -Wextra -Werror -Wno-format-truncation
# Includes name their folder: "common/key.h" (from the top) and
# "rx/rxq.h" (a layer of preload/, docs/architecture.md).
CPPFLAGS  += -D_GNU_SOURCE -I. -Ipreload -Ibpf -I$(BUILD)
CFLAGS_ALL := $(OPT) $(WARN) -std=gnu11 $(SANFLAGS) $(CFLAGS)
LDFLAGS_ALL := $(SANFLAGS) $(LDFLAGS)

# Debian packages that the build, the tests and the demo use.
DEB_PACKAGES := make gcc libc6-dev binutils libcap2-bin python3-yaml clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev \
	uthash-dev libunwind-dev libcmocka-dev pkg-config iproute2 util-linux jq haproxy tmux \
	libclang-rt-14-dev gnuplot-nox redis-server redis-tools nginx wrk iperf3 nftables \
	systemd dpkg-dev debhelper lintian fakeroot strace

# The shim: its layers (preload/<layer>/, docs/architecture.md) and common/.
# common/ is what the shim shares with the CLI and the broker:
# the key (key.c) and same-host check (same_host.c),
# the settings' evaluation (CONF_SHARED_SRCS, which the fuzzer also links)
# and the reading of their file (conf_file.c), the map writes of an
# enrollment, which "fastlocal daemon" does for unprivileged processes
# (enroll_maps.c, enroll_core.c: the transaction and the drain check), and
# the raw bpf(2) calls those use (bpf_sys.c).
COMMON_SRCS := $(wildcard common/*.c)
COMMON_HDRS := $(wildcard common/*.h)
SHIM_SRCS := $(wildcard preload/*/*.c) $(COMMON_SRCS)
SHIM_HDRS := $(wildcard preload/*/*.h) $(COMMON_HDRS)
CONF_SHARED_SRCS := common/conf.c common/conf_value.c common/conf_rules.c
CLI_SRCS  := $(wildcard tools/*.c) $(COMMON_SRCS)
UNIT_SRCS := $(wildcard test/unit/*.c)
IT_SRCS   := $(wildcard test/integration/*.c)
TESTLIB_SRCS := $(wildcard test/lib/*.c)
CONF_SRCS := $(wildcard test/conformance/*.c)

SHIM  := $(BUILD)/libfastlocal.so
CLI   := $(BUILD)/fastlocal
BPFOBJ := $(BUILD)/fastlocal.bpf.o
SKEL  := $(BUILD)/fastlocal.skel.h
UNIT_BINS := $(patsubst test/unit/%.c,$(BUILD)/test/unit_%,$(UNIT_SRCS))
IT_BINS   := $(patsubst test/integration/%.c,$(BUILD)/test/%,$(IT_SRCS))
STREAM    := $(BUILD)/fl-stream

.PHONY: all deps test test-build demo bench fuzz install uninstall deb clean
.DEFAULT_GOAL := all

all: $(SHIM) $(CLI) $(STREAM) $(BUILD)/fl-bench $(BUILD)/fl-xfer

# ---------------------------------------------------------------- deps
deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${db:Status-Status}' $$p 2>/dev/null | grep -qx installed || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
		echo "make deps: missing Debian packages:$$missing" >&2; \
		echo "make deps: as root run: apt-get install -y$$missing" >&2; \
		exit 1; \
	fi; \
	echo "make deps: installing$$missing"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y -q $$missing || { apt-get update -q && apt-get install -y -q $$missing; }

# ---------------------------------------------------------------- BPF
$(BUILD)/vmlinux.h:
	@mkdir -p $(@D)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

# The object's identity ("load" compares a hash of it) must not depend on
# where the tree or the build dir is: two builds of one commit in different
# folders load over each other as a no-op. The debug info names the source
# and build dirs, so both are mapped to fixed names (the build dir last: it
# may be inside the tree, and the last matching map wins).
BPF_PREFIX_MAP := -fdebug-prefix-map=$(CURDIR)=. -fdebug-prefix-map=$(abspath $(BUILD))=build
$(BPFOBJ): bpf/fastlocal.bpf.c bpf/fastlocal.h $(BUILD)/vmlinux.h
	$(CLANG) -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_x86 $(BPF_PREFIX_MAP) \
		-I$(abspath $(BUILD)) -Ibpf -c $< -o $@

$(SKEL): $(BPFOBJ)
	$(BPFTOOL) gen skeleton $< name fastlocal_bpf > $@.tmp && mv $@.tmp $@

# ---------------------------------------------------------------- shim
# The shim links nothing but libc: it is loaded into every host program, so it
# must not drag libbpf/libelf in (or clash with a program's own copies).
# One object a source, so that before the link preload/check_boundary.sh can
# tell which file calls an interposed function directly instead of through
# its libc_<fn> trampoline; shim.c defines the exported forwarders and is
# the one object allowed to (docs/design.md, "the sealed boundary"). Then
# preload/check_layers.sh reads from the objects and the #include lines
# that each file uses only its own layer and those below, with no loops
# (docs/architecture.md).
SHIM_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(SHIM_SRCS))
SHIM_FORWARDERS := $(BUILD)/obj/preload/entry/shim.o
SHIM_CFLAGS := $(CPPFLAGS) $(CFLAGS_ALL) -fPIC -fvisibility=hidden

$(BUILD)/obj/%.o: %.c $(SHIM_HDRS) bpf/fastlocal.h
	@mkdir -p $(@D)
	$(CC) $(SHIM_CFLAGS) -c -o $@ $<

$(SHIM): $(SHIM_OBJS) preload/exports.map preload/check_boundary.sh preload/check_layers.sh
	@mkdir -p $(@D)
	preload/check_boundary.sh preload/exports.map $(SHIM_FORWARDERS) $(SHIM_OBJS)
	preload/check_layers.sh $(BUILD)/obj $(SHIM_OBJS)
	$(CC) $(CFLAGS_ALL) -fPIC -shared -fvisibility=hidden \
		-Wl,--version-script=preload/exports.map -Wl,-z,defs \
		-o $@ $(SHIM_OBJS) $(LDFLAGS_ALL) -ldl -lpthread

# ---------------------------------------------------------------- CLI
# libbpf is linked statically so that the one binary carries program and loader.
$(CLI): $(CLI_SRCS) $(wildcard tools/*.h) $(COMMON_HDRS) bpf/fastlocal.h $(SKEL)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS_ALL) -DFL_LIBDIR='"$(LIBDIR)"' -o $@ $(CLI_SRCS) \
		$(LDFLAGS_ALL) -Wl,-Bstatic -lbpf -Wl,-Bdynamic -lelf -lz

$(STREAM): bench/fl-stream.c $(TESTLIB_SRCS) $(wildcard test/lib/*.h) common/clock.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itest/lib $(CFLAGS_ALL) -o $@ $< $(TESTLIB_SRCS) $(LDFLAGS_ALL) \
		-lbpf -lelf -lz -ldl -lpthread

# ---------------------------------------------------------------- tests
$(BUILD)/test/unit_%: test/unit/%.c $(SHIM_HDRS) $(wildcard tools/*.h) $(SHIM_SRCS) $(CLI_SRCS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itools $(CFLAGS_ALL) -o $@ $< $(LDFLAGS_ALL) -lcmocka -lbpf -lelf -lz -ldl -lpthread

$(BUILD)/test/%: test/integration/%.c $(TESTLIB_SRCS) $(wildcard test/lib/*.h) bpf/fastlocal.h common/kernel_compat.h \
		common/clock.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itest/lib $(CFLAGS_ALL) -o $@ $< $(TESTLIB_SRCS) $(LDFLAGS_ALL) \
		-lbpf -lelf -lz -ldl -lpthread

# The differential conformance suite: one binary, every scenario file.
$(BUILD)/conformance: $(CONF_SRCS) $(wildcard test/conformance/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itest/conformance $(CFLAGS_ALL) -o $@ $(CONF_SRCS) $(LDFLAGS_ALL) -lpthread

# The configuration parser's libFuzzer target (clang only: libFuzzer is
# clang's). Built by test-build so that make test exercises it briefly
# (test/integration/conf_fuzz.sh); "make fuzz" runs it for FUZZ_SECONDS.
FUZZ_SECONDS ?= 600
CONF_FUZZ := $(BUILD)/conf_fuzz
$(CONF_FUZZ): test/fuzz/conf_fuzz.c $(CONF_SHARED_SRCS) common/conf.h common/conf_value.h bpf/fastlocal.h
	@mkdir -p $(@D)
	$(CLANG) $(CPPFLAGS) -g -O1 -Wall -Wextra -Werror -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -o $@ $< $(CONF_SHARED_SRCS)

# The seeds (test/fuzz/corpus and fastlocal.conf.example) are copied into a
# working corpus in the build tree, which keeps what the runs find.
fuzz: deps
	@$(MAKE) --no-print-directory $(CONF_FUZZ)
	mkdir -p $(BUILD)/fuzz-corpus
	cp test/fuzz/corpus/* fastlocal.conf.example $(BUILD)/fuzz-corpus/
	$(CONF_FUZZ) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-dict=test/fuzz/conf.dict $(BUILD)/fuzz-corpus

test-build: all $(UNIT_BINS) $(IT_BINS) $(BUILD)/conformance $(CONF_FUZZ)

# Runs the whole suite on the normal build, then again under ASan/UBSan.
# The second run happens even when the first failed (what fails under ASan
# only is worth knowing as well); make test fails if either did.
# Both trees build with one job per CPU unless make was given -j itself
# (a -j on the sub-make would override the caller's jobserver): a serial
# build of the two took about 2.5 of make test's 10 minutes.
TEST_BUILD_J = $(if $(findstring -j,$(MAKEFLAGS))$(findstring jobserver,$(MAKEFLAGS)),,-j$(shell nproc))
test: deps
	@$(MAKE) --no-print-directory $(TEST_BUILD_J) test-build
	@$(MAKE) --no-print-directory $(TEST_BUILD_J) SAN=1 test-build
	@st=0; recap=$(abspath $(BUILD))/test-recap; rm -f $$recap; \
	echo "test/run.sh $(BUILD)"; FL_TEST_RECAP=$$recap test/run.sh $(BUILD) || st=1; \
	echo "test/run.sh build-san"; FL_TEST_RECAP=$$recap test/run.sh build-san || st=1; \
	if [ -s $$recap ]; then echo "== make test: the failures of both suites"; cat $$recap; fi; \
	exit $$st

# ---------------------------------------------------------------- demo/bench
demo: deps
	@$(MAKE) --no-print-directory all
	bench/demo.sh $(BUILD)

# BENCH_ARGS=--quick for a short run (or --reps N); results, CSV/JSON and
# PNG charts in $(BUILD)/bench/. The real-application benchmarks follow
# (bench/apps/run.sh, when present), with --quick passed on.
bench: deps
	@$(MAKE) --no-print-directory all $(BUILD)/fdtable_lookup
	bench/run.sh $(BUILD) $(BENCH_ARGS)
	$(BUILD)/fdtable_lookup
	@if [ -x bench/apps/run.sh ]; then \
		q=; case " $(BENCH_ARGS) " in *" --quick "*) q=--quick ;; esac; \
		echo "bench/apps/run.sh $(BUILD) $$q"; bench/apps/run.sh $(BUILD) $$q; \
	fi

$(BUILD)/fl-xfer: bench/fl-xfer.c $(TESTLIB_SRCS) $(wildcard test/lib/*.h) common/clock.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itest/lib $(CFLAGS_ALL) -o $@ $< $(TESTLIB_SRCS) $(LDFLAGS_ALL) \
		-lbpf -lelf -lz -ldl -lpthread

# One binary, one workload a file: stream and ping-pong (fl-bench.c),
# request/response over N connections (fl-rr.c), connection churn (fl-churn.c).
FL_BENCH_SRCS := bench/fl-bench.c bench/fl-common.c bench/fl-rr.c bench/fl-churn.c
$(BUILD)/fl-bench: $(FL_BENCH_SRCS) bench/fl-common.h common/clock.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS_ALL) -o $@ $(FL_BENCH_SRCS) $(LDFLAGS_ALL) -lpthread

# The fd table against uthash, the other candidate the design considered.
$(BUILD)/fdtable_lookup: bench/fdtable_lookup.c preload/socket/fdtable.c preload/socket/fdtable.h common/clock.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS_ALL) -o $@ $< preload/socket/fdtable.c $(LDFLAGS_ALL)

# ---------------------------------------------------------------- install
# "fastlocal bench" finds its harness and fl-bench in $(LIBDIR)/fastlocal/bench.
BENCH_FILES := bench/run.sh bench/progress.sh bench/report.sh bench/plot.sh bench/plot.gnuplot
# The systemd unit (dist/fastlocal.service.in, docs/service.md) names the
# installed CLI; /etc/default/fastlocal is the user's: installed when
# missing, removed by uninstall only when nobody changed it.
# (Written at install time: BINDIR may differ from the one of "make".)
install: $(SHIM) $(CLI) $(BUILD)/fl-bench
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SHIMDIR) $(DESTDIR)$(LIBDIR)/fastlocal/bench
	install -m 0755 $(CLI) $(DESTDIR)$(BINDIR)/fastlocal
	install -m 0755 $(SHIM) $(DESTDIR)$(SHIMDIR)/libfastlocal.so
	install -m 0755 $(BUILD)/fl-bench $(DESTDIR)$(LIBDIR)/fastlocal/bench/fl-bench
	install -m 0755 $(filter %.sh,$(BENCH_FILES)) $(DESTDIR)$(LIBDIR)/fastlocal/bench/
	install -m 0644 $(filter-out %.sh,$(BENCH_FILES)) $(DESTDIR)$(LIBDIR)/fastlocal/bench/
	install -d $(DESTDIR)$(SYSCONFDIR) $(DESTDIR)$(SYSCONFDIR)/default $(DESTDIR)$(SYSTEMDUNITDIR)
	install -m 0644 fastlocal.conf.example $(DESTDIR)$(SYSCONFDIR)/fastlocal.conf.example
	install -d $(DESTDIR)$(MANDIR)/man1
	install -m 0644 dist/fastlocal.1 $(DESTDIR)$(MANDIR)/man1/fastlocal.1
	sed 's|@BINDIR@|$(BINDIR)|g' dist/fastlocal.service.in > $(DESTDIR)$(SYSTEMDUNITDIR)/fastlocal.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/fastlocal.service
	[ -e $(DESTDIR)$(SYSCONFDIR)/default/fastlocal ] || \
		install -m 0644 dist/fastlocal.default $(DESTDIR)$(SYSCONFDIR)/default/fastlocal

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/fastlocal $(DESTDIR)$(SHIMDIR)/libfastlocal.so
	rm -f $(DESTDIR)$(SYSCONFDIR)/fastlocal.conf.example $(DESTDIR)$(SYSTEMDUNITDIR)/fastlocal.service
	rm -f $(DESTDIR)$(MANDIR)/man1/fastlocal.1
	-cmp -s dist/fastlocal.default $(DESTDIR)$(SYSCONFDIR)/default/fastlocal && \
		rm -f $(DESTDIR)$(SYSCONFDIR)/default/fastlocal
	rm -f $(DESTDIR)$(LIBDIR)/fastlocal/bench/fl-bench $(addprefix $(DESTDIR)$(LIBDIR)/fastlocal/bench/,$(notdir $(BENCH_FILES)))
	-rmdir $(DESTDIR)$(LIBDIR)/fastlocal/bench $(filter-out $(DESTDIR)$(LIBDIR),$(DESTDIR)$(SHIMDIR)) \
		$(DESTDIR)$(LIBDIR)/fastlocal 2>/dev/null

# ---------------------------------------------------------------- Debian
# build/fastlocal_VERSION_ARCH.deb (debian/, docs/service.md). The package
# is built from a clean copy of the tree, so that neither build/ nor
# build-san/ ends up in it, and dpkg-buildpackage's output (written to
# the copy's parent) is moved here. None of this make's variables (BUILD,
# SAN...) may reach the package's own make: MAKEFLAGS is dropped.
deb:
	rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/src
	tar --exclude=./build --exclude=./build-san --exclude=./.git -cf - . | tar -xf - -C $(BUILD)/deb/src
	cd $(BUILD)/deb/src && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL dpkg-buildpackage -b -us -uc
	mv $(BUILD)/deb/*.deb $(BUILD)/
	@ls $(BUILD)/*.deb

clean:
	rm -rf build build-san
