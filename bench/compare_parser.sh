#!/usr/bin/env bash
# make compare-parser REV=<rev>: the core crate's JSON parser now against
# REV's, linked into one program (bench/compare_parser.rs), on the
# decoding rows' messages. Everything it makes is under
# target/compare_parser.
set -euo pipefail
rev=${1:?usage: bench/compare_parser.sh <git revision>}
root=$(git rev-parse --show-toplevel)
work=$root/target/compare_parser
# A directory for each commit: Cargo tells sources apart by their path and
# mtime, and the files of an archive keep their commit's time.
commit=$(git -C "$root" rev-parse --verify "$rev^{commit}")
then_core=$work/rev-$commit/native/mcp_framer_core
if [ ! -d "$then_core" ]; then
  mkdir -p "$work/rev-$commit"
  git -C "$root" archive "$commit" Cargo.toml native | tar -x -C "$work/rev-$commit"
  # Cargo takes two packages of one name only under two versions: the
  # first `version` line is the package's.
  grep -q '^version = ' "$then_core/Cargo.toml" ||
    { echo "$rev: no version line in its core crate's Cargo.toml" >&2; exit 1; }
  sed -i '0,/^version = .*/s//version = "0.0.0"/' "$then_core/Cargo.toml"
fi
rm -rf "$work/rows"
mkdir -p "$work/rows" "$work/harness"
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
then = { package = "mcp_framer_core", path = "$then_core" }

# As the workspace's: one codegen unit and LTO.
[profile.release]
codegen-units = 1
lto = true

[workspace]
TOML
(cd "$root" && MIX_ENV=prod mix run -r bench/run.exs bench/parser_traffic.exs "$work/rows")
shopt -s nullglob
rows=("$work"/rows/*.jsonl)
((${#rows[@]})) || { echo "no decoding row's name matches BENCH_ONLY=${BENCH_ONLY:-}" >&2; exit 1; }
cargo run --quiet --release --manifest-path "$work/harness/Cargo.toml" \
  --target-dir "$work/target" -- "$rev" "${rows[@]}"
