# agentrl build. `make test` and `make run` work on a fresh Debian bookworm
# machine by themselves: they install what is missing (make deps, as root),
# build the libtorch shim and the trainer, then test or run.

SHELL := /bin/bash
GO ?= go
CXX ?= g++
CXXFLAGS ?= -O2 -g0
# -fopenmp: at::parallel_for is inlined from ATen's headers and runs in
# parallel only when the shim itself is compiled with OpenMP (libtorch's
# libgomp, one shared pool); without it the decode kernels run serially.
# The C++ standard comes from the libtorch (cgo/torchflags.sh): C++17, or
# C++20 from libtorch 2.13.
CXXWARN := -fPIC -Wall -Wno-unused-parameter -fopenmp

# LIBTORCH is the libtorch to build against (cgo/torchflags.sh): a libtorch
# archive unpacked, the torch/ folder of a pip-installed PyTorch wheel, or a
# Debian-style prefix. `make` (CPU) defaults to Debian's libtorch-dev in
# /usr; `make cuda` to third_party/libtorch (docs/gpu.md). The CUDA build
# takes the CUDA headers at CUDA_HOME (by default the nvidia-* wheels' beside
# a wheel's torch, Debian's, or /usr/local/cuda); NCCL=off or GLOO=off builds without
# that backend; NCCL_HOME and GLOO_HOME point at headers libtorch lacks;
# PYTHON is the python whose torch LIBTORCH is, asked for the C++ ABI when
# libtorch does not say.
LIBTORCH ?=
CPU_LIBTORCH := $(or $(LIBTORCH),/usr)
CUDA_LIBTORCH := $(or $(LIBTORCH),third_party/libtorch)
CUDA_HOME ?=
NCCL ?= auto
NCCL_HOME ?=
GLOO ?= auto
GLOO_HOME ?=
PYTHON ?=
CPU_BUILD := build/cpu
CUDA_BUILD := build/cuda
FLAGS_ENV = CUDA_HOME='$(CUDA_HOME)' NCCL='$(NCCL)' NCCL_HOME='$(NCCL_HOME)' GLOO='$(GLOO)' GLOO_HOME='$(GLOO_HOME)' PYTHON='$(PYTHON)'

