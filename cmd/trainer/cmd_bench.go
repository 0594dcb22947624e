package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/bench"
)

func modelFlags(d bench.Config) []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "vocab", Value: d.Vocab, Usage: "vocabulary size"},
		&cli.IntFlag{Name: "hidden", Value: d.Hidden, Usage: "hidden size"},
		&cli.IntFlag{Name: "inter", Value: d.Inter, Usage: "MLP intermediate size"},
		&cli.IntFlag{Name: "layers", Value: d.Layers, Usage: "transformer layers"},
		&cli.IntFlag{Name: "heads", Value: d.Heads, Usage: "attention heads"},
		&cli.IntFlag{Name: "kv-heads", Value: d.KVHeads, Usage: "key/value heads"},
		&cli.IntFlag{Name: "batch", Value: d.Batch, Usage: "sequences per batch"},
		&cli.IntFlag{Name: "prompt-len", Value: d.PromptLen, Usage: "prompt tokens (generate, rollout)"},
		&cli.IntFlag{Name: "new-tokens", Value: d.NewTokens, Usage: "tokens generated per sequence (generate)"},
		&cli.IntFlag{Name: "seq-len", Value: d.SeqLen, Usage: "sequence length (train)"},
		&cli.IntFlag{Name: "threads", Value: d.Threads, Usage: "CPU cores in total for libtorch and BLAS (0 = all)"},
		&cli.IntFlag{Name: "repeats", Value: d.Repeats, Usage: "measured runs after one warm-up (the median is reported)"},
		&cli.BoolFlag{Name: "checkpointing", Usage: "activation checkpointing in train's forward, as model.checkpointing"},
		&cli.BoolFlag{Name: "tied", Usage: "tie the LM head to the embedding (as Qwen2.5-0.5B does)"},
		&cli.IntFlag{Name: "logits-chunk", Value: d.LogitsChunk, Usage: "tokens per chunk of the LM head's logits in train's forwards (0 = whole), as model.logits_chunk"},
	}
}

func benchConfig(c *cli.Context) bench.Config {
	return bench.Config{Vocab: c.Int("vocab"), Hidden: c.Int("hidden"), Inter: c.Int("inter"), Layers: c.Int("layers"),
		Heads: c.Int("heads"), KVHeads: c.Int("kv-heads"), Batch: c.Int("batch"), PromptLen: c.Int("prompt-len"),
		NewTokens: c.Int("new-tokens"), SeqLen: c.Int("seq-len"), Threads: c.Int("threads"), Repeats: c.Int("repeats"),
		Tied: c.Bool("tied"), Checkpointing: c.Bool("checkpointing"), LogitsChunk: c.Int("logits-chunk")}
}

// loraFlags are the LoRA settings of bench train and generate.
func loraFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "lora-rank", Usage: "LoRA rank: train trains adapters of this rank over the random base, generate decodes from the merged weights (0 = full fine-tuning)"},
		&cli.Float64Flag{Name: "lora-alpha", Usage: "LoRA alpha (0 = twice the rank)"},
		&cli.StringFlag{Name: "lora-targets", Value: "all-linear", Usage: "adapted projections, comma-separated (q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj), or all-linear"},
	}
}

// withLoRA sets cfg's LoRA settings from the flags of loraFlags.
func withLoRA(c *cli.Context, cfg bench.Config) bench.Config {
	cfg.LoRARank, cfg.LoRAAlpha = c.Int("lora-rank"), c.Float64("lora-alpha")
	if t := strings.TrimSpace(c.String("lora-targets")); t != "all-linear" {
		for _, name := range strings.Split(t, ",") {
			cfg.LoRATargets = append(cfg.LoRATargets, strings.TrimSpace(name))
		}
	}
	return cfg
}

// benchModelUsage is --model of bench generate and train.
const benchModelUsage = "a model folder, model id or config.json whose architecture is benchmarked with random weights " +
	"(Qwen3.5, Qwen3, ... as published), in place of the shape flags (\"\" = the shape flags' Qwen2-style model)"

// shapeFlags are the flags --model replaces.
var shapeFlags = []string{"vocab", "hidden", "inter", "layers", "heads", "kv-heads", "tied"}

