// Package dryrun is `trainer train --dry-run`: it loads and checks
// everything a run needs (data, index, tools, tokenizer, model config)
// and estimates the memory a rank needs, without loading weights or
// training.
package dryrun

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/datasets"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/memory"
)

// Report is what `trainer train --dry-run` checked.
type Report struct {
	TrainTasks, EvalTasks int
	IndexPath             string
	Passages              int
	Tools                 []string
	Vocab                 int // tokenizer size
	Model                 torch.Config
	Params                int64
	// ActiveParams is the parameters one token runs through: Params less,
	// in each sparse layer, the experts its router does not choose (the
	// top-k and a shared expert counted); Params for a dense model.
	ActiveParams int64
	Memory       MemoryEstimate // per rank
	// World is the number of data-parallel ranks (WORLD_SIZE under a
	// launcher, else dist.nproc) and Zero the ZeRO stage (dist.zero) the
	// estimate is for.
	World, Zero int
	// Decode is, on a CPU device, the decode step the rollouts will run on
	// this machine: "hand-written kernels (avx512)" or "(avx2)", or
	// "libtorch's step: " and why the kernels do not run (the CPU, the
	// model, device.autocast, or AGENTRL_CPU_KERNELS=off). "" on CUDA.
	Decode   string
	Warnings []string
}

// Run loads and checks everything a run needs (data, index, tools,
// tokenizer, model config) and estimates memory, without loading weights or
// training.
func Run(ctx context.Context, cfg config.Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Report{}
	dir, err := os.MkdirTemp("", "agentrl-dryrun-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	d, err := datasets.Load(ctx, cfg, dir)
	if err != nil {
		return nil, err
	}
	r.TrainTasks, r.EvalTasks, r.IndexPath = len(d.Train), len(d.Eval), d.IndexPath
	if d.Fresh != nil { // the first draws' questions, each batch in its own world
		r.TrainTasks = cfg.Run.Iterations * cfg.Rollout.BatchSize
	}
	if d.IndexPath != "" {
		idx, err := search.Open(d.IndexPath)
		if err != nil {
			return nil, err
		}
		r.Passages = idx.Len()
		idx.Close()
	}
	a, err := agent.New(ctx, d.AgentSpec(cfg, cfg.Model.Path))
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
		// Where the folder has weights, the config must describe them (a
		// count of layers they do not hold would be walked layer by
		// layer below); their headers are read, no weight.
		if err := torch.CheckWeightsIfPresent(cfg.Model.Path, r.Model); err != nil {
			return nil, err
		}
	} else {
		r.Model = agent.TinyConfig(cfg.Model.Tiny, tok)
	}
	r.Vocab = tok.VocabSize()
	if err := agent.CheckVocab(tok, r.Model); err != nil {
		r.Warnings = append(r.Warnings, err.Error())
	}
	if r.Model.Hybrid() {
		r.Warnings = append(r.Warnings, "the model has Gated DeltaNet layers (Qwen3.5): the hand-written CPU decode kernels run "+
			"attention-only models, so rollouts decode on the libtorch path")
	}
	if r.Model.IsNemotron() {
		r.Warnings = append(r.Warnings, "the model is a Nemotron-H model (Mamba-2 layers): the hand-written CPU decode kernels run "+
			"attention-only models, so rollouts decode on the libtorch path")
	}
	if r.Model.IsGemma4() {
		r.Warnings = append(r.Warnings, "the model is a Gemma 4 model: the hand-written CPU decode kernels do not run it, so rollouts "+
			"decode on the libtorch path")
	}
	if r.Model.Sparse() {
		r.Warnings = append(r.Warnings, "the model has mixture-of-experts layers: the hand-written CPU decode kernels run dense models only, "+
			"so rollouts decode on the libtorch path (and on CUDA without graph capture: the routing picks each step's experts on the host)")
	}
	if cfg.Env.MaxTokens > r.Model.MaxPositions && r.Model.MaxPositions > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("env.max_tokens %d exceeds the model's max_position_embeddings %d", cfg.Env.MaxTokens, r.Model.MaxPositions))
	}
	// The parameters' shapes come from the table the model is made from.
	shapes, err := torch.ParamShapes(r.Model, false)
	if err != nil {
		return nil, err
	}
	r.Params = paramCount(shapes)
	r.ActiveParams = activeParams(r.Model, shapes)
	dt, err := torch.ParseDType(cfg.Device.DType)
	if err != nil {
		return nil, err
	}
	b := int64(dt.Size())
	r.World, r.Zero = cfg.Dist.NProc, cfg.Dist.Zero
	if env, ok, err := dist.FromEnv(); err == nil && ok {
		r.World = env.World
	}
	m := &r.Memory
	m.Weights = r.Params * b
	m.Grads, m.Optimizer = memory.TrainingState(r.Params, b, r.World, r.Zero)
	if cfg.Algorithm.KLCoef != 0 && cfg.Algorithm.KLMode != "off" {
		m.Reference = m.Weights
	}
	var criticParams int64
	if est, _ := algo.Get(cfg.Algorithm.Estimator); est.Critic && cfg.Model.Critic == "separate" {
		m.Critic = m.Weights + m.Grads + m.Optimizer
		criticParams = r.Params
	}
	sharded := r.World > 1 && r.Zero >= 1
	m.Checkpoint = checkpointBytes(r.Params+criticParams, largestParam(shapes), 0, b, sharded)
	c := r.Model
	// The rollouts decode in rollout.dtype where it is set.
	rdt := dt
	if cfg.Rollout.DType != "auto" {
		if rdt, err = torch.ParseDType(cfg.Rollout.DType); err != nil {
			return nil, err
		}
	}
	rb := int64(rdt.Size())
	m.KVCache, m.DeltaNetState = memory.DecodeState(c, cfg.Rollout.Slots, cfg.Env.MaxTokens+1, rb)
	// A LoRA model's LM head is frozen: it takes no gradient. On CUDA the
	// attention runs libtorch's SDPA (ar_model_set_attention's auto); a CPU
	// build estimates a CUDA job's memory too.
	cuda := strings.HasPrefix(cfg.Device.Device, "cuda") // validated: cpu, cuda or cuda:N
	if !cuda {
		isa, why, err := torch.CPUDecode(c, rdt, cfg.Device.Autocast)
		if err != nil {
			return nil, err
		}
		r.Decode = "hand-written kernels (" + isa + ")"
		if isa == "" {
			r.Decode = "libtorch's step: " + why
		}
	}
	m.Activations = memory.Activations(c, memory.Workload{Micro: cfg.Algorithm.MicroBatch, Seq: cfg.Env.MaxTokens,
		LogitsChunk: cfg.Model.LogitsChunk, Checkpointing: cfg.Model.Checkpointing, HeadGrad: !cfg.Model.LoRA.On(),
		Bytes: b, SDPA: cuda})
	if cfg.Model.LoRA.On() {
		if err := checkLoRATargets(r.Model, loraTargets(r.Model, cfg.Model.LoRA)); err != nil {
			return nil, err
		}
		loraMemory(m, c, shapes, cfg, r.Params, b, sharded)
	}
	m.Total = m.Weights + m.Grads + m.Optimizer + m.Reference + m.Critic + m.KVCache + m.DeltaNetState + m.Activations + m.Merged
	if !cuda {
		m.Total += m.Checkpoint
	}
	return r, nil
}
