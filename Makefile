# mempolicyd — build, run, test, bench.
#
#   make            build bin/mempolicyd and bin/mempolicyctl
#   make run        install missing Debian packages, build, run the daemon in the foreground
#   make test       install what the tests need, build (plain and sanitized), run every test stage
#   make test-vm    only the multi-node QEMU stage
#   make bench      benchmarks (bench/), results in bench/results/
#   make fuzz       libFuzzer harnesses (tests/fuzz/) with clang, FUZZ_SECONDS (30) each
#   make test-tsan  only the ThreadSanitizer stage (build/tsan)
#   make deb        the Debian package, mempolicyd_<version>_<arch>.deb (packaging/debian/)
#   make test-package  only the package stage (tests/package/run): the .deb linted, installed into a
#                   fresh Debian 12 root and purged, the unit's exposure, the Kubernetes manifests
#
# BUILD and BIN may be overridden so that several builds (sanitized, parallel work) do not collide.

CC      ?= cc
BUILD   ?= build
BIN     ?= bin
PREFIX  ?= /usr/local
SAN     ?=
TSAN    ?=
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-format-nonliteral
STD     := -std=gnu11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

ifeq ($(SAN),1)
SANFLAGS := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
endif
# ThreadSanitizer cannot be combined with ASan: its own build (build/tsan), run by the tsan stage.
ifeq ($(TSAN),1)
SANFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=thread
endif
# Test hooks (the --test-clock option) exist only in the builds the tests drive, never in the
# plain build that is installed: see server/clock.h.
ifneq ($(filter 1,$(SAN) $(TSAN)),)
TESTHOOKS := -DMPD_TEST_HOOKS
endif

PKGCFG   = $(shell pkg-config --cflags $(1) 2>/dev/null)
PKGLIBS  = $(shell pkg-config --libs $(1) 2>/dev/null)

ALL_CFLAGS := $(CPPFLAGS) $(CFLAGS) $(SANFLAGS) $(TESTHOOKS) $(WARN) $(STD) -I. -I$(BUILD)/gen -DMPD_VERSION='"$(VERSION)"' \
              $(call PKGCFG,libmicrohttpd jansson sqlite3 libsystemd gnutls libseccomp)
ALL_LDFLAGS := $(LDFLAGS) $(SANFLAGS)

COMMON_SRC := $(wildcard common/*.c)
SERVER_SRC := $(filter-out server/main.c,$(wildcard server/*.c server/*/*.c))
CLIENT_SRC := $(wildcard client/*.c)
SCHEMA_SQL := $(sort $(wildcard schema/*.sql))

COMMON_OBJ := $(COMMON_SRC:%.c=$(BUILD)/%.o)
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/schema.o
CLIENT_OBJ := $(CLIENT_SRC:%.c=$(BUILD)/%.o)

SERVER_LIBS := $(call PKGLIBS,libmicrohttpd jansson sqlite3 libsystemd gnutls libseccomp) -lnuma -lpthread -lm
CLIENT_LIBS := $(call PKGLIBS,jansson) -lm -ldl

# mempolicyctl's libcurl (tools/build-curl.sh, client/curlapi.h): an HTTP-only libcurl built from
# Debian's curl source under build/curl-cache/ serves the Unix socket, so a command there loads no
# TLS stack; https dlopens the system's libcurl-gnutls. CURL_MODE=auto falls back, loudly, to the
# system's libcurl for both when the source cannot be downloaded; embedded refuses to; system
# does not try. The script writes $(CURL_OUT)/cflags and /libs, which the client is built with,
# and rewrites them only when they change.
CURL_MODE ?= auto
CURL_OUT  := $(BUILD)/curl

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
CHECK_LIBS := $(call PKGLIBS,check)

# Man pages and completion are printed by the binaries from their own tables (the daemon's option
# table, the client's command table), so they cannot drift from --help.
GENERATED := $(BUILD)/man/mempolicyd.8 $(BUILD)/man/mempolicyd.conf.5 $(BUILD)/man/mempolicyctl.1 \
             $(BUILD)/completion/mempolicyctl.bash $(BUILD)/completion/_mempolicyctl

.PHONY: FORCE all deps user run test test-unit test-e2e test-tsan test-vm test-package deb bench install clean fmt fuzz fuzz-merge fuzz-bins tsan-bins
all: $(BIN)/mempolicyd $(BIN)/mempolicyctl $(GENERATED)

deps:
	@packaging/deps.sh build

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/client/%.o: client/%.c $(CURL_OUT)/cflags
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $$(cat $(CURL_OUT)/cflags) -MMD -MP -c $< -o $@

# Run by every make (quick once built): the mode, the cache or the download may have changed.
$(CURL_OUT)/cflags: FORCE
	@tools/build-curl.sh $(CURL_MODE) build/curl-cache $(CURL_OUT)
FORCE:

$(BUILD)/gen/schema.c: $(SCHEMA_SQL) tools/embed-schema.sh
	@mkdir -p $(dir $@)
	tools/embed-schema.sh $(SCHEMA_SQL) > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/schema.o: $(BUILD)/gen/schema.c
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/libmpd.a: $(SERVER_OBJ) $(COMMON_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN)/mempolicyd: $(BUILD)/server/main.o $(BUILD)/libmpd.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(SERVER_LIBS)

# The client takes from common/ only what it uses, as an archive: the statistics (common/stats*.c,
# the daemon's experiments) would make every command load libm, a tenth of `run`'s start
# (bench/README.md section 8); -lm is then dropped by --as-needed.
$(BUILD)/libcommon.a: $(COMMON_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN)/mempolicyctl: $(CLIENT_OBJ) $(BUILD)/libcommon.a $(CURL_OUT)/cflags $(wildcard build/curl-cache/*/inst/lib/libcurl.a)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -Wl,--as-needed -o $@ $(CLIENT_OBJ) $(BUILD)/libcommon.a $$(cat $(CURL_OUT)/libs) $(CLIENT_LIBS)

