#!/bin/sh
# Writes vendor/evcxr.patch: the difference between the published evcxr 0.22.0 (as `cargo fetch`
# unpacks it under ~/.cargo/registry/src) and vendor/evcxr, for Cargo.toml and every file of src/
# (a file only here is diffed against nothing).
set -eu
cd "$(dirname "$0")"
published=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/evcxr-0.22.0 | head -n 1)
[ -d "$published" ] || { echo "evcxr 0.22.0 is not unpacked: run cargo fetch first" >&2; exit 1; }
: > evcxr.patch
for file in Cargo.toml $(cd evcxr && find src -type f | sort); do
    diff -u -N --label "a/$file" --label "b/$file" "$published/$file" "evcxr/$file" >> evcxr.patch || true
done
echo "$(grep -c '^@@' evcxr.patch) hunks in $(grep -c '^+++ ' evcxr.patch) files"
