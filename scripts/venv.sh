#!/usr/bin/env bash
# scripts/venv.sh NAME: makes (or reuses) the Python virtual environment NAME
# under the cache folder and prints its path. Python is for building, testing
# and verification only; the trainer never runs it.
#
# NAME is one of:
#   torch-2.15  torch 2.15.0 (a full libtorch in its torch/ folder) with
#               transformers, peft, tensorboard and tokenizers: the newest
#               libtorch leg and the interop suite (make interop)
#   torch-2.11  torch 2.11.0 with the CUDA 13.0 headers (cuda-toolkit[nvcc,cccl]):
#               the CUDA build leg and the GPU rehearsal (the
#               GPU machine runs 2.11.0+cu130), with the same libraries
#
# The cache folder is AGENTRL_CACHE (default /var/cache/agentrl): wheels in
# wheels/, environments in venv/NAME. A finished environment holds a stamp
# with its requirements; one whose stamp differs is made again.
set -euo pipefail
name=${1:?usage: scripts/venv.sh torch-2.15|torch-2.11}
cache=${AGENTRL_CACHE:-/var/cache/agentrl}
libs="transformers==5.25.0 peft==0.21.2 tensorboard==2.21.0 tokenizers==0.23.3 safetensors==0.8.0 numpy"
case $name in
torch-2.15) reqs="torch==2.15.0 $libs" ;;
torch-2.11) reqs="torch==2.11.0 cuda-toolkit[nvcc,cccl]==13.0.2 $libs" ;;
*) echo "scripts/venv.sh: unknown environment $name (torch-2.15, torch-2.11)" >&2; exit 2 ;;
esac
dir=$cache/venv/$name
stamp="$reqs"
mkdir -p "$cache/venv"
# One maker at a time; a second waits, then finds the stamp.
exec 9>"$cache/venv/$name.lock"
flock 9
if [ -f "$dir/.agentrl-stamp" ] && [ "$(cat "$dir/.agentrl-stamp")" = "$stamp" ]; then
	echo "$dir"
	exit 0
fi
py=${PYTHON:-python3}
mkdir -p "$cache/wheels"
rm -rf "$dir"
echo "venv: making $dir ($reqs)" >&2
"$py" -m venv "$dir" >&2
# Wheels are downloaded once into the cache and installed from there.
"$dir/bin/pip" download -q --disable-pip-version-check -d "$cache/wheels" $reqs >&2
"$dir/bin/pip" install -q --disable-pip-version-check --no-index --find-links "$cache/wheels" $reqs >&2
echo "$stamp" >"$dir/.agentrl-stamp"
echo "$dir"
