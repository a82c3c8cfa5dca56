# make test   installs Elixir when missing, then runs every test and gate
# make demo   frames a real MCP stdio server: make demo SERVER="cmd args"
# make cross  the crates built for 64-bit ARM (Apple silicon, Graviton):
#             clippy and the docs, and the core crate's tests under qemu;
#             clippy for macOS on ARM and for Windows; the workspace
#             checked by the oldest Rust Cargo.toml declares (make test runs it;
#             CROSS= skips it, as the matrix roots do)
# make fuzz   fuzzes the framer, the JSON parser, the encoder's string
#             writing and pretty:'s layout, FUZZ_SECONDS in all (default
#             30, a quarter each; make test runs it); FUZZ_ASAN=yes adds
#             AddressSanitizer (nightly Rust)
# make soak   hostile traffic through the decoder in a real VM, and each
#             term encoded again, checked against the oracles, for
#             SOAK_SECONDS (default 60; make test runs 10), with the NIF
#             built with debug assertions (Cargo.toml's checked profile;
#             the next plain mix compile puts the release build back)
# make dialyzer  checks the specs of the compiled modules (make test runs it)
# make bench    framing against a pure-Elixir framer (and a real Port);
#               decoding against that framer followed by jiffy, Elixir's
#               JSON, Jason and simdjson's NIF (those two when on the code
#               path; bench/README.md) and the floor (:erlang.binary_to_term/1);
#               large documents against a dirty scheduler from the start;
#               encoding against jiffy, Elixir's JSON, Jason (when on
#               the code path) and the floor (:erlang.term_to_binary/1),
#               and pretty: true against jiffy's [:pretty] and Jason
#               (BENCH_ONLY=...; BEAM=trixie or forky runs it in that root)
# make matrix   make test in Debian roots with OTP 27 and 29 (.ci/matrix;
#               ELIXIR_SRC=<source> with that Elixir built in)
# make arm      the Elixir tests with the NIF in an ARM BEAM, under qemu
#               (.ci/arm; not part of make test)
# make compare REV=<rev>  the framing, decoding and encoding rows, now
#               against REV, in one VM (BENCH_ONLY=... as for make bench;
#               the decoding rows' names start "decode", the encoding
#               rows' "encode"; ROUNDS=n; BEAM=trixie or forky runs it
#               in that root)
# make compare-parser REV=<rev>  the core crate's JSON parser alone, now
#               against REV's, both in one program, on the decoding rows'
#               messages (BENCH_ONLY=... picks rows, PASSES=N)
# make profile  where one side's time goes on one decoding row (perf):
#               make profile ROW="text" SIDE=mcp_framer|jiffy|json
SHELL := /bin/bash
SERVER ?=
FUZZ_SECONDS ?= 30
HOST := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
# What cargo-fuzz passes, minus the sanitizer, which needs nightly Rust
# (FUZZ_ASAN below): libFuzzer gets coverage feedback from a stable
# toolchain. Given with --target, so build scripts are compiled without
# it.
FUZZ_RUSTFLAGS := --cfg fuzzing -Cpasses=sancov-module -Cdebug-assertions -Coverflow-checks \
  $(addprefix -Cllvm-args=-sanitizer-coverage-,level=4 inline-8bit-counters pc-table trace-compares)

.PHONY: test demo bench compare compare-parser profile matrix arm fuzz soak tools rust-tests cross elixir-tests dialyzer

test: tools rust-tests cross fuzz elixir-tests soak dialyzer
test: SOAK_SECONDS = 10
# One at a time, even under make -j: mix test, the soak and Dialyzer
# share _build and priv/native, where the soak's NIF is another build.
.NOTPARALLEL:

# $(call install,COMMANDS,PACKAGES): unless all of COMMANDS are on the
# PATH, installs PACKAGES from Debian's as root, or says what to install
# and stops.
install = @$(foreach command,$(1),command -v $(command) >/dev/null &&) true || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2); \
	  else \
	    echo "$(1): not all found; install them (apt-get install $(2))"; exit 1; \
	  fi; }

# $(call toolchain,NAME): adds the Rust toolchain NAME (1.91, nightly)
# with rustup, unless it is there.
toolchain = rustup toolchain list | grep -q '^$(1)-' || rustup toolchain install $(1) --profile minimal

# make fuzz needs a C++ compiler: libfuzzer-sys builds libFuzzer's sources.
TOOLS := elixir erlang-dev erlang-nox erlang-dialyzer g++
tools:
	@command -v cargo >/dev/null || { echo "cargo not found: install Rust >= 1.91 (https://rustup.rs)"; exit 1; }
	$(call install,mix dialyzer c++,$(TOOLS))

