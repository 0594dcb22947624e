/*
 * agentrl.h: the plain C ABI over libtorch that the Go package torch/ calls.
 *
 * Conventions (every function follows them):
 *   - Handles are opaque pointers; the caller frees each with its *_free call.
 *   - Every call returns a status (AR_OK, AR_ERR, AR_OOM). On failure *err is
 *     set to a malloc'd, NUL-terminated message the caller frees with free().
 *   - No C++ exception ever crosses this boundary.
 *   - Grad mode and inference mode are set inside each call, never left behind
 *     as thread state.
 *   - Devices are ints: -1 is the CPU, N >= 0 is cuda:N, -2 is libtorch's meta
 *     device (shapes without data; tests use it as a second device).
 *
 * The shim's entries for its own tests, benchmarks and profiling are in
 * internal.h.
 */
#ifndef AGENTRL_H
#define AGENTRL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a signature below changes; checked at start-up. */
#define AR_ABI_VERSION 22

enum { AR_OK = 0, AR_ERR = 1, AR_OOM = 2 };

/* Element types. */
enum {
  AR_F32 = 0,
  AR_F16 = 1,
  AR_BF16 = 2,
  AR_I64 = 3,
  AR_I32 = 4,
  AR_BOOL = 5,
  AR_U8 = 6,
  AR_F64 = 7
};

typedef struct ar_tensor_s *ar_tensor;
typedef struct ar_model_s *ar_model;
typedef struct ar_engine_s *ar_engine;
typedef struct ar_adamw_s *ar_adamw;
typedef struct ar_kvstore_s *ar_kvstore;
typedef struct ar_dist_s *ar_dist;

/* ---- library ----------------------------------------------------------- */

/* ABI version of the shim, the libtorch version its headers had, the version
 * of the libtorch loaded at run time, and whether CUDA is compiled in. */
int ar_info(int *abi, int *compiled_major, int *compiled_minor,
            int *runtime_major, int *runtime_minor, int *cuda_compiled,
            char **err);
int ar_cuda_device_count(int *n, char **err);
/* Makes device the calling process's current CUDA device (where contexts,
 * pinned-memory bookkeeping and NCCL land); a no-op for the CPU (-1). */
int ar_set_device(int device, char **err);
/* Total threads for compute: libtorch's intra-op pool and OpenBLAS's pool are
 * set so together they use n cores. */
int ar_set_threads(int n, char **err);
int ar_get_threads(int *n, char **err);
int ar_manual_seed(uint64_t seed, char **err);
/* RoPE's inverse frequencies as transformers computes them, in float32 on
 * the CPU: 1 / base ** (arange(0, 2n, 2) / dim), out[j] for j < n. */
int ar_rope_inv_freq(double base, int64_t dim, int64_t n, double *out, char **err);
/* CUDA memory statistics in bytes (zeros on CPU builds); empty_cache releases
 * cached blocks. */
int ar_cuda_memory(int device, int64_t *allocated, int64_t *reserved,
                   int64_t *peak, char **err);
int ar_cuda_empty_cache(char **err);
/* The CPU allocator's large tensors (4 MB and up), in bytes: those in use, the
 * mappings held (in use plus cached for reuse), and the most ever in use. */
int ar_host_memory(int64_t *live, int64_t *mapped, int64_t *peak, char **err);

/* ---- tensors ------------------------------------------------------------ */

/* A new tensor holding a copy of data (numel elements of dtype). */
int ar_tensor_from_data(const void *data, int dtype, const int64_t *shape,
                        int ndim, int device, ar_tensor *out, char **err);
int ar_tensor_zeros(int dtype, const int64_t *shape, int ndim, int device,
                    ar_tensor *out, char **err);
int ar_tensor_free(ar_tensor t);
/* Copies the tensor's elements (converted to dtype, moved to the CPU, made
 * contiguous) into dst, which holds nbytes. */
int ar_tensor_copy_out(ar_tensor t, int dtype, void *dst, size_t nbytes,
                       char **err);
int ar_tensor_shape(ar_tensor t, int64_t *dims, int max_dims, int *ndim,
                    char **err);
int ar_tensor_meta(ar_tensor t, int *dtype, int *device, int *requires_grad,
                   char **err);
int ar_tensor_to(ar_tensor t, int device, int dtype, ar_tensor *out,
                 char **err);
