#!/usr/bin/env bash
# Generates a synthetic corpus with planted duplication, deterministic by seed.
#
#   scripts/gen-corpus.sh 10M corpus.jsonl.zst [SEED] [dupgram-gen options…]
#
# Zipf-distributed words; 5 % exact copies, 15 % near copies (a few words
# edited) and 10 % documents reusing a passage of an earlier one (change with
# --exact, --near, --passages). Output is JSON Lines, zstd-compressed when the
# name ends in .zst. The same tokens and seed give the same corpus everywhere.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { sed -n '2,10p' "$0"; exit 2; }
tokens=$1 out=$2 seed=${3:-1}
shift $(( $# >= 3 ? 3 : 2 ))
cargo build --release --quiet --manifest-path "$here/Cargo.toml" -p dupgram-testkit
gen=$here/target/release/dupgram-gen
case "$out" in
  *.zst) "$gen" --tokens "$tokens" --seed "$seed" "$@" | zstd -q -T2 -f -o "$out" ;;
  *) "$gen" --tokens "$tokens" --seed "$seed" "$@" > "$out" ;;
esac
