# make test   installs Elixir when missing, then runs every test and gate
# make demo   frames a real MCP stdio server: make demo SERVER="cmd args"
# make fuzz   fuzzes the core for FUZZ_SECONDS (default 20; make test runs it)
SHELL := /bin/bash
SERVER ?=
FUZZ_SECONDS ?= 20
HOST := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
# What cargo-fuzz passes, minus the nightly-only sanitizer: libFuzzer gets
# coverage feedback from a stable toolchain. Given with --target, so build
# scripts are compiled without it.
FUZZ_RUSTFLAGS := --cfg fuzzing -Cpasses=sancov-module -Cdebug-assertions -Coverflow-checks \
  $(addprefix -Cllvm-args=-sanitizer-coverage-,level=4 inline-8bit-counters pc-table trace-compares)

.PHONY: test demo bench fuzz tools rust-tests elixir-tests

test: tools rust-tests fuzz elixir-tests

tools:
	@command -v cargo >/dev/null || { echo "cargo not found: install Rust >= 1.91 (https://rustup.rs)"; exit 1; }
	@command -v mix >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq elixir erlang-dev erlang-nox; \
	  else \
	    echo "mix not found: install Elixir and Erlang (apt-get install elixir erlang-dev erlang-nox)"; exit 1; \
	  fi; }

rust-tests:
	cargo fmt --all --check
	cargo clippy --all-targets --locked -- -D warnings
	cargo test --locked
	cargo fmt --manifest-path fuzz/Cargo.toml --check

fuzz:
	cd fuzz && RUSTFLAGS="$(FUZZ_RUSTFLAGS)" cargo build --locked --release --target $(HOST) --target-dir target
	mkdir -p fuzz/corpus/feed fuzz/artifacts
	fuzz/target/$(HOST)/release/feed -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -artifact_prefix=fuzz/artifacts/ fuzz/corpus/feed

# The MCP reference server for the integration tests, pinned by its lock file.
EVERYTHING := test/mcp_server/node_modules/.package-lock.json
$(EVERYTHING): test/mcp_server/package-lock.json
	@if command -v npm >/dev/null; then test/mcp_server/setup.sh; \
	else echo "npm not found: the server-everything integration tests will be skipped"; fi

elixir-tests: $(EVERYTHING)
	mix format --check-formatted
	MIX_ENV=test mix compile --warnings-as-errors
	mix test --warnings-as-errors

demo: tools
	mix run examples/demo.exs $(SERVER)

bench: tools
	MIX_ENV=prod mix run bench/run.exs
