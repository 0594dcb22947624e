# agentrl on CUDA: `make image` (docker build -t agentrl:latest .).
#
# Stage 1 builds the shim and the trainer with `make cuda` against the
# CUDA 12.1 C++ libtorch; stage 2 is the CUDA runtime plus what the binary
# loads. Run it with the NVIDIA container toolkit:
#
#   docker run --gpus all --rm \
#     -v /srv/models:/models -v /srv/data:/data -v /srv/runs:/runs \
#     agentrl:latest train --config /opt/agentrl/examples/qwen2.5-3b-hotpotqa-grpo.yaml
#
# examples/README.md says how to fill /models and /data.
#
# libtorch 2.3.1: the shim is written against 1.13, and what it uses still
# reads the same in 2.3's headers: c10::cuda::CUDACachingAllocator::
# getDeviceStats (now taking a c10::DeviceIndex, which an int converts to),
# StatType::AGGREGATE and emptyCache(); at::show_config() with
# "TORCH_VERSION=" in its build settings; the TORCH_VERSION_MAJOR/MINOR
# macros; c10::OutOfMemoryError. Later releases move StatType out of that
# namespace (into c10::CachingDeviceAllocator, then c10::CachingAllocator),
# so a newer LIBTORCH_VERSION needs cgo/library.cpp adjusted first.

ARG CUDA_VERSION=12.1.1
ARG UBUNTU=ubuntu22.04

FROM nvidia/cuda:${CUDA_VERSION}-cudnn8-devel-${UBUNTU} AS build

ARG LIBTORCH_VERSION=2.3.1
ARG LIBTORCH_CUDA=cu121
ARG GO_VERSION=1.26.8

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates curl unzip g++ make \
 && rm -rf /var/lib/apt/lists/*

# The cxx11-ABI build, matching Ubuntu's g++ (the pre-cxx11 zip would not link).
RUN curl -fsSL -o /tmp/libtorch.zip \
      "https://download.pytorch.org/libtorch/${LIBTORCH_CUDA}/libtorch-cxx11-abi-shared-with-deps-${LIBTORCH_VERSION}%2B${LIBTORCH_CUDA}.zip" \
 && unzip -q /tmp/libtorch.zip -d /opt \
 && rm /tmp/libtorch.zip \
 && test -f /opt/libtorch/lib/libtorch_cuda.so

RUN curl -fsSL "https://go.dev/dl/go${GO_VERSION}.linux-amd64.tar.gz" | tar -C /usr/local -xz
ENV PATH=/usr/local/go/bin:${PATH} \
    GOTOOLCHAIN=local

WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Links build/cuda/libagentrl.so with -Wl,--no-as-needed -ltorch_cuda and
# rpath /opt/libtorch/lib, then bin/trainer with -tags cuda. Linking the
# binary, ld also resolves the libraries libtorch itself needs (its bundled
# CUDA libraries): LD_LIBRARY_PATH points it there; the runtime image needs
# no such variable.
ENV LD_LIBRARY_PATH=/opt/libtorch/lib:${LD_LIBRARY_PATH}
RUN make cuda LIBTORCH=/opt/libtorch CUDA_HOME=/usr/local/cuda

FROM nvidia/cuda:${CUDA_VERSION}-runtime-${UBUNTU}

LABEL org.opencontainers.image.title="agentrl" \
      org.opencontainers.image.description="End-to-end RL training of tool-using LLM agents (Go on libtorch, CUDA build)" \
      io.agentrl.volume.models="/models: Hugging Face model folders (config.json, *.safetensors, tokenizer.json), read only" \
      io.agentrl.volume.data="/data: datasets, corpora and search indexes (trainer index writes its --out here)" \
      io.agentrl.volume.runs="/runs: one folder per run: store.db, checkpoints, logs, report, written"

# Where each file's loader looks, so no LD_LIBRARY_PATH is needed:
# bin/trainer has RUNPATH $ORIGIN/../lib (torch/cgo_cuda.go), so the shim
# goes to /opt/agentrl/lib; the shim has RUNPATH /opt/libtorch/lib (the
# Makefile's rpath to $(LIBTORCH)/lib), so libtorch keeps its build path;
# libtorch's own libraries find their bundled CUDA libraries by $ORIGIN.
COPY --from=build /opt/libtorch/lib /opt/libtorch/lib
COPY --from=build /src/build/cuda/libagentrl.so /opt/agentrl/lib/libagentrl.so
COPY --from=build /src/bin/trainer /opt/agentrl/bin/trainer
COPY examples /opt/agentrl/examples

ENV PATH=/opt/agentrl/bin:${PATH}

VOLUME ["/models", "/data", "/runs"]

# run.dir defaults to "runs" relative to the working directory: from /,
# runs land in the /runs volume even without --run-dir /runs.
WORKDIR /
ENTRYPOINT ["/opt/agentrl/bin/trainer"]
CMD ["--help"]
