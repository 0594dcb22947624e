// collectives.h: the process group's collectives on tensors, for the
// optimizer's sharded state (optim.cpp). Defined in dist.cpp, which alone
// sees c10d's headers. Every rank calls the same collectives in the same
// order; tensors live on the group's device.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "agentrl.h"

namespace ar {

// nccl_header_mismatch says why the nccl.h of NCCL major.minor that the
// shim was compiled with does not fit the libtorch whose
// torch::cuda::nccl::version() (the NCCL it was built with, as major << 32
// | minor << 16 | patch; 0 without NCCL) is torch_version, or "" when
// it does.
std::string nccl_header_mismatch(int major, int minor, uint64_t torch_version);

int dist_rank(ar_dist d);
int dist_world(ar_dist d);
at::Device dist_device(ar_dist d);

// Reduces n doubles over all ranks in place (op: AR_RED_*).
void dist_allreduce_f64(ar_dist d, double *vals, int n, int op);

// Sums the tensors grads over all ranks in place, in flat buckets of at
// most bucket_bytes, two in flight at a time.
void dist_allreduce_tensors(ar_dist d, const std::vector<at::Tensor> &grads, int64_t bucket_bytes);

// Reduce-scatter: in holds world equal segments; afterwards out (one
// segment's length) holds the sum over the ranks of segment rank. in may
// be overwritten.
void dist_reduce_scatter(ar_dist d, const at::Tensor &in, const at::Tensor &out);

// All-gather: in is this rank's segment; afterwards out (world segments)
// holds every rank's, in rank order.
void dist_allgather(ar_dist d, const at::Tensor &in, const at::Tensor &out);

}  // namespace ar
