package config

import (
	"errors"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/decoding/vllm"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/reward"
	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/envs/tasks"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/rollout"
)

// Validate checks every key's range or allowed values, and the few rules
// that tie keys together, and reports all problems at once, each naming
// its key.
func (c Config) Validate() error {
	var p problems
	p.generic(reflect.ValueOf(&c).Elem())
	c.validateRun(&p)
	c.validateDevice(&p)
	c.validateModel(&p)
	c.validateData(&p)
	c.validateTools(&p)
	c.validateEnv(&p)
	c.validateRollout(&p)
	c.validateAlgorithm(&p)
	c.validateOptim(&p)
	c.validateSFT(&p)
	p.atLeast("store.writer_depth", c.Store.WriterDepth, 1)
	p.atLeast("eval.max_eval", c.Eval.MaxEval, 0)
	c.validateDist(&p)
	c.validateAgent(&p)
	return errors.Join(p...)
}

func (c *Config) validateAgent(p *problems) {
	a := c.Agent
	p.atLeast("agent.parallel", a.Parallel, 0)
	p.atLeast("agent.max_stdout", a.MaxStdout, 1)
	p.atLeast("agent.stderr_tail", a.StderrTail, 0)
	p.nonEmpty("agent.model", a.Model)
	if a.Timeout <= 0 {
		p.add("agent.timeout", "%s, want a positive duration", a.Timeout)
	}
	for _, e := range a.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			p.add("agent.env", "%q, want KEY=VALUE", e)
		}
	}
	if len(a.Command) > 0 {
		name := a.Command[0]
		if a.Dir != "" && strings.Contains(name, "/") && !filepath.IsAbs(name) {
			name = filepath.Join(a.Dir, name)
		}
		if name == "" {
			p.add("agent.command", "the program is \"\"")
		} else if _, err := exec.LookPath(name); err != nil {
			p.add("agent.command", "the program %q cannot be run: %v", a.Command[0], err)
		}
	}
}

