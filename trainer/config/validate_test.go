package config

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs/synth"
)

// TestValidateNamesTheKey breaks one rule at a time and checks that the
// error names the key (and only one problem is reported).
func TestValidateNamesTheKey(t *testing.T) {
	cases := []brokenRule{
		{"run.name", func(c *Config) { c.Run.Name = "a/b" }, "folder name"},
		{"run.iterations", func(c *Config) { c.Run.Iterations = 0 }, "want at least 1"},
		{"agent.timeout", func(c *Config) { c.Agent.Timeout = 0 }, "want a positive duration"},
		{"agent.env", func(c *Config) { c.Agent.Env = []string{"NOVALUE"} }, "want KEY=VALUE"},
		{"agent.max_stdout", func(c *Config) { c.Agent.MaxStdout = 0 }, "want at least 1"},
		{"agent.command", func(c *Config) { c.Agent.Command, c.Data.Synthetic.FreshWorlds = []string{""}, false }, "the program is"},
		{"agent.command", func(c *Config) {
			c.Agent.Command, c.Data.Synthetic.FreshWorlds = []string{"/nonexistent/agent.js"}, false
		}, `the program "/nonexistent/agent.js" cannot be run`},
		{"device.device", func(c *Config) { c.Device.Device = "gpu" }, "want cpu, cuda or cuda:N"},
		{"device.dtype", func(c *Config) { c.Device.DType = "f8" }, "want one of f32, bf16, f16"},
		{"dist.backend", func(c *Config) { c.Dist.Backend = "nccl" }, "nccl needs device.device cuda"},
		{"dist.timeout", func(c *Config) { c.Dist.Timeout = 0 }, "want a positive duration"},
		{"dist.nproc", func(c *Config) { c.Dist.NProc = 0 }, "want at least 1"},
		{"dist.zero", func(c *Config) { c.Dist.Zero = 3 }, "3, want 0, 1 or 2"},
		{"dist.zero", func(c *Config) { c.Dist.Zero = -1 }, "-1, want 0, 1 or 2"},
		{"model.critic", func(c *Config) { c.Model.Critic = "both" }, "want one of separate, shared"},
		{"model.tiny.heads", func(c *Config) { c.Model.Tiny.Heads = 6 }, "6 does not divide model.tiny.hidden 128"},
		{"model.tiny.heads", func(c *Config) { c.Model.Tiny.Hidden, c.Model.Tiny.Heads, c.Model.Tiny.KVHeads = 12, 4, 1 }, "odd head size 3"},
		{"model.tiny.kv_heads", func(c *Config) { c.Model.Tiny.KVHeads = 3 }, "does not divide model.tiny.heads 4"},
		{"model.tiny.model_type", func(c *Config) { c.Model.Tiny.ModelType = "llama" }, "llama"},
		{"model.tiny.linear_key_heads", func(c *Config) { c.Model.Tiny.LinearKeyHeads = 3 }, "3, but model.tiny.model_type is qwen2: the Qwen3.5 keys apply to qwen3_5 only"},
		{"model.tiny.conv_kernel", func(c *Config) { c.Model.Tiny.ModelType, c.Model.Tiny.ConvKernel = "qwen3_5", 1 }, "want at least 2"},
		{"model.tiny.experts", func(c *Config) { c.Model.Tiny.Experts = 8 }, "8, but model.tiny.model_type is qwen2: the experts keys apply to qwen3_moe, nemotron_h with E blocks and gemma4_text with moe_block only"},
		{"model.tiny.moe_block", func(c *Config) { c.Model.Tiny.MoEBlock = true }, "true, but model.tiny.model_type is qwen2: the MoE block is gemma4_text's"},
		{"model.tiny.experts", func(c *Config) { c.Model.Tiny.ModelType, c.Model.Tiny.Experts = "gemma4_text", 8 }, "gemma4_text with moe_block only"},
		{"model.tiny.experts_per_token", func(c *Config) {
			c.Model.Tiny.ModelType, c.Model.Tiny.MoEBlock, c.Model.Tiny.ExpertsPerToken = "gemma4_text", true, 5
		}, "want 1 to model.tiny.experts 4"},
		{"model.tiny.experts_per_token", func(c *Config) { c.Model.Tiny.ModelType, c.Model.Tiny.ExpertsPerToken = "qwen3_moe", 5 }, "5, want 1 to model.tiny.experts 4"},
		{"model.tiny.conv_kernel", func(c *Config) { c.Model.Tiny.ModelType, c.Model.Tiny.ConvKernel = "qwen3_5", 100000 },
			"100000 exceeds model.tiny.max_positions 1024"},
		{"model.tiny.linear_key_dim", func(c *Config) { c.Model.Tiny.ModelType, c.Model.Tiny.LinearKeyDim = "qwen3_5", 0 }, "want at least 1"},
		{"model.tiny.linear_value_heads", func(c *Config) { c.Model.Tiny.ModelType, c.Model.Tiny.LinearValueHeads = "qwen3_5", 3 },
			"3 is not a multiple of model.tiny.linear_key_heads 2"},
		{"model.tiny.full_attention_interval", func(c *Config) { c.Model.Tiny.ModelType, c.Model.Tiny.FullAttentionInterval = "qwen3_5", 3 },
			"3 exceeds model.tiny.layers 2: the model would have no attention layer"},
		{"model.tiny.full_attention_interval", func(c *Config) { c.Model.Tiny.ModelType, c.Model.Tiny.FullAttentionInterval = "qwen3_5", 0 }, "want at least 1"},
		// hidden 80 over 4 heads: a head of 20, whose quarter (5) is odd.
		{"model.tiny.heads", func(c *Config) { c.Model.Tiny.ModelType, c.Model.Tiny.Hidden = "qwen3_5", 80 }, "head size of 20"},
		{"model.tiny.nemotron_pattern", func(c *Config) { c.Model.Tiny.NemotronPattern = "M-" }, `"M-", but model.tiny.model_type is qwen2`},
		{"model.tiny.nemotron_pattern", func(c *Config) { c.Model.Tiny.ModelType, c.Model.Tiny.NemotronPattern = "nemotron_h", "MX" },
			`"MX", want a nonempty string of M (Mamba-2), * (attention), - (MLP) and E (mixture of experts)`},
		{"model.tiny.experts", func(c *Config) { c.Model.Tiny.ModelType, c.Model.Tiny.Experts = "nemotron_h", 8 },
			"apply to qwen3_moe, nemotron_h with E blocks and gemma4_text with moe_block only"},
		{"model.tiny.experts_per_token", func(c *Config) {
			c.Model.Tiny.ModelType, c.Model.Tiny.NemotronPattern, c.Model.Tiny.ExpertsPerToken = "nemotron_h", "ME", 5
		}, "want 1 to model.tiny.experts 4"},
		{"model.logits_chunk", func(c *Config) { c.Model.LogitsChunk = -1 }, "want at least 0"},
		{"model.chat.reasoning_effort", func(c *Config) { c.Model.Chat.ReasoningEffort = "high" }, `"high", want one of xhigh, medium, low`},
		{"data.train", func(c *Config) { c.Data.Source = "files" }, "empty, but data.source is files"},
		{"data.format", func(c *Config) { c.Data.Format = "csv" }, "hotpotqa"},
		{"data.synthetic.test_fraction", func(c *Config) { c.Data.Synthetic.TestFraction = 1 }, "want in (0, 1)"},
		// 10^8 entities take 1.5 x 10^8 name words, their pool (fresh
		// worlds) 6 x 10^8; 90,000 are too many for a pool, not a world.
		{"data.synthetic.entities", func(c *Config) { c.Data.Synthetic.Entities = 100_000_000 }, "100000000 take more name words than the 500000"},
		{"data.synthetic.entities", func(c *Config) { c.Data.Synthetic.Entities = 90_000 }, "at most about 83333 with data.synthetic.fresh_worlds"},
		{"tools.enabled", func(c *Config) { c.Tools.Enabled = []string{"search", "search"} }, "listed twice"},
		{"tools.search.k", func(c *Config) { c.Tools.Search.K = 0 }, "want at least 1"},
		{"env.max_turn_tokens", func(c *Config) { c.Env.MaxTurnTokens = 1000 }, "exceeds env.max_tokens 768"},
		{"env.tool_timeout", func(c *Config) { c.Env.ToolTimeout = 0 }, "positive duration"},
		{"env.max_observation_chars", func(c *Config) { c.Env.MaxObservationChars = 10 }, "want at least 64"},
		{"env.context", func(c *Config) { c.Env.Context = "sliding" }, `unknown context "sliding"`},
		{"env.context", func(c *Config) {
			c.Env.Context, c.Agent.Command, c.Data.Synthetic.FreshWorlds = "window", []string{"/bin/true"}, false
		}, "agent.command's program renders its own context"},
		{"env.context_turns", func(c *Config) { c.Env.ContextTurns = 0 }, "want at least 1"},
		{"env.context", func(c *Config) { c.Env.Context, c.Algorithm.Estimator = "template", "gigpo" }, "algorithm.estimator gigpo does not credit"},
		{"env.rewards.scorer", func(c *Config) { c.Env.Rewards.Scorer = "bleu" }, "bleu"},
		{"env.rewards.format", func(c *Config) { c.Env.Rewards.Format = math.NaN() }, "finite"},
		{"env.rewards.external.command", func(c *Config) { c.Env.Rewards.External.Command = []string{"/nonexistent/score.py"} },
			`reward program "/nonexistent/score.py" cannot be run`},
		{"env.rewards.external.command", func(c *Config) { c.Env.Rewards.External.Command = []string{"/etc/passwd", "x"} },
			`reward program "/etc/passwd" cannot be run`},
		{"tools.mcp[0].max_message_mb", func(c *Config) {
			c.Tools.MCP = []MCPServer{{Name: "s", URL: "http://h/mcp", StartTimeout: time.Second}}
		}, "want at least 1"},
		{"env.rewards.external.max_output_mb", func(c *Config) { c.Env.Rewards.External.MaxOutputMB = 0 }, "want at least 1"},
		{"rollout.engine", func(c *Config) { c.Rollout.Engine = "sglang" }, "sglang"},
		{"rollout.vllm.address", func(c *Config) { c.Rollout.VLLM.Address = "http://127.0.0.1:8000" }, "but rollout.engine is builtin"},
		{"rollout.vllm.command", func(c *Config) { c.Rollout.VLLM.Command = []string{"vllm", "serve", "m"} }, "but rollout.engine is builtin"},
		{"rollout.vllm.address", func(c *Config) { c.Rollout.Engine = "vllm" }, "needs the server's base URL"},
		{"rollout.vllm.address", func(c *Config) { c.Rollout.Engine, c.Rollout.VLLM.Address = "vllm", "localhost:8000" }, "want http://host:port"},
		{"rollout.top_k", func(c *Config) { vllmEngine(c); c.Rollout.Temperature, c.Rollout.TopK = 0.7, 20 }, "never the built-in engine's behaviour logprobs"},
		{"rollout.top_p", func(c *Config) { vllmEngine(c); c.Rollout.Temperature, c.Rollout.TopP = 1.2, 0.9 }, "never the built-in engine's behaviour logprobs"},
		{"rollout.eval_temperature", func(c *Config) { vllmEngine(c); c.Rollout.TopK, c.Rollout.EvalTemperature = 20, 0.5 }, "need the server's --logprobs-mode processed_logprobs, but the training draws'"},
		{"rollout.dtype", func(c *Config) { vllmEngine(c); c.Rollout.DType = "bf16" }, "its own --dtype"},
		{"rollout.max_staleness", func(c *Config) { vllmEngine(c); c.Rollout.MaxStaleness = 1 }, "asynchronous training on a vLLM server is not supported yet"},
		{"dist.nproc", func(c *Config) { vllmEngine(c); c.Dist.NProc = 2 }, "data parallelism with a vLLM server is not supported yet"},
		{"agent.command", func(c *Config) {
			vllmEngine(c)
			c.Agent.Command, c.Data.Synthetic.FreshWorlds = []string{"/bin/true"}, false
		}, "with rollout.engine vllm they are not supported yet"},
		{"rollout.vllm.lora", func(c *Config) { c.Rollout.VLLM.LoRA = "adapters" }, "but rollout.engine is builtin"},
		{"rollout.vllm.lora", func(c *Config) { vllmEngine(c); c.Rollout.VLLM.LoRA = "adapters" }, "model.lora.rank is 0"},
		{"rollout.vllm.lora", func(c *Config) { vllmEngine(c); c.Rollout.VLLM.LoRA = "peft" }, "want one of merged, adapters"},
		{"rollout.vllm.startup_timeout", func(c *Config) { c.Rollout.VLLM.StartupTimeout = 0 }, "want a positive duration"},
		{"rollout.vllm.request_timeout", func(c *Config) { c.Rollout.VLLM.RequestTimeout = -1 }, "want a positive duration"},
		{"rollout.top_p", func(c *Config) { c.Rollout.TopP = 0 }, "want in (0, 1]"},
		{"rollout.temperature", func(c *Config) { c.Rollout.Temperature = -1 }, "want > 0"},
		{"rollout.temperature", func(c *Config) { c.Rollout.Temperature = 0 }, "greedy decoding gives every sample of a group the same trajectory"},
		{"rollout.group_size", func(c *Config) { c.Rollout.GroupSize = 1 }, "grpo needs at least 2"},
		{"algorithm.estimator", func(c *Config) { c.Algorithm.Estimator = "ppo" }, "unknown advantage estimator"},
		{"algorithm.gamma", func(c *Config) { c.Algorithm.Gamma = 1.5 }, "want in [0, 1]"},
		{"algorithm.turn_gamma", func(c *Config) { c.Algorithm.TurnGamma = -0.1 }, "want in [0, 1]"},
		{"algorithm.step_weight", func(c *Config) { c.Algorithm.StepWeight = -1 }, "want at least 0"},
		{"rollout.group_size", func(c *Config) { c.Algorithm.Estimator, c.Rollout.GroupSize = "gigpo", 1 }, "gigpo needs at least 2"},
		{"algorithm.clip_low", func(c *Config) { c.Algorithm.ClipLow = -0.1 }, "want in (0, 1)"},
		{"algorithm.clip_low", func(c *Config) { c.Algorithm.ClipLow = 0 }, "want in (0, 1)"},
		{"algorithm.clip_high", func(c *Config) { c.Algorithm.ClipHigh = 0 }, "want > 0"},
		{"algorithm.dual_clip", func(c *Config) { c.Algorithm.DualClip = 0.5 }, "want 0 (off) or > 1"},
		{"algorithm.dual_clip", func(c *Config) { c.Algorithm.DualClip, c.Algorithm.PolicyLoss = 3, "gspo" }, "bounds the ppo loss only"},
		{"algorithm.policy_loss", func(c *Config) { c.Algorithm.PolicyLoss = "trpo" }, "want one of ppo, gspo, cispo"},
		{"algorithm.rollout_correction", func(c *Config) { c.Algorithm.RolloutCorrection = "is" }, "want one of auto, off, tis, tis_seq, mis, mis_seq"},
		{"algorithm.routing_replay", func(c *Config) {
			c.Algorithm.RoutingReplay, c.Agent.Command, c.Data.Synthetic.FreshWorlds = true, []string{"/bin/true"}, false
			c.Model.Tiny.ModelType = "qwen3_moe"
		}, "records no routing"},
		{"algorithm.routing_replay", func(c *Config) {
			c.Algorithm.RoutingReplay, c.Env.Context, c.Model.Tiny.ModelType = true, "window", "qwen3_moe"
		}, "set algorithm.pack_segments false"},
		{"algorithm.routing_replay", func(c *Config) { c.Algorithm.RoutingReplay = true }, "model.tiny.model_type qwen2) has no mixture-of-experts layer"},
		{"algorithm.routing_replay", func(c *Config) { c.Algorithm.RoutingReplay, c.Model.Tiny.ModelType = true, "gemma4_text" },
			"model.tiny.model_type gemma4_text) has no mixture-of-experts layer; qwen3_moe has, nemotron_h with E in model.tiny.nemotron_pattern and gemma4_text with model.tiny.moe_block"},
		{"algorithm.rollout_correction_bound", func(c *Config) { c.Algorithm.RolloutCorrectionBound = 1 }, "want > 1"},
		{"algorithm.mismatch_warn_kl", func(c *Config) { c.Algorithm.MismatchWarnKL = -1 }, "want at least 0"},
		{"algorithm.old_logprobs", func(c *Config) { c.Algorithm.OldLogprobs = "reuse" }, "want one of auto, recompute"},
		{"algorithm.loss_agg", func(c *Config) { c.Algorithm.LossAgg = "sum" }, "token-mean"},
		{"algorithm.kl_estimator", func(c *Config) { c.Algorithm.KLEstimator = "k4" }, "k4"},
		{"algorithm.kl_mode", func(c *Config) { c.Algorithm.KLMode = "both" }, "loss, reward, off"},
		{"algorithm.micro_batch", func(c *Config) { c.Algorithm.MicroBatch = 64 }, "exceeds algorithm.mini_batch 32"},
		{"algorithm.filter_keep_ratio", func(c *Config) { c.Algorithm.FilterKeepRatio = 0 }, "want in (0, 1]"},
		{"algorithm.overlong_buffer.len", func(c *Config) { c.Algorithm.OverlongBuffer.Enable = true }, "want 0 < len < env.max_tokens"},
		{"algorithm.overlong_buffer.len", func(c *Config) {
			c.Algorithm.OverlongBuffer.Enable, c.Algorithm.OverlongBuffer.Len = true, c.Env.MaxTokens
		}, "want 0 < len < env.max_tokens"},
		{"algorithm.overlong_buffer.penalty_factor", func(c *Config) { c.Algorithm.OverlongBuffer.PenaltyFactor = -1 }, "want at least 0"},
		{"algorithm.overlong_buffer.penalty_factor", func(c *Config) { c.Algorithm.OverlongBuffer.PenaltyFactor = 1e200 }, "want at most 100"},
		{"algorithm.max_num_gen_batches", func(c *Config) { c.Algorithm.MaxNumGenBatches = 0 }, "want at least 1"},
		{"algorithm.max_num_gen_batches", func(c *Config) { c.Algorithm.MaxNumGenBatches = 101 }, "want at most 100"},
		{"rollout.max_staleness", func(c *Config) { c.Rollout.MaxStaleness = -1 }, "want at least 0"},
		{"algorithm.dynamic_sampling", func(c *Config) { c.Rollout.MaxStaleness, c.Dist.NProc, c.Algorithm.DynamicSampling = 1, 2, true }, "every rank's groups"},
		{"algorithm.near_miss_samples", func(c *Config) { c.Algorithm.NearMiss, c.Algorithm.NearMissSamples = true, 0 }, "want 1 to rollout.slots (32)"},
		{"algorithm.near_miss_samples", func(c *Config) { c.Algorithm.NearMiss, c.Algorithm.NearMissSamples = true, 33 }, "want 1 to rollout.slots (32)"},
		{"algorithm.near_miss", func(c *Config) { c.Algorithm.NearMiss, c.Rollout.MaxStaleness = true, 1 }, "a continuation would be sampled by another policy"},
		{"algorithm.near_miss", func(c *Config) {
			c.Algorithm.NearMiss, c.Rollout.Engine, c.Rollout.VLLM.Address = true, "vllm", "http://127.0.0.1:8000"
		}, "true with rollout.engine vllm: not implemented"},
		{"algorithm.near_miss", func(c *Config) { c.Algorithm.NearMiss, c.Env.Context = true, "window" }, `env.context "window": not implemented`},
		{"algorithm.near_miss", func(c *Config) {
			c.Algorithm.NearMiss, c.Agent.Command, c.Data.Synthetic.FreshWorlds = true, []string{"/bin/true"}, false
		}, "true with agent.command: not implemented"},
		{"optim.lr", func(c *Config) { c.Optim.LR = 0 }, "want > 0"},
		// The optimizer step computes in float32: at most 3.40282e+38,
		// and a positive rate under 1.4e-45 would be 0 there.
		{"optim.lr", func(c *Config) { c.Optim.LR = 1e300 }, "1e+300 is beyond float32's range (at most 3.4028234663852886e+38)"},
		{"optim.critic_lr", func(c *Config) { c.Optim.CriticLR = 1e300 }, "1e+300 is beyond float32's range"},
		{"sft.lr", func(c *Config) { c.SFT.LR = 1e300 }, "1e+300 is beyond float32's range"},
		{"optim.lr", func(c *Config) { c.Optim.LR = 1e-50 }, "1e-50 is 0 in float32 (the smallest positive is 1.401298464324817e-45)"},
		{"optim.beta2", func(c *Config) { c.Optim.Beta2 = 1 }, "want in [0, 1)"},
		{"optim.schedule", func(c *Config) { c.Optim.Schedule = "step" }, "constant, cosine, linear"},
		{"optim.max_grad_norm", func(c *Config) { c.Optim.MaxGradNorm = math.Inf(1) }, "finite"},
		{"sft.imperfect_fraction", func(c *Config) { c.SFT.ImperfectFraction = 1.2 }, "want in [0, 1]"},
		// The default warm start: 25,600 demonstrations in batches of 16,
		// 3 epochs: 1,600 x 3 = 4,800 steps.
		{"sft.warmup_steps", func(c *Config) { c.SFT.WarmupSteps = 1_000_000 }, "1000000 exceeds the warm start's 4800 steps (sft.demos 25600 in batches of sft.batch 16, sft.epochs 3)"},
		{"sft.warmup_steps", func(c *Config) { c.SFT.WarmupSteps = 4801 }, "4801 exceeds the warm start's 4800 steps"},
		{"store.writer_depth", func(c *Config) { c.Store.WriterDepth = 0 }, "want at least 1"},
		{"logging.level", func(c *Config) { c.Logging.Level = "loud" }, "trace, debug, info, warn, error"},
		{"logging.format", func(c *Config) { c.Logging.Format = "xml" }, "auto, console, json"},
	}
	checkBrokenRules(t, Default, cases)
}

