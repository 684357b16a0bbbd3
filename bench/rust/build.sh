#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/rust/build.sh -- build the Rust binary-trees peer (bumpalo + rayon)
# offline, in release mode, from the crate sources Debian ships under
# /usr/share/cargo/registry (packages librust-bumpalo-dev, librust-rayon-dev).
#
# On success: prints the binary's absolute path on stdout, exits 0.
# If cargo or the crates are missing: one notice on stderr, nothing on
# stdout, exit 0 -- callers skip the peer.  A failed build exits 1.
# Idempotent: a second run with nothing changed only re-checks.
#
# Cargo: Debian's /usr/bin/cargo with /usr/bin/rustc when installed (the
# toolchain the registry's crates are packaged for); else `cargo` on PATH
# (e.g. rustup's).  Override with CARGO=/path/to/cargo (and RUSTC=...).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
registry=/usr/share/cargo/registry
bin="$here/target/release/binary-trees-bumpalo"

skip() {
    echo "bench/rust: skipping the Rust bumpalo peer: $*" >&2
    exit 0
}

if [ -n "${CARGO:-}" ]; then
    cargo=$CARGO
elif [ -x /usr/bin/cargo ] && [ -x /usr/bin/rustc ]; then
    cargo=/usr/bin/cargo
    # Debian's cargo would otherwise run whatever `rustc` is first on PATH
    # (a rustup proxy in ~/.cargo/bin, say); pair it with Debian's rustc.
    : "${RUSTC:=/usr/bin/rustc}"
    export RUSTC
else
    cargo=$(command -v cargo 2>/dev/null) || cargo=
fi
[ -n "$cargo" ] && [ -x "$cargo" ] ||
    skip "cargo not installed (apt-get install cargo)"

for crate in bumpalo rayon rayon-core either crossbeam-deque; do
    set -- "$registry/$crate"-[0-9]*
    [ -e "$1" ] ||
        skip "crate $crate not in $registry (apt-get install librust-bumpalo-dev librust-rayon-dev)"
done

# Run from this folder so .cargo/config.toml (the source replacement and
# offline mode) applies; name the target folder so CARGO_TARGET_DIR cannot
# move it.
cd "$here"
if ! "$cargo" build --release --offline --quiet --target-dir "$here/target" >&2; then
    echo "bench/rust: cargo build failed ($cargo)" >&2
    exit 1
fi
[ -x "$bin" ] || { echo "bench/rust: $bin was not produced" >&2; exit 1; }
echo "$bin"