// withModel sets cfg.Model from --model, refusing the shape flags beside it.
func withModel(c *cli.Context, cfg bench.Config) (bench.Config, error) {
	cfg.Model = c.String(flagModel)
	if cfg.Model == "" {
		return cfg, nil
	}
	for _, f := range shapeFlags {
		if c.IsSet(f) {
			return cfg, fmt.Errorf("--%s with --model: the model's config.json gives its shape", f)
		}
	}
	return cfg, nil
}

// deviceFlag is --device of bench generate and train.
func deviceFlag() cli.Flag {
	return &cli.StringFlag{Name: "device", Value: "cpu", Usage: "cpu, cuda or cuda:N (a CUDA build)"}
}

// kernelProfileFlag is --kernel-profile of bench generate and train.
func kernelProfileFlag(what string) cli.Flag {
	return &cli.StringFlag{Name: "kernel-profile", Usage: "record " + what + " under libtorch's profiler after the measured runs " +
		"and write its top 25 kernels (CUDA) or operators (CPU) to this file as a markdown table"}
}

// kernelProfileTop is how many rows --kernel-profile's table has (and one
// for the rest).
const kernelProfileTop = 25

// writeKernelProfile writes r's kernel profile to --kernel-profile's file,
// if one was asked for, headed by title.
func writeKernelProfile(c *cli.Context, r bench.Result, title string) error {
	path := c.String("kernel-profile")
	if path == "" || r.Kernels == nil {
		return nil
	}
	if err := os.WriteFile(path, []byte(r.Kernels.Table(title, kernelProfileTop)), 0o644); err != nil {
		return fmt.Errorf("--kernel-profile: %w", err)
	}
	return nil
}

func printJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}

