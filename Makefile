# make test   installs Elixir when missing, then runs every test and gate
# make demo   frames a real MCP stdio server: make demo SERVER="cmd args"
SHELL := /bin/bash
SERVER ?=

.PHONY: test demo bench tools rust-tests elixir-tests

test: tools rust-tests elixir-tests

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

elixir-tests:
	mix format --check-formatted
	MIX_ENV=test mix compile --warnings-as-errors
	mix test --warnings-as-errors

demo: tools
	mix run examples/demo.exs $(SERVER)

bench: tools
	MIX_ENV=prod mix run bench/run.exs