SHIM_SRC := $(wildcard cgo/*.cpp)
SHIM_HDR := $(wildcard cgo/*.h)
GO_SRC := $(shell find . -name '*.go' -not -path './third_party/*' 2>/dev/null) go.mod go.sum

APT_PKGS := libtorch-dev libgloo-dev libopenblas0-pthread g++ libsqlite3-dev chromium bubblewrap python3-protobuf
# Published MCP servers the tests run when node is installed (envs/tools/mcp):
# the filesystem server (stdio) and the reference server of the TypeScript SDK
# (streamable HTTP).
NPM_MCP := @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-everything@2026.8.31
# Published OpenAI clients the gateway's tests and the example agent run
# against `trainer serve` (gateway, examples/agents): the official SDK and
# the Agents SDK (zod is its peer dependency).
NPM_OPENAI := openai@7.57.0 @openai/agents@0.20.0 zod@4.1.12
TEST_TIMEOUT ?= 20m

export GOFLAGS := -tags=sqlite_fts5

.PHONY: all build flags deps cuda cuda-flags test vet bench run paper image clean fmt interop vllm-check

all: build

deps:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing with apt-get"; \
	  if [ "$$(id -u)" != 0 ]; then echo "deps: need root to install$$missing (run: sudo make deps)"; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else echo "deps: apt packages present ($(APT_PKGS))"; fi
	@echo "deps: go mod download"; $(GO) mod download
	@if [ -x third_party/npm/node_modules/.bin/mcp-server-filesystem ] && [ -x third_party/npm/node_modules/.bin/mcp-server-everything ]; then \
	  echo "deps: $(NPM_MCP) present"; \
	elif command -v npm >/dev/null; then echo "deps: npm install $(NPM_MCP) (into third_party/npm)"; \
	  timeout 300 npm install --prefix third_party/npm --no-audit --no-fund --silent $(NPM_MCP) \
	  || echo "deps: npm install failed; the tests of published MCP servers will skip"; \
	else echo "deps: no npm; the tests of published MCP servers will skip"; fi
	@if [ -f third_party/npm/node_modules/openai/package.json ] && [ -f third_party/npm/node_modules/@openai/agents/package.json ]; then \
	  echo "deps: $(NPM_OPENAI) present"; \
	elif command -v npm >/dev/null; then echo "deps: npm install $(NPM_OPENAI) (into third_party/npm)"; \
	  timeout 300 npm install --prefix third_party/npm --no-audit --no-fund --silent $(NPM_OPENAI) \
	  || echo "deps: npm install failed; the tests of the published OpenAI clients will skip"; \
	else echo "deps: no npm; the tests of the published OpenAI clients will skip"; fi

# cgo/torchflags.sh reads the libtorch (its version and so the C++
# standard, its C++ ABI, where nccl.h and gloo's headers are) and writes the
# flags to build/cpu/torch.mk or build/cuda/torch.mk, or stops and says where
# it looked. A fragment is replaced only when the flags change, so the
# objects that depend on it are rebuilt only then: switching LIBTORCH
# rebuilds the shim.
CPU_MK := $(CPU_BUILD)/torch.mk
CUDA_MK := $(CUDA_BUILD)/torch.mk
-include $(CPU_MK) $(CUDA_MK)

# flags MODE LIBTORCH FRAGMENT
define flags
@mkdir -p $(dir $(3))
@$(FLAGS_ENV) cgo/torchflags.sh $(1) '$(2)' > $(3).new || { rm -f $(3).new; exit 1; }
@if cmp -s $(3).new $(3); then rm $(3).new; else mv $(3).new $(3); fi
endef

flags:
	$(call flags,cpu,$(CPU_LIBTORCH),$(CPU_MK))
	@cat $(CPU_MK)

build: flags
	@$(MAKE) --no-print-directory bin/trainer

$(CPU_BUILD)/obj/%.o: cgo/%.cpp $(SHIM_HDR) $(CPU_MK)
	@mkdir -p $(dir $@)
	@echo "c++  $< -> $@ (libtorch $(CPU_TORCH_VERSION) at $(CPU_TORCH_LIBTORCH), $(CPU_TORCH_CXXSTD))"
	@$(CXX) $(CPU_TORCH_CXXSTD) $(CXXWARN) $(CXXFLAGS) $(CPU_TORCH_CPPFLAGS) -Icgo -c $< -o $@

# decode.cpp includes its kernels once per instruction set (cgo/decode_kernels.inc).
$(CPU_BUILD)/obj/decode.o $(CUDA_BUILD)/obj/decode.o: cgo/decode_kernels.inc

$(CPU_BUILD)/libagentrl.so: $(patsubst cgo/%.cpp,$(CPU_BUILD)/obj/%.o,$(SHIM_SRC))
	@echo "link $@"
	@$(CXX) -shared -fopenmp -o $@ $^ $(CPU_TORCH_LDFLAGS) -ltorch -ltorch_cpu -lc10 -ldl

bin/trainer: $(CPU_BUILD)/libagentrl.so $(GO_SRC)
	@mkdir -p bin
	@echo "go build -> bin/trainer (CPU)"
	@$(GO) build -o bin/trainer ./cmd/trainer

# ---- CUDA ------------------------------------------------------------------

cuda-flags:
	$(call flags,cuda,$(CUDA_LIBTORCH),$(CUDA_MK))
	@cat $(CUDA_MK)

cuda: cuda-flags
	@$(MAKE) --no-print-directory bin/trainer-cuda
	@cp bin/trainer-cuda bin/trainer
	@echo "bin/trainer is the CUDA build (libtorch at $(CUDA_LIBTORCH))"

# --no-as-needed: nothing references libtorch_cuda directly, and without it
# the linker drops the library and CUDA is silently unavailable at run time.
CUDA_LIBS := -Wl,--no-as-needed -ltorch_cuda -lc10_cuda -ltorch -ltorch_cpu -lc10 -Wl,--as-needed

$(CUDA_BUILD)/obj/%.o: cgo/%.cpp $(SHIM_HDR) $(CUDA_MK)
	@mkdir -p $(dir $@)
	@echo "c++  $< -> $@ (CUDA libtorch $(CUDA_TORCH_VERSION) at $(CUDA_TORCH_LIBTORCH), $(CUDA_TORCH_CXXSTD))"
	@$(CXX) $(CUDA_TORCH_CXXSTD) $(CXXWARN) $(CXXFLAGS) -DAGENTRL_CUDA $(CUDA_TORCH_CPPFLAGS) -Icgo -c $< -o $@

$(CUDA_BUILD)/libagentrl.so: $(patsubst cgo/%.cpp,$(CUDA_BUILD)/obj/%.o,$(SHIM_SRC))
	@echo "link $@"
	@$(CXX) -shared -fopenmp -o $@ $^ $(CUDA_TORCH_LDFLAGS) $(CUDA_LIBS) -ldl

bin/trainer-cuda: $(CUDA_BUILD)/libagentrl.so $(GO_SRC)
	@mkdir -p bin
	@echo "go build -tags cuda -> bin/trainer-cuda"
	@GOFLAGS="-tags=sqlite_fts5,cuda" $(GO) build -o bin/trainer-cuda ./cmd/trainer

# ---- checks ----------------------------------------------------------------

vet: build
	@echo "gofmt -l"; test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; exit 1; }
	@echo "go vet ./..."; $(GO) vet ./...
	@echo "go vet -tags cuda ./torch/ (the CUDA-only Go paths compile)"; GOFLAGS="-tags=sqlite_fts5,cuda" $(GO) vet ./torch/

# -count=1: Go's test cache does not see libagentrl.so, so after a change to
# the C++ alone it would report the old results of unchanged Go packages.
test: deps build vet
	@echo "go test -count=1 ./..."
	@$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

# The interop suite: agentrl's files through the real libraries (transformers,
# PEFT, TensorBoard) and theirs through agentrl. scripts/venv.sh makes (or
# reuses) the cached Python environment; the tests find it by AGENTRL_PYTHON
# and skip, saying why, without it (a plain make test).
INTEROP_PKGS := ./internal/pyinterop/ ./internal/hubcache/ ./tokenizer/ ./trainer/rollout/ ./torch/ ./torch/peft/ ./cmd/trainer/

# The real-shape tests (models of published sizes, minutes each) run in a
# go test of their own, so that each call has its own timeout.
interop: deps build
	@venv=$$(scripts/venv.sh torch-2.15) && echo "go test -run TestInterop (AGENTRL_PYTHON=$$venv/bin/python)" && \
	AGENTRL_PYTHON=$$venv/bin/python $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v -run TestInterop -skip RealShape $(INTEROP_PKGS) && \
	echo "go test -run 'TestInterop.*RealShape' ./torch/" && \
	AGENTRL_PYTHON=$$venv/bin/python $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v -run 'TestInterop.*RealShape' ./torch/

# The checks against a real vLLM server: vLLM's CPU build in the cached
# environment of scripts/vllm-venv.sh serves two random tiny Qwen2 models
# saved by transformers (docs/rollout-engines.md): decoding/vllm's client
# against transformers' own figures, then rollouts on the server against the
# built-in engine's and the training forward's, before and after a weight
# sync, short GRPO runs on the server (one of them killed mid-rollout and
# resumed: the CI leg vllm runs that one), and bench rollout's side-by-side
# mode on a tiny scenario.
# Without the environment (a plain make test) they skip, saying why. Each
# package is a go test of its own, so that each call has its own timeout.
vllm-check: deps build
	@venv=$$(scripts/vllm-venv.sh) && echo "go test -run TestRealVLLMServer ./decoding/vllm/ (AGENTRL_VLLM_VENV=$$venv)" && \
	AGENTRL_VLLM_VENV=$$venv $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v -run TestRealVLLMServer ./decoding/vllm/ && \
	echo "go test -run 'TestRealVLLM(Engine|Train|Resume)' ./trainer/" && \
	AGENTRL_VLLM_VENV=$$venv $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v -run 'TestRealVLLM(Engine|Train|Resume)' ./trainer/ && \
	echo "go test -run TestBenchRolloutVLLM ./cmd/trainer/" && \
	AGENTRL_VLLM_VENV=$$venv $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v -run TestBenchRolloutVLLM ./cmd/trainer/

bench: deps build
	@echo "go test -bench ./..."
	@$(GO) test -run '^$$' -bench . -benchtime 20x ./...

# Each `make run` is a new run (runs/default-<time>), so it can be repeated.
# make run: the default job with the row that moves, PPO with process rewards and
# near-miss continuations for 80 iterations (docs/experiments.md, amendments 14 and 15).
RUN_ROW := --set algorithm.estimator=gae --set env.rewards.support=0.3 --set algorithm.near_miss=true \
	--set run.iterations=80 --set run.eval_every=80

run: deps build
	@name=default-$$(date +%Y%m%d-%H%M%S); echo "bin/trainer train --run $$name $(RUN_ROW)"; \
	./bin/trainer train --run $$name $(RUN_ROW)

# The paper's table at CPU scale (docs/experiments.md, the protocol): per seed
# one warm start and one run of each row of experiment.PaperSpecs: PPO and
# the rows at 80 iterations on seeds 1-10 (amendment 17), the other core
# rows on 1-5 and the others on 1-3, evaluated at the end only.
# PAPER_JOBS runs train at once, one libtorch thread each, with decoding
# that waits for every search, so the figures depend on neither the
# machine's core count nor its load (the same libtorch gives the same
# table). Writes docs/results.md (intervals and a paired test per claim)
# and the curves beside it.
# Each seed s is tested in worlds of its own (world seed 10 + s) of
# PAPER_WORLD's size: 200 test and 100 out-of-domain questions each, over
# 10 test worlds; every training batch and the warm start's
# demonstrations are worlds of their own too (fresh worlds), so no fact
# is worth remembering (docs/experiments.md, amendments 5-8).
PAPER_JOBS ?= 2
PAPER_WORLD = --set data.synthetic.entities=100 --set data.synthetic.questions=500 \
	--set data.synthetic.test_fraction=0.4 --set data.synthetic.ood_questions=100 --set data.synthetic.fresh_worlds=true
PAPER_WARM = --set sft.warm_start=calls --set sft.demos=25600 --set sft.epochs=3
paper: deps build
	@echo "bin/trainer experiment paper (rows on 10, 5 or 3 seeds, fresh worlds; see docs/experiments.md)"
	@./bin/trainer experiment paper --seeds 1,2,3,4,5,6,7,8,9,10 --other-seeds 1,2,3 --world-seeds 11,12,13,14,15,16,17,18,19,20 $(PAPER_WORLD) $(PAPER_WARM) \
		--iterations 20 --set run.eval_every=0 --jobs $(PAPER_JOBS) --threads 1 --set rollout.deterministic=true --out docs/results.md

image:
	docker build -t agentrl:latest .

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf build bin