$(BUILD)/man/mempolicyd.8: $(BIN)/mempolicyd
	@mkdir -p $(dir $@)
	$< --man > $@.tmp && mv $@.tmp $@
$(BUILD)/man/mempolicyd.conf.5: $(BIN)/mempolicyd
	@mkdir -p $(dir $@)
	$< --man-conf > $@.tmp && mv $@.tmp $@
$(BUILD)/man/mempolicyctl.1: $(BIN)/mempolicyctl
	@mkdir -p $(dir $@)
	$< --man > $@.tmp && mv $@.tmp $@
$(BUILD)/completion/mempolicyctl.bash: $(BIN)/mempolicyctl
	@mkdir -p $(dir $@)
	$< --completion bash > $@.tmp && mv $@.tmp $@
$(BUILD)/completion/_mempolicyctl: $(BIN)/mempolicyctl
	@mkdir -p $(dir $@)
	$< --completion zsh > $@.tmp && mv $@.tmp $@

# Unit tests link the whole server library so they can call any module directly; MPD_SRCDIR
# lets them find their fixture files (tests/unit/fixtures/) from any working directory.
$(BUILD)/tests/%: tests/unit/%.c tests/unit/check_main.h $(BUILD)/libmpd.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -DMPD_SRCDIR='"$(CURDIR)"' $(call PKGCFG,check) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/libmpd.a $(SERVER_LIBS) $(CHECK_LIBS)

# Fuzz harnesses: tests/fuzz/fuzz_<target>.c defines LLVMFuzzerTestOneInput. Linked with the
# replay driver (FUZZ_MAIN) they replay the committed corpus in `make test` (gcc, sanitized);
# `make fuzz` links libFuzzer's main instead (clang, FUZZ_MAIN empty).
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN     := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
FUZZ_MAIN    ?= $(BUILD)/tests/fuzz/replay.o
FUZZ_SECONDS ?= 30
FUZZ_CLANG   := CC=clang BUILD=build/fuzz BIN=build/fuzz/bin FUZZ_MAIN= \
		CFLAGS="-g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all" \
		LDFLAGS="-fsanitize=fuzzer"

fuzz-bins: $(FUZZ_BIN)

# Only pattern rules name these, which would make them intermediate files that make deletes.
.SECONDARY: $(FUZZ_MAIN) $(BUILD)/client/kv.o

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h tests/fuzz/tree.h $(FUZZ_MAIN) $(BUILD)/client/kv.o $(BUILD)/libmpd.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(FUZZ_MAIN) $(BUILD)/client/kv.o $(BUILD)/libmpd.a $(SERVER_LIBS)

fuzz: deps
	@packaging/deps.sh fuzz
	$(MAKE) $(FUZZ_CLANG) fuzz-bins
	tests/fuzz/run build/fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# After `make fuzz`: adds the inputs it found that reach new code to tests/fuzz/corpus/.
fuzz-merge:
	tests/fuzz/run --merge build/fuzz $(FUZZ_TARGETS)

