# agentrl on CUDA: `make image` (docker build -t agentrl:latest .).
#
# CUDA 12.8.1 (the nvidia/cuda devel and runtime images on Ubuntu 24.04)
# with the C++ libtorch 2.8.0 for CUDA 12.8 (cu128), Go 1.26. Stage 1 builds
# the shim and the trainer with `make cuda` (docs/gpu.md); stage 2 is the
# CUDA runtime plus what the binary loads. Run it with the NVIDIA container
# toolkit:
#
#   docker run --gpus all --rm \
#     -v /srv/models:/models -v /srv/data:/data -v /srv/runs:/runs \
#     agentrl:latest train --config /opt/agentrl/examples/qwen2.5-3b-hotpotqa-grpo.yaml
#
# examples/README.md says how to fill /models and /data.
#
# Never built here (no Docker engine, no GPU): the image tags, the archive's
# name and the NCCL version below are read from public sources, not tried.
# The shim must compile against libtorch 2.8's headers (docs/gpu.md says
# what of the CUDA path is still unrun).

ARG CUDA_VERSION=12.8.1
ARG UBUNTU=ubuntu24.04

FROM nvidia/cuda:${CUDA_VERSION}-devel-${UBUNTU} AS build

ARG LIBTORCH_VERSION=2.8.0
ARG LIBTORCH_CUDA=cu128
ARG GO_VERSION=1.26.8
# The NCCL this libtorch was built with: torch 2.8.0's cu128 wheels require
# nvidia-nccl-cu12==2.27.3, and PyTorch's release builds check that their
# NCCL matches that requirement. Change it with LIBTORCH_VERSION
# (python3 -c 'import torch;print(torch.cuda.nccl.version())' tells). Not
# named NCCL_VERSION: the CUDA images set that variable (for their own
# libnccl), and an image's ENV wins over an ARG of the same name.
ARG LIBTORCH_NCCL=2.27.3
# `--build-arg GLOO=off` builds without the Gloo backend, should this
# libtorch lack gloo's headers (make cuda then stops and says so).
ARG GLOO=auto

# binutils (with g++) gives nm, which make cuda reads the C++ ABI with:
# PyTorch's TorchConfig.cmake stopped stating it around 2.8.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates curl unzip g++ make python3-pip \
 && rm -rf /var/lib/apt/lists/*

# From 2.8 the archive is named without "cxx11-abi" (the pre-cxx11 builds
# were dropped); 2.7 and earlier are libtorch-cxx11-abi-shared-with-deps-*.
RUN curl -fsSL -o /tmp/libtorch.zip \
      "https://download.pytorch.org/libtorch/${LIBTORCH_CUDA}/libtorch-shared-with-deps-${LIBTORCH_VERSION}%2B${LIBTORCH_CUDA}.zip" \
 && unzip -q /tmp/libtorch.zip -d /opt \
 && rm /tmp/libtorch.zip \
 && test -f /opt/libtorch/lib/libtorch_cuda.so

# Data parallelism (cgo/dist.cpp) compiles c10d's ProcessGroupNCCL against
# nccl.h, which the archive does not ship (PyTorch builds it against the
# NCCL of its build image). It must be the header of the NCCL
# libtorch was built with (ProcessGroupNCCL::Options embeds ncclConfig_t):
# the nvidia-nccl-cu12 wheel of that version holds it in nvidia/nccl/include,
# the folder make cuda reads as NCCL_HOME/include; it comes before the devel
# image's own /usr/include/nccl.h (another version). Only the header is
# used: libtorch runs the NCCL it was built with.
RUN python3 -m pip download --no-deps --only-binary=:all: --dest /tmp/nccl "nvidia-nccl-cu12==${LIBTORCH_NCCL}" \
 && unzip -q /tmp/nccl/nvidia_nccl_cu12-*.whl 'nvidia/nccl/include/*' -d /opt/nccl-wheel \
 && rm -rf /tmp/nccl \
 && test -f /opt/nccl-wheel/nvidia/nccl/include/nccl.h

RUN curl -fsSL "https://go.dev/dl/go${GO_VERSION}.linux-amd64.tar.gz" | tar -C /usr/local -xz
ENV PATH=/usr/local/go/bin:${PATH} \
    GOTOOLCHAIN=local

WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Prints the flags it derived (ABI, NCCL, Gloo), then links
# build/cuda/libagentrl.so with -Wl,--no-as-needed -ltorch_cuda and rpath
# /opt/libtorch/lib, then bin/trainer with -tags cuda. Linking the binary,
# ld also resolves the libraries libtorch itself needs (its bundled CUDA
# libraries): LD_LIBRARY_PATH points it there; the runtime image needs no
# such variable.
ENV LD_LIBRARY_PATH=/opt/libtorch/lib:${LD_LIBRARY_PATH}
RUN make cuda LIBTORCH=/opt/libtorch CUDA_HOME=/usr/local/cuda NCCL_HOME=/opt/nccl-wheel/nvidia/nccl GLOO=${GLOO}

FROM nvidia/cuda:${CUDA_VERSION}-runtime-${UBUNTU}

LABEL org.opencontainers.image.title="agentrl" \
      org.opencontainers.image.description="End-to-end RL training of tool-using LLM agents (Go on libtorch, CUDA build)" \
      io.agentrl.volume.models="/models: Hugging Face model folders (config.json, *.safetensors, tokenizer.json), read only" \
      io.agentrl.volume.data="/data: datasets, corpora and search indexes (trainer index writes its --out here)" \
      io.agentrl.volume.runs="/runs: one folder per run: store.db, checkpoints, logs, report, written"

# The shim is compiled with -fopenmp and needs the system's libgomp.so.1,
# which the CUDA runtime image lacks.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libgomp1 \
 && rm -rf /var/lib/apt/lists/*

# Where each file's loader looks, so no LD_LIBRARY_PATH is needed:
# bin/trainer has RUNPATH $ORIGIN/../lib (torch/cgo_cuda.go), so the shim
# goes to /opt/agentrl/lib; the shim has RUNPATH /opt/libtorch/lib (LIBTORCH's
# lib/, from cgo/torchflags.sh), so libtorch keeps its build path;
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
