#!/usr/bin/env bash
# scripts/gpu-check.sh: the GPU run of issue 39, every step in order, in
# one call of the device tool (docs/gpu.md, "The GPU script"). The machine
# has no Go: scripts/gpu-prepare.sh builds the Go binaries here into gpu/
# (carried); this script builds only the shim there, against the machine's
# torch, and runs:
#
#   1 shim    make the CUDA shim: zero errors and warnings, ldd shows
#             libtorch_cuda, the trainer sees CUDA
#   2 torch   the torch tests on cuda:0: qwen2-tiny-a and qwen3-tiny-a
#             parity (f32, TF32 off, every decode path), CUDA-graph decode
#             vs eager vs CPU, one short compute-sanitizer memcheck run
#   3 default the default job on cuda:0 in f32, and in bf16 (f32 masters),
#             with its former warm start (800 demonstrations x 8 epochs)
#   4 0.5b    a Qwen2.5-0.5B-shaped random model: 3 GRPO iterations, 64
#             slots, 2048 max tokens; peak memory beside the dry run's estimate
#   5 gloo    two ranks on the one GPU over Gloo, one iteration in one
#             world (ONE_WORLD)
#   6 interop transformers' logits (0.5B shape, f32; and bf16 against
#             transformers' own bf16 distance) against agentrl's; a
#             LoRA adapter agentrl wrote, loaded by PEFT; a run's tb/ read
#             by TensorBoard
#
# A step that fails is recorded (why, and its log) and the next one runs.
# Each prints as it goes; the table at the end (markdown) goes to stdout and
# to $OUT/gpu-check.md, each step's log to $OUT/logs/.
#
# Without a GPU (a rehearsal) every part that needs none runs, on the CPU,
# and the CUDA-only parts say that they skip.
#
# Environment: AGENTRL_GPU_PYTHON (the machine's python with torch,
# transformers, peft, tensorboard; default /opt/torch/.venv/bin/python3),
# OUT (default gpu-out/), JOBS (make -j, default nproc), and the time limit
# of each command in seconds: T_SHIM T_TORCH T_SANITIZER T_DEFAULT T_05B
# T_GLOO T_INTEROP, all cut to what is left of BUDGET (510 s: the script
# ends within 9 minutes); ITERATIONS is the default job's (step 3, 5);
# STEPS the steps to run (default "1 2 3 4 5 6"; a rerun may name fewer).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${AGENTRL_GPU_PYTHON:-/opt/torch/.venv/bin/python3}
OUT=${OUT:-$ROOT/gpu-out}
JOBS=${JOBS:-$(nproc)}
ITERATIONS=${ITERATIONS:-5}
BUDGET=${BUDGET:-510}
STEPS=${STEPS:-1 2 3 4 5 6}
T_SHIM=${T_SHIM:-200} T_TORCH=${T_TORCH:-60} T_SANITIZER=${T_SANITIZER:-60} T_DEFAULT=${T_DEFAULT:-60}
T_05B=${T_05B:-150} T_GLOO=${T_GLOO:-45} T_INTEROP=${T_INTEROP:-60}
W=$(mktemp -d /tmp/gpu-check.XXXXXX)
mkdir -p "$OUT/logs"
T0=$(date +%s)
ROWS=()

