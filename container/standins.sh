#!/usr/bin/env bash
# Builds stand-ins for the Dockerfile's two base images from Debian packages, for machines that
# cannot pull images (CI):
#   tablegraph-standin/rust:bookworm      for rust:1-bookworm: Debian bookworm (debootstrap)
#                                         with gcc, make and libc6-dev, and the Rust toolchain
#                                         of this machine ($RUST_SYSROOT, or rustc --print
#                                         sysroot) in /usr/local/rust;
#   tablegraph-standin/distroless-cc:nonroot  for gcr.io/distroless/cc-debian12:nonroot: the
#                                         files of libc6 and libgcc-s1, CA certificates, and the
#                                         users root, nobody and nonroot (65532); no shell, no
#                                         package manager.
# Both trust this machine's CA bundle, so the builder's cargo reaches crates.io as this machine
# does. An image already present is kept (STANDINS_REBUILD=1 makes both again).
# Usage: bash container/standins.sh   (root, with dockerd running and debootstrap installed)
set -euo pipefail

BUILDER_TAG=tablegraph-standin/rust:bookworm
RUNTIME_TAG=tablegraph-standin/distroless-cc:nonroot
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
WORK=${STANDINS_WORK:-/var/tmp/tablegraph-standins}

have() { [ -z "${STANDINS_REBUILD:-}" ] && docker image inspect "$1" >/dev/null 2>&1; }

if have "$BUILDER_TAG" && have "$RUNTIME_TAG"; then
  echo "stand-in images present: $BUILDER_TAG, $RUNTIME_TAG"
  exit 0
fi

rm -rf "$WORK"
mkdir -p "$WORK"
rootfs="$WORK/bookworm"
echo "debootstrap bookworm (minbase, with gcc, g++, make, libc6-dev) into $rootfs"
debootstrap --variant=minbase --include=gcc,g++,make,libc6-dev,ca-certificates,pkg-config \
  bookworm "$rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
  || { tail -n 30 "$WORK/debootstrap.log"; exit 1; }
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"

# ---- the builder: bookworm + this machine's Rust toolchain (no docs) ----
sysroot=${RUST_SYSROOT:-$(rustc --print sysroot)}
mkdir -p "$rootfs/usr/local/rust" "$rootfs/usr/local/cargo/bin"
tar -C "$sysroot" -c --exclude=./share/doc --exclude=./share/man . \
  | tar -C "$rootfs/usr/local/rust" -x
echo "importing $BUILDER_TAG ($(du -sh "$rootfs" | cut -f1))"
tar -C "$rootfs" -c . | docker import \
  --change 'ENV PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV CARGO_HOME=/usr/local/cargo' \
  --change 'CMD ["bash"]' \
  - "$BUILDER_TAG" >/dev/null

# ---- the runtime: what distroless' cc image holds, taken from the same packages ----
runtime="$WORK/runtime"
mkdir -p "$runtime"/{etc/ssl/certs,home/nonroot,root,tmp,usr/bin,usr/lib,usr/sbin}
ln -s usr/bin "$runtime/bin"
ln -s usr/lib "$runtime/lib"
ln -s usr/lib64 "$runtime/lib64"
ln -s usr/sbin "$runtime/sbin"
mkdir -p "$runtime/usr/lib64"
chmod 1777 "$runtime/tmp"
chroot "$rootfs" dpkg -L libc6 libgcc-s1 \
  | while read -r path; do
      if [ -e "$rootfs$path" ] && [ ! -d "$rootfs$path" ]; then printf '%s\n' "${path#/}"; fi
    done \
  | grep -v -e '^usr/share/doc' -e '^usr/share/lintian' -e '^sbin/' -e '^usr/sbin/' -e '^usr/bin/' \
  >"$WORK/runtime-files"
tar -C "$rootfs" -c --no-recursion -T "$WORK/runtime-files" | tar -C "$runtime" -x
cp /etc/ssl/certs/ca-certificates.crt "$runtime/etc/ssl/certs/ca-certificates.crt"
cat >"$runtime/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
PASSWD
cat >"$runtime/etc/group" <<'GROUP'
root:x:0:
nobody:x:65534:
nonroot:x:65532:
GROUP
chown 65532:65532 "$runtime/home/nonroot"
if [ -e "$runtime/bin/sh" ] || [ -e "$runtime/usr/bin/sh" ]; then
  echo "the runtime stand-in must have no shell" >&2
  exit 1
fi
echo "importing $RUNTIME_TAG ($(du -sh "$runtime" | cut -f1))"
tar -C "$runtime" -c . | docker import \
  --change 'USER 65532:65532' \
  --change 'WORKDIR /home/nonroot' \
  --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
  - "$RUNTIME_TAG" >/dev/null
rm -rf "$WORK"
echo "stand-in images built: $BUILDER_TAG, $RUNTIME_TAG"
