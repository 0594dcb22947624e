// Package bench measures the policy model's hot paths on random weights:
// generation through the KV-cache engine, the learner's update, and
// multi-turn rollouts through the agent's decode engine.
//
// Generate prefills Batch random prompts of PromptLen tokens into slots
// 0..Batch-1 (one batched PrefillBatch call for all of them) and
// then runs NewTokens decode steps of all slots together, sampling at
// temperature 1. Its headline TokensPerS is end to end, the way a Hugging
// Face generate loop is usually timed: Batch*NewTokens generated tokens over
// the time of prefill plus decode. DecodeTokensPerS counts the decode phase
// alone and PrefillTokensPerS the prompt tokens over the prefill phase.
//
// Generate also reports the bandwidth bound of decoding: the bytes of
// weights one step reads (WeightBytesPerStep), a read bandwidth (measured
// in-process, or Config.BandwidthGBs), the decode rate that reading alone
// would allow (BoundTokensPerS) and the fraction of it reached
// (BoundFraction); with Config.Profile, one step's time by phase (StepMs).
// Config.Decode picks the engine's decode path (see torch.DecodePath); the
// result's DecodePath names the path that ran, with the hand-written
// kernels' instruction set ("kernels (avx2)"), and NoKernels why those
// kernels cannot run here, where they cannot (AGENTRL_CPU_KERNELS picks or
// turns them off: auto, avx512, avx2, off).
//
// Train times the learner's Update (trainer/learner), the one the trainer
// runs every iteration, on Batch trajectories of SeqLen random tokens: a
// prompt of the first half (plus 0-2 tokens), then policy tokens with
// behaviour logprobs, rewards 0, 1, 2, 0, ... in Batch/4 GRPO groups (at
// least one). One
// update computes the GRPO advantages (AdvantagesS) and takes one
// optimizer step over the whole batch: the training forward with autograd
// and the clipped PPO loss over the policy tokens with its diagnostics
// (ForwardS), backward (BackwardS), gradient clipping at norm 1 and an
// AdamW step (OptimS). With these settings (one epoch, one mini-batch of
// the whole batch, no rollout correction, no reference) the update is
// on-policy, so it takes the old logprobs from its training forward
// (OldFromStep, algorithm.old_logprobs auto) and runs no recompute pass
// without gradients before the step: PrepareS is near 0. Its TokensPerS
// is Batch*SeqLen over the whole Update. The PyTorch reference
// (refbench.py train) times the optimizer step alone: compare it with
// ForwardS+BackwardS+OptimS.
//
// Train also reports how AdamW stepped (AdamW: "fused", libtorch's
// at::_fused_adamw_, or "loop"), the process's peak resident memory
// (PeakRSSMB), the tensor allocator's peak (AllocatorPeakMB) beside the
// dry run's estimate of the same update (EstimateMB), and
// computes the LM head's logits in chunks of Config.LogitsChunk tokens
// (0: whole), as model.logits_chunk does in training, with activation
// checkpointing when Config.Checkpointing.
//
// With Config.LoRARank > 0 both benchmark LoRA over the random model:
// Train updates adapters (torch.NewLoRAModel) while the base stays frozen,
// the optimizer holding the adapters alone (Result.TrainableParams counts
// them), and Generate decodes from the merged weights
// (torch.NewMergedModel), as rollouts of LoRA training do.
//
// Both build a Qwen2-style model (q/k/v biases, an lm_head untied unless
// Config.Tied, head_dim = Hidden/Heads) in float32 on the CPU, run one warm-up and then Repeats
// measured runs, and report medians, with the process CPU time beside the
// wall time. All libtorch work runs on one torch.Worker after
// torch.SetThreads(Threads), Threads 0 meaning every core.
//
// The numbers depend on how libgomp's and OpenBLAS's thread pools wait,
// which only environment variables read at process start control (the
// trainer CLI sets OMP_WAIT_POLICY=PASSIVE through torch.PassiveOpenMP).
// With spinning workers, on 2 cores shared with other work, decode ran
// 3-13x slower and burned 3-8x the CPU time; OPENBLAS_THREAD_TIMEOUT=16
// (idle OpenBLAS workers sleep after 2^16 cycles instead of 2^28) helped
// further.
//
// With Config.KernelProfile, after the measured runs, Train records one
// more update and Generate one decode step (the middle one of one more
// run) under libtorch's profiler (torch.RecordProfile) into
// Result.Kernels: on CUDA the kernels, on the CPU the operators (the
// hand-written CPU decode kernels are none, so a profile of that path is
// empty).
//
// A Result marshals (encoding/json) to one line:
//
//	{"mode":"generate","tokens_per_s":1234.5,"config":{"vocab":2048,...},...}
package bench