func benchCommand() *cli.Command {
	gen, _ := bench.Preset("small", "generate")
	tr, _ := bench.Preset("small", "train")
	ro := bench.DefaultRollout()
	return &cli.Command{
		Name:  "bench",
		Usage: "measure this machine: generation, training update and multi-turn rollout throughput",
		Subcommands: []*cli.Command{
			{
				Name:  "generate",
				Usage: "batched sampling of --new-tokens after --prompt-len prompts (random weights); prints one JSON line",
				Description: "Example (the medium config):\n  trainer bench generate --vocab 32000 --hidden 768 --inter 2048 --layers 12 " +
					"--heads 12 --kv-heads 4 --batch 8 --prompt-len 128 --new-tokens 64 --threads 2",
				Flags: append(append(modelFlags(gen), loraFlags()...),
					&cli.StringFlag{Name: "engine-dtype", Value: "f32", Usage: "precision of the decode engine: f32, or bf16 (a bf16 copy of the weights)"},
					&cli.StringFlag{Name: "decode", Value: "auto", Usage: "decode path: auto, kernels (hand-written CPU step), fused (libtorch, fused weights) or unfused (libtorch, as before the kernels)"},
					&cli.Float64Flag{Name: "bandwidth-gbs", Usage: "memory read bandwidth (GB/s) for bound_fraction, e.g. refbench peak's sum_gbs_read (0 = measure in-process)"},
					&cli.BoolFlag{Name: "profile", Usage: "add step_ms: one decode step's time by phase (products, attention, sampling, other)"},
					kernelProfileFlag("one decode step (in one more run)"), deviceFlag(), modelFlag(benchModelUsage),
				),
				Action: func(c *cli.Context) error {
					cfg, err := withModel(c, withLoRA(c, benchConfig(c)))
					if err != nil {
						return err
					}
					cfg.EngineDType = c.String("engine-dtype")
					cfg.Decode, cfg.BandwidthGBs, cfg.Profile = c.String("decode"), c.Float64("bandwidth-gbs"), c.Bool("profile")
					cfg.Device, cfg.KernelProfile = c.String("device"), c.String("kernel-profile") != ""
					r, err := bench.Generate(cfg)
					if err != nil {
						return err
					}
					title := fmt.Sprintf("### One decode step at batch %d (%s, %s weights, %s path, %d-token prompts)",
						r.Config.Batch, r.Config.Device, r.Config.EngineDType, r.DecodePath, r.Config.PromptLen)
					if err := writeKernelProfile(c, r, title); err != nil {
						return err
					}
					return printJSON(r)
				},
			},
			{
				Name:  "train",
				Usage: "the learner's Update on a GRPO batch: advantages, forward, PPO loss, backward, clip, AdamW, in one step over the batch whose forward also gives the old logprobs (no recompute pass; random weights); one JSON line",
				Flags: append(append(modelFlags(tr), loraFlags()...), deviceFlag(), modelFlag(benchModelUsage),
					&cli.StringFlag{Name: "dtype", Value: "f32", Usage: "parameter dtype: f32, bf16 or f16 (AdamW keeps f32 master weights)"},
					kernelProfileFlag("one more update")),
				Action: func(c *cli.Context) error {
					cfg, err := withModel(c, withLoRA(c, benchConfig(c)))
					if err != nil {
						return err
					}
					cfg.Device, cfg.DType = c.String("device"), c.String("dtype")
					cfg.KernelProfile = c.String("kernel-profile") != ""
					r, err := bench.Train(cfg)
					if err != nil {
						return err
					}
					title := fmt.Sprintf("### One update of %d x %d tokens (%s, %s parameters)", r.Config.Batch, r.Config.SeqLen,
						r.Config.Device, r.Config.DType)
					if err := writeKernelProfile(c, r, title); err != nil {
						return err
					}
					return printJSON(r)
				},
			},
			{
				Name: "rollout",
				Usage: "multi-turn rollouts with a tool of configurable latency, with and without it; one JSON line " +
					"with tokens_per_s and latency_ratio (no flags: 32 trajectories, 3 tool turns, 100 ms vs 0 ms)",
				Flags: append(modelFlags(ro.Model),
					&cli.IntFlag{Name: "trajectories", Value: ro.Trajectories, Usage: "episodes"},
					&cli.IntFlag{Name: "tool-turns", Value: ro.ToolTurns, Usage: "tool turns per episode (plus a final turn)"},
					&cli.IntFlag{Name: "turn-tokens", Value: ro.TurnTokens, Usage: "tokens per turn at least"},
					&cli.IntFlag{Name: "turn-jitter", Value: ro.TurnJitter, Usage: "extra tokens per turn, drawn once (seeded)"},
					&cli.IntFlag{Name: "obs-tokens", Value: ro.ObsTokens, Usage: "tokens of each tool response"},
					&cli.Float64Flag{Name: "latency-ms", Value: ro.LatencyMS, Usage: "tool latency"},
					&cli.IntFlag{Name: "slots", Value: ro.Slots, Usage: "KV-cache slots decoding together"},
					&cli.StringFlag{Name: "vllm-python", Usage: "the Python of an environment with vLLM (scripts/vllm-venv.sh): " +
						"the same scenario, with the latency, on the built-in engine and on a vLLM server it starts, side by side " +
						"(turns of turn-tokens tokens, no jitter)"},
					&cli.StringFlag{Name: "vllm-log", Value: "vllm.log", Usage: "with --vllm-python: the file the server's output goes to"},
				),
				Action: func(c *cli.Context) error {
					cfg := ro
					cfg.Model = benchConfig(c)
					cfg.Trajectories, cfg.ToolTurns = c.Int("trajectories"), c.Int("tool-turns")
					cfg.TurnTokens, cfg.TurnJitter, cfg.ObsTokens = c.Int("turn-tokens"), c.Int("turn-jitter"), c.Int("obs-tokens")
					cfg.LatencyMS, cfg.Slots, cfg.Repeats = c.Float64("latency-ms"), c.Int("slots"), c.Int("repeats")
					if py := c.String("vllm-python"); py != "" {
						r, err := bench.RolloutVLLM(cfg, py, c.String("vllm-log"))
						if err != nil {
							return err
						}
						fmt.Println(r.JSON())
						return nil
					}
					r, err := bench.Rollout(cfg)
					if err != nil {
						return err
					}
					fmt.Println(r.JSON())
					return nil
				},
			},
		},
	}
}
