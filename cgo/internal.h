/*
 * internal.h: the shim's entries for its own tests, benchmarks and
 * profiling, kept out of the ABI of agentrl.h: reference logits for parity
 * tests, the choice of decode path, the decode step's profile, kernel
 * profiles, and the check a CUDA graph capture ends with. They follow
 * agentrl.h's conventions (a status, a malloc'd *err) and its ABI version.
 */
#ifndef AGENTRL_INTERNAL_H
#define AGENTRL_INTERNAL_H

#include "agentrl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Full-sequence logits [B,T,V] (inference mode), for parity tests. ids,
 * attn (1 = real token, 0 = pad) and positions are [B*T] row-major. */
int ar_model_logits(ar_model m, const int64_t *ids, const int64_t *attn,
                    const int64_t *positions, int64_t B, int64_t T,
                    ar_tensor *out, char **err);

/* The chunked computation behind ar_model_forward, on its own: for hidden
 * states h [N,H], an LM head w [V,H] and targets [N] (int64), logprobs [N]
 * receives log softmax(h w^T / temperature)[n, targets[n]] and entropy
 * (when not NULL) each row's entropy, chunk rows at a time (chunk > 0).
 * flags as ar_model_forward's: graphs back to h and w with AR_FORWARD_GRAD,
 * the entropy's too with AR_FORWARD_ENTROPY_GRAD. For tests. */
int ar_token_logprobs(ar_tensor h, ar_tensor w, ar_tensor targets,
                      double temperature, int64_t chunk, int flags,
                      ar_tensor *logprobs, ar_tensor *entropy, char **err);

/* Pending logits of a slot ([V] floats), for tests. */
int ar_engine_logits(ar_engine e, int slot, float *dst, int64_t vocab,
                     char **err);

/* How decode steps run. AUTO: the hand-written CPU kernels where they are
 * supported (a CPU model in f32 or bf16 without autocast, on a CPU with
 * AVX-512 or AVX2 with FMA, as AGENTRL_CPU_KERNELS allows), FUSED elsewhere. KERNELS: those kernels (an error where
 * unsupported). FUSED: libtorch ops with q/k/v and gate/up fused into one
 * weight each (copies refreshed whenever the model's weights change;
 * replayed as CUDA graphs on CUDA). UNFUSED: libtorch ops on the model's
 * own tensors, as the training forward runs them. */
enum { AR_DECODE_AUTO = 0, AR_DECODE_KERNELS, AR_DECODE_FUSED, AR_DECODE_UNFUSED };
int ar_engine_set_decode(ar_engine e, int mode, char **err);
/* The path decode steps take now (KERNELS, FUSED or UNFUSED); when why is
 * not NULL it receives a malloc'd reason the kernels cannot run here, or
 * NULL when they can; when isa is not NULL, a malloc'd name of the
 * kernels' instruction set ("avx512" or "avx2") where the engine has them,
 * or NULL. */
int ar_engine_decode_path(ar_engine e, int *path, char **why, char **isa, char **err);
/* What a CPU engine would decode model m with on this machine (m on any
 * device, the meta device included: only its config and dtype count):
 * *isa a malloc'd name of the hand-written kernels' instruction set and
 * *why NULL, or *isa NULL and *why a malloc'd reason they would not run.
 * An AGENTRL_CPU_KERNELS the shim does not know is an error. */
int ar_model_cpu_decode(ar_model m, char **isa, char **why, char **err);
/* The engine's CUDA graphs: *captured receives how many decode steps are
 * captured now (one per row count), *off a malloc'd reason decode steps no
 * longer use graphs (a capture failed), or NULL. 0 and NULL on builds
 * without CUDA. */
int ar_engine_cuda_graphs(ar_engine e, int64_t *captured, char **off, char **err);
/* What the engine did since it was made: *refreshes the times its fused
 * weights were rewritten from the model's (a weight changed), *captures
 * the CUDA graph captures tried, *replays the decode steps replayed from a
 * CUDA graph, *eager_steps the other decode steps. */