int ar_tensor_item(ar_tensor t, double *out, char **err);
int ar_tensor_set_requires_grad(ar_tensor t, int on, char **err);
/* The gradient of t, or *out == NULL when it has none. */
int ar_tensor_grad(ar_tensor t, ar_tensor *out, char **err);
int ar_tensor_zero_grad(ar_tensor t, char **err);
int ar_tensor_backward(ar_tensor t, char **err);
/* Pinned (page-locked) host copy for fast transfers to a GPU; a plain copy
 * on CPU-only builds. */
int ar_tensor_pin(ar_tensor t, ar_tensor *out, char **err);
/* The sum and the sum of squares of t's elements, accumulated in double in
 * element order on one thread: the same bits for the same tensor whatever
 * the thread count (ranks compare weights with it). */
int ar_tensor_checksum(ar_tensor t, double *sum, double *sumsq, char **err);

/* Elementwise and reduction ops; every op records autograd history. */
enum {
  AR_NEG = 0,
  AR_EXP,
  AR_LOG,
  AR_SQRT,
  AR_ABS,
  AR_DETACH,
  AR_SIGMOID,
  AR_TANH,
  AR_LOGICAL_NOT,
  AR_CONTIGUOUS
};
int ar_unary(int op, ar_tensor a, ar_tensor *out, char **err);

enum {
  AR_ADD = 0,
  AR_SUB,
  AR_MUL,
  AR_DIV,
  AR_POW,
  AR_MINIMUM,
  AR_MAXIMUM,
  AR_EQ,
  AR_NE,
  AR_LT,
  AR_LE,
  AR_GT,
  AR_GE,
  AR_MATMUL,
  AR_LOGICAL_AND,
  AR_LOGICAL_OR
};
int ar_binary(int op, ar_tensor a, ar_tensor b, ar_tensor *out, char **err);
/* a op s, for the AR_ADD..AR_GE ops with a scalar right operand. */
int ar_scalar(int op, ar_tensor a, double s, ar_tensor *out, char **err);
/* s op a (rsub, rdiv, ...). */
int ar_rscalar(int op, double s, ar_tensor a, ar_tensor *out, char **err);
int ar_clamp(ar_tensor a, double lo, double hi, int has_lo, int has_hi,
             ar_tensor *out, char **err);
int ar_where(ar_tensor cond, ar_tensor a, ar_tensor b, ar_tensor *out,
             char **err);

enum { AR_SUM = 0, AR_MEAN, AR_MAX, AR_MIN };
/* Reduces over dims (all dims when ndims == 0). */
int ar_reduce(int op, ar_tensor a, const int64_t *dims, int ndims, int keepdim,
              ar_tensor *out, char **err);
int ar_log_softmax(ar_tensor a, int64_t dim, ar_tensor *out, char **err);
int ar_softmax(ar_tensor a, int64_t dim, ar_tensor *out, char **err);
int ar_gather(ar_tensor a, int64_t dim, ar_tensor index, ar_tensor *out,
              char **err);
int ar_reshape(ar_tensor a, const int64_t *shape, int ndim, ar_tensor *out,
               char **err);
int ar_slice(ar_tensor a, int64_t dim, int64_t start, int64_t end,
             int64_t step, ar_tensor *out, char **err);
int ar_cat(const ar_tensor *ts, int n, int64_t dim, ar_tensor *out,
           char **err);
int ar_stack(const ar_tensor *ts, int n, int64_t dim, ar_tensor *out,
             char **err);
int ar_transpose(ar_tensor a, int64_t d0, int64_t d1, ar_tensor *out,
                 char **err);

/* ---- optimizer ---------------------------------------------------------- */

/* AdamW over a list of parameter tensors split into groups: group[i] is the
 * group of params[i]; lr/beta1/beta2/eps/weight_decay are per group. A bf16
 * or f16 parameter gets f32 master weights, an f32 gradient accumulator and
 * f32 moments; the parameter receives the master rounded after each step.
 * Parameters must be contiguous. */
int ar_adamw_new(const ar_tensor *params, const int *group, int nparams,
                 const double *lr, const double *beta1, const double *beta2,
                 const double *eps, const double *weight_decay, int ngroups,
                 ar_adamw *out, char **err);
int ar_adamw_free(ar_adamw o);
/* Attaches the process group d (before the first step or state load):
 * ar_adamw_reduce_grads then sums the gradients over its ranks. stage 0
 * keeps whole state on every rank; 1 and 2 (ZeRO) shard the f32 masters
 * and moments: the parameters, flattened in order into one vector padded to
 * a multiple of the world size N, are cut into N equal ranges, and each
 * rank keeps and updates its own; the step all-gathers the weights. Stage
 * 1 all-reduces the gradients, stage 2 reduce-scatters them (each rank
 * keeps its range's sum). Collectives move at most about bucket_bytes at a
 * time. The optimizer keeps d; it must outlive the optimizer's use. */
