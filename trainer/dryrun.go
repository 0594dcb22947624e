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
	Warnings    []string
}

// MemoryEstimate is a rough device-memory budget in bytes. KVCache is the
// decode engine's key/value cache of the attention layers, DeltaNetState
// its conv and recurrent states of the Gated DeltaNet layers (Qwen3.5),
// which hold those instead (decodeStateBytes). Merged is the LoRA decode
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
	m.Grads, m.Optimizer = trainingState(r.Params, b, r.World, r.Zero)
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
	m.KVCache, m.DeltaNetState = decodeStateBytes(c, cfg.Rollout.Slots, cfg.Env.MaxTokens+1, b)
	// A LoRA model's LM head is frozen: it takes no gradient.
	m.Activations = activationBytes(c, cfg.Algorithm.MicroBatch, cfg.Env.MaxTokens, cfg.Model.LogitsChunk,
		cfg.Model.Checkpointing, !cfg.Model.LoRA.On())
	if cfg.Model.LoRA.On() {
		if err := checkLoRATargets(r.Model, loraTargets(r.Model, cfg.Model.LoRA)); err != nil {
			return nil, err
		}
		loraMemory(m, c, shapes, cfg, r.Params, b, sharded)
	}
	m.Total = m.Weights + m.Grads + m.Optimizer + m.Reference + m.Critic + m.KVCache + m.DeltaNetState + m.Activations + m.Merged
	if dev, err := torch.ParseDevice(cfg.Device.Device); err == nil && dev == torch.CPU {
		m.Total += m.Checkpoint
	}
	return r, nil
}

// decodeStateBytes is what the decode engine of slots sequences of
// positions tokens each holds per layer, for a model of b bytes a weight:
// an attention layer's keys and values (2 x kv_heads x head_dim per
// position, in the model's dtype); a Gated DeltaNet layer's, whatever the
// length, its conv state (the last kernel-1 inputs of each of the conv's
// channels, 2 x k_heads x k_dim + v_heads x v_dim, in the model's dtype)
// and its recurrent state (a k_dim x v_dim matrix per value head, in
// float32, the dtype the delta rule accumulates in for f32, bf16 and f16
// models alike).
func decodeStateBytes(c torch.Config, slots, positions int, b int64) (kv, deltanet int64) {
	n := int64(slots)
	for i := range c.Layers {
		if linearLayer(c, i) {
			conv := int64(2*c.LinearKeyHeads*c.LinearKeyDim+c.LinearValueHeads*c.LinearValueDim) * int64(c.LinearConvKernel-1) * b
			recurrent := int64(c.LinearValueHeads) * int64(c.LinearKeyDim) * int64(c.LinearValueDim) * 4
			deltanet += n * (conv + recurrent)
			continue
		}
		kv += 2 * n * int64(positions) * int64(c.KVHeads*c.HeadDim) * b
	}
	return kv, deltanet
}

