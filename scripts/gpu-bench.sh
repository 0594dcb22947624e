#!/usr/bin/env bash
# scripts/gpu-bench.sh: the throughput steps of issue 39 on one GPU, after
# scripts/gpu-check.sh has built the shim (build/cuda, gpu/lib) in the same
# call or on the same warm machine. A first version: on the random
# Qwen2.5-0.5B shape it runs
#
#   peak      the GPU's copy bandwidth and bf16 matmul rate (ref_bench.py)
#   update    `trainer bench train` (bf16, f32 masters) against a plain
#             PyTorch step (autocast bf16, log-softmax gather, backward,
#             AdamW) on 4 x 2048 tokens: tokens/s and model FLOPs
#             utilisation (6 N tokens / s over the measured bf16 rate);
#             it runs before decoding, so the budget cannot cut it
#   sdpa      which SDPA kernel libtorch chose for the training forward
#             (bench train's sdpa_backend)
#   memory    the update's allocator peak at full length (4 x SEQ tokens)
#             against the dry run's estimate of it (bench train's
#             allocator_peak_mb, estimate_mb)
#   decode    agentrl's `trainer bench generate` (bf16 engine) against
#             transformers' generate (bf16, SDPA) at batch 1, 8, 64, 256:
#             tokens/s of both, and agentrl's decode rate against the
#             weight-read bound from the measured copy bandwidth
#   profiles  after its measured runs, bench train records one more update
#             and bench generate (at batch 1 and 64, PROFILE_BATCHES) one
#             decode step under libtorch's profiler (--kernel-profile): the
#             top 25 kernels of each, by time share, with calls and average
#
# Each agentrl figure is the median of 5 runs after a warm-up (wall time of
# calls that end by reading results back); the references time with CUDA
# events. The table goes to stdout and $OUT/gpu-bench.md, followed there by
# the kernel profiles, the JSON lines to $OUT/bench.jsonl: only these two
# files, as the device tool brings back 8 at most. Without a GPU it
# rehearses at a small size on the CPU (BATCHES, NEW, SEQ override the
# sizes). BUDGET (240 s) bounds the
# whole: a command gets at most what is left of it.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${AGENTRL_GPU_PYTHON:-/opt/torch/.venv/bin/python3}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
[ -f build/cuda/libagentrl.so ] || { echo "gpu-bench: no build/cuda/libagentrl.so (scripts/gpu-check.sh builds it)"; exit 2; }
W=$(mktemp -d /tmp/gpu-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/bin" "$W/lib"
xz -dc gpu/bin/trainer.xz >"$W/bin/trainer" && chmod +x "$W/bin/trainer" || { echo "gpu-bench: cannot unpack gpu/bin/trainer.xz"; exit 2; }
ln -s "$PWD/build/cuda/libagentrl.so" "$W/lib/libagentrl.so" # the trainer's RUNPATH $ORIGIN/../lib
TR=$W/bin/trainer
GPU=$("$PY" -c 'import torch; print(int(torch.cuda.is_available()))')
if [ "$GPU" = 1 ]; then DEV=cuda:0 BATCHES=${BATCHES:-1 8 64 256} NEW=${NEW:-128} SEQ=${SEQ:-2048} PROFILE_BATCHES=${PROFILE_BATCHES:-1 64}; else
	DEV=cpu BATCHES=${BATCHES:-1 8} NEW=${NEW:-8} SEQ=${SEQ:-64} PROFILE_BATCHES=${PROFILE_BATCHES:-1}
	echo "gpu-bench: no GPU: a rehearsal on the CPU at batch $BATCHES, $NEW new tokens, train 4 x $SEQ"
fi
SHAPE=(--vocab 151936 --hidden 896 --inter 4864 --layers 24 --heads 14 --kv-heads 2 --tied --repeats 5)
J=$OUT/bench.jsonl
: >"$J"
ROWS=()
PROFILES=("$W/profile-train.md") # the kernel profiles' tables, in order
# lim N: N seconds, or what is left of BUDGET (240 s) if less (at least 1).
BUDGET=${BUDGET:-240}
T0=$(date +%s)
lim() { local left=$((BUDGET - ($(date +%s) - T0))); [ "$left" -lt "$1" ] && echo $((left > 1 ? left : 1)) || echo "$1"; }
jget() { "$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); print(*(f"{d[k]:.4g}" if isinstance(d.get(k), float) else d.get(k, "?") for k in sys.argv[2:]))' "$@"; }
last() { grep '^{' "$1" | tail -n 1 | grep . || echo '{}'; }
say() { echo "[gpu-bench $(date -u +%H:%M:%S)] $*"; }

say "peak"
timeout "$(lim 120)" "$PY" scripts/gpu/ref_bench.py "$DEV" peak | tee -a "$J" >"$W/peak.json"
peak=$(last "$W/peak.json")
read -r copy tflops < <(jget "$peak" copy_gbs bf16_matmul_tflops)
ROWS+=("| peak | copy $copy GB/s, bf16 matmul $tflops TFLOP/s | | |")

say "update 4 x $SEQ"
timeout "$(lim 300)" "$TR" bench train "${SHAPE[@]}" --device "$DEV" --dtype bf16 --batch 4 --seq-len "$SEQ" --threads 0 \
	--kernel-profile "$W/profile-train.md" 2>&1 | tee -a "$J" >"$W/train.json"
ours=$(last "$W/train.json")
timeout "$(lim 300)" "$PY" scripts/gpu/ref_bench.py "$DEV" train 4 "$SEQ" 2>/dev/null | tee -a "$J" >"$W/ref-train.json"
ref=$(last "$W/ref-train.json")
read -r otok < <(jget "$ours" tokens_per_s)
read -r rtok rparams < <(jget "$ref" tokens_per_s params)
mfu() { "$PY" -c "import sys; t, n, r = map(float, sys.argv[1:]); print(f'{6*n*t/1e12/r:.1%}')" "$1" "$rparams" "$tflops" 2>/dev/null || echo "?"; }
ratio=$("$PY" -c "import sys; a, b = sys.argv[1:]; print(f'{float(a)/float(b):.2f}x')" "$otok" "$rtok" 2>/dev/null || echo "?")
ROWS+=("| update 4 x $SEQ | agentrl $otok tok/s (MFU $(mfu "$otok")) | plain step $rtok tok/s (MFU $(mfu "$rtok")) | $ratio |")
read -r sdpa < <(jget "$ours" sdpa_backend)
ROWS+=("| SDPA backend in training | ${sdpa:-?} (libtorch's choice for the training forward's attention) | | |")
read -r apeak est < <(jget "$ours" allocator_peak_mb estimate_mb)
eratio=$("$PY" -c "import sys; p, e = map(float, sys.argv[1:]); print(f'{e/p - 1:+.0%}')" "$apeak" "$est" 2>/dev/null || echo "?")
ROWS+=("| update memory, 4 x $SEQ | allocator peak $apeak MB | dry-run estimate $est MB | $eratio |")

for b in $BATCHES; do
	say "decode batch $b"
	prof=()
	if [[ " $PROFILE_BATCHES " == *" $b "* ]]; then
		prof=(--kernel-profile "$W/profile-gen-$b.md")
		PROFILES+=("$W/profile-gen-$b.md")
	fi
	timeout "$(lim 180)" "$TR" bench generate "${SHAPE[@]}" --device "$DEV" --engine-dtype bf16 --batch "$b" --prompt-len 128 \
		--new-tokens "$NEW" --threads 0 --bandwidth-gbs "${copy/\?/0}" ${prof[@]+"${prof[@]}"} 2>&1 | tee -a "$J" >"$W/gen-$b.json"
	ours=$(last "$W/gen-$b.json")
	timeout "$(lim 300)" "$PY" scripts/gpu/ref_bench.py "$DEV" generate "$b" 128 "$NEW" 2>/dev/null | tee -a "$J" >"$W/ref-gen-$b.json"
	ref=$(last "$W/ref-gen-$b.json")
	read -r otok odec frac < <(jget "$ours" tokens_per_s decode_tokens_per_s bound_fraction)
	read -r rtok < <(jget "$ref" tokens_per_s)
	ratio=$("$PY" -c "import sys; a, b = sys.argv[1:]; print(f'{float(a)/float(b):.2f}x')" "$otok" "$rtok" 2>/dev/null || echo "?")
	ROWS+=("| decode batch $b | agentrl $otok tok/s (decode $odec, $frac of the bound) | generate $rtok tok/s | $ratio |")
done

{
	echo "## gpu-bench $(date -u +%Y-%m-%d) on $([ "$GPU" = 1 ] && "$PY" -c 'import torch; print(torch.cuda.get_device_name(0))' || echo "the CPU (rehearsal)")"
	echo
	echo "torch $("$PY" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)'), transformers $("$PY" -c 'import transformers; print(transformers.__version__)'); random Qwen2.5-0.5B shape; median of 5 after a warm-up"
	echo
	echo "| what | agentrl | reference | agentrl / reference |"
	echo "|---|---|---|---|"
	printf '%s\n' "${ROWS[@]}"
	echo
	echo "## Kernel profiles (libtorch's profiler, one more update or decode step after the measured runs)"
	for f in "${PROFILES[@]}"; do
		echo
		if [ -s "$f" ]; then cat "$f"; else echo "(no profile: $(basename "$f" .md) did not run to its end)"; fi
	done
} | tee "$OUT/gpu-bench.md"
