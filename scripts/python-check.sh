#!/usr/bin/env bash
# Builds the Python package from source in a fresh virtual environment, as
# `pip install ./python` does on a user's machine, lints its Rust, and runs
# its tests (python/tests, the documented examples among them) with pyarrow
# (a dependency of the package) and datatrove from PyPI. pip's cache
# is not used, so a cached wheel cannot stand in for the build. As root, it
# then runs the global datatrove steps through datatrove's Slurm executor on
# a throw-away single-node Slurm (scripts/datatrove_slurm_check.py).
#
#   scripts/python-check.sh     # installs python3-venv with apt-get when missing (as root)
#
# The datatrove tests are skipped, with a message, when datatrove cannot be
# installed; the Reuters-21578 test when ../shared/corpora is absent.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
log() { echo "python-check: $*" >&2; }
python=${PYTHON:-python3}

if ! "$python" -c 'import venv, ensurepip' 2> /dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
    log "installing python3-venv"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv > /dev/null
  else
    log "no usable '$python -m venv' (Debian: apt-get install python3-venv); the Python package is not tested"
    exit 1
  fi
fi

# shellcheck source=lib/slurm.sh
. "$here/scripts/lib/slurm.sh"
work=$(mktemp -d /tmp/dupgram-python.XXXXXX)
trap 'slurm_down; rm -rf "$work"' EXIT
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
started=$SECONDS
"$python" -m venv "$work/venv"
py=$work/venv/bin/python

log "building the wheel from source (pip install ./python, which brings pyarrow)"
# Optimised, but without link-time optimisation and with more codegen units
# than users' wheels: the same code, in less build time (here 3.8 instead of
# 4.7 CPU minutes).
CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_DEBUG=false \
  "$py" -m pip install --quiet "$here/python"
# As a user would have it: the README's example before anything else is installed.
(cd "$here" && "$py" -c 'import dupgram; print(dupgram.pairs("data-samples/news.jsonl", n=5, min_sscr=0.5, quiet=True).num_rows, "pairs")')
"$py" -m pip install --quiet pytest
if ! "$py" -m pip install --quiet datatrove orjson zstandard; then
  log "datatrove could not be installed from PyPI; its tests will be skipped"
fi
log "venv and wheel: $((SECONDS - started)) s"

cargo fmt --manifest-path "$here/python/Cargo.toml" -- --check
PYO3_PYTHON=$py cargo clippy --manifest-path "$here/python/Cargo.toml" --all-targets --quiet -- -D warnings

# From the repository root, so `import dupgram` is the installed package,
# not the source folder python/dupgram (which lacks the compiled module).
cd "$here"
"$py" -m pytest -q -p no:cacheprovider -rs python/tests

# The global datatrove steps through datatrove's own Slurm executor, on a
# throw-away single-node Slurm (root only: it starts the daemons).
if [ "$(id -u)" = 0 ] && "$py" -c 'import datatrove' 2> /dev/null; then
  mkdir -p "$work/slurm"
  slurm_up "$work/slurm"
  "$py" "$here/scripts/datatrove_slurm_check.py" "$work/datatrove-slurm"
  slurm_down
else
  log "skipping scripts/datatrove_slurm_check.py: it needs root (to start Slurm) and datatrove"
fi
log "total: $((SECONDS - started)) s"
