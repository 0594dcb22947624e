package trainer

import (
	"context"
	"fmt"
	"os"

	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/config"
)

// DryRunReport is what `trainer train --dry-run` checked.
type DryRunReport struct {
	TrainTasks, EvalTasks int
	IndexPath             string
	Passages              int
	Tools                 []string
	Vocab                 int // tokenizer size
	Model                 torch.Config
	Params                int64
	Memory                MemoryEstimate
	Warnings              []string
}

// MemoryEstimate is a rough device-memory budget in bytes.
type MemoryEstimate struct {
	Weights, Grads, Optimizer, Reference, Critic, KVCache, Activations, Total int64
}

// paramCount is the number of weights of a Qwen2/Llama config.
func paramCount(c torch.Config) int64 {
	h, i, v, l := int64(c.Hidden), int64(c.Intermediate), int64(c.Vocab), int64(c.Layers)
	q := int64(c.Heads * c.HeadDim)
	kv := int64(c.KVHeads * c.HeadDim)
	per := h*q + 2*h*kv + q*h + 3*h*i + 2*h
	if c.QKVBias() {
		per += q + 2*kv
	}
	n := v*h + l*per + h
	if !c.TieEmbeddings {
		n += v * h
	}
	return n
}

// DryRun loads and checks everything a run needs (data, index, tools,
// tokenizer, model config) and estimates memory, without loading weights or
// training.
func DryRun(ctx context.Context, cfg config.Config) (*DryRunReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &DryRunReport{}
	dir, err := os.MkdirTemp("", "agentrl-dryrun-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	d, err := loadData(ctx, cfg, dir)
	if err != nil {
		return nil, err
	}
	r.TrainTasks, r.EvalTasks, r.IndexPath = len(d.train), len(d.eval), d.indexPath
	if d.indexPath != "" {
		idx, err := search.Open(d.indexPath)
		if err != nil {
			return nil, err
		}
		r.Passages = idx.Len()
		idx.Close()
	}
	a, err := agent.New(ctx, agent.Spec{Config: cfg, Index: d.indexPath, TokenizerDir: cfg.Model.Path, World: d.world,
		ShowSchemas: agent.SchemasShown(cfg)})
	if err != nil {
		return nil, err
	}
	defer a.Close()
	for _, t := range a.Tools {
		r.Tools = append(r.Tools, t.Name())
	}
	tok := a.Tokenizer
	if cfg.Model.Path != "" {
		if r.Model, err = torch.ReadConfig(cfg.Model.Path); err != nil {
			return nil, err
		}
	} else {
		r.Model = agent.TinyConfig(cfg.Model.Tiny, tok)
	}
	r.Vocab = tok.VocabSize()
	if r.Vocab > r.Model.Vocab {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the tokenizer has %d tokens but the model's vocab_size is %d: token ids would overflow the embedding", r.Vocab, r.Model.Vocab))
	}
	if cfg.Env.MaxTokens > r.Model.MaxPositions && r.Model.MaxPositions > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("env.max_tokens %d exceeds the model's max_position_embeddings %d", cfg.Env.MaxTokens, r.Model.MaxPositions))
	}
	r.Params = paramCount(r.Model)
	dt, err := torch.ParseDType(cfg.Device.DType)
	if err != nil {
		return nil, err
	}
	b := int64(dt.Size())
	m := &r.Memory
	m.Weights = r.Params * b
	m.Grads = r.Params * b
	m.Optimizer = r.Params * b * 2
	if cfg.Algorithm.KLCoef != 0 && cfg.Algorithm.KLMode != "off" {
		m.Reference = m.Weights
	}
	if est, _ := algo.Get(cfg.Algorithm.Estimator); est.Critic && cfg.Model.Critic == "separate" {
		m.Critic = 4 * m.Weights
	}
	c := r.Model
	m.KVCache = 2 * int64(c.Layers) * int64(cfg.Rollout.Slots) * int64(cfg.Env.MaxTokens+1) * int64(c.KVHeads*c.HeadDim) * b
	// Training activations of one micro-batch: per layer roughly 16 hidden-
	// sized tensors per token plus the attention scores, and the logits.
	tok2 := int64(cfg.Algorithm.MicroBatch) * int64(cfg.Env.MaxTokens)
	m.Activations = int64(c.Layers)*tok2*(16*int64(c.Hidden)+int64(c.Heads)*int64(cfg.Env.MaxTokens))*4 + 3*tok2*int64(c.Vocab)*4
	m.Total = m.Weights + m.Grads + m.Optimizer + m.Reference + m.Critic + m.KVCache + m.Activations
	return r, nil
}
