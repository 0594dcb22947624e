# agentrl on CUDA: `make image` (docker build -t agentrl:latest .).
#
# Debian trixie with its own libtorch-cuda 2.6 (CUDA 12.4, NCCL 2.22, Gloo),
# the packages listed in image/packages.txt and nothing else: every part
# comes from Debian's archive and the Go module proxy, no vendor download
# beyond what Debian's nvidia-cudnn package fetches when it installs. CI
# builds the same recipe without an engine (scripts/image-check.sh: the root
# filesystem from image/packages.txt with mmdebstrap, this build command
# inside it with chroot, then a dry run and a short default job on the CPU),
# and internal/buildcheck checks that this file and that list agree. Run it
# with the NVIDIA container toolkit:
#
#   docker run --gpus all --rm \
#     -v /srv/models:/models -v /srv/data:/data -v /srv/runs:/runs \
#     agentrl:latest train --config /opt/agentrl/examples/qwen2.5-3b-hotpotqa-grpo.yaml
#
# examples/README.md says how to fill /models and /data. One stage: the
# trainer loads libtorch-cuda from the system, and the CUDA toolkit stays
# for nvcc's libraries (a large image; a slimmer runtime stage is future
# work).

FROM debian:trixie

# contrib and non-free: libtorch-cuda, the CUDA toolkit, NCCL and cuDNN.
RUN sed -i 's/^Components: main$/Components: main contrib non-free/' /etc/apt/sources.list.d/debian.sources
COPY image/packages.txt /tmp/packages.txt
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(sed 's/#.*//' /tmp/packages.txt) \
 && rm -rf /var/lib/apt/lists/*

# Debian's go is older than go.mod's; GOTOOLCHAIN=auto brings the Go that
# go.mod names from the Go module proxy.
ENV GOTOOLCHAIN=auto

WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# LIBTORCH=/usr: Debian's layout (headers in /usr/include, libraries in
# /usr/lib/x86_64-linux-gnu); nccl.h, gloo's headers and the CUDA headers
# are Debian's too, the versions libtorch-cuda was built with.
RUN make cuda LIBTORCH=/usr \
 && install -D bin/trainer /opt/agentrl/bin/trainer \
 && install -D build/cuda/libagentrl.so /opt/agentrl/lib/libagentrl.so \
 && mkdir -p /opt/agentrl && cp -r examples /opt/agentrl/examples

LABEL org.opencontainers.image.title="agentrl" \
      org.opencontainers.image.description="End-to-end RL training of tool-using LLM agents (Go on libtorch, CUDA build)" \
      io.agentrl.volume.models="/models: Hugging Face model folders (config.json, *.safetensors, tokenizer.json), read only" \
      io.agentrl.volume.data="/data: datasets, corpora and search indexes (trainer index writes its --out here)" \
      io.agentrl.volume.runs="/runs: one folder per run: store.db, checkpoints, logs, report, written"

# bin/trainer has RUNPATH $ORIGIN/../lib (torch/cgo_cuda.go), so the shim
# in /opt/agentrl/lib is found without LD_LIBRARY_PATH; libtorch is in the
# system's library folder.
ENV PATH=/opt/agentrl/bin:${PATH}

VOLUME ["/models", "/data", "/runs"]

# run.dir defaults to "runs" relative to the working directory: from /,
# runs land in the /runs volume even without --run-dir /runs.
WORKDIR /
ENTRYPOINT ["/opt/agentrl/bin/trainer"]
CMD ["--help"]
