#!/usr/bin/env bash
# make compare-parser REV=<rev>: the core crate's JSON parser now against
# REV's, linked into one program (bench/compare_parser.rs), on the
# decoding rows' messages. Everything it makes is under
# target/compare_parser.
set -euo pipefail
rev=${1:?usage: bench/compare_parser.sh <git revision>}
root=$(git rev-parse --show-toplevel)
work=$root/target/compare_parser
rm -rf "$work/rev" "$work/rows"
mkdir -p "$work/rev" "$work/rows" "$work/harness"
git -C "$root" archive "$rev" Cargo.toml native | tar -x -C "$work/rev"
# Cargo takes two packages of one name only under two versions.
sed -i 's/^version = .*/version = "0.0.0"/' "$work/rev/native/mcp_framer_core/Cargo.toml"
cat > "$work/harness/Cargo.toml" <<TOML
[package]
name = "compare_parser"
version = "0.0.0"
edition = "2021"
publish = false

[[bin]]
name = "compare_parser"
path = "$root/bench/compare_parser.rs"

[dependencies]
now = { package = "mcp_framer_core", path = "$root/native/mcp_framer_core" }
then = { package = "mcp_framer_core", path = "$work/rev/native/mcp_framer_core" }

# As the workspace's: one codegen unit and LTO.
[profile.release]
codegen-units = 1
lto = true

[workspace]
TOML
(cd "$root" && MIX_ENV=prod mix run -r bench/run.exs bench/parser_traffic.exs "$work/rows")
cargo run --quiet --release --manifest-path "$work/harness/Cargo.toml" \
  --target-dir "$work/target" -- "$rev" "$work"/rows/*.jsonl
