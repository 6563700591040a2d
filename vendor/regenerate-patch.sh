#!/bin/sh
# Writes vendor/<crate>.patch for each vendored crate named (default: all of them): the
# difference between the published crate (as `cargo fetch` unpacks it under
# ~/.cargo/registry/src) and vendor/<crate>, for Cargo.toml and every file of src/ (a file only
# here is diffed against nothing).
set -eu
cd "$(dirname "$0")"
version() {
    case "$1" in
        evcxr) echo 0.22.0 ;;
        zeromq) echo 0.7.0 ;;
        *) echo "no vendored crate named $1" >&2; exit 1 ;;
    esac
}
[ $# -gt 0 ] || set -- evcxr zeromq
for crate in "$@"; do
    release="$crate-$(version "$crate")"
    published=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$release" 2>/dev/null | head -n 1)
    [ -d "$published" ] || { echo "$release is not unpacked: run cargo fetch first" >&2; exit 1; }
    : > "$crate.patch"
    for file in Cargo.toml $(cd "$crate" && find src -type f | sort); do
        diff -u -N --label "a/$file" --label "b/$file" "$published/$file" "$crate/$file" >> "$crate.patch" || true
    done
    echo "$crate.patch: $(grep -c '^@@' "$crate.patch") hunks in $(grep -c '^+++ ' "$crate.patch") files"
done
