#!/usr/bin/env bash
# Packs what `bench/run.sh` needs on a machine that has neither the toolchain nor a package
# registry (a bigger machine lent for a few minutes): the release binaries of tablegraph and of
# the baselines (B0, B1, B2), stripped, and wrk and hyperfine with the libraries they load
# beside the C library, into bench/carry/pack.tar.gz (git-ignored; about 28 MB).
#
#   bash bench/pack.sh            # builds first unless BENCH_SKIP_BUILD=1
#
# There, from the repository's root (a copy of the same commit):
#
#   tar xzf bench/carry/pack.tar.gz &&
#   PATH="$PWD/bench/carry/bin:$PATH" LD_LIBRARY_PATH="$PWD/bench/carry/lib" BENCH_SKIP_BUILD=1 \
#   BENCH_PHASES="throughput latency cold" BENCH_CONNECTIONS="1 64" BENCH_THREADS=4 \
#   BENCH_DURATION=4s BENCH_REPS=2 bash bench/run.sh
#
# Needs wrk and hyperfine here (apt-get install wrk hyperfine), strip and tar.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ${BENCH_SKIP_BUILD:-} != 1 ]]; then
  cargo build --release --locked
  (cd bench/baselines && cargo build --release --locked)
fi
out=bench/carry
rm -rf "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/target/release" "$stage/bench/baselines/target/release" \
  "$stage/$out/bin" "$stage/$out/lib"
strip -o "$stage/target/release/tablegraph" target/release/tablegraph
for b in b0 b1 b2; do
  strip -o "$stage/bench/baselines/target/release/$b" "bench/baselines/target/release/$b"
done
for tool in wrk hyperfine; do
  path=$(command -v "$tool") || { echo "bench/pack.sh: $tool is needed here" >&2; exit 1; }
  cp "$path" "$stage/$out/bin/"
  # Every library it loads but the C library's own and the loader, which every Linux has.
  ldd "$path" | awk '$3 ~ /^\// {print $3}' |
    grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
    xargs -r cp -L -t "$stage/$out/lib/"
done
mkdir -p "$out"
tar czf "$stage/pack.tar.gz" -C "$stage" target bench
mv "$stage/pack.tar.gz" "$out/pack.tar.gz"
ls -la "$out/pack.tar.gz"