// linearLayer says whether layer i of c is a Gated DeltaNet layer.
func linearLayer(c torch.Config, i int) bool {
	return i < len(c.LayerTypes) && c.LayerTypes[i] == torch.LinearAttention
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

// trainingState is the gradients and the optimizer state one rank holds
// for params parameters of b bytes each. Whole: the gradients in the
// parameters' dtype, plus the f32 accumulator of a bf16/f16 parameter
// (b < 4); AdamW's two f32 moments, plus the f32 master weights of a
// bf16/f16 parameter. With ZeRO over world ranks a rank holds its share of
// the flat vector padded to a multiple of world, ceil(params/world)
// elements: of the optimizer state from stage 1, of the gradients too from
// stage 2 (as DeepSpeed counts; this trainer's stage 2 still sums a step's
// micro-batch gradients whole before the reduce-scatter, see
// docs/distributed.md).
func trainingState(params, b int64, world, zero int) (grads, optimizer int64) {
	shard := params
	if world > 1 && zero >= 1 {
		shard = (params + int64(world) - 1) / int64(world)
	}
	gradBytes, optBytes := b, int64(8)
	if b < 4 {
		gradBytes, optBytes = b+4, 12
	}
	grads, optimizer = params*gradBytes, shard*optBytes
	if zero >= 2 {
		grads = shard * gradBytes
	}
	return grads, optimizer
}

// activationBytes estimates what the training forward of one micro-batch
// of micro sequences of seq tokens keeps for its backward pass, in float32,
// and the LM head's share of the backward's peak.
//
// A decoder layer keeps, per token, about 10 hidden-sized tensors (the
// residual input, the two RMSNorms' normalised values and outputs, q
// before and after RoPE, the attention output), 6 of the key/value width
// (k, v and k's RoPE), 4 of the MLP's intermediate size (gate, its SiLU,
// up and their product) and a row of attention probabilities per head.
// The backward of a layer holds, besides them, the gradients of its
// activations: one layer's worth more. With activation checkpointing only
// each layer's input is kept, and one layer's activations (and their
// gradients) exist at a time, while its backward recomputes them.
//
// A sparse (mixture-of-experts) layer keeps, instead of the dense MLP's 4
// intermediate-sized tensors, those of the experts each token runs
// (experts_per_token x 4 of the expert width), the token's rows gathered
// for them and their outputs (2 x experts_per_token hidden-sized), and
// the router's logits and probabilities (2 x experts). A shared expert
// (Qwen3.5 MoE) adds its MLP's 4 tensors of its width, its output
// (hidden-sized) and its gate's logit and sigmoid (2).
//
// A Gated DeltaNet layer (Qwen3.5's linear_attention) keeps, instead of
// the attention's, what transformers' chunked form
// (torch_chunk_gated_delta_rule, chunks of C = 64 tokens) and the layer
// around it keep, counted per token in floats, with q and k repeated to
// the V value heads (Q = V x k_dim, W = V x v_dim, D the conv's channels
// 2 x k_heads x k_dim + W): 6 hidden-sized (the residual input, the two
// RMSNorms' normalised values and outputs, the residual sum); 3 x D (the
// qkv projection, the conv's output and its SiLU); 4 x V (the a and b
// projections, g and beta); 10 x Q (q and k in float32 and L2-normalised,
// q scaled; k times beta and its decayed copy, the UT solve's decayed
// keys, q and k decayed for the scan); 11 x W (v in float32 and times
// beta, the UT solve's new values, the scan's corrected values, its read
// of the state, the intra-chunk product, the output; z, silu(z), the gated
// norm's normalised value and product); 7 x V x C (a row of the chunk's
// pairwise decays, before the mask, masked and exponentiated, and of the
// UT system and the intra-chunk attention, each before and after the
// decay); and the state entering each chunk, V x k_dim x v_dim per C
// tokens (padding to whole chunks aside). Qwen3.5's gated attention layer keeps, besides an attention
// layer's, the gate half of its twice-as-wide q_proj, the gate's sigmoid
// and the gated output (3 x heads x head_dim).
//
// The LM head's logits whole (logitsChunk 0) are three [tokens, vocab]
// tensors at the backward's peak (the log-softmax kept by the forward, its
// gradient and the gradient of the logits). In chunks, two [chunk, vocab]
// buffers at a time, the LM head's gradient [vocab, hidden] before it is
// added to the parameter's (when headGrad: not for a frozen head), and the
// hidden states [tokens, hidden].
func activationBytes(c torch.Config, micro, seq, logitsChunk int, checkpointing, headGrad bool) int64 {
	tok := int64(micro) * int64(seq)
	h, v := int64(c.Hidden), int64(c.Vocab)
	kv := int64(c.KVHeads) * int64(c.HeadDim)
	layer := func(i int) int64 { // the bytes layer i keeps
		mlp := 4 * int64(c.Intermediate)
		if c.SparseLayer(i) {
			k := int64(c.MoE.ExpertsPerToken)
			mlp = 4*k*int64(c.MoE.Intermediate) + 2*k*h + 2*int64(c.MoE.Experts)
			if s := int64(c.MoE.SharedIntermediate); s > 0 { // the shared expert's MLP, output and gate
				mlp += 4*s + h + 2
			}
		}
		if linearLayer(c, i) {
			const chunk = 64
			vh := int64(c.LinearValueHeads)
			q, w := vh*int64(c.LinearKeyDim), vh*int64(c.LinearValueDim)
			d := 2*int64(c.LinearKeyHeads*c.LinearKeyDim) + w
			state := vh * int64(c.LinearKeyDim) * int64(c.LinearValueDim)
			chunks := int64(micro) * ((int64(seq) + chunk - 1) / chunk)
			return (tok*(6*h+3*d+4*vh+10*q+11*w+7*vh*chunk+mlp) + chunks*state) * 4
		}
		gate := int64(0)
		if c.LayerTypes != nil { // Qwen3.5's attention layers are gated
			gate = 3 * int64(c.Heads) * int64(c.HeadDim)
		}
		return tok * (10*h + 6*kv + gate + mlp + int64(c.Heads)*int64(seq)) * 4
	}
	var all, largest int64
	for i := range c.Layers {
		all += layer(i)
		largest = max(largest, layer(i))
	}
	layers := all + largest
	if checkpointing {
		layers = int64(c.Layers)*tok*h*4 + 2*largest
	}
	logits := 3 * tok * v * 4
	if logitsChunk > 0 {
		logits = 2*min(int64(logitsChunk), tok)*v*4 + tok*h*4
		if headGrad {
			logits += v * h * 4
		}
	}
	return layers + logits
}