int ar_adamw_shard(ar_adamw o, ar_dist d, int stage, int64_t bucket_bytes,
                   char **err);
int ar_adamw_set_lr(ar_adamw o, int group, double lr, char **err);
/* Moves the gradients of bf16/f16 parameters into their f32 accumulators
 * (call after each backward pass). */
int ar_adamw_accumulate(ar_adamw o, char **err);
/* Reduces the gradients over the attached group's ranks (a collective):
 * required before grad_norm, scale_grads and step when a group is
 * attached. A parameter no rank has a gradient for keeps none. */
int ar_adamw_reduce_grads(ar_adamw o, char **err);
/* One update of every parameter that has a gradient (with a sharded
 * state, a collective). */
int ar_adamw_step(ar_adamw o, char **err);
/* Whether ar_adamw_step runs libtorch's fused multi-tensor AdamW
 * (at::_fused_adamw_, the kernel of torch.optim.AdamW(fused=True): CUDA
 * from libtorch 2.0, the CPU from 2.4) or a loop of elementwise ops per
 * parameter; both take the same state and give the same update to the last
 * bits. A new optimizer takes the fused step where every parameter's
 * device has it. ar_adamw_set_fused(o, 1) refuses, saying why, where some
 * device lacks it; (o, 0) chooses the loop. */
int ar_adamw_fused(ar_adamw o, int *fused, char **err);
int ar_adamw_set_fused(ar_adamw o, int fused, char **err);
int ar_adamw_zero_grad(ar_adamw o, char **err);
/* The global L2 norm of all gradients (0 when there are none), the same on
 * every rank of an attached group (a collective). */
int ar_adamw_grad_norm(ar_adamw o, double *norm, char **err);
/* Multiplies every gradient by coef (gradient clipping). */
int ar_adamw_scale_grads(ar_adamw o, double coef, char **err);
/* Bytes of the state this rank holds: moments and f32 master weights. */
int ar_adamw_state_bytes(ar_adamw o, int64_t *bytes, char **err);
/* State access for checkpoints: step count of param i, its first/second
 * moment tensors and its f32 master weights, whole and in the parameter's
 * shape (new handles; NULL when the param has no such state); with a
 * sharded state every rank must call it for the same i (a collective).
 * set_state takes the whole state and keeps this rank's range; its master
 * may be NULL: a bf16/f16 parameter then takes its master from its own
 * values. */
int ar_adamw_get_state(ar_adamw o, int i, int64_t *step, ar_tensor *m,
                       ar_tensor *v, ar_tensor *master, char **err);
int ar_adamw_set_state(ar_adamw o, int i, int64_t step, ar_tensor m,
                       ar_tensor v, ar_tensor master, char **err);

/* ---- model -------------------------------------------------------------- */

/* The largest head_dim a model may have. */
#define AR_MAX_HEAD_DIM 512
/* The most layers a model with mixture-of-experts layers may have (the
 * size of ar_model_config.moe_layer). */
#define AR_MAX_MOE_LAYERS 1024

/* The decoder's shape (Qwen2, Qwen3 and Llama share it; qkv_bias and qk_norm
 * tell them apart). */
