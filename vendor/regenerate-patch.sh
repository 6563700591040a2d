#!/bin/sh
# Writes vendor/<crate>.patch for each vendored crate named (default: all of them): the
# difference between the published crate (as cargo unpacks it under ~/.cargo/registry/src) and
# vendor/<crate>, for Cargo.toml and every file of src/ (a file only here is diffed against
# nothing).
#
#   vendor/regenerate-patch.sh [CRATE...]           write the patches
#   vendor/regenerate-patch.sh --check [CRATE...]   write nothing; fail, naming the patch and the
#                                                   command that rewrites it, where a patch is not
#                                                   the difference it would write (scripts/test)
#
# The workspace builds the vendored copies in place of the published crates, so cargo never
# fetches those for a build. Where one is not unpacked yet, this fetches it: `cargo fetch` of a
# scratch package that depends on that release alone, with the workspace's Cargo.lock, so that
# its dependencies resolve to the versions the build uses and download once for both.
set -eu
cd "$(dirname "$0")"
check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi
version() {
    case "$1" in
        evcxr) echo 0.22.0 ;;
        zeromq) echo 0.7.0 ;;
        *) echo "no vendored crate named $1" >&2; exit 1 ;;
    esac
}
unpacked() {
    ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$1-$2" 2>/dev/null | head -n 1
}
fetch() {
    scratch=$(mktemp -d)
    mkdir "$scratch/src"
    : > "$scratch/src/lib.rs"
    printf '[package]\nname = "published-%s"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n[dependencies]\n%s = "=%s"\n\n[workspace]\n' \
        "$1" "$1" "$2" > "$scratch/Cargo.toml"
    cp ../Cargo.lock "$scratch/"
    host=$(rustc -vV | sed -n 's/^host: //p')
    cargo fetch --quiet --manifest-path "$scratch/Cargo.toml" --target "$host" >&2 || true
    rm -rf "$scratch"
}
# The patch on stdout. C collation, so that the files' order is the same on every machine.
patch_of() {
    for file in Cargo.toml $(cd "$1" && find src -type f | LC_ALL=C sort); do
        diff -u -N --label "a/$file" --label "b/$file" "$2/$file" "$1/$file" || true
    done
}
[ $# -gt 0 ] || set -- evcxr zeromq
drifted=""
for crate in "$@"; do
    release=$(version "$crate")
    published=$(unpacked "$crate" "$release")
    if [ -z "$published" ]; then
        echo "$crate-$release is not unpacked: fetching it with cargo" >&2
        fetch "$crate" "$release"
        published=$(unpacked "$crate" "$release")
    fi
    [ -d "$published" ] || { echo "$crate-$release is not unpacked, and cargo fetch did not unpack it (above)" >&2; exit 1; }
    if [ "$check" = 1 ]; then
        regenerated=$(mktemp)
        patch_of "$crate" "$published" > "$regenerated"
        if cmp -s "$regenerated" "$crate.patch"; then
            echo "vendor/$crate.patch: the difference between $crate $release and vendor/$crate"
        else
            echo "vendor/$crate.patch is not the difference between $crate $release and vendor/$crate" \
                "(a vendored file changed without its patch, or the patch without the file);" \
                "what regenerating would change in it:" >&2
            diff -u --label "vendor/$crate.patch" --label "regenerated" "$crate.patch" "$regenerated" | head -n 40 >&2 || true
            drifted="$drifted $crate"
        fi
        rm -f "$regenerated"
    else
        patch_of "$crate" "$published" > "$crate.patch"
        echo "$crate.patch: $(grep -c '^@@' "$crate.patch") hunks in $(grep -c '^+++ ' "$crate.patch") files"
    fi
done
if [ -n "$drifted" ]; then
    for crate in $drifted; do
        echo "vendor/$crate.patch is out of date: run vendor/regenerate-patch.sh $crate, then check vendor/README.md's table of its hunks" >&2
    done
    exit 1
fi
