package trainer

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
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/memory"
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

// MemoryEstimate is a rough device-memory budget in bytes. KVCache is the
// decode engine's key/value cache of the attention layers, DeltaNetState
// its conv and recurrent states of the Gated DeltaNet layers (Qwen3.5),
// which hold those instead (memory.DecodeState). Merged is the LoRA decode
// model's copy of the target weights (0 without LoRA). Checkpoint is the
// host memory a checkpoint holds while it is written (checkpointBytes);
// Total counts it on the CPU, where host memory is the device's.
type MemoryEstimate struct {
	Weights, Grads, Optimizer, Reference, Critic, KVCache, DeltaNetState, Activations, Merged, Checkpoint, Total int64
}

// paramCount is the number of weights of a model with these parameters.
func paramCount(shapes []torch.ParamShape) int64 {
	var n int64
	for _, p := range shapes {
		n += p.Numel()
	}
	return n
}

// activeParams is the parameters of shapes one token of a model of c
// runs through: all but, in each sparse layer, experts - top-k of its
// experts (each expert's parameters are mlp.experts.{e}.*, the same
// number for every expert).
func activeParams(c torch.Config, shapes []torch.ParamShape) int64 {
	var all, experts int64
	for _, p := range shapes {
		all += p.Numel()
		if strings.Contains(p.Name, ".mlp.experts.") {
			experts += p.Numel()
		}
	}
	if e := int64(c.MoE.Experts); e > 0 {
		all -= experts / e * (e - int64(c.MoE.ExpertsPerToken))
	}
	return all
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
	if d.fresh != nil { // the first draws' questions, each batch in its own world
		r.TrainTasks = cfg.Run.Iterations * cfg.Rollout.BatchSize
	}
	if d.indexPath != "" {
		idx, err := search.Open(d.indexPath)
		if err != nil {
			return nil, err
		}
		r.Passages = idx.Len()
		idx.Close()
	}
	a, err := agent.New(ctx, agentSpec(cfg, d, cfg.Model.Path))
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

// checkpointBytes is the host memory a checkpoint holds at once beside
// the update's (rank 0's, trainer.checkpoint) for trained parameters, the
// largest of them largest elements, in a model of b bytes a weight.
// AdamW's state is 8 f32 bytes a parameter (its two moments), 12 with
// the master weights of a bf16/f16 parameter (b < 4). Without ZeRO it is
// written one parameter at a time: the largest parameter's state copied
// out of the optimizer, and its f32 bytes in Go. With ZeRO (sharded) it is
// gathered whole first and held while the weights are written, one tensor
// at a time (the largest's bytes). eagerWeights is a PEFT adapter folder's
// bytes, written whole before the optimizer state.
func checkpointBytes(trained, largest, eagerWeights, b int64, sharded bool) int64 {
	opt := int64(8)
	if b < 4 {
		opt = 12
	}
	if sharded {
		return trained*opt + max(eagerWeights, largest*b)
	}
	return max(eagerWeights, largest*(opt+4))
}

// largestParam is the element count of the largest of the parameters.
func largestParam(shapes []torch.ParamShape) int64 {
	var n int64
	for _, p := range shapes {
		n = max(n, p.Numel())
	}
	return n
}