func (c *Config) validateRun(p *problems) {
	r := c.Run
	if r.Name == "" || r.Name == "." || r.Name == ".." || strings.ContainsAny(r.Name, `/\`) {
		p.add("run.name", "%q, want a non-empty folder name without / or \\", r.Name)
	}
	p.nonEmpty("run.dir", r.Dir)
	p.atLeast("run.iterations", r.Iterations, 1)
	p.atLeast("run.eval_every", r.EvalEvery, 0)
	p.atLeast("run.save_every", r.SaveEvery, 0)
}

func (c *Config) validateDevice(p *problems) {
	if !validDevice(c.Device.Device) {
		p.add("device.device", "%q, want cpu, cuda or cuda:N", c.Device.Device)
	}
	p.atLeast("device.threads", c.Device.Threads, 0)
}

// validDevice accepts cpu, cuda and cuda:N; whether the device exists is
// checked when the model is placed on it.
func validDevice(d string) bool {
	if d == "cpu" || d == "cuda" {
		return true
	}
	n, ok := strings.CutPrefix(d, "cuda:")
	i, err := strconv.Atoi(n)
	return ok && err == nil && i >= 0
}

func (c *Config) validateModel(p *problems) {
	t := c.Model.Tiny
	p.atLeast("model.tiny.hidden", t.Hidden, 1)
	p.atLeast("model.tiny.intermediate", t.Intermediate, 1)
	p.atLeast("model.tiny.layers", t.Layers, 1)
	p.atLeast("model.tiny.heads", t.Heads, 1)
	p.atLeast("model.tiny.kv_heads", t.KVHeads, 1)
	p.atLeast("model.tiny.max_positions", t.MaxPositions, 1)
	if t.Heads >= 1 && t.Hidden%t.Heads != 0 {
		p.add("model.tiny.heads", "%d does not divide model.tiny.hidden %d", t.Heads, t.Hidden)
	} else if t.Heads >= 1 && (t.Hidden/t.Heads)%2 != 0 {
		p.add("model.tiny.heads", "%d gives an odd head size %d; rotary embeddings need an even one", t.Heads, t.Hidden/t.Heads)
	}
	if t.KVHeads >= 1 && t.Heads%t.KVHeads != 0 {
		p.add("model.tiny.kv_heads", "%d does not divide model.tiny.heads %d", t.KVHeads, t.Heads)
	}
	c.validateTinyQwen35(p)
	c.validateTinyMoE(p)
	c.validateTinyNemotron(p)
	p.atLeast("model.logits_chunk", c.Model.LogitsChunk, 0)
	if c.Model.Critic == "shared" && c.Model.CriticPath != "" {
		p.add("model.critic_path", "%q, but model.critic is shared (the value head sits on the policy)", c.Model.CriticPath)
	}
	c.validateLoRA(p)
	if e := c.Model.Chat.ReasoningEffort; e != "" && !slices.Contains(tokenizer.ReasoningEfforts, e) {
		p.add("model.chat.reasoning_effort", "%q, want one of %s, or \"\" for the template's default", e, strings.Join(tokenizer.ReasoningEfforts, ", "))
	}
}

// validateTinyQwen35 checks the Qwen3.5 keys of model.tiny: in range for
// a qwen3_5 model, at their defaults for the others (which have no Gated
// DeltaNet layers: a key set there would be ignored).
func (c *Config) validateTinyQwen35(p *problems) {
	t, d := c.Model.Tiny, Default().Model.Tiny
	keys := []struct {
		name     string
		v, def   int
		smallest int
	}{
		{"model.tiny.full_attention_interval", t.FullAttentionInterval, d.FullAttentionInterval, 1},
		{"model.tiny.linear_key_heads", t.LinearKeyHeads, d.LinearKeyHeads, 1},
		{"model.tiny.linear_value_heads", t.LinearValueHeads, d.LinearValueHeads, 1},
		{"model.tiny.linear_key_dim", t.LinearKeyDim, d.LinearKeyDim, 1},
		{"model.tiny.linear_value_dim", t.LinearValueDim, d.LinearValueDim, 1},
		// A kernel of 1 would leave the decode state no inputs to keep.
		{"model.tiny.conv_kernel", t.ConvKernel, d.ConvKernel, 2},
	}
	if t.ModelType != "qwen3_5" {
		for _, k := range keys {
			if k.v != k.def {
				p.add(k.name, "%d, but model.tiny.model_type is %s: the Qwen3.5 keys apply to qwen3_5 only", k.v, t.ModelType)
			}
		}
		return
	}
	for _, k := range keys {
		p.atLeast(k.name, k.v, k.smallest)
	}
	if t.LinearKeyHeads >= 1 && t.LinearValueHeads >= 1 && t.LinearValueHeads%t.LinearKeyHeads != 0 {
		p.add("model.tiny.linear_value_heads", "%d is not a multiple of model.tiny.linear_key_heads %d", t.LinearValueHeads, t.LinearKeyHeads)
	}
	// The causal convolution reads the conv_kernel tokens up to each one;
	// no sequence is longer than max_positions, so taps past it would only
	// ever meet the zero padding before the first token, while the packed
	// forward keeps a copy of the layer's inputs per tap.
	if t.MaxPositions >= 1 && t.ConvKernel > t.MaxPositions {
		p.add("model.tiny.conv_kernel", "%d exceeds model.tiny.max_positions %d: the convolution reads the conv_kernel tokens up to each one, "+
			"and no sequence is longer than max_positions, so the taps past it would only ever see padding (and the packed forward keeps "+
			"a copy of the layer's inputs per tap)", t.ConvKernel, t.MaxPositions)
	}
	if t.FullAttentionInterval > t.Layers && t.Layers >= 1 {
		p.add("model.tiny.full_attention_interval", "%d exceeds model.tiny.layers %d: the model would have no attention layer", t.FullAttentionInterval, t.Layers)
	}
	// Qwen3.5's attention turns a quarter of each head by RoPE, in pairs.
	if h := t.Hidden / max(t.Heads, 1); t.Heads >= 1 && t.Hidden%t.Heads == 0 && h%2 == 0 && h%8 != 0 {
		p.add("model.tiny.heads", "%d gives a head size of %d; qwen3_5's partial RoPE turns a quarter of each head in pairs, so the head size must be a multiple of 8",
			t.Heads, h)
	}
}

// HasExperts says whether the model t makes has mixture-of-experts
// layers: qwen3_moe, nemotron_h with E blocks, gemma4_text with moe_block.
func (t TinyConfig) HasExperts() bool {
	return t.ModelType == "qwen3_moe" || t.ModelType == "nemotron_h" && strings.Contains(t.NemotronPattern, "E") ||
		t.ModelType == "gemma4_text" && t.MoEBlock
}

// validateTinyMoE checks the experts keys of model.tiny: in range for a
// model with experts (TinyConfig.HasExperts), at their defaults for the
// others (a key set there would be ignored); moe_block is gemma4_text's.
func (c *Config) validateTinyMoE(p *problems) {
	t, d := c.Model.Tiny, Default().Model.Tiny
	if t.MoEBlock && t.ModelType != "gemma4_text" {
		p.add("model.tiny.moe_block", "true, but model.tiny.model_type is %s: the MoE block is gemma4_text's", t.ModelType)
	}
	if !t.HasExperts() {
		for _, k := range []struct {
			name   string
			v, def int
		}{{"model.tiny.experts", t.Experts, d.Experts}, {"model.tiny.experts_per_token", t.ExpertsPerToken, d.ExpertsPerToken},
			{"model.tiny.moe_intermediate", t.MoEIntermediate, d.MoEIntermediate}} {
			if k.v != k.def {
				p.add(k.name, "%d, but model.tiny.model_type is %s: the experts keys apply to qwen3_moe, nemotron_h with E blocks "+
					"and gemma4_text with moe_block only", k.v, t.ModelType)
			}
		}
		return
	}
	p.atLeast("model.tiny.experts", t.Experts, 1)
	p.atLeast("model.tiny.moe_intermediate", t.MoEIntermediate, 1)
	if t.ExpertsPerToken < 1 || t.ExpertsPerToken > t.Experts {
		p.add("model.tiny.experts_per_token", "%d, want 1 to model.tiny.experts %d", t.ExpertsPerToken, t.Experts)
	}
}

func (c *Config) validateData(p *problems) {
	d := c.Data
	if d.Source == "files" && len(d.Train) == 0 {
		p.add("data.train", "empty, but data.source is files")
	}
	if d.Format != "" && !slices.Contains(tasks.Formats, d.Format) {
		p.add("data.format", "%q, want \"\" (detect) or one of %s", d.Format, strings.Join(tasks.Formats, ", "))
	}
	p.atLeast("data.max_train", d.MaxTrain, 0)
	p.atLeast("data.max_eval", d.MaxEval, 0)
	s := d.Synthetic
	p.atLeast("data.synthetic.entities", s.Entities, 2)
	if synth.NameWords(s.Entities, s.FreshWorlds) > synth.MaxNameWords {
		pool := "without data.synthetic.fresh_worlds"
		if s.FreshWorlds {
			pool = fmt.Sprintf("with data.synthetic.fresh_worlds (its name pool holds %d times a world's words)", synth.PoolFactor)
		}
		p.add("data.synthetic.entities", "%d take more name words than the %d the name generator can draw with none containing another "+
			"(a word per entity, a second per person): at most about %d %s", s.Entities, synth.MaxNameWords, synth.MaxEntities(s.FreshWorlds), pool)
	}
	p.atLeast("data.synthetic.max_hops", s.MaxHops, 1)
	p.openRange("data.synthetic.test_fraction", s.TestFraction, 0, 1)
	p.atLeast("data.synthetic.questions", s.Questions, 1)
	p.atLeast("data.synthetic.val_questions", s.ValQuestions, 0)
	if s.FreshWorlds && d.Source == "synthetic" {
		c.validateFreshWorlds(p)
	}
	if c.Eval.Split == "validation" {
		if d.Source != "synthetic" {
			p.add("eval.split", "validation needs data.source synthetic (the world's validation questions), got %q", d.Source)
		} else if s.ValQuestions == 0 {
			p.add("eval.split", "validation, but data.synthetic.val_questions is 0 (no validation questions)")
		}
	}
}

// validateFreshWorlds refuses what data.synthetic.fresh_worlds (on by
// default) does not implement, by name, saying how to turn it off. Like
// every data.synthetic key it applies to the synthetic source only.
func (c *Config) validateFreshWorlds(p *problems) {
	d := c.Data
	const key = "data.synthetic.fresh_worlds"
	p.atLeast("data.synthetic.eval_worlds", d.Synthetic.EvalWorlds, 1)
	var why string
	switch {
	case d.MaxTrain > 0:
		why = fmt.Sprintf("every batch is a world of its own: data.max_train (%d) has no training split to cut", d.MaxTrain)
	case c.Tools.Search.Index != "":
		why = fmt.Sprintf("every world has its own index: tools.search.index (%q) is not implemented with it", c.Tools.Search.Index)
	case len(c.Agent.Command) > 0:
		why = "is not implemented for agent.command's episodes (their tools are the agent's, one index)"
	case c.SFT.Data != "":
		why = "demonstrations are drawn in worlds of their own: sft.data is not implemented with it"
	default:
		return
	}
	p.add(key, "%s; set data.synthetic.fresh_worlds false for one world that training and test share", why)
}

func (c *Config) validateTools(p *problems) {
	for i, name := range c.Tools.Enabled {
		if name == "" || slices.Contains(c.Tools.Enabled[:i], name) {
			p.add("tools.enabled", "%q is empty or listed twice", name)
		}
	}
	p.atLeast("tools.search.k", c.Tools.Search.K, 1)
	c.validateExternalTools(p)
}

func (c *Config) validateEnv(p *problems) {
	e := c.Env
	p.atLeast("env.max_turns", e.MaxTurns, 1)
	p.atLeast("env.max_tokens", e.MaxTokens, 1)
	p.atLeast("env.max_turn_tokens", e.MaxTurnTokens, 1)
	if e.MaxTurnTokens > e.MaxTokens {
		p.add("env.max_turn_tokens", "%d exceeds env.max_tokens %d", e.MaxTurnTokens, e.MaxTokens)
	}
	if e.ToolTimeout <= 0 {
		p.add("env.tool_timeout", "%s, want a positive duration", e.ToolTimeout)
	}
	p.atLeast("env.max_observation_chars", e.MaxObservationChars, envs.MinObservationChars)
	if mode, err := rollout.ParseContextMode(e.Context); err != nil {
		p.add("env.context", "unknown context %q (want append, template, window or summary)", e.Context)
	} else if mode != rollout.ContextAuto && len(c.Agent.Command) > 0 {
		p.add("env.context", "%q applies to the built-in loop; agent.command's program renders its own context (the gateway splits its episodes)", e.Context)
	} else if (rollout.Context{Mode: mode}).Renders() && c.Algorithm.Estimator == "gigpo" {
		p.add("env.context", "%q splits episodes into segments, which algorithm.estimator gigpo does not credit (use turn_rloo, grpo, rloo or reinforce_pp_baseline)", e.Context)
	}
	p.atLeast("env.context_turns", e.ContextTurns, 1)
	if _, err := reward.MetricByName(e.Rewards.Scorer); err != nil {
		p.add("env.rewards.scorer", "%v", err)
	}
}

func (c *Config) validateRollout(p *problems) {
	r := c.Rollout
	p.atLeast("rollout.batch_size", r.BatchSize, 1)
	p.atLeast("rollout.group_size", r.GroupSize, 1)
	p.atLeast("rollout.slots", r.Slots, 1)
	// Greedy training rollouts make every sample of a group the same
	// trajectory: every group-relative advantage is 0 and nothing is learnt.
	if r.Temperature <= 0 {
		p.add("rollout.temperature", "%v, want > 0: training rollouts must sample (greedy decoding gives every sample of a group the same trajectory); use rollout.eval_temperature for greedy evaluation", r.Temperature)
	}
	if r.TopP <= 0 || r.TopP > 1 {
		p.add("rollout.top_p", "%v, want in (0, 1]", r.TopP)
	}
	p.atLeast("rollout.top_k", r.TopK, 0)
	p.atLeastF("rollout.eval_temperature", r.EvalTemperature, 0)
	p.atLeast("rollout.max_staleness", r.MaxStaleness, 0)
	c.validateEngine(p)
	if r.MaxStaleness > 0 && c.Dist.NProc > 1 && c.Algorithm.DynamicSampling {
		p.add("algorithm.dynamic_sampling", "%s", AsyncDynamicSamplingRanks(r.MaxStaleness, c.Dist.NProc))
	}
	c.validateNearMiss(p)
	// Group-relative estimators compare samples of one prompt: a group of
	// one gives every trajectory advantage 0.
	if est, _ := algo.Get(c.Algorithm.Estimator); est.Groups && r.GroupSize < 2 {
		p.add("rollout.group_size", "%d, but algorithm.estimator %s needs at least 2 samples per prompt", r.GroupSize, c.Algorithm.Estimator)
	}
}

// validateEngine checks rollout.engine and its server's settings: vllm
// needs the server's address and refuses by name what its rollouts do not
// support; a server set up for no engine that uses it is refused.
func (c *Config) validateEngine(p *problems) {
	r, v := c.Rollout, c.Rollout.VLLM
	p.positiveDuration("rollout.vllm.startup_timeout", v.StartupTimeout)
	p.positiveDuration("rollout.vllm.request_timeout", v.RequestTimeout)
	if r.Engine != "vllm" {
		if v.Address != "" {
			p.add("rollout.vllm.address", "%q, but rollout.engine is %s: the server is used with rollout.engine vllm only", v.Address, r.Engine)
		}
		if len(v.Command) > 0 {
			p.add("rollout.vllm.command", "%q, but rollout.engine is %s: the server is used with rollout.engine vllm only", v.Command, r.Engine)
		}
		if v.LoRA == "adapters" {
			p.add("rollout.vllm.lora", "adapters, but rollout.engine is %s: the server is used with rollout.engine vllm only", r.Engine)
		}
		return
	}
	if v.LoRA == "adapters" && !c.Model.LoRA.On() {
		p.add("rollout.vllm.lora", "adapters, but model.lora.rank is 0: the policy has no adapters (full fine-tuning pushes its weights)")
	}
	if v.Address == "" {
		p.add("rollout.vllm.address", "empty, but rollout.engine vllm needs the server's base URL (http://host:port): where it runs, or where rollout.vllm.command listens")
	} else if _, err := vllm.NewClient(v.Address, 0); err != nil {
		p.add("rollout.vllm.address", "%v", err)
	}
	// A server has one --logprobs-mode; the training draws' sampling and
	// the evaluations' must share one under which vLLM reports the built-in
	// engine's logprobs (the trainer checks the server's at its start).
	ss := r.Samplings()
	train, eval := vllm.LogprobsModes(ss[0]), vllm.LogprobsModes(ss[1])
	if len(train) == 0 {
		const why = "vLLM reports logprobs before the temperature (--logprobs-mode raw_logprobs) or after top-k and top-p, renormalised over the kept tokens (processed_logprobs), never the built-in engine's behaviour logprobs (after the temperature, untruncated): use rollout.temperature 1, or no top-k and top-p (docs/rollout-engines.md)"
		if r.TopK > 0 {
			p.add("rollout.top_k", "%d with rollout.temperature %v: %s", r.TopK, r.Temperature, why)
		}
		if r.TopP > 0 && r.TopP < 1 {
			p.add("rollout.top_p", "%v with rollout.temperature %v: %s", r.TopP, r.Temperature, why)
		}
	} else if !slices.ContainsFunc(train, func(m string) bool { return slices.Contains(eval, m) }) {
		p.add("rollout.eval_temperature", "%v: its logprobs need the server's --logprobs-mode %s, but the training draws' (rollout.temperature %v with top_k %d, top_p %v) need %s, and a server has one (docs/rollout-engines.md)",
			r.EvalTemperature, strings.Join(eval, " or "), r.Temperature, r.TopK, r.TopP, strings.Join(train, " or "))
	}
	if r.DType != "auto" {
		p.add("rollout.dtype", "%s, but with rollout.engine vllm the server decodes in the precision of its own --dtype: leave auto", r.DType)
	}
	if r.MaxStaleness > 0 {
		p.add("rollout.max_staleness", "%d, but rollout.engine vllm takes the policy's weights between iterations only: asynchronous training on a vLLM server is not supported yet (use 0)", r.MaxStaleness)
	}
	if c.Dist.NProc > 1 {
		p.add("dist.nproc", "%d, but rollout.engine vllm runs from one trainer process: data parallelism with a vLLM server is not supported yet (use 1; the server itself may span GPUs)", c.Dist.NProc)
	}
	if len(c.Agent.Command) > 0 {
		p.add("agent.command", "%q, but agent programs decode through the gateway on the built-in engine: with rollout.engine vllm they are not supported yet", c.Agent.Command)
	}
}

func (c *Config) validateAlgorithm(p *problems) {
	a := c.Algorithm
	if _, err := algo.Get(a.Estimator); err != nil {
		p.add("algorithm.estimator", "%v", err)
	}
	p.closedRange("algorithm.gamma", a.Gamma, 0, 1)
	p.closedRange("algorithm.lambda", a.Lambda, 0, 1)
	p.closedRange("algorithm.turn_gamma", a.TurnGamma, 0, 1)
	p.atLeastF("algorithm.step_weight", a.StepWeight, 0)
	if a.Eps <= 0 {
		p.add("algorithm.eps", "%v, want > 0", a.Eps)
	}
	// The loss settings are checked by the loss's own validation, the one
	// the trainer relies on; its problems are named by their keys.
	var fe *algo.FieldError
	for _, err := range unjoin(a.LossConfig.Validate(c.Env.MaxTokens)) {
		if errors.As(err, &fe) {
			p.once("algorithm."+fe.Field, "%s", fe.Msg)
		} else {
			p.add("algorithm", "%v", err)
		}
	}
	p.atLeastF("algorithm.kl_coef", a.KLCoef, 0)
	p.atLeastF("algorithm.entropy_coef", a.EntropyCoef, 0)
	p.atLeastF("algorithm.vf_coef", a.VFCoef, 0)
	p.atLeastF("algorithm.value_clip", a.ValueClip, 0)
	p.atLeast("algorithm.epochs", a.Epochs, 1)
	p.atLeast("algorithm.mini_batch", a.MiniBatch, 1)
	p.atLeast("algorithm.micro_batch", a.MicroBatch, 1)
	if a.MicroBatch > a.MiniBatch {
		p.add("algorithm.micro_batch", "%d exceeds algorithm.mini_batch %d", a.MicroBatch, a.MiniBatch)
	}
	if a.FilterKeepRatio <= 0 || a.FilterKeepRatio > 1 {
		p.add("algorithm.filter_keep_ratio", "%v, want in (0, 1]", a.FilterKeepRatio)
	}
	p.atLeast("algorithm.critic_warmup", a.CriticWarmup, 0)
	if !(a.RolloutCorrectionBound > 1) {
		p.add("algorithm.rollout_correction_bound", "%v, want > 1", a.RolloutCorrectionBound)
	}
	p.atLeastF("algorithm.mismatch_warn_kl", a.MismatchWarnKL, 0)
	if a.RoutingReplay {
		t := c.Model.Tiny
		if c.Model.Path == "" && !t.HasExperts() {
			p.add("algorithm.routing_replay", "the model created from scratch (model.tiny.model_type %s) has no mixture-of-experts layer; "+
				"qwen3_moe has, nemotron_h with E in model.tiny.nemotron_pattern and gemma4_text with model.tiny.moe_block", t.ModelType)
		}
		if len(c.Agent.Command) > 0 {
			p.add("algorithm.routing_replay", "agent programs (agent.command) decode through the gateway, which records no routing")
		}
		if mode, err := rollout.ParseContextMode(c.Env.Context); err == nil && (rollout.Context{Mode: mode}).Renders() && a.PackSegments {
			p.add("algorithm.routing_replay", "replay of packed segments is not implemented: env.context %q splits episodes into segments, so set algorithm.pack_segments false", c.Env.Context)
		}
	}
	if b := a.OverlongBuffer; b.Enable {
		if b.Len <= 0 || b.Len >= c.Env.MaxTokens {
			p.add("algorithm.overlong_buffer.len", "%d, want 0 < len < env.max_tokens (%d) with the buffer enabled", b.Len, c.Env.MaxTokens)
		}
	}
	p.atLeastF("algorithm.overlong_buffer.penalty_factor", a.OverlongBuffer.PenaltyFactor, 0)
	if f := a.OverlongBuffer.PenaltyFactor; f > MaxPenaltyFactor {
		p.add("algorithm.overlong_buffer.penalty_factor", "%v, want at most %v: the penalty is added to rewards of order 1 (DAPO uses 1)", f, MaxPenaltyFactor)
	}
	p.atLeast("algorithm.max_num_gen_batches", a.MaxNumGenBatches, 1)
	if n := a.MaxNumGenBatches; n > MaxGenBatches {
		p.add("algorithm.max_num_gen_batches", "%d, want at most %d: an iteration must end (verl's 0 for endless draws is not taken)", n, MaxGenBatches)
	}
}

func (c *Config) validateOptim(p *problems) {
	o := c.Optim
	p.learningRate("optim.lr", o.LR)
	p.learningRate("optim.critic_lr", o.CriticLR)
	if o.Beta1 < 0 || o.Beta1 >= 1 {
		p.add("optim.beta1", "%v, want in [0, 1)", o.Beta1)
	}
	if o.Beta2 < 0 || o.Beta2 >= 1 {
		p.add("optim.beta2", "%v, want in [0, 1)", o.Beta2)
	}
	p.positive("optim.eps", o.Eps)
	p.atLeastF("optim.weight_decay", o.WeightDecay, 0)
	p.atLeast("optim.warmup_steps", o.WarmupSteps, 0)
	p.closedRange("optim.min_lr_ratio", o.MinLRRatio, 0, 1)
	p.atLeastF("optim.max_grad_norm", o.MaxGradNorm, 0)
}

func (c *Config) validateSFT(p *problems) {
	s := c.SFT
	p.atLeast("sft.epochs", s.Epochs, 1)
	p.learningRate("sft.lr", s.LR)
	p.atLeast("sft.warmup_steps", s.WarmupSteps, 0)
	p.atLeast("sft.batch", s.Batch, 1)
	p.atLeast("sft.demos", s.Demos, 1)
	p.closedRange("sft.imperfect_fraction", s.ImperfectFraction, 0, 1)
	// The warm start of a model made here on scripted demonstrations
	// takes, at most (too long ones are dropped), sft.demos in batches of
	// sft.batch, sft.epochs times: a longer warm-up never reaches sft.lr.
	// (With sft.data the warm start counts its demonstrations itself.)
	if s.Data == "" && c.Model.Path == "" && s.Demos >= 1 && s.Batch >= 1 && s.Epochs >= 1 {
		if steps := warmStartSteps(s.Demos, s.Batch, s.Epochs); s.WarmupSteps > steps {
			p.add("sft.warmup_steps", "%d exceeds the warm start's %d step%s (sft.demos %d in batches of sft.batch %d, sft.epochs %d): "+
				"the learning rate would never reach sft.lr", s.WarmupSteps, steps, plural(steps), s.Demos, s.Batch, s.Epochs)
		}
	}
}

// warmStartSteps is the optimizer steps of a warm start on demos
// demonstrations in batches of batch, epochs times (the last batch of an
// epoch may be short), at most math.MaxInt.
func warmStartSteps(demos, batch, epochs int) int {
	batches := (demos-1)/batch + 1
	if batches > math.MaxInt/epochs {
		return math.MaxInt
	}
	return batches * epochs
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// problems collects validation errors, each a *KeyError.
type problems []error

func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, &KeyError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// generic checks what every key of a kind needs: finite floats, and a
// string with an enum tag among its allowed values.
func (p *problems) generic(root reflect.Value) {
	for _, k := range leaves(root, "") {
		switch v := k.value.Interface().(type) {
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				p.add(k.path, "%v, want a finite number", v)
			}
		case string:
			if e := enumOf(k.field); e != nil && !slices.Contains(e, v) {
				p.add(k.path, "%q, want one of %s", v, strings.Join(e, ", "))
			}
		}
	}
}

// once adds a problem for path unless one is already reported for it.
func (p *problems) once(path, format string, args ...any) {
	for _, e := range *p {
		if ke, ok := e.(*KeyError); ok && ke.Path == path {
			return
		}
	}
	p.add(path, format, args...)
}

// unjoin lists the errors an errors.Join holds (nil gives none).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

func (p *problems) nonEmpty(path, v string) {
	if v == "" {
		p.add(path, "empty")
	}
}

func (p *problems) atLeast(path string, v, lo int) {
	if v < lo {
		p.add(path, "%d, want at least %d", v, lo)
	}
}

func (p *problems) atLeastF(path string, v, lo float64) {
	if v < lo {
		p.add(path, "%v, want at least %v", v, lo)
	}
}

func (p *problems) positive(path string, v float64) {
	if v <= 0 {
		p.add(path, "%v, want > 0", v)
	}
}

// learningRate checks a learning rate: positive, and a float32 (the
// optimizer step computes in float32; libtorch refuses a rate beyond its
// range, and one below its smallest positive value would be 0 there).
func (p *problems) learningRate(path string, v float64) {
	switch {
	case v <= 0:
		p.add(path, "%v, want > 0", v)
	case v > math.MaxFloat32:
		p.add(path, "%v is beyond float32's range (at most %v), which the optimizer step computes in", v, math.MaxFloat32)
	case v < math.SmallestNonzeroFloat32:
		p.add(path, "%v is 0 in float32 (the smallest positive is %v), which the optimizer step computes in", v, math.SmallestNonzeroFloat32)
	}
}

func (p *problems) closedRange(path string, v, lo, hi float64) {
	if v < lo || v > hi {
		p.add(path, "%v, want in [%v, %v]", v, lo, hi)
	}
}

func (p *problems) openRange(path string, v, lo, hi float64) {
	if v <= lo || v >= hi {
		p.add(path, "%v, want in (%v, %v)", v, lo, hi)
	}
}

func (c *Config) validateDist(p *problems) {
	d := c.Dist
	p.atLeast("dist.nproc", d.NProc, 1)
	if d.Timeout <= 0 {
		p.add("dist.timeout", "%s, want a positive duration", d.Timeout)
	}
	if d.CollectiveTimeout <= 0 {
		p.add("dist.collective_timeout", "%s, want a positive duration", d.CollectiveTimeout)
	}
	if d.BucketMB <= 0 {
		p.add("dist.bucket_mb", "%g, want > 0", d.BucketMB)
	}
	if d.Zero < 0 || d.Zero > 2 {
		p.add("dist.zero", "%d, want 0, 1 or 2", d.Zero)
	}
	if d.Backend == "nccl" && !strings.HasPrefix(c.Device.Device, "cuda") {
		p.add("dist.backend", "nccl needs device.device cuda or cuda:N (it is %q): use gloo or auto on the CPU", c.Device.Device)
	}
}

// AsyncDynamicSamplingRanks is the refusal of dynamic sampling in an
// asynchronous data-parallel job: whether a batch needs another draw
// depends on every rank's groups, which the rollout role, running no
// collective, does not see.
func AsyncDynamicSamplingRanks(k, ranks int) string {
	return fmt.Sprintf("true with rollout.max_staleness %d and %d ranks: not supported (whether a batch needs another draw depends on every rank's groups, and the rollout role of a data-parallel job samples its own share without collectives); use rollout.max_staleness 0, one process, or algorithm.dynamic_sampling false", k, ranks)
}

// validateNearMiss refuses the near-miss continuations where an episode
// cannot be replayed into a continuation: a rewritten context (its
// segments), an agent program's episodes (their tools are the program's),
// and asynchronous rollouts (a continuation would mix policies).
func (c *Config) validateNearMiss(p *problems) {
	a, r := c.Algorithm, c.Rollout
	if !a.NearMiss {
		return
	}
	if a.NearMissSamples < 1 || a.NearMissSamples > r.Slots {
		p.add("algorithm.near_miss_samples", "%d, want 1 to rollout.slots (%d): a near miss's continuations decode together", a.NearMissSamples, r.Slots)
	}
	mode, err := rollout.ParseContextMode(c.Env.Context)
	switch {
	case len(c.Agent.Command) > 0:
		p.add("algorithm.near_miss", "true with agent.command: not implemented (the program's episodes cannot be replayed into a continuation)")
	case err == nil && (rollout.Context{Mode: mode}).Renders():
		p.add("algorithm.near_miss", "true with env.context %q: not implemented (an episode whose context is rewritten cannot be continued); use env.context append", c.Env.Context)
	case r.Engine == "vllm":
		p.add("algorithm.near_miss", "true with rollout.engine vllm: not implemented (a continuation replays its episode's turns into a slot of the built-in engine); use rollout.engine builtin")
	case r.MaxStaleness > 0:
		p.add("algorithm.near_miss", "true with rollout.max_staleness %d: not implemented (a continuation would be sampled by another policy than its prefix); use rollout.max_staleness 0", r.MaxStaleness)
	}
}
