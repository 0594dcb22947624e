#!/usr/bin/env bash
# scripts/root.sh NAME: makes (or reuses) the Debian root filesystem NAME
# under the cache folder and prints its path. CI builds and tests agentrl
# inside these roots with chroot.
#
# NAME is one of:
#   trixie-cuda  Debian trixie with the packages of image/packages.txt:
#                libtorch-cuda 2.6, CUDA 12.4, NCCL: the CUDA build against
#                Debian's libtorch and the container image's recipe
#   sid-cpu      Debian sid's CPU libtorch (2.14, built without libuv)
#
# The cache folder is AGENTRL_CACHE (default /var/cache/agentrl): roots in
# roots/NAME. A finished root holds a stamp with its package list; one
# whose stamp differs is made again. Needs root and mmdebstrap (installed
# with apt-get when missing).
set -euo pipefail
name=${1:?usage: scripts/root.sh trixie-cuda|sid-cpu}
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${AGENTRL_CACHE:-/var/cache/agentrl}
case $name in
trixie-cuda)
	suite=trixie
	components="main contrib non-free"
	pkgs=$(sed 's/#.*//' "$here/image/packages.txt" | xargs)
	;;
sid-cpu)
	suite=sid
	components=main
	pkgs="libtorch-dev libgloo-dev libopenblas0-pthread g++ make libsqlite3-dev ca-certificates git"
	;;
*) echo "scripts/root.sh: unknown root $name (trixie-cuda, sid-cpu)" >&2; exit 2 ;;
esac
dir=$cache/roots/$name
stamp="$suite [$components] $pkgs"
mkdir -p "$cache/roots"
exec 9>"$cache/roots/$name.lock"
flock 9
if [ -f "$dir/.agentrl-stamp" ] && [ "$(cat "$dir/.agentrl-stamp")" = "$stamp" ]; then
	echo "$dir"
	exit 0
fi
command -v mmdebstrap >/dev/null || {
	echo "root: installing mmdebstrap" >&2
	apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >&2
}
# The mirror apt already uses here.
mirror=$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)\/*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
[ -n "$mirror" ] || mirror=$(sed -n 's/^deb \(http[^ ]*\/debian\)\/* .*/\1/p' /etc/apt/sources.list 2>/dev/null | head -n 1)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
rm -rf "$dir" "$dir.new"
echo "root: making $dir: Debian $suite ($components) from $mirror with $pkgs" >&2
hooks=()
if [ "$name" = trixie-cuda ]; then
	# libtorch-cuda depends on nvidia-cudnn, whose installation downloads
	# cuDNN from NVIDIA: offline it fails, and with it libtorch-cuda. An
	# empty package of that name, installed first, stands in for it (and
	# says so in its description); scripts/image-check.sh then stubs the
	# library itself.
	stand_in=$(mktemp -d)
	trap 'rm -rf "$stand_in"' EXIT
	mkdir -p "$stand_in/pkg/DEBIAN"
	cat >"$stand_in/pkg/DEBIAN/control" <<-EOF
		Package: nvidia-cudnn
		Version: 9.0.0.312~cuda12+agentrl.stand.in
		Architecture: amd64
		Maintainer: agentrl CI <ci@agentrl.invalid>
		Description: stand-in for nvidia-cudnn (agentrl CI, offline)
		 The real package downloads cuDNN from NVIDIA when it is installed,
		 which fails without internet. This empty package only satisfies
		 libtorch-cuda's dependency; it holds no cuDNN.
	EOF
	dpkg-deb --build "$stand_in/pkg" "$stand_in/nvidia-cudnn.deb" >&2
	hooks+=(--essential-hook="copy-in $stand_in/nvidia-cudnn.deb /tmp"
		--essential-hook='chroot "$1" dpkg -i /tmp/nvidia-cudnn.deb && chroot "$1" apt-mark hold nvidia-cudnn')
fi
mmdebstrap --variant=apt --components="${components// /,}" \
	--aptopt='Acquire::Check-Valid-Until "false"' "${hooks[@]}" \
	--include="${pkgs// /,}" "$suite" "$dir.new" "$mirror" >&2
echo "$stamp" >"$dir.new/.agentrl-stamp"
mv "$dir.new" "$dir"
echo "$dir"