typedef struct {
  int64_t vocab;
  int64_t hidden;
  int64_t intermediate;
  int64_t layers;
  int64_t heads;
  int64_t kv_heads;
  int64_t head_dim;
  double rms_eps;
  /* RoPE as the Go side computed it from config.json (torch/rope.go):
   * inv_freq[j] for j < head_dim/2, the angle of dimensions j and
   * j + head_dim/2 at position p being p * inv_freq[j], and the factor
   * that multiplies cos and sin (transformers' attention_scaling, 1 but
   * for yarn). */
  double rope_inv_freq[AR_MAX_HEAD_DIM / 2];
  double rope_attention_factor;
  int tie_embeddings;
  int qkv_bias;
  int qk_norm;    /* RMSNorm of each query and key head before RoPE (Qwen3) */
  int value_head; /* a linear value head on the final hidden state */
  int64_t max_positions;
  /* Mixture-of-experts MLPs (Qwen3 MoE): a layer i < layers with
   * moe_layer[i] set has, instead of the dense MLP, a router (mlp.gate,
   * [experts, hidden]) and experts SwiGLU experts of width
   * moe_intermediate (mlp.experts.{e}.gate_proj, up_proj, down_proj); each
   * token takes the experts_per_token experts of highest softmax
   * probability, weighted by those probabilities (renormalised to sum to 1
   * when norm_topk_prob). experts 0: every layer dense. With
   * shared_expert_intermediate > 0 (Qwen3.5 MoE) a sparse layer also has a
   * shared expert, a SwiGLU MLP of that width (mlp.shared_expert.*) every
   * token takes, its output times sigmoid(mlp.shared_expert_gate(x)).
   * A Gemma 4 MoE layer (gemma, enable_moe_block: norm_topk_prob set)
   * keeps its dense MLP and adds Gemma4TextRouter's router and GELU-tanh
   * experts held fused (router.*, experts.gate_up_proj, down_proj; moe.h). */
  int64_t experts;
  int64_t experts_per_token;
  int64_t moe_intermediate;
  int norm_topk_prob;
  int64_t shared_expert_intermediate;
  uint8_t moe_layer[AR_MAX_MOE_LAYERS];
  /* Qwen3.5 (qwen3_5_text); zero for the other families. */
  int64_t rotary_dim;   /* the leading dimensions of a head RoPE rotates
                         * (rope_inv_freq has rotary_dim/2 entries); 0: all */
  int norm_offset;      /* every RMSNorm but the gated one scales by 1 + w */
  int attn_output_gate; /* q_proj is twice as wide: per head the query, then a
                         * gate whose sigmoid multiplies the attention output */
  /* linear_layer[i] is 1 where layer i (< layers, at most
   * AR_MAX_MOE_LAYERS) is a Gated DeltaNet layer (linear_attn.* in place of
   * self_attn.*), of linear_k_heads query/key heads of linear_k_dim serving
   * linear_v_heads value heads of linear_v_dim, and a causal conv of
   * linear_conv_kernel taps. */
  uint8_t linear_layer[AR_MAX_MOE_LAYERS];
  int64_t linear_k_heads, linear_v_heads, linear_k_dim, linear_v_dim;
  int64_t linear_conv_kernel;
  /* Sliding-window attention (Gemma 4's sliding layers; Qwen2/Mistral
   * windows): a layer i with sliding_layer[i] set lets query position p
   * attend key position s only where p - s < sliding_window. */
  int64_t sliding_window;
  uint8_t sliding_layer[AR_MAX_MOE_LAYERS];
  /* Gemma 4 (gemma4_text, gemma4.cpp); zero for the other families. With
   * gemma set every layer is Gemma's: the attention output and the MLP's
   * input and output RMSNorm'd (sandwich norms), values RMSNorm'd without a
   * weight, attention scores unscaled (q_norm and k_norm set their size),
   * GELU-tanh MLPs, the output times layer_scalar, the embeddings times
   * sqrt(hidden). Its full-attention layers (sliding_layer[i] 0) have heads
   * of global_head_dim, global_kv_heads key/value heads and their own RoPE
   * global_rope_inv_freq (global_head_dim/2 entries, zero for the
   * dimensions proportional RoPE leaves unturned); with k_eq_v they have
   * no v_proj (the values are the keys' projection). The last
   * kv_shared_layers layers have no k_proj, v_proj or norms of them: each
   * reads the keys and values of the last earlier layer of its type (with
   * double_wide_mlp, their MLPs are twice intermediate wide). With
   * per_layer_dim > 0 each layer adds a per-layer input (a table of
   * per_layer_vocab rows and a projection of the embeddings).
   * final_softcap > 0 caps the logits at cap * tanh(z / cap). */
  int gemma;
  int64_t global_head_dim, global_kv_heads;
  double global_rope_inv_freq[AR_MAX_HEAD_DIM / 2];
  int k_eq_v;
  int64_t kv_shared_layers;
  int double_wide_mlp;
  int64_t per_layer_dim, per_layer_vocab;
  double final_softcap;
  /* Nemotron-H (nemotron_h); zero for the other families. Each layer is
   * one block, x + mixer(norm(x)), of the kind block[i] (< layers, at most
   * AR_MAX_MOE_LAYERS) says (AR_BLOCK_*): a Mamba-2 mixer of mamba_heads
   * heads of mamba_head_dim, mamba_groups groups of B and C of ssm_state,
   * a causal conv of mamba_conv_kernel taps (with a bias where
   * mamba_conv_bias) and the time steps clamped to [mamba_dt_min,
   * mamba_dt_max], run in chunks of mamba_chunk tokens; attention without
   * RoPE; an MLP of width intermediate, down(relu(up(x))^2); or a mixture
   * of experts (AR_BLOCK_MOE, its moe_layer[i] set): the experts relu²
   * MLPs of width moe_intermediate on a latent of moe_latent (0: on the
   * hidden state itself), chosen by sigmoid scores plus a correction bias
   * within the topk_group best of n_group groups, weighted by their scores
   * (normalised when norm_topk_prob) times routed_scaling_factor, plus a
   * relu² shared expert of width shared_expert_intermediate. */
  int nemotron;
  uint8_t block[AR_MAX_MOE_LAYERS];
  int64_t mamba_heads, mamba_head_dim, mamba_groups, ssm_state, mamba_conv_kernel, mamba_chunk;
  int mamba_conv_bias;
  double mamba_dt_min, mamba_dt_max;
  int64_t moe_latent, n_group, topk_group;
  double routed_scaling_factor;
} ar_model_config;

