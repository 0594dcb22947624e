package bench

import (
	"sort"

	"github.com/agentrl/agentrl/torch"
)

// Result is one benchmark's outcome. Times are medians over the measured
// runs, in seconds. Fields of the other mode are zero and left out of the
// JSON.
type Result struct {
	Mode       string    `json:"mode"`         // "generate" or "train"
	TokensPerS float64   `json:"tokens_per_s"` // generate: end to end incl. prefill; train: per whole Update
	Config     Config    `json:"config"`       // as run, with Threads resolved
	MedianS    float64   `json:"median_s"`     // one whole run
	RunsS      []float64 `json:"runs_s"`       // every measured run, in order
	CPUS       float64   `json:"cpu_s"`        // process CPU time of a run (user+sys, all threads)

	// Generate.
	DecodeTokensPerS  float64 `json:"decode_tokens_per_s,omitempty"`  // Batch*NewTokens / DecodeS
	PrefillTokensPerS float64 `json:"prefill_tokens_per_s,omitempty"` // Batch*PromptLen / PrefillS
	PrefillS          float64 `json:"prefill_s,omitempty"`
	DecodeS           float64 `json:"decode_s,omitempty"`
	MsPerStep         float64 `json:"ms_per_step,omitempty"`   // 1000*DecodeS/NewTokens
	PrefillShare      float64 `json:"prefill_share,omitempty"` // PrefillS / (PrefillS + DecodeS)
	DecodePath        string  `json:"decode_path,omitempty"`   // the engine's decode path as run: "kernels (avx512)", "kernels (avx2)", "fused" or "unfused"
	// NoKernels is why the hand-written CPU decode kernels cannot run here
	// (e.g. "AGENTRL_CPU_KERNELS=off", "not an x86-64 CPU"); absent when they can.
	NoKernels string `json:"no_kernels,omitempty"`
	// The bandwidth bound of decoding: every weight is read once per step,
	// so no step can take less than WeightBytesPerStep / ReadGBs.
	WeightBytesPerStep int64   `json:"weight_bytes_per_step,omitempty"` // all weights but the embedding, plus the Batch embedding rows
	ReadGBs            float64 `json:"read_gbs,omitempty"`              // memory read bandwidth used for the bound
	ReadGBsMeasured    bool    `json:"read_gbs_measured,omitempty"`     // measured in-process (else given by --bandwidth-gbs)
	BoundTokensPerS    float64 `json:"bound_tokens_per_s,omitempty"`    // Batch * ReadGBs * 1e9 / WeightBytesPerStep
	BoundFraction      float64 `json:"bound_fraction,omitempty"`        // DecodeTokensPerS / BoundTokensPerS
	// StepMs is one decode step's time by phase (with Profile), in ms:
	// products, attention, sampling, other; medians over the runs.
	StepMs *StepPhases `json:"step_ms,omitempty"`

	// Train: the phases of the learner's Update (learner.Timing).
	PrepareS    float64 `json:"prepare_s,omitempty"`    // no-gradient passes before the step: none when OldFromStep
	AdvantagesS float64 `json:"advantages_s,omitempty"` // the estimator's advantages (GRPO)
	ForwardS    float64 `json:"forward_s,omitempty"`    // training forward with autograd and the loss
	BackwardS   float64 `json:"backward_s,omitempty"`   // backward and the read-back of the loss and diagnostics
	OptimS      float64 `json:"optim_s,omitempty"`      // grad clip, AdamW step, zero grad
	Loss        float64 `json:"loss,omitempty"`         // PPO loss of the last run
	GradNorm    float64 `json:"grad_norm,omitempty"`    // gradient norm before clipping, last run
	PeakRSSMB   float64 `json:"peak_rss_mb,omitempty"`  // the process's peak resident memory after the runs, MB
	// AllocatorPeakMB is the most the tensor allocator ever held, MB:
	// CUDA's caching allocator on CUDA, on the CPU agentrl's host
	// allocator (tensors of 4 MB and up, torch.HostMemory).
	AllocatorPeakMB float64 `json:"allocator_peak_mb,omitempty"`
	// EstimateMB is the dry run's estimate of the same update, MB: the
	// weights, gradients, optimizer state and one micro-batch's
	// activations (trainer/memory); absent with LoRA.
	EstimateMB float64 `json:"estimate_mb,omitempty"`
	// OldFromStep: the update took the old logprobs from its step's
	// training forward instead of recomputing them (learner.UpdateResult).
	OldFromStep bool `json:"old_from_step,omitempty"`
	// AdamW is how the optimizer stepped: "fused" (libtorch's
	// at::_fused_adamw_) or "loop" (elementwise ops per parameter, where
	// the linked libtorch lacks the fused kernel).
	AdamW string `json:"adamw,omitempty"`
	// TrainableParams counts the values the optimizer trains: every weight,
	// or with LoRA the adapters alone.
	TrainableParams int64 `json:"trainable_params,omitempty"`
	// SDPABackend is the kernel libtorch chose for the training forward's
	// last attention call (torch.Model.SDPABackend); empty where attention
	// does not run through scaled_dot_product_attention (libtorch < 2.5).
	SDPABackend string `json:"sdpa_backend,omitempty"`

	// Kernels is the kernel profile of one more update or decode step
	// (Config.KernelProfile), nil without one; its table goes to a file of
	// its own, not into the JSON.
	Kernels *torch.Profile `json:"-"`
}

// StepPhases is a decode step's time by phase (see torch.StepProfile).
type StepPhases struct {
	Products  float64 `json:"products"`
	Attention float64 `json:"attention"`
	Sampling  float64 `json:"sampling"`
	Other     float64 `json:"other"`
}

// median is the middle value (the mean of the two middle ones for an even
// count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
