#!/usr/bin/env bash
# scripts/image-check.sh: the container image's recipe, exercised as far as a
# machine without a Docker engine or a GPU allows. It makes the image's root
# filesystem from image/packages.txt (scripts/root.sh trixie-cuda: Debian
# trixie's libtorch-cuda 2.6, CUDA 12.4, NCCL 2.22), runs the Dockerfile's
# build command (`make cuda LIBTORCH=/usr`, with Debian's go and
# GOTOOLCHAIN=auto) inside it with chroot (scripts/in-root.sh), then
# `trainer train --dry-run` and a short default job on the CPU inside it
# (a 100-step warm start, 2 iterations).
#
# cuDNN: Debian's libtorch-cuda needs libcudnn.so.9, which the nvidia-cudnn
# package downloads from NVIDIA when it is installed; offline that fails
# (scripts/root.sh installs an empty stand-in package instead). Where the
# library is missing, this script builds a stub libcudnn.so.9 into the root's
# /usr/local/lib: every cuDNN function libtorch_cuda imports, each aborting
# with a message if ever called. It says so when it does. The link and the
# CPU runs go ahead; a GPU run needs the real cuDNN.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
say() { echo "image-check: $*"; }
run() { "$here/scripts/in-root.sh" trixie-cuda "$1"; }

run 'if ldconfig -p | grep -q "libcudnn.so.9 " && ! [ -f /usr/local/lib/libcudnn.so.9 ]; then echo "image-check: cuDNN: libcudnn.so.9 is installed"; exit 0; fi
	echo "image-check: cuDNN: libcudnn.so.9 is missing (nvidia-cudnn downloads it when installed, which fails offline):"
	echo "image-check:   building a stub /usr/local/lib/libcudnn.so.9 whose functions abort if called; CPU runs only"
	lib=/usr/lib/$(gcc -print-multiarch)/libtorch_cuda.so
	mkdir -p /tmp/cudnn-stub && cd /tmp/cudnn-stub
	nm -D --undefined-only "$lib" | awk "{print \$2}" | sed "s/@.*//" | grep "^cudnn" | sort -u > symbols
	[ -s symbols ] || { echo "image-check: no cuDNN symbols in $lib" >&2; exit 1; }
	{
		echo "#include <stdio.h>"
		echo "#include <stdlib.h>"
		echo "static void stub(const char *f) { fprintf(stderr, \"agentrl image check: cuDNN stub: %s called; install the real cuDNN (nvidia-cudnn)\\n\", f); abort(); }"
		while read -r s; do echo "void $s(void) { stub(\"$s\"); }"; done < symbols
	} > stub.c
	# libtorch_cuda imports them versioned (cudnnCreate@libcudnn.so.9).
	echo "libcudnn.so.9 { global: *; };" > stub.map
	gcc -shared -fPIC -O1 -Wl,-soname,libcudnn.so.9 -Wl,--version-script=stub.map -o /usr/local/lib/libcudnn.so.9 stub.c
	ldconfig
	echo "image-check:   $(wc -l < symbols) cuDNN functions stubbed"'

t0=$(date +%s)
run 'go version
	make -j2 cuda LIBTORCH=/usr CXXFLAGS="-O2 -g0 -Werror" 2>&1 | tee /tmp/make-cuda.log
	if grep -i "warning:" /tmp/make-cuda.log; then echo "image-check: warnings above" >&2; exit 1; fi
	ldd bin/trainer | grep -E "libagentrl|libtorch_cuda|libcudnn"'
say "make cuda inside the root: $(($(date +%s) - t0)) s"

run 'out=$(./bin/trainer train --device cuda --iterations 1 --run-dir /tmp/cuda-runs 2>&1) && { echo "$out"; echo "image-check: the CUDA build claimed a GPU" >&2; exit 1; }
	echo "$out" | tail -n 2
	grep -q "CUDA is not available" <<<"$out"'
run './bin/trainer train --dry-run --device cuda | tail -n 5'
t0=$(date +%s)
run 'rm -rf /tmp/runs && ./bin/trainer train --run image-check --run-dir /tmp/runs --iterations 2 --set sft.demos=1600 --set sft.epochs=1 2>&1 | tail -n 25
	test -s /tmp/runs/image-check/store.db'
say "short default job inside the root: $(($(date +%s) - t0)) s"