/* The kinds of a Nemotron-H block (ar_model_config.block). */
#define AR_BLOCK_MAMBA 1
#define AR_BLOCK_ATTENTION 2
#define AR_BLOCK_MLP 3
#define AR_BLOCK_MOE 4

/* A model with no weights yet; weights are set by name with
 * ar_model_set_param, or initialised randomly with ar_model_init_random. */
int ar_model_new(const ar_model_config *cfg, int dtype, int device,
                 ar_model *out, char **err);
int ar_model_free(ar_model m);
int ar_model_init_random(ar_model m, uint64_t seed, double std, char **err);
/* Parameter names are the Hugging Face checkpoint keys; those of the value
 * head start with this prefix (TRL's v_head.summary.weight and .bias). */
#define AR_VALUE_HEAD_PREFIX "v_head."
/* Parameter names the model expects, in a fixed order; the caller frees
 * each string and the array with free(). */
int ar_model_param_names(ar_model m, char ***names, int *n, char **err);
/* Sets (copies, converting dtype/device) the parameter with this HF name;
 * a wrong shape is an error naming it. */
int ar_model_set_param(ar_model m, const char *name, ar_tensor t, char **err);
/* A handle sharing the parameter's storage (gradients flow into it). */
int ar_model_param(ar_model m, const char *name, ar_tensor *out, char **err);
/* Activation checkpointing for the training forward: keep only each
 * layer's input and recompute the layer in the backward pass. */
int ar_model_set_checkpointing(ar_model m, int on, char **err);
/* Chunked logits for ar_model_forward: the taken tokens' log-probabilities
 * and the entropies are computed from the last hidden states tokens rows at
 * a time, and recomputed that way in the backward pass, so no
 * [tokens, vocab] tensor is kept whole. 0: the whole [B,T-1,V] logits at
 * once. Negative is an error. */
int ar_model_set_logits_chunk(ar_model m, int64_t tokens, char **err);
/* Mixed precision: the training forward, the logprob forward and the decode
 * engine run under autocast to dtype (AR_BF16 or AR_F16) on the model's
 * device type; weights and gradients stay in the model's dtype. -1: off. */
int ar_model_set_autocast(ar_model m, int dtype, char **err);
/* Copies every parameter of src into dst (same config); a value head dst has
 * and src lacks is kept. */
int ar_model_copy_weights(ar_model dst, ar_model src, char **err);

/* Training forward: for every position t < T-1 the log-probability of
 * ids[t+1] under softmax(logits[t]/temperature), the entropy of that
 * distribution, and (with a value head) the value at t. Outputs are [B,T-1]
 * with an autograd graph when flags has AR_FORWARD_GRAD. Any output pointer
 * may be NULL: without logprobs and entropy the LM head is not run. aux
 * (a model with mixture-of-experts layers only) receives the routers'
 * load-balancing loss over the real tokens (attn 1), as transformers'
 * load_balancing_loss_func computes it from every sparse layer's router
 * logits: experts * sum_e f_e P_e, f_e the share of the tokens' top-k
 * choices that went to expert e and P_e its mean router probability,
 * both over all sparse layers' tokens together; a scalar. head_rows, when
 * not NULL, are the n_head flat indices b*(T-1)+t (each in 0..B*(T-1)-1)
 * where the LM head runs: the log-probabilities and entropies hold 0 at
 * every other position (the values are computed everywhere). */
int ar_model_forward(ar_model m, const int64_t *ids, const int64_t *attn,
                     const int64_t *positions, int64_t B, int64_t T,
                     double temperature, int flags, const int64_t *head_rows,
                     int64_t n_head, ar_tensor *logprobs, ar_tensor *entropy,
                     ar_tensor *values, ar_tensor *aux, char **err);

