package agent

import (
	"fmt"

	"github.com/agentrl/agentrl/decoding/torchdecoder"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/config"
)

// Mode is how a model runs its forward passes: with activation
// checkpointing (model.checkpointing), under bf16 autocast
// (device.autocast), and with the LM head's logits computed in chunks of
// LogitsChunk tokens (model.logits_chunk; 0 = whole). The zero Mode
// computes the logits whole.
type Mode struct {
	Checkpointing, Autocast bool
	LogitsChunk             int
}

// ModeOf is the mode of cfg's models.
func ModeOf(cfg config.Config) Mode {
	return Mode{Checkpointing: cfg.Model.Checkpointing, Autocast: cfg.Device.Autocast, LogitsChunk: cfg.Model.LogitsChunk}
}

// Apply sets the mode of m.
func (md Mode) Apply(m *torch.Model) error {
	if err := m.SetCheckpointing(md.Checkpointing); err != nil {
		return err
	}
	if err := m.SetLogitsChunk(md.LogitsChunk); err != nil {
		return err
	}
	return m.SetAutocast(md.Autocast, torch.BFloat16)
}

// TinyConfig is the config of a model created from scratch (model.tiny,
// Qwen2-, Qwen3-, Qwen3.5- or Qwen3-MoE-style) for tok's vocabulary. A
// qwen3_moe model has every MLP sparse, with normalised top-k. A qwen3_5 model is
// transformers' qwen3_5_text: Gated DeltaNet layers with every
// full_attention_interval-th layer a gated attention layer (as
// Qwen3_5TextConfig derives layer_types), RoPE θ 1e7 over a quarter of each
// head, as Qwen3.5's published models.
func TinyConfig(c config.TinyConfig, tok *tokenizer.Tokenizer) torch.Config {
	tc := torch.Config{ModelType: c.ModelType, Vocab: tok.VocabSize(), Hidden: c.Hidden, Intermediate: c.Intermediate,
		Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.Hidden / max(c.Heads, 1), RMSEps: 1e-6,
		RopeTheta: 10000, MaxPositions: c.MaxPositions, BOS: int(tok.EOS()), EOS: int(tok.EOS())}
	if c.ModelType == tinyQwen3MoE {
		tc.MoE = torch.MoE{Experts: c.Experts, ExpertsPerToken: c.ExpertsPerToken, Intermediate: c.MoEIntermediate,
			NormTopKProb: true, SparseStep: 1}
	}
	if c.ModelType == torch.NemotronH {
		return tinyNemotron(c, tc)
	}
	if c.ModelType == tinyGemma4 {
		return tinyGemma(c, tc)
	}
	if c.ModelType != tinyQwen35 {
		return tc
	}
	tc.ModelType, tc.RopeTheta, tc.PartialRotary = "qwen3_5_text", 1e7, 0.25
	tc.LinearKeyHeads, tc.LinearValueHeads = c.LinearKeyHeads, c.LinearValueHeads
	tc.LinearKeyDim, tc.LinearValueDim, tc.LinearConvKernel = c.LinearKeyDim, c.LinearValueDim, c.ConvKernel
	for i := range c.Layers {
		t := torch.LinearAttention
		if (i+1)%max(c.FullAttentionInterval, 1) == 0 {
			t = torch.FullAttention
		}
		tc.LayerTypes = append(tc.LayerTypes, t)
	}
	return tc
}

// model.tiny.model_type's names of the Qwen3.5 family and of Qwen3 MoE.
const (
	tinyQwen35   = "qwen3_5"
	tinyQwen3MoE = "qwen3_moe"
)

// tinyChatFamily is the chat format of the word-level tokenizer made for
// the tiny model of c: Qwen3.5's (tool calls in XML) for a qwen3_5 model,
// else Qwen3's.
func tinyChatFamily(c config.TinyConfig) tokenizer.Family {
	if c.ModelType == tinyQwen35 {
		return tokenizer.Qwen35
	}
	return tokenizer.Qwen3
}

// Sampler is what an agent's rollouts sample from: torch's KV-cache engine
// over the policy itself, or over a copy of it in another precision
// (rollout.dtype), or, for a policy with LoRA adapters, over a model of its
// merged weights (torch.NewMergedModel: the adapters are never run per
// token), which Sync refreshes from the policy.
type Sampler struct {
	*torch.Engine
	policy, copy *torch.Model // copy is nil when the engine decodes from the policy
}

