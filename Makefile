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
CXXSTD := -std=c++17 -fPIC -Wall -Wno-unused-parameter -fopenmp

# CPU build: Debian's libtorch-dev.
CPU_BUILD := build/cpu
CPU_INC := -I/usr/include/torch/csrc/api/include
CPU_LIBS := -ltorch -ltorch_cpu -lc10

# CUDA build (docs/gpu.md): the CUDA libtorch at LIBTORCH, either the C++
# libtorch archive for your CUDA version unpacked or the torch/ folder of a
# pip-installed CUDA PyTorch wheel, and the CUDA toolkit at CUDA_HOME.
# NCCL=off or GLOO=off builds without that backend; NCCL_HOME and GLOO_HOME
# point at headers libtorch lacks; PYTHON is the python whose torch LIBTORCH
# is, asked for the C++ ABI when libtorch does not say.
LIBTORCH ?= third_party/libtorch
CUDA_HOME ?= /usr/local/cuda
NCCL ?= auto
NCCL_HOME ?=
GLOO ?= auto
GLOO_HOME ?=
PYTHON ?=
CUDA_BUILD := build/cuda

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

.PHONY: all build deps cuda cuda-flags test vet bench run paper image clean fmt interop

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

build: bin/trainer

$(CPU_BUILD)/obj/%.o: cgo/%.cpp $(SHIM_HDR)
	@mkdir -p $(dir $@)
	@echo "c++  $< -> $@ (CPU libtorch)"
	@$(CXX) $(CXXSTD) $(CXXFLAGS) $(CPU_INC) -Icgo -c $< -o $@

$(CPU_BUILD)/libagentrl.so: $(patsubst cgo/%.cpp,$(CPU_BUILD)/obj/%.o,$(SHIM_SRC))
	@echo "link $@"
	@$(CXX) -shared -fopenmp -o $@ $^ $(CPU_LIBS) -ldl

bin/trainer: $(CPU_BUILD)/libagentrl.so $(GO_SRC)
	@mkdir -p bin
	@echo "go build -> bin/trainer (CPU)"
	@$(GO) build -o bin/trainer ./cmd/trainer

# ---- CUDA ------------------------------------------------------------------

# cgo/torchflags.sh reads the libtorch at LIBTORCH (its C++ ABI, where nccl.h
# and gloo's headers are) and writes the flags to $(TORCH_MK), or stops and
# says where it looked. The file is replaced only when the flags change, so
# the objects that depend on it are rebuilt only then.
TORCH_MK := $(CUDA_BUILD)/torch.mk
-include $(TORCH_MK)

cuda-flags:
	@mkdir -p $(CUDA_BUILD)
	@CUDA_HOME='$(CUDA_HOME)' NCCL='$(NCCL)' NCCL_HOME='$(NCCL_HOME)' GLOO='$(GLOO)' GLOO_HOME='$(GLOO_HOME)' PYTHON='$(PYTHON)' \
	  cgo/torchflags.sh '$(LIBTORCH)' > $(TORCH_MK).new || { rm -f $(TORCH_MK).new; exit 1; }
	@if cmp -s $(TORCH_MK).new $(TORCH_MK); then rm $(TORCH_MK).new; else mv $(TORCH_MK).new $(TORCH_MK); fi
	@cat $(TORCH_MK)

cuda: cuda-flags
	@$(MAKE) --no-print-directory bin/trainer-cuda
	@cp bin/trainer-cuda bin/trainer
	@echo "bin/trainer is the CUDA build (libtorch at $(LIBTORCH))"

# --no-as-needed: nothing references libtorch_cuda directly, and without it
# the linker drops the library and CUDA is silently unavailable at run time.
CUDA_LIBS := -Wl,--no-as-needed -ltorch_cuda -lc10_cuda -ltorch -ltorch_cpu -lc10 -Wl,--as-needed

$(CUDA_BUILD)/obj/%.o: cgo/%.cpp $(SHIM_HDR) $(TORCH_MK)
	@mkdir -p $(dir $@)
	@echo "c++  $< -> $@ (CUDA libtorch at $(LIBTORCH))"
	@$(CXX) $(CXXSTD) $(CXXFLAGS) -DAGENTRL_CUDA $(TORCH_CPPFLAGS) -Icgo -c $< -o $@

$(CUDA_BUILD)/libagentrl.so: $(patsubst cgo/%.cpp,$(CUDA_BUILD)/obj/%.o,$(SHIM_SRC))
	@echo "link $@"
	@$(CXX) -shared -fopenmp -o $@ $^ $(TORCH_LDFLAGS) $(CUDA_LIBS) -ldl

bin/trainer-cuda: $(CUDA_BUILD)/libagentrl.so $(GO_SRC)
	@mkdir -p bin
	@echo "go build -tags cuda -> bin/trainer-cuda"
	@GOFLAGS="-tags=sqlite_fts5,cuda" $(GO) build -o bin/trainer-cuda ./cmd/trainer

# ---- checks ----------------------------------------------------------------

vet: $(CPU_BUILD)/libagentrl.so
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
INTEROP_PKGS := ./internal/pyinterop/ ./torch/ ./torch/peft/ ./cmd/trainer/

interop: deps build
	@venv=$$(scripts/venv.sh torch-2.15) && echo "go test -run TestInterop (AGENTRL_PYTHON=$$venv/bin/python)" && \
	AGENTRL_PYTHON=$$venv/bin/python $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v -run TestInterop $(INTEROP_PKGS)

bench: deps build
	@echo "go test -bench ./..."
	@$(GO) test -run '^$$' -bench . -benchtime 20x ./...

# Each `make run` is a new run (runs/default-<time>), so it can be repeated.
run: deps build
	@name=default-$$(date +%Y%m%d-%H%M%S); echo "bin/trainer train --name $$name (built-in default job)"; \
	./bin/trainer train --name $$name

# The paper's table at CPU scale: per seed one warm start and one run of each
# RL row of experiment.PaperSpecs (80 iterations); about 25 minutes on a quiet
# 2-core machine with 8 RL rows, under 40 with 12 (docs/experiments.md).
# Writes docs/results.md and the curves beside it.
paper: deps build
	@echo "bin/trainer experiment paper (3 seeds, every row of experiment.PaperSpecs, see docs/results.md)"
	@./bin/trainer experiment paper --seeds 1,2,3 --iterations 80 --out docs/results.md

image:
	docker build -t agentrl:latest .

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf build bin