say() { echo "[gpu-check +$(($(date +%s) - T0))s] $*"; }
# fig KEY VALUE: one figure of the step that runs now.
fig() { FIG+="${FIG:+, }$1 $2"; }
# fail WHY: the step failed (the first reason is kept).
fail() { say "FAILED: $*"; [ "$STATUS" = ran ] && STATUS="failed: $*"; return 0; }
# skip WHY: a part of the step that cannot run here.
skip() { say "skip: $*"; SKIPS+="${SKIPS:+; }$*"; }
# run LIMIT CMD...: the command under a time limit, cut to what is left of
# BUDGET; its status, 124 when it ran out (or the budget is spent).
run() {
	local limit=$1 left=$((BUDGET - ($(date +%s) - T0)))
	shift
	[ "$left" -lt "$limit" ] && limit=$left
	if [ "$limit" -lt 5 ]; then
		say "budget of $BUDGET s spent: not running $1"
		return 124
	fi
	say "\$ $* (limit $limit s)"
	timeout --kill-after=10 "$limit" "$@"
}
# step NAME FUNCTION: runs FUNCTION with its output to the console and to
# $OUT/logs/NAME.log, then records its row.
step() {
	local name=$1 fn=$2 s
	case " $STEPS " in *" ${name%%-*} "*) ;; *)
		say "==== step $name: not in STEPS ($STEPS)"
		return
		;;
	esac
	s=$(date +%s)
	STATUS=ran FIG="" SKIPS=""
	say "==== step $name"
	"$fn" > >(tee "$OUT/logs/$name.log") 2>&1
	sleep 0.2
	local status=$STATUS
	[ -n "$SKIPS" ] && status+=" (skipped: $SKIPS)"
	ROWS+=("| $name | $status | $(($(date +%s) - s)) | ${FIG:--} |")
	say "==== step $name: $status in $(($(date +%s) - s)) s; $FIG"
}
# max_diff LOG: the largest number after "max |diff|" in LOG.
max_diff() {
	grep -oE 'max \|diff\|[^0-9]*[0-9.e+-]+' "$1" | grep -oE '[0-9.]+(e[+-][0-9]+)?$' | sort -g | tail -n 1
}
# test_log NAME LOG: the lines of go test -v output LOG of the test NAME.
test_log() {
	awk -v n="$1" '$0 == "=== RUN   " n {p = 1} p {print} p && index($0, "--- ") == 1 && index($0, ": " n " (") {exit}' "$2"
}

# ---- setup ---------------------------------------------------------------

"$PY" -c 'import torch' 2>/dev/null || { echo "gpu-check: $PY cannot import torch (set AGENTRL_GPU_PYTHON)"; exit 2; }
GPU=$("$PY" -c 'import torch; print(int(torch.cuda.is_available()))')
if [ "$GPU" = 1 ]; then
	DEV=cuda:0
	say "GPU: $("$PY" -c 'import torch; p=torch.cuda.get_device_properties(0); print(p.name, round(p.total_memory/2**30), "GiB")'), torch $("$PY" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)')"
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/gpu-check: /'
else
	DEV=cpu
	say "no GPU: a rehearsal on the CPU (torch $("$PY" -c 'import torch; print(torch.__version__)')); the CUDA-only parts skip"