// NewSampler makes the engine of slots sequences of up to maxLen tokens
// over policy, decoding in dtype: from policy itself when that is its
// precision, else from a copy in dtype (in mode), refreshed by Sync. A
// LoRA policy decodes from its merged weights, in its base's dtype
// (dtype is not used).
func NewSampler(policy *torch.Model, dtype torch.DType, mode Mode, slots, maxLen int) (*Sampler, error) {
	return newSampler(policy, dtype, mode, slots, maxLen, false)
}

// NewCopySampler is NewSampler decoding from a copy of the policy's weights
// even in its own precision, so that the policy can be updated while the
// engine decodes (asynchronous training); Sync refreshes the copy.
func NewCopySampler(policy *torch.Model, dtype torch.DType, mode Mode, slots, maxLen int) (*Sampler, error) {
	return newSampler(policy, dtype, mode, slots, maxLen, true)
}

// NewRolloutSampler is the sampler of a run's rollouts over policy: in
// rollout.dtype (auto: dtype, the policy's), for rollout.slots sequences
// (at least a group) of env.max_tokens and the token after; a copy
// sampler when the rollout role decodes while the policy is updated
// (rollout.max_staleness > 0). With algorithm.routing_replay its engine
// records each token's experts (refused for a dense policy).
func NewRolloutSampler(cfg config.Config, policy *torch.Model, dtype torch.DType) (*Sampler, error) {
	if dt := cfg.Rollout.DType; dt != "auto" {
		var err error
		if dtype, err = torch.ParseDType(dt); err != nil {
			return nil, err
		}
	}
	if cfg.Algorithm.RoutingReplay && policy.Config.SparseLayers() == 0 {
		return nil, fmt.Errorf("algorithm.routing_replay: the policy (%s) has no mixture-of-experts layer to replay the routing of", policy.Config.ModelType)
	}
	newSampler := NewSampler
	if cfg.Rollout.MaxStaleness > 0 {
		newSampler = NewCopySampler
	}
	e, err := newSampler(policy, dtype, ModeOf(cfg), max(cfg.Rollout.Slots, cfg.Rollout.GroupSize), cfg.Env.MaxTokens+1)
	if err == nil && cfg.Algorithm.RoutingReplay {
		if err = e.SetRecordRouting(true); err != nil {
			e.Free()
			return nil, err
		}
	}
	return e, err
}

func newSampler(policy *torch.Model, dtype torch.DType, mode Mode, slots, maxLen int, copyAlways bool) (*Sampler, error) {
	e := &Sampler{policy: policy}
	decoder := policy
	if copyAlways || policy.LoRA() != nil || dtype != policy.DType {
		var err error
		if policy.LoRA() != nil {
			e.copy, err = torch.NewMergedModel(policy)
		} else {
			e.copy, err = torch.NewModel(policy.Config, dtype, policy.Device, false)
		}
		if err != nil {
			return nil, err
		}
		if err := mode.Apply(e.copy); err != nil {
			e.Free()
			return nil, err
		}
		decoder = e.copy
	}
	var err error
	if e.Engine, err = torch.NewEngine(decoder, slots, maxLen); err != nil {
		e.Free()
		return nil, err
	}
	return e, nil
}

// Sync copies the policy's current weights into the copy the engine
// decodes from, when it decodes from a copy: for a LoRA policy, merges its
// current adapters into the target weights.
func (e *Sampler) Sync() error {
	switch {
	case e.copy == nil:
		return nil
	case e.policy.LoRA() != nil:
		return e.copy.MergeFrom(e.policy)
	}
	return e.copy.CopyWeightsFrom(e.policy)
}

// Decoder is the engine as a decoding.Decoder, for rollouts and serving.
func (e *Sampler) Decoder() torchdecoder.Decoder { return torchdecoder.Decoder{Engine: e.Engine} }

// Free frees the engine and the copy (not the policy).
func (e *Sampler) Free() {
	if e == nil {
		return
	}
	e.Engine.Free()
	e.copy.Free()
	e.Engine, e.copy = nil, nil
}