int ar_engine_counters(ar_engine e, int64_t *refreshes, int64_t *captures, int64_t *replays,
                       int64_t *eager_steps, char **err);
/* The most padded tokens (slots x longest new length) one forward of
 * ar_engine_prefill_batch takes; 0 restores the default (16384). Tests
 * set it low to run a batch as several forwards. */
int ar_engine_set_prefill_tokens(ar_engine e, int64_t tokens, char **err);
/* Wall time of decode steps so far, in seconds, by phase: phases[0]
 * weight products, [1] attention, [2] sampling, [3] other; *steps counts
 * the steps. reset: start again from zero. */
int ar_engine_profile(ar_engine e, double *phases, int64_t *steps, int reset,
                      char **err);

/* How a model's attention runs. AUTO: libtorch's
 * scaled_dot_product_attention (SDPA) on CUDA with libtorch 2.5 and later,
 * the math below elsewhere. SDPA: the SDPA path everywhere, its grouped
 * layout included (libtorch before 2.5 computes that layout with plain
 * ops); for tests on the CPU. MATH: never SDPA. */
enum { AR_ATTENTION_AUTO = 0, AR_ATTENTION_SDPA, AR_ATTENTION_MATH };
int ar_model_set_attention(ar_model m, int mode, char **err);
/* The kernel the model's last SDPA call ran, as libtorch's at::SDPBackend
 * numbers it (0 math, 1 flash, 2 memory-efficient, 3 cuDNN, 4
 * overrideable), or -1 when no SDPA call has run. */
int ar_model_sdpa_backend(ar_model m, int *backend, char **err);

/* The check ar_dist_new makes before it creates an NCCL process group:
 * fails, saying why, unless nccl.h's NCCL_MAJOR.NCCL_MINOR (major, minor)
 * is the NCCL libtorch was built with (torch_version as
 * torch::cuda::nccl::version() encodes it: major << 32 | minor << 16 |
 * patch; 0 for a libtorch without NCCL). For tests. */
int ar_nccl_header_check(int major, int minor, uint64_t torch_version, char **err);

/* What a CUDA model sets for f32 matrix products (TF32 on cuBLAS), and
 * whether f32 matrix products on the CPU would run reduced (TF32 or bf16
 * through oneDNN): for the test that the first leaves the second alone. */
int ar_allow_cuda_tf32_matmul(char **err);
int ar_cpu_f32_matmul_reduced(int *reduced, char **err);

/* The check a CUDA graph capture ends with, exposed for tests: fails when
 * the replayed logits [S,V] (poisoned with NaN before the replay) were not
 * written, or differ from the eager step's. */
int ar_check_graph_replay(ar_tensor eager, ar_tensor replayed, int64_t slots,
                          char **err);

/* Kernel profiles: libtorch's profiler (Kineto), as torch.profiler drives
 * it. ar_profile_start starts recording the operators the calling thread
 * runs (and the threads it hands work to, such as autograd's), and with
 * cuda != 0 the kernels CUDA devices run (a CUDA build). ar_profile_stop,
 * on the same thread, stops it and returns the events reduced to one entry
 * per name and device, *n of them in a malloc'd array (NULL when none) the
 * caller frees with ar_profile_free, sorted by self time, longest first.
 * total_ns is the time of the entry's events; self_ns that time less the
 * time of events nested in them on the same thread or stream (operators
 * call operators): summed over the entries of a device it is that device's
 * busy time. A kernel's self_ns is its total_ns. */
enum { AR_PROFILE_CPU = 0, AR_PROFILE_CUDA = 1 };
typedef struct {
  char *name;
  int device; /* AR_PROFILE_CPU or AR_PROFILE_CUDA */
  int64_t calls, total_ns, self_ns;
} ar_profile_entry;
int ar_profile_start(int cuda, char **err);
int ar_profile_stop(ar_profile_entry **entries, int64_t *n, char **err);
int ar_profile_free(ar_profile_entry *entries, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