fi
# The binaries and data are unpacked into the work folder, so gpu/ stays as
# carried; the binaries find the shim through their RUNPATH $ORIGIN/../lib.
mkdir -p "$W/bin" "$W/lib"
for f in gpu/bin/*.xz; do
	b=$W/bin/$(basename "$f" .xz)
	xz -dc "$f" >"$b" && chmod +x "$b" || { echo "gpu-check: cannot unpack $f"; exit 2; }
done
ln -sfn "$ROOT/build/cuda/libagentrl.so" "$W/lib/libagentrl.so"
cp -r gpu/shared "$W/shared" && xz -d "$W/shared/data/tokenizers/qwen/tokenizer.json.xz"
export AGENTRL_SHARED=$W/shared
TR=$W/bin/trainer
TORCH_DIR=$("$PY" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
say "prepared at $(cat gpu/commit 2>/dev/null), tree at $(git rev-parse HEAD 2>/dev/null || echo '?'); work folder $W"

# ---- 1 the shim ----------------------------------------------------------

step_shim() {
	local gloo=/usr
	if [ ! -f "$TORCH_DIR/include/gloo/config.h" ] && [ ! -f /usr/include/gloo/config.h ]; then
		mkdir -p "$W/gloo/include" && tar -C "$W/gloo/include" -xJf gpu/gloo.tar.xz
		gloo=$W/gloo
	fi
	rm -rf build/cuda
	local log=$OUT/logs/shim-build.log
	run "$T_SHIM" make -j"$JOBS" cuda-flags LIBTORCH="$TORCH_DIR" GLOO_HOME="$gloo" PYTHON="$PY" >"$log" 2>&1 &&
		run "$T_SHIM" make -j"$JOBS" build/cuda/libagentrl.so LIBTORCH="$TORCH_DIR" GLOO_HOME="$gloo" PYTHON="$PY" >>"$log" 2>&1
	local rc=$?
	cat "$log"
	fig warnings "$(grep -c 'warning:' "$log")"
	fig errors "$(grep -c 'error:' "$log")"
	[ $rc = 0 ] || { fail "make exited $rc"; return; }
	grep -q 'warning:' "$log" && fail "compiler warnings"
	if ldd build/cuda/libagentrl.so | grep -q libtorch_cuda; then fig ldd libtorch_cuda; else fail "ldd shows no libtorch_cuda"; fi
	ldd "$TR" | grep libagentrl
	# The binaries' RUNPATH: the build folder where gpu-prepare.sh linked them,
	# then $ORIGIN/../lib; either way it must be the shim just built.
	local so
	so=$(ldd "$TR" | awk '/libagentrl.so/ {print $3}')
	[ -n "$so" ] && [ "$(readlink -f "$so")" = "$(readlink -f build/cuda/libagentrl.so)" ] ||
		fail "the trainer loads ${so:-no libagentrl.so}, not build/cuda/libagentrl.so"
	"$TR" --version
	if [ "$GPU" = 1 ]; then
		if run 60 "$TR" train --dry-run --device cuda:0 --run-dir "$W/runs" --run dry; then fig CUDA available; else fail "the trainer does not see CUDA"; fi
	else
		skip "CUDA available (no GPU)"
	fi
}
step 1-shim step_shim

# ---- 2 the torch tests on cuda:0 ------------------------------------------

step_torch() {
	local log=$W/torch.log
	(cd torch && AGENTRL_TEST_DEVICE=$DEV NVIDIA_TF32_OVERRIDE=0 run "$T_TORCH" "$W/bin/torch.test" -test.count=1 -test.v \
		-test.run 'FixtureParity|GraphDecodeAgrees|GraphReplayCheck|PrefillBatch') >"$log" 2>&1
	local rc=$?
	cat "$log"
	fig device "$DEV"
	fig qwen2-tiny-a "$(max_diff <(test_log TestQwen2FixtureParity "$log"))"
	fig qwen3-tiny-a "$(max_diff <(test_log TestQwen3FixtureParity "$log"))"
	if grep -q 'slots: max |diff| to the CPU' "$log"; then
		fig graph-vs-cpu "$(grep -oE 'logprobs [0-9.e+-]+, pending logits [0-9.e+-]+' "$log" | tr -d , | awk '{print $2; print $5}' | sort -g | tail -n 1)"
	fi
	grep -E '^\s+--- SKIP' "$log" | sed 's/^ *//' | while read -r l; do say "$l"; done
	[ "$DEV" = cpu ] && skip "on cuda:0 (no GPU; ran on the CPU)"
	grep -q 'TestGraphDecodeAgrees.*SKIP\|--- SKIP: TestGraphDecodeAgrees' "$log" && [ "$DEV" = cpu ] && skip "CUDA graphs (no GPU)"
	[ $rc = 0 ] || fail "torch.test exited $rc"
	if [ "$GPU" = 1 ] && command -v compute-sanitizer >/dev/null; then
		local slog=$OUT/logs/memcheck.log
		# Both thread settings set, so the test binary does not re-execute itself
		# (torch.PassiveOpenMP): a re-exec through Go's raw execve drops the
		# sanitizer's LD_PRELOAD, and it then sees no CUDA call at all.
		(cd torch && AGENTRL_TEST_DEVICE=$DEV NVIDIA_TF32_OVERRIDE=0 OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=16 \
			run "$T_SANITIZER" compute-sanitizer --tool memcheck \
			--error-exitcode 3 "$W/bin/torch.test" -test.count=1 -test.run 'TestQwen2FixtureParity/^(logits|unfused|fused)$') >"$slog" 2>&1
		rc=$?
		tail -n 5 "$slog"
		fig memcheck "$(grep -oE 'ERROR SUMMARY: [0-9]+ errors?' "$slog" | tail -n 1 | sed 's/ERROR SUMMARY: //')"
		grep -q 'terminated before first instrumented API call' "$slog" && fail "compute-sanitizer saw no CUDA call"
		[ $rc = 0 ] || fail "compute-sanitizer exited $rc"
	else
		skip "compute-sanitizer memcheck (no GPU or no compute-sanitizer)"
	fi
}
step 2-torch step_torch