/* Routing replay of a model with mixture-of-experts layers (routing: each
 * token's experts at each sparse layer, int16 [B,T,L,k], L the sparse
 * layers in order, k num_experts_per_tok): ar_model_forward where replay,
 * when not NULL, gives the experts each sparse layer takes for each token
 * instead of its router's k most probable (weighted by the router's
 * probabilities of them, so the router still gets gradients; distinct and
 * in 0..num_experts-1, padding included), and record, when not NULL,
 * receives the experts each took. Both NULL: ar_model_forward. */
int ar_model_forward_routed(ar_model m, const int64_t *ids, const int64_t *attn,
                            const int64_t *positions, int64_t B, int64_t T,
                            double temperature, int flags, const int64_t *head_rows,
                            int64_t n_head, const int16_t *replay, int16_t *record,
                            ar_tensor *logprobs, ar_tensor *entropy, ar_tensor *values,
                            ar_tensor *aux, char **err);

/* Packed training forward (several sequences that share prefixes packed into
 * one row): as ar_model_forward, but query t of row b attends key s where
 * allowed[b,t,s] is nonzero (uint8 [B,T,T]; each query must allow itself),
 * and the outputs [n] are for n targets: target j is the log-probability of
 * token tgt[j] under softmax(logits[row[j], src[j]]/temperature), with the
 * entropy of that distribution and the value at that position. lens [B]
 * (NULL: every token) is the number of real tokens at the start of each
 * row, the rest padding: aux, as ar_model_forward's, counts the real
 * tokens of the packed rows (a prefix shared by several sequences once). */
int ar_model_forward_packed(ar_model m, const int64_t *ids, const uint8_t *allowed,
                            const int64_t *positions, int64_t B, int64_t T, int64_t n,
                            const int64_t *row, const int64_t *src, const int64_t *tgt,
                            const int64_t *lens, double temperature, int flags,
                            ar_tensor *logprobs, ar_tensor *entropy, ar_tensor *values,
                            ar_tensor *aux, char **err);

/* flags of ar_model_forward: AR_FORWARD_GRAD keeps the autograd graph of the
 * log-probabilities and values; AR_FORWARD_ENTROPY_GRAD also keeps the
 * entropy's (without it the entropy is a diagnostic, computed without a
 * graph, so a [B,T,V] product is not kept for a backward that never comes). */
enum { AR_FORWARD_GRAD = 1, AR_FORWARD_ENTROPY_GRAD = 2 };

/* ---- LoRA adapters ------------------------------------------------------ */

/* The projections of a decoder layer an adapter can sit on, one bit each,
 * in the order of the Hugging Face module names: an attention layer's
 * q_proj, k_proj, v_proj, o_proj; a Gated DeltaNet layer's (Qwen3.5
 * linear_attn) in_proj_qkv, in_proj_z, in_proj_b, in_proj_a, out_proj;
 * the MLP's gate_proj, up_proj, down_proj; a Nemotron-H Mamba-2 layer's
 * in_proj (its out_proj is AR_LORA_OUT_PROJ; its blocks' q_proj ... and
 * up_proj, down_proj the same bits, under mixer.*); a Gemma 4 layer's
 * per-layer input gate and projection (per_layer_input_gate,
 * per_layer_projection, directly under the layer). The last bit is not a
 * layer's: Gemma 4's model.per_layer_model_projection, one for the model;
 * AR_LORA_TARGETS counts the layer targets before it. */
enum {
  AR_LORA_Q_PROJ = 1 << 0,
  AR_LORA_K_PROJ = 1 << 1,
  AR_LORA_V_PROJ = 1 << 2,
  AR_LORA_O_PROJ = 1 << 3,
  AR_LORA_IN_PROJ_QKV = 1 << 4,
  AR_LORA_IN_PROJ_Z = 1 << 5,
  AR_LORA_IN_PROJ_B = 1 << 6,
  AR_LORA_IN_PROJ_A = 1 << 7,
  AR_LORA_OUT_PROJ = 1 << 8,
  AR_LORA_GATE_PROJ = 1 << 9,
  AR_LORA_UP_PROJ = 1 << 10,
  AR_LORA_DOWN_PROJ = 1 << 11,
  AR_LORA_IN_PROJ = 1 << 12,
  AR_LORA_PER_LAYER_INPUT_GATE = 1 << 13,
  AR_LORA_PER_LAYER_PROJECTION = 1 << 14,
  AR_LORA_PER_LAYER_MODEL_PROJECTION = 1 << 15
};
#define AR_LORA_TARGETS 15