// brokenRule is a config rule broken alone: breakIt breaks it, and the
// error must name key and say msg.
type brokenRule struct {
	key     string
	breakIt func(c *Config)
	msg     string
}

// checkBrokenRules breaks each rule on a fresh config from valid and checks
// that Validate reports exactly one problem, naming the rule's key.
func checkBrokenRules(t *testing.T, valid func() Config, cases []brokenRule) {
	t.Helper()
	for _, tc := range cases {
		c := valid()
		tc.breakIt(&c)
		err := c.Validate()
		wantErr(t, err, tc.key+": ", tc.msg)
		if err != nil {
			if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 1 {
				t.Errorf("%s: %d problems reported, want 1: %v", tc.key, n, err)
			}
		}
	}
}

// The default job with a Qwen3.5-shaped tiny model is valid as it is, and
// with a convolution as wide as the longest sequence (1024 positions).
func TestValidateTinyQwen35(t *testing.T) {
	c := Default()
	c.Model.Tiny.ModelType = "qwen3_5"
	if err := c.Validate(); err != nil {
		t.Errorf("model.tiny.model_type qwen3_5 over the defaults: %v", err)
	}
	c.Model.Tiny.ConvKernel = 1024
	if err := c.Validate(); err != nil {
		t.Errorf("model.tiny.conv_kernel 1024 of 1024 positions: %v", err)
	}
}