# The parser's and the encoder's tests again on each narrower instruction
# set the CPU has (MCP_FRAMER_ISA; one it lacks leaves the widest):
# tests/arch.rs holds the vector code itself to the portable twin, these
# the JSON on top.
NARROWER_ISAS := portable sse2 avx2 avx512
# The scheduler tests' holding NIF: a workspace of its own (Cargo.toml).
HOLD_NIF := test/support/hold_nif/Cargo.toml
rust-tests:
	cargo fmt --all --check
	cargo clippy --all-targets --locked -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked -q
	cargo test --locked
	for isa in $(NARROWER_ISAS); do \
	  MCP_FRAMER_ISA=$$isa cargo test --locked -q -p mcp_framer_core --test json_rules \
	    --test json_strings --test json_properties --test properties \
	    --test encode_rules --test encode_properties || exit 1; done
	cargo fmt --manifest-path fuzz/Cargo.toml --check
	cargo fmt --manifest-path $(HOLD_NIF) --check
	rustfmt --check --edition 2021 bench/compare_parser.rs
	cargo clippy --manifest-path $(HOLD_NIF) --locked --target-dir target -- -D warnings

# On 64-bit ARM the string code is the portable twin and memchr's, and
# code meant for x86-64 alone must not leave warnings there: clippy and
# the docs for that target, then the core crate's tests, run by qemu.
# macOS on ARM and Windows (MSVC, rustup's default there) get clippy
# alone (nothing here links for them). Then every crate and test is
# compiled by the oldest Rust the workspace declares (rust-version):
# rustler 0.39 asks for 1.91, and AVX-512's intrinsics for 1.89. rustup
# adds the targets' standard libraries and that toolchain; Debian has
# the rest. CROSS= (empty) skips it all.
CROSS ?= yes
MSRV := $(shell sed -n 's/^rust-version = "\(.*\)"$$/\1/p' Cargo.toml)
ARM := aarch64-unknown-linux-gnu
CROSS_CHECKED := aarch64-apple-darwin x86_64-pc-windows-msvc
CROSS_TOOLS := qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross
cross:
ifeq ($(CROSS),)
	@echo "cross: skipped (CROSS is empty)"
else
	for target in $(ARM) $(CROSS_CHECKED); do \
	  rustup target list --installed | grep -qx $$target || rustup target add $$target || exit 1; done
	for target in $(CROSS_CHECKED); do \
	  cargo clippy --all-targets --locked --target $$target -- -D warnings || exit 1; done
	$(call install,qemu-aarch64 aarch64-linux-gnu-gcc,$(CROSS_TOOLS))
	cargo clippy --all-targets --locked --target $(ARM) -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked -q --target $(ARM)
	CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
	  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu" \
	  cargo test --locked -q --target $(ARM) -p mcp_framer_core
	$(call toolchain,$(MSRV))
	cargo +$(MSRV) check --workspace --all-targets --locked --target-dir target/msrv
endif

# FUZZ_ASAN=yes adds AddressSanitizer, which needs nightly Rust (rustup
# installs it): a read or write past a buffer's end, a vector loop's
# included, stops the run. It builds in a directory of its own. Without
# it, the debug assertions still stop a vector loop's store that leaves
# the room made for it, in every instruction set the targets run.
FUZZ_ASAN ?=
ifeq ($(FUZZ_ASAN),)
FUZZ_CARGO := cargo
FUZZ_DIR := target
else
FUZZ_CARGO := cargo +nightly
FUZZ_DIR := target/asan
fuzz: FUZZ_RUSTFLAGS += -Zsanitizer=address -Cforce-frame-pointers=yes
endif
FUZZ_BIN = fuzz/$(FUZZ_DIR)/$(HOST)/release

# Each target gets a quarter, rounded up: -max_total_time=0 would mean no limit.
fuzz: FUZZ_EACH = $(shell echo $$(( ($(FUZZ_SECONDS) + 3) / 4 )))
fuzz:
ifneq ($(FUZZ_ASAN),)
	$(call toolchain,nightly)
endif
	cd fuzz && RUSTFLAGS="$(FUZZ_RUSTFLAGS)" $(FUZZ_CARGO) build --locked --release --target $(HOST) --target-dir $(FUZZ_DIR)
	mkdir -p fuzz/corpus/feed fuzz/corpus/json fuzz/corpus/escape fuzz/corpus/pretty fuzz/artifacts
	$(FUZZ_BIN)/feed -max_total_time=$(FUZZ_EACH) -max_len=4096 -artifact_prefix=fuzz/artifacts/feed- fuzz/corpus/feed
	$(FUZZ_BIN)/json -max_total_time=$(FUZZ_EACH) -max_len=4096 -artifact_prefix=fuzz/artifacts/json- fuzz/corpus/json
	$(FUZZ_BIN)/escape -max_total_time=$(FUZZ_EACH) -max_len=1024 -artifact_prefix=fuzz/artifacts/escape- fuzz/corpus/escape fuzz/corpus/json
	$(FUZZ_BIN)/pretty -max_total_time=$(FUZZ_EACH) -max_len=1024 -artifact_prefix=fuzz/artifacts/pretty- fuzz/corpus/pretty fuzz/corpus/json

SOAK_SECONDS ?= 60
soak: tools
	MCP_FRAMER_CARGO_PROFILE=checked MIX_ENV=test mix run test/soak.exs $(SOAK_SECONDS)