/* PEFT's LoraConfig: rank r, lora_alpha, lora_dropout and the targets
 * (AR_LORA_* bits). */
typedef struct {
  int64_t rank;
  double alpha;
  double dropout;
  int targets;
} ar_lora_config;

/* A LoRA model over base: it shares base's weight storage (no copy; the
 * base may be freed before it) without gradients, and holds per layer and
 * target an adapter A [r, in] (Kaiming-uniform with a = sqrt(5), drawn from
 * seed) and B [out, r] (zeros), in float32 (float64 over a float64 base),
 * applied as W x + b + (alpha / r) B A dropout(x); dropout only in a
 * forward with grad. With value_head it has a value head of its own in the
 * adapters' dtype (weight N(0, 0.02) from seed, bias 0). Its parameter
 * names and tensors (ar_model_param_names, ar_model_param, set_param,
 * init_random, copy_weights) are the adapters under PEFT's saved keys,
 * base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight, ..._B:
 * first the model's own (Gemma 4's
 * base_model.model.model.per_layer_model_projection.lora_A.weight, ..._B),
 * then layer by layer and target by target, then the value head's. A target
 * sits on every layer that has its projection (q_proj on the attention
 * layers of a hybrid model, in_proj_qkv on its Gated DeltaNet layers); a
 * target no layer has is refused, naming it. Settings
 * (checkpointing, logits chunk, autocast) start as base's. Activation
 * checkpointing with dropout > 0 is refused by a forward with grad (the
 * recomputed layer would draw another mask). */
int ar_model_lora_new(ar_model base, const ar_lora_config *cfg,
                      int value_head, uint64_t seed, ar_model *out,
                      char **err);
/* Switches a LoRA model's adapters on (the default) or off (the forward is
 * then the base's). */
int ar_model_set_adapters(ar_model m, int on, char **err);
/* A plain model of the LoRA model's base config (no value head, the base's
 * dtype) whose target weights are new tensors W + (alpha / r) B A,
 * computed in float32 (float64 over a float64 base) and rounded once to the
 * base's dtype, whatever the adapters' switch; every other weight shares
 * the base's storage (writing it writes the base). */
int ar_model_merged_new(ar_model lora, ar_model *out, char **err);
/* Recomputes dst's target weights from lora's current adapters, in place
 * (an engine on dst sees the change through the version counters). dst is
 * a model of the same config and dtype whose target weights are its own. */
int ar_model_merge_lora(ar_model dst, ar_model lora, char **err);

/* ---- KV-cache decode engine --------------------------------------------- */

/* An engine over a plain model (a LoRA model is refused: decode from
 * ar_model_merged_new's merged copy). */
int ar_engine_new(ar_model m, int slots, int64_t max_len, ar_engine *out,
                  char **err);
int ar_engine_free(ar_engine e);
/* Appends n tokens to a slot's cache (a prompt, or an observation mid
 * trajectory), at positions len..len+n-1. */
int ar_engine_prefill(ar_engine e, int slot, const int64_t *ids, int64_t n,
                      char **err);
/* Prefills n_slots distinct slots together: slot slots[i] appends lens[i]
 * tokens (at least one) at its own length, the ids of all slots
 * concatenated in order. Each slot's pending logits are those of its own
 * last token, as after ar_engine_prefill of that slot alone, to float
 * rounding (not bit for bit: a product of several slots' rows rounds
 * differently on the CPU). Every input is checked before anything is written: on a bad
 * input (a slot out of range or given twice, no tokens, the cache length
 * exceeded, a token outside the vocabulary) the engine is unchanged. A long
 * batch runs as several forwards, each of the next slots in the given order
 * (at most 16384 padded tokens: slots x longest). */
int ar_engine_prefill_batch(ar_engine e, const int *slots, int n_slots,
                            const int64_t *ids, const int64_t *lens,
                            char **err);
/* Makes dst a copy of src (cache rows, length, pending logits). */
int ar_engine_copy_slot(ar_engine e, int src, int dst, char **err);
int ar_engine_release(ar_engine e, int slot, char **err);
int ar_engine_slot_len(ar_engine e, int slot, int64_t *len, char **err);
/* ar_engine_cache_positions writes, for each of the model's n layers, the
 * positions one slot of that layer's own key cache holds (its value cache
 * the same): max_len for a full attention layer, min(sliding_window,
 * max_len) for a sliding-window layer (a ring), 0 for a layer with no
 * cache of its own (kv-shared, Gated DeltaNet, Mamba-2, MLP). */