// The default job with a Nemotron-H-shaped tiny model is valid as it is.
func TestValidateTinyNemotronH(t *testing.T) {
	c := Default()
	c.Model.Tiny.ModelType = "nemotron_h"
	if err := c.Validate(); err != nil {
		t.Errorf("model.tiny.model_type nemotron_h over the defaults: %v", err)
	}
}

func TestValidateReportsAll(t *testing.T) {
	c := Default()
	c.Run.Iterations, c.Optim.LR = -1, -1
	err := c.Validate()
	wantErr(t, err, "run.iterations", "optim.lr")
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Path != "run.iterations" {
		t.Errorf("first KeyError %+v", ke)
	}
}

// TestValidateAccepts checks values at the edges of their ranges.
func TestValidateAccepts(t *testing.T) {
	c := Default()
	c.Device.Device, c.Device.Autocast = "cuda:1", true
	c.Algorithm.DualClip, c.Algorithm.Estimator, c.Rollout.GroupSize = 3, "gae", 1
	c.Algorithm.Gamma, c.Algorithm.ClipLow, c.Optim.MinLRRatio = 0, 0.999, 1
	c.Algorithm.LossAgg = "seq-mean-token-sum-norm"
	c.Data.Source, c.Data.Train, c.Data.Format = "files", []string{"x.jsonl"}, "musique"
	c.Rollout.MaxStaleness, c.Dist.NProc = 2, 2                              // asynchronous and data-parallel
	c.Data.Synthetic.FreshWorlds, c.Data.Synthetic.Entities = false, 300_000 // 450,000 name words
	c.SFT.WarmupSteps = 4800                                                 // the default warm start's steps
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// rollout.engine vllm is accepted with its server's address, started by a
// command or not, with LoRA, and with greedy evaluation; and with every
// sampling one --logprobs-mode reports the built-in engine's logprobs
// for: temperature 1 with top-k and top-p (raw_logprobs), another
// temperature without them, evaluated at any temperature
// (processed_logprobs).
func TestValidateAcceptsVLLM(t *testing.T) {
	c := Default()
	vllmEngine(&c)
	c.Rollout.VLLM.Command = []string{"python", "-m", "vllm.entrypoints.openai.api_server", "--port", "8000"}
	c.Model.LoRA.Rank = 8
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Rollout.VLLM.LoRA = "adapters"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		temperature, topP, eval float64
		topK                    int
	}{{1, 0.9, 1, 20}, {0.7, 1, 0, 0}, {1.3, 1, 0.5, 0}} {
		c := Default()
		vllmEngine(&c)
		c.Rollout.Temperature, c.Rollout.TopP, c.Rollout.EvalTemperature, c.Rollout.TopK = s.temperature, s.topP, s.eval, s.topK
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
}

// data.synthetic.entities' doc states the limits validation keeps to.
func TestEntitiesDocSaysTheLimits(t *testing.T) {
	for _, d := range Docs() {
		if d.Path != "data.synthetic.entities" {
			continue
		}
		for _, n := range []int{synth.MaxEntities(true), synth.MaxEntities(false)} {
			if !strings.Contains(d.Doc, strconv.Itoa(n)) {
				t.Errorf("the doc %q does not say %d", d.Doc, n)
			}
		}
		return
	}
	t.Fatal("no doc for data.synthetic.entities")
}

// vllmEngine sets rollout.engine vllm with a server's address.
func vllmEngine(c *Config) {
	c.Rollout.Engine, c.Rollout.VLLM.Address = "vllm", "http://127.0.0.1:8000"
}
