#!/usr/bin/env bash
# scripts/gpu-prepare.sh: build here, where Go is, what scripts/gpu-check.sh
# runs on the GPU machine, which has no Go and no registry. Everything goes
# to gpu/ (git-ignored), which the device tool carries (64 MiB at most):
#
#   gpu/bin/*.xz        bin/trainer built with -tags cuda, and the test
#                       binaries of ./torch/ and ./trainer/learner/
#                       (go test -c -tags cuda,sqlite_fts5), stripped, xz'd
#   gpu/shared/         the shared fixtures qwen2-tiny-a and qwen3-tiny-a and
#                       the Qwen tokenizer (real vocabulary for step 4)
#   gpu/gloo.tar.xz     gloo's headers (Debian's libgloo-dev), for a machine
#                       without /usr/include/gloo (the wheel ships none)
#
# The Go binaries link against build/cuda/libagentrl.so, which this script
# builds against the torch 2.11.0 wheel in $AGENTRL_TORCH_VENV (default
# /var/cache/agentrl/venv/torch-2.11, the machine's torch version). On the
# machine gpu-check.sh rebuilds the shim against the machine's torch and
# puts it at gpu/lib/libagentrl.so, which the binaries find through their
# RUNPATH $ORIGIN/../lib.
set -euo pipefail
cd "$(dirname "$0")/.."
# The whole build holds the machine's heavy-work lock once (BUILD-LOCK.md).
if [ -z "${AGENTRL_HEAVY_LOCKED:-}" ] && command -v flock >/dev/null; then
	exec env AGENTRL_HEAVY_LOCKED=1 flock /tmp/agentrl-heavy.lock "$0" "$@"
fi
venv=${AGENTRL_TORCH_VENV:-/var/cache/agentrl/venv/torch-2.11}
shared=${AGENTRL_SHARED:-../shared}
say() { echo "gpu-prepare: $*"; }

torch=$("$venv/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
say "the CUDA shim against $torch"
make -j"$(nproc)" cuda-flags LIBTORCH="$torch" GLOO_HOME=/usr >/dev/null
make -j"$(nproc)" build/cuda/libagentrl.so LIBTORCH="$torch" GLOO_HOME=/usr

rm -rf gpu && mkdir -p gpu/bin gpu/shared/fixtures gpu/shared/data/tokenizers/qwen
export GOFLAGS=-tags=sqlite_fts5,cuda
ld='-s -w'
say "go build -tags cuda -> gpu/bin/trainer"
go build -trimpath -ldflags="$ld" -o gpu/bin/trainer ./cmd/trainer
for pkg in torch trainer/learner; do
	name=$(basename "$pkg")
	say "go test -c -tags cuda,sqlite_fts5 ./$pkg/ -> gpu/bin/$name.test"
	go test -c -trimpath -ldflags="$ld" -o "gpu/bin/$name.test" "./$pkg/"
done
for b in gpu/bin/*; do
	readelf -d "$b" | grep -q 'RUNPATH.*\$ORIGIN/../lib' || { say "$b has no RUNPATH \$ORIGIN/../lib"; exit 1; }
done
xz -T2 -6 gpu/bin/*

cp -r "$shared/fixtures/qwen2-tiny-a" "$shared/fixtures/qwen3-tiny-a" gpu/shared/fixtures/
cp "$shared/data/tokenizers/qwen/tokenizer.json" "$shared/data/tokenizers/qwen/tokenizer_config.json" gpu/shared/data/tokenizers/qwen/
xz -T2 -6 gpu/shared/data/tokenizers/qwen/tokenizer.json
tar -C /usr/include -cJf gpu/gloo.tar.xz gloo
chmod -R u+w gpu
git rev-parse HEAD >gpu/commit
ls -l gpu/bin gpu/gloo.tar.xz
say "gpu/ holds $(du -sb gpu | cut -f1) bytes (the device tool carries 64 MiB at most)"