int ar_engine_cache_positions(ar_engine e, int64_t *positions, int64_t n, char **err);
/* Routing record of a model with mixture-of-experts layers: while on, the
 * engine keeps, for each slot, the experts each token it caches took at each
 * sparse layer (prefilled and decoded tokens alike); a copied slot copies
 * them, a released one forgets them. Turning it on refuses while a slot
 * holds tokens; turning it off forgets everything. ar_engine_routing copies
 * slot's record, int16 [len, sparse layers, k] (n elements), into out. */
int ar_engine_set_record_routing(ar_engine e, int on, char **err);
int ar_engine_routing(ar_engine e, int slot, int16_t *out, int64_t n, char **err);

typedef struct {
  double temperature; /* <= 0: greedy */
  int64_t top_k;      /* <= 0: off */
  double top_p;       /* >= 1: off */
} ar_sampling;

/* One decode step for the n given slots: samples a token for each from its
 * pending logits, records log softmax(logits/T)[token] (T = 1 when greedy),
 * then runs the model on the sampled tokens so the next step's logits are
 * pending. tokens/logprobs hold n entries. */
int ar_engine_step(ar_engine e, const int *slots, int n,
                   const ar_sampling *s, int64_t *tokens, float *logprobs,
                   char **err);
/* Seeds the random stream of one slot (each slot samples from its own). */
int ar_engine_seed(ar_engine e, int slot, uint64_t seed, char **err);

/* ---- distributed (c10d) ------------------------------------------------- */

/* A TCPStore at host:port: the server when is_server (rank 0), a client
 * otherwise. With world > 0 the constructor waits until world clients have
 * joined (rendezvous); with world == 0 it is a plain extra client. Every
 * operation gives up after timeout_ms. A non-empty prefix is put before
 * every key (a store shared with a launcher, as torchrun's agent store). */
int ar_store_new(const char *host, int port, int is_server, int world,
                 int64_t timeout_ms, const char *prefix, ar_kvstore *out,
                 char **err);
int ar_store_free(ar_kvstore s);
/* Adds delta to the counter key and returns its new value (delta 0 reads). */
int ar_store_add(ar_kvstore s, const char *key, int64_t delta, int64_t *value,
                 char **err);
int ar_store_set(ar_kvstore s, const char *key, const void *data, size_t n,
                 char **err);
/* Waits (up to the store's timeout) for key and returns a malloc'd copy of
 * its value that the caller frees with free(). */
int ar_store_get(ar_kvstore s, const char *key, void **data, size_t *n,
                 char **err);

enum { AR_GLOO = 0, AR_NCCL = 1 };
/* How Gloo picks its network device: the interface named by `where`
 * (GLOO_SOCKET_IFNAME), the address or host name `where`, or the address
 * this machine's hostname resolves to (loopback when it resolves to none). */
enum { AR_NET_DEFAULT = 0, AR_NET_INTERFACE = 1, AR_NET_HOST = 2 };

/* A process group of world ranks over the store; collectives give up after
 * timeout_ms. device is where collective buffers live (-1 CPU for Gloo,
 * cuda:N for NCCL). */
int ar_dist_new(ar_kvstore s, int backend, int rank, int world,
                int64_t timeout_ms, int device, int net, const char *where,
                ar_dist *out, char **err);
int ar_dist_free(ar_dist d);
/* Sums the gradients of the n parameters over all ranks, in flat buckets of
 * at most bucket_bytes (one all-reduce each, two in flight at a time). A
 * parameter that has a gradient on some rank but not this one contributes
 * zeros and receives the sum; one that has none on any rank keeps none (so
 * the optimizer skips it, as it would in one process). */
int ar_dist_allreduce_grads(ar_dist d, const ar_tensor *params, int n,
                            int64_t bucket_bytes, char **err);
enum { AR_RED_SUM = 0, AR_RED_MAX = 1, AR_RED_MIN = 2 };
/* Reduces n doubles over all ranks in place. */
int ar_dist_allreduce_f64(ar_dist d, double *vals, int n, int op, char **err);
/* Gathers every rank's n bytes: *out (malloc'd, freed by the caller) holds
 * them concatenated in rank order and sizes[r] is rank r's length (sizes
 * holds world entries). */
int ar_dist_allgather(ar_dist d, const void *data, int64_t n, void **out,
                      int64_t *sizes, char **err);
/* Overwrites the n tensors (in place, no autograd) with root's. */
int ar_dist_broadcast(ar_dist d, const ar_tensor *ts, int n, int root,
                      char **err);
int ar_dist_barrier(ar_dist d, char **err);

#ifdef __cplusplus
}
#endif

#endif