# The unprivileged user of privilege separation (--user, server/kernel/priv.h), which a daemon
# started as root serves as by default: the tests and `make run` need it. Idempotent, and compatible
# with the deb's postinst (user and group mempolicyd): a group it made first is joined, not refused.
MPD_USER ?= mempolicyd
user:
	@getent passwd $(MPD_USER) >/dev/null || useradd --system --no-create-home --shell /usr/sbin/nologin \
		$$(getent group $(MPD_USER) >/dev/null && echo --gid $(MPD_USER) || echo --user-group) $(MPD_USER)

# var/ is the user's: the daemon serves as $(MPD_USER) (privilege separation, the default as root).
run: deps all user
	@mkdir -p run
	@install -d -o $(MPD_USER) -g $(MPD_USER) -m 0700 var
	@echo "export MEMPOLICYD_SOCKET=$(CURDIR)/run/mempolicyd.sock"
	$(BIN)/mempolicyd --socket run/mempolicyd.sock --db var/mempolicyd.db

# The test stages run against the sanitized build (build/san); the VM stage uses the plain one,
# because ASan's shadow memory is heavy in a 512 MiB TCG guest; the tsan stage uses build/tsan.
TSAN_MAKE := $(MAKE) TSAN=1 BUILD=build/tsan BIN=build/tsan/bin
TSAN_RUN  := --tsan-bin build/tsan/bin --tsan-unit build/tsan/tests

test: deps user
	@packaging/deps.sh test
	$(MAKE) all
	$(MAKE) SAN=1 BUILD=build/san BIN=build/san/bin all unit-bins fuzz-bins
	$(TSAN_MAKE) tsan-bins
	$(MAKE) deb
	tests/run --bin build/san/bin --unit build/san/tests --fuzz build/san/fuzz --plain-bin $(BIN) $(TSAN_RUN) \
		--deb $(DEB_FILE_NOW)

# What the tsan stage runs: the daemon, the CLI, and the unit tests of the threaded job runner,
# scheduler, held answers (api/waits.c) and the profile state (ops/profile_state.c).
TSAN_UNITS := test_jobs test_scheduler test_waits test_profile_state
tsan-bins: all $(TSAN_UNITS:%=$(BUILD)/tests/%)

test-tsan: deps
	@packaging/deps.sh test
	$(TSAN_MAKE) tsan-bins
	tests/run --bin build/tsan/bin --only tsan $(TSAN_RUN)

unit-bins: $(UNIT_BIN)

test-unit: deps
	@packaging/deps.sh test
	$(MAKE) SAN=1 BUILD=build/san BIN=build/san/bin all unit-bins fuzz-bins
	tests/run --bin build/san/bin --unit build/san/tests --fuzz build/san/fuzz --only unit

test-e2e: deps user
	@packaging/deps.sh test
	$(MAKE) SAN=1 BUILD=build/san BIN=build/san/bin all
	tests/run --bin build/san/bin --only e2e

test-vm: deps
	@packaging/deps.sh vm
	$(MAKE) all
	tests/run --bin $(BIN) --plain-bin $(BIN) --only vm

bench: deps
	@packaging/deps.sh bench
	$(MAKE) all
	bench/run --bin $(BIN)