# ---- 3 the default job ----------------------------------------------------

# default_job NAME DTYPE: the built-in job on $DEV.
default_job() {
	local log=$W/$1.log s
	s=$(date +%s)
	run "$T_DEFAULT" "$TR" train --device "$DEV" --device-dtype "$2" --iterations "$ITERATIONS" --sft-demos 800 --sft-epochs 8 \
		--run-dir "$W/runs" --run "$1" --logging-format console >"$log" 2>&1
	local rc=$?
	tail -n 25 "$log"
	fig "$2" "$(($(date +%s) - s)) s"
	[ $rc = 124 ] && { fail "$2: not done in $T_DEFAULT s (iterations $ITERATIONS)"; return; }
	[ $rc = 0 ] || { fail "$2: exited $rc"; return; }
	# The last row of the results table and its EM column.
	fig "$2 EM" "$(awk '/^Results \(exact match/ {r = 1; next}
		r && /^method/ {for (i = 1; i <= NF; i++) if ($i == "EM") k = NF - i; next}
		r && /[0-9]\.[0-9][0-9][0-9]/ {n = substr($0, 1, 18); sub(/ +$/, "", n); last = n " " $(NF - k)}
		END {print last}' "$log")"
	[ -f "$W/runs/$1/store.db" ] || fail "$2: no store.db"
	find "$W/runs/$1" -name report.html | grep -q . || fail "$2: no report.html"
	# The sampler's CUDA graphs: off (and why) when a capture failed.
	local off
	off=$(grep -m1 -o 'CUDA graphs off.*' "$log" | cut -c1-300)
	fig "$2 CUDA graphs" "${off:-on}"
	# What the sampler's engine did over the run (a graph per row count
	# captured once, the fused weights rewritten once per update).
	fig "$2 engine" "$("$PY" - "$W/runs/$1/store.db" <<'EOF'
import json, sqlite3, sys
ms = [json.loads(m) for (m,) in sqlite3.connect(sys.argv[1]).execute("SELECT metrics FROM iterations WHERE iteration > 0")]
s = lambda k: sum(m.get(k, 0) for m in ms)
print(f"{len(ms)} iterations: graph captures {s('cuda_graph_captures'):g}, weight refreshes {s('engine_refreshes'):g}, steps without a graph {s('engine_eager_steps'):g}")
EOF
)"
}
step_default() {
	fig iterations "$ITERATIONS"
	default_job default-f32 f32
	default_job default-bf16 bf16
}
step 3-default step_default

# ---- 4 the Qwen2.5-0.5B shape ---------------------------------------------