# The MCP reference server for the integration tests, pinned by its lock file.
EVERYTHING := test/mcp_server/node_modules/.package-lock.json
$(EVERYTHING): test/mcp_server/package-lock.json
	@if command -v npm >/dev/null; then test/mcp_server/setup.sh; \
	else echo "npm not found: the server-everything integration tests will be skipped"; fi

# Then the suite again with the NIF built with debug assertions and
# overflow checks (Cargo.toml's checked profile), so that the NIF crate's
# unsafe code and the vector loops' room checks run under every test, the
# scheduler tests' inputs of up to 256 MiB included: their bounds hold for
# that build too, beside two busy loops. The soak keeps that build; the
# next plain mix compile puts release back.
elixir-tests: $(EVERYTHING)
	mix format --check-formatted
	MIX_ENV=test mix compile --warnings-as-errors
	mix test --warnings-as-errors
	MCP_FRAMER_ISA=avx2 mix test --warnings-as-errors test/json_differential_test.exs test/decode_test.exs \
	  test/encode_differential_test.exs test/encode_test.exs test/instruction_set_test.exs
	MCP_FRAMER_CARGO_PROFILE=checked mix test --warnings-as-errors

# Dialyzer reads Elixir's debug info through the elixir application, so
# its ebin goes on the code path. The PLT (erts, kernel, stdlib, elixir)
# takes over a minute to build and is kept under _build, one for each OTP
# release and Elixir version: checked against a PLT of another Elixir,
# calls to what that Elixir lacks are reported missing (code compiled by
# Elixir 1.20 calls Enum.__in__/2). From OTP 26 on, building it exits 2
# (warnings) when it lists functions of applications outside the PLT,
# after writing it; 1 is an error. Held partials and the test oracle
# build iodata, whose improper lists are deliberate.
dialyzer:
	MIX_ENV=test mix compile
	read -r ebin plt < <(elixir -e 'IO.puts([:code.lib_dir(:elixir), "/ebin _build/plt/otp-", \
	    :erlang.system_info(:otp_release), "-elixir-", System.version(), ".plt"])') && \
	if [ ! -e "$$plt" ]; then \
	  mkdir -p _build/plt && \
	  { dialyzer -pa "$$ebin" --build_plt --output_plt "$$plt.new" --apps erts kernel stdlib \
	      -r "$$ebin" || [ $$? = 2 ]; } && mv "$$plt.new" "$$plt" || exit 1; \
	fi && \
	dialyzer -pa "$$ebin" --plt "$$plt" -Wno_improper_lists _build/test/lib/mcp_framer/ebin

demo: tools
	mix run examples/demo.exs $(SERVER)

# The decoding rows compare against jiffy, Debian's erlang-jiffy where
# Debian has it (not in forky), and on Elixir 1.18+ against Elixir's JSON.
ifdef BEAM
bench:
	TARGET=bench .ci/matrix $(BEAM)
else
bench: tools
	@erl -noshell -eval 'halt(case code:which(jiffy) of non_existing -> 1; _ -> 0 end)' || { \
	  [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq erlang-jiffy; } || \
	  echo "jiffy not found (apt-get install erlang-jiffy): its rows are left out"
	MIX_ENV=prod mix run -r bench/run.exs -e 'Bench.main()'
endif

# The framing, decoding and encoding rows of make bench, now against REV, in
# one VM; with BEAM, in that root, REV named by its commit, which the root
# reads from this repository (.ci/matrix binds it in).
ifdef BEAM
compare:
	@test -n "$(REV)" || { echo "usage: make compare REV=<git revision>"; exit 1; }
	@sha=$$(git rev-parse --verify --quiet --short "$(REV)^{commit}") || \
	  { echo "REV=$(REV) is not a commit of this repository"; exit 1; }; \
	echo "TARGET=compare REV=$$sha .ci/matrix $(BEAM)"; \
	TARGET=compare REV=$$sha .ci/matrix $(BEAM)
else
compare: tools
	@test -n "$(REV)" || { echo "usage: make compare REV=<git revision>"; exit 1; }
	MIX_ENV=prod REV="$(REV)" mix run bench/compare.exs
endif

# The parser without the BEAM: REV's core crate under another version,
# linked beside this one (bench/compare_parser.sh).
compare-parser: tools
	@test -n "$(REV)" || { echo "usage: make compare-parser REV=<git revision>"; exit 1; }
	bash bench/compare_parser.sh "$(REV)"

# perf samples the CPU clock (no hardware counters here); +JPperf lets it
# name JIT-compiled Erlang functions.
ROW ?= one per chunk
SIDE ?= mcp_framer
profile: tools
	@command -v perf >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-perf; }
	MIX_ENV=prod mix compile
	ROW="$(ROW)" SIDE="$(SIDE)" MIX_ENV=prod elixir --erl "+JPperf true" -S mix run -r bench/run.exs bench/profile.exs
	perf report -q -i _build/perf.data --no-children --sort dso,sym 2>/dev/null | awk -f bench/perf_split.awk

arm:
	.ci/arm

# make test in each Debian root of .ci/matrix, built on first use.
MATRIX ?= trixie forky
matrix:
	.ci/matrix $(MATRIX)
