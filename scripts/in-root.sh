#!/usr/bin/env bash
# scripts/in-root.sh NAME COMMAND: runs COMMAND with bash inside the root
# filesystem NAME (scripts/root.sh makes it) with chroot, in /src/agentrl, a
# copy of this source tree as git sees it (tracked and untracked files that
# are not ignored; the copy's build/ and bin/ are kept between calls). /proc,
# /dev, the host's certificate authorities, its Go module cache and
# ../shared (at /src/shared) are mounted in for the command and unmounted
# after it.
#
# Go: with HOST_GO=1 the host's Go (its GOROOT) is mounted at /usr/local/go
# and comes first on PATH; otherwise the root's own go runs with
# GOTOOLCHAIN=auto, which brings the Go that go.mod names from the Go module
# proxy (the image's recipe).
set -euo pipefail
name=${1:?usage: scripts/in-root.sh NAME COMMAND}
command=${2:?usage: scripts/in-root.sh NAME COMMAND}
here=$(cd "$(dirname "$0")/.." && pwd)
root=$("$here/scripts/root.sh" "$name")

mounted=()
cleanup() {
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
bind() { # bind SRC DST: mounts SRC at DST inside the root
	mkdir -p "$root$2"
	mount --bind "$1" "$root$2"
	mounted+=("$root$2")
}
mkdir -p "$root/proc"
mount -t proc proc "$root/proc"
mounted+=("$root/proc")
bind /dev /dev
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The host's certificate authorities, so that the root reaches the registries
# exactly as the host does (through the same TLS-inspecting proxy, if any).
bind /etc/ssl/certs /etc/ssl/certs
gomodcache=$(go env GOMODCACHE 2>/dev/null || echo /root/go/pkg/mod)
mkdir -p "$gomodcache"
bind "$gomodcache" /root/go/pkg/mod
# ../shared beside the checkout (fixtures, data), where there is one.
[ ! -d "$here/../shared" ] || bind "$(cd "$here/../shared" && pwd)" /src/shared
path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
if [ "${HOST_GO:-0}" = 1 ]; then
	bind "$(go env GOROOT)" /usr/local/go
	path=/usr/local/go/bin:$path
fi

# The source tree, as git has it; build outputs of earlier calls stay.
src=$root/src/agentrl
mkdir -p "$src"
find "$src" -mindepth 1 -maxdepth 1 ! -name build ! -name bin -exec rm -rf {} +
(cd "$here" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -C "$src" -xf -

chroot "$root" /usr/bin/env -i HOME=/root PATH="$path" LANG=C.UTF-8 \
	GOTOOLCHAIN=auto GOFLAGS=-tags=sqlite_fts5 GOPROXY="$(go env GOPROXY 2>/dev/null || echo https://proxy.golang.org,direct)" \
	bash -euo pipefail -c "cd /src/agentrl && $command"