M05=$W/qwen2.5-0.5b-random
# model05: the random Qwen2.5-0.5B-shaped folder, made once (steps 4 and 6).
model05() {
	local mdev=cpu
	[ "$GPU" = 1 ] && mdev=cuda
	[ -f "$M05/config.json" ] || run 120 "$PY" scripts/gpu/make_model.py "$M05" "$W/shared/data/tokenizers/qwen" bf16 "$mdev"
}
step_05b() {
	model05 || { fail "make_model.py"; return; }
	local args=(--model "$M05" --device-dtype bf16 --rollout-slots 64 --rollout-batch-size 16 --rollout-group-size 4
		--env-max-tokens 2048 --env-max-turn-tokens 512 --algorithm-micro-batch 2 --iterations 3 --eval-baselines=false
		--eval-max-eval 16 --run-eval-every 0 --no-report --run-dir "$W/runs" --run q05 --logging-format console)
	run 60 "$TR" train --dry-run --device "$DEV" "${args[@]}" >"$W/q05-dry.log" 2>&1 || fail "dry run"
	tail -n 8 "$W/q05-dry.log"
	fig "dry-run estimate" "$(grep '^memory:' "$W/q05-dry.log" | sed 's/^memory: *//; s/ (.*//')"
	if [ "$GPU" != 1 ]; then
		skip "3 iterations at 64 slots x 2048 tokens (no GPU)"
		return
	fi
	local s
	s=$(date +%s)
	run "$T_05B" "$TR" train --device "$DEV" "${args[@]}" >"$W/q05.log" 2>&1
	local rc=$?
	tail -n 20 "$W/q05.log"
	fig wall "$(($(date +%s) - s)) s"
	[ $rc = 124 ] && fail "not done in $T_05B s"
	[ $rc = 0 ] || [ $rc = 124 ] || fail "exited $rc"
	# The per-iteration metrics, from the store's iterations table.
	"$PY" - "$W/runs/q05/store.db" <<'EOF' | tee "$W/q05-figs.txt"
import json, sqlite3, sys
keys = ["cuda_peak_gb", "cuda_graphs", "cuda_graph_captures", "engine_refreshes", "engine_eager_steps", "time_rollout_s", "time_update_s", "tokens_per_s_rollout", "tokens_per_s_update"]
for it, m in sqlite3.connect(sys.argv[1]).execute("SELECT iteration, metrics FROM iterations ORDER BY iteration"):
    m = json.loads(m)
    print(f"{it}:", " ".join(f"{k}={m[k]:.4g}" for k in keys if k in m))
EOF
	while read -r l; do fig "iteration" "$l"; done < <(tail -n 3 "$W/q05-figs.txt")
}
step 4-0.5b step_05b

# ---- 5 two ranks on one GPU over Gloo --------------------------------------

# ONE_WORLD: the job of steps 5 and 6, one shared world and a warm start
# that answers some of its questions, so that one GRPO iteration has
# rewards that differ within groups and so a gradient: the ranks' weights
# and the LoRA adapter must move for their checks to mean anything (in
# fresh worlds a short warm start scores 0 everywhere, and the adapter
# stayed exactly zero: caught by the CPU rehearsal, 2026-11-29).
ONE_WORLD=(--set data.synthetic.fresh_worlds=false --sft-demos 800 --sft-epochs 8)

step_gloo() {
	# Each rank as if on a machine of its own (LOCAL_RANK 0), so both take cuda:0.
	local port=$((29500 + RANDOM % 1000)) r pids=() rc=0
	for r in 0 1; do
		RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
			run "$T_GLOO" "$TR" train --device "$DEV" --dist-backend gloo --iterations 1 "${ONE_WORLD[@]}" --no-report \
			--eval-baselines=false --eval-max-eval 8 --run-dir "$W/runs" --run gloo --logging-format console >"$W/gloo-$r.log" 2>&1 &
		pids+=($!)
	done
	for r in 0 1; do wait "${pids[$r]}" || rc=$?; tail -n 8 "$W/gloo-$r.log" | sed "s/^/rank $r: /"; done
	fig device "$DEV"
	[ $rc = 0 ] || { fail "a rank exited $rc"; return; }
	grep -qi 'weights.*differ\|do not agree' "$W"/gloo-*.log && fail "the ranks' weights differ"
	fig weights "agreed (checked before the save)"
}
step 5-gloo step_gloo

# ---- 6 cross-checks with transformers, PEFT and TensorBoard ----------------