# The unit's ExecStart is /usr/sbin/mempolicyd: install with PREFIX=/usr for it to match.
install: all
	install -D -m 0755 $(BIN)/mempolicyd $(DESTDIR)$(PREFIX)/sbin/mempolicyd
	install -D -m 0755 $(BIN)/mempolicyctl $(DESTDIR)$(PREFIX)/bin/mempolicyctl
	install -D -m 0644 packaging/mempolicyd.service $(DESTDIR)/lib/systemd/system/mempolicyd.service
	install -D -m 0644 packaging/mempolicyd.socket $(DESTDIR)/lib/systemd/system/mempolicyd.socket
	install -D -m 0644 packaging/mempolicyd-metrics.socket $(DESTDIR)/lib/systemd/system/mempolicyd-metrics.socket
	install -D -m 0644 packaging/mempolicyd-metrics.service $(DESTDIR)/lib/systemd/system/mempolicyd-metrics.service
	install -D -m 0644 packaging/mempolicyd.conf.example $(DESTDIR)$(PREFIX)/share/doc/mempolicyd/mempolicyd.conf.example
	install -D -m 0644 packaging/mempolicyd-network.conf $(DESTDIR)$(PREFIX)/share/doc/mempolicyd/examples/mempolicyd-network.conf
	install -D -m 0644 packaging/prometheus/mempolicyd.rules.yml $(DESTDIR)$(PREFIX)/share/doc/mempolicyd/examples/mempolicyd.rules.yml
	install -D -m 0644 packaging/grafana/mempolicyd-dashboard.json $(DESTDIR)$(PREFIX)/share/doc/mempolicyd/examples/mempolicyd-dashboard.json
	install -D -m 0644 packaging/mempolicyd-kubelet.conf $(DESTDIR)$(PREFIX)/share/doc/mempolicyd/examples/mempolicyd-kubelet.conf
	@# The unit reads /etc/mempolicyd/mempolicyd.conf: install the example there, never over an edited one.
	[ -e $(DESTDIR)/etc/mempolicyd/mempolicyd.conf ] || \
		install -D -m 0644 packaging/mempolicyd.conf.example $(DESTDIR)/etc/mempolicyd/mempolicyd.conf
	install -D -m 0644 README.md $(DESTDIR)$(PREFIX)/share/doc/mempolicyd/README.md
	install -D -m 0644 $(BUILD)/man/mempolicyd.8 $(DESTDIR)$(PREFIX)/share/man/man8/mempolicyd.8
	@# mempolicyctl is a user's tool: section 1 (an older install put its page in section 8).
	install -D -m 0644 $(BUILD)/man/mempolicyctl.1 $(DESTDIR)$(PREFIX)/share/man/man1/mempolicyctl.1
	rm -f $(DESTDIR)$(PREFIX)/share/man/man8/mempolicyctl.8
	install -D -m 0644 $(BUILD)/man/mempolicyd.conf.5 $(DESTDIR)$(PREFIX)/share/man/man5/mempolicyd.conf.5
	install -D -m 0644 $(BUILD)/completion/mempolicyctl.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/mempolicyctl
	install -D -m 0644 $(BUILD)/completion/_mempolicyctl $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions/_mempolicyctl
	@# Onto this machine (no DESTDIR: not the deb's build) also what the deb's postinst makes: the
	@# user the daemon serves as by default and its database directory, which the unit does not make.
	if [ -z "$(DESTDIR)" ]; then $(MAKE) --no-print-directory user && \
		install -d -o $(MPD_USER) -g $(MPD_USER) -m 0700 /var/lib/mempolicyd; fi

# dpkg-buildpackage wants debian/ at the top of the source tree: the package is built from a copy
# of the sources with packaging/debian/ as debian/ (build/deb/src), and the .deb is copied here.
DEB_ARCH := $(shell dpkg-architecture -qDEB_HOST_ARCH 2>/dev/null)
DEB_FILE := mempolicyd_$(VERSION)_$(DEB_ARCH).deb
DEB_SRC  := Makefile VERSION README.md common server client schema tools packaging

# In a recipe that installs dpkg-dev first (test, test-package: a fresh machine has none when make
# reads this file, and DEB_FILE then names no architecture), the name as the line runs.
DEB_FILE_NOW = mempolicyd_$(VERSION)_$$(dpkg-architecture -qDEB_HOST_ARCH).deb

deb: $(DEB_FILE)
$(DEB_FILE): $(shell find $(DEB_SRC) -type f 2>/dev/null)
	@packaging/deps.sh deb
	rm -rf build/deb && mkdir -p build/deb/src
	cp -a $(DEB_SRC) build/deb/src/
	cp -a packaging/debian build/deb/src/debian
	@# The package builds offline: the curl source of the embedded libcurl goes into its tree.
	tools/build-curl.sh fetch build/curl-cache build/deb/src/build/curl-cache
	cd build/deb/src && dpkg-buildpackage -b -us -uc --no-sign -j2 >../build.log 2>&1 || \
		{ tail -40 ../build.log; exit 1; }
	cp build/deb/$(DEB_FILE) $@

test-package: deps
	@packaging/deps.sh test
	$(MAKE) deb
	tests/run --bin $(BIN) --only package --deb $(DEB_FILE_NOW)

# The curl downloads (build/curl-cache/*/dl) stay: verified once, and the package's own clean
# (dpkg-buildpackage runs this in its tree) must not delete what it builds offline from.
clean:
	find build -mindepth 1 -maxdepth 1 ! -name curl-cache -exec rm -rf {} + 2>/dev/null || true
	rm -rf build/curl-cache/*/src build/curl-cache/*/obj build/curl-cache/*/inst bin mempolicyd_*.deb

# Not into the caches (a Debian root has directories named *.d) nor the package's own build.
-include $(shell find $(BUILD) \( -name '*-cache' -o -path build/deb \) -prune -o -name '*.d' -type f -print 2>/dev/null)