step_interop() {
	local mdev=cpu
	[ "$GPU" = 1 ] && mdev=cuda
	if model05; then
		run 120 "$PY" scripts/gpu/fixture.py "$M05" "$W/fixture-05b" "$mdev" || fail "fixture.py"
		(cd torch && AGENTRL_TEST_DEVICE=$DEV NVIDIA_TF32_OVERRIDE=0 AGENTRL_QWEN2_FIXTURE=$W/fixture-05b \
			run "$T_INTEROP" "$W/bin/torch.test" -test.count=1 -test.v -test.run 'TestQwen2FixtureParity') >"$W/parity-05b.log" 2>&1 ||
			fail "0.5B logits: torch.test exited $?"
		grep -E 'max \|diff\||FAIL|SKIP|ok|PASS' "$W/parity-05b.log"
		fig "0.5B f32 vs transformers f64" "$(max_diff "$W/parity-05b.log")"
		(cd torch && AGENTRL_TEST_DEVICE=$DEV AGENTRL_BF16_FIXTURE=$W/fixture-05b \
			run "$T_INTEROP" "$W/bin/torch.test" -test.count=1 -test.v -test.run 'TestBF16FixtureParity') >"$W/bf16-05b.log" 2>&1 ||
			fail "0.5B bf16 logits: torch.test exited $?"
		grep -E 'bf16:|FAIL|SKIP|ok|PASS' "$W/bf16-05b.log"
		fig "0.5B bf16 vs f64 (transformers bf16)" "$(grep -oE 'to float64 [0-9.e+-]+ \(transformers bf16: [0-9.e+-]+' "$W/bf16-05b.log" |
			sed 's/to float64 //; s/(transformers bf16: /(/; s/$/)/')"
	else
		fail "make_model.py"
	fi
	run "$T_INTEROP" "$TR" train --device "$DEV" --model-lora-rank 8 --iterations 1 "${ONE_WORLD[@]}" --eval-baselines=false --eval-max-eval 8 \
		--run-dir "$W/runs" --run lora --logging-format console >"$W/lora.log" 2>&1 || { tail -n 20 "$W/lora.log"; fail "LoRA run exited"; }
	tail -n 3 "$W/lora.log"
	run 60 "$TR" merge --run lora --run-dir "$W/runs" --out "$W/lora-merged" --dtype f32 || fail "trainer merge"
	run 60 "$PY" scripts/gpu/peft_check.py "$W/runs/lora/base" "$W/runs/lora/final" "$W/lora-merged" "$mdev" | tee "$W/peft.log" ||
		fail "PEFT"
	fig peft "$(grep -oE 'max \|PEFT - merged\| [0-9.e+-]+' "$W/peft.log" | awk '{print $NF}')"
	run 60 "$PY" scripts/gpu/tb_check.py "$W/runs/lora/tb" | tee "$W/tb.log" || fail "TensorBoard"
	fig tensorboard "$(grep -oE '[0-9]+ scalar tags, [0-9]+ points' "$W/tb.log")"
}
step 6-interop step_interop

# ---- the table -------------------------------------------------------------

{
	echo "## gpu-check $(date -u +%Y-%m-%dT%H:%MZ) on $([ "$GPU" = 1 ] && "$PY" -c 'import torch; print(torch.cuda.get_device_name(0))' || echo "the CPU (rehearsal, $(nproc) cores)")"
	echo
	echo "torch $("$PY" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)'), transformers $("$PY" -c 'import transformers; print(transformers.__version__)' 2>/dev/null), binaries of $(cut -c1-12 gpu/commit 2>/dev/null), tree $(git rev-parse --short=12 HEAD 2>/dev/null || echo '?'), $(($(date +%s) - T0)) s in all"
	echo
	echo "| step | result | s | figures |"
	echo "|---|---|---|---|"
	printf '%s\n' "${ROWS[@]}"
} | tee "$OUT/gpu-check.md"
rm -rf "$W"
