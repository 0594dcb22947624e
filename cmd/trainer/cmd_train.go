package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/job"
	"github.com/agentrl/agentrl/report"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/dryrun"
	"github.com/agentrl/agentrl/trainer/models"
)

func trainCommand() *cli.Command {
	flags := append(configFlags(),
		&cli.BoolFlag{Name: "dry-run", Usage: "load and check everything (data, index, tokenizer, model config, memory), then stop"},
		&cli.BoolFlag{Name: "no-report", Usage: "do not write the HTML report at the end"},
	)
	return &cli.Command{
		Name:  "train",
		Usage: "train an agent with RL (no arguments: the built-in CPU demo job)",
		Description: "Examples:\n" +
			"  trainer train                                   # the default job: synthetic world, tiny model, GRPO\n" +
			"  trainer train --config examples/qwen2.5-3b-hotpotqa-grpo.yaml\n" +
			"  trainer train --estimator gae --set algorithm.loss_mask=false --run ppo-no-loss-mask\n" +
			"  trainer train --run default --resume            # continue a stopped run\n" +
			"  trainer train --nproc 2                         # two data-parallel ranks on this machine\n" +
			"  torchrun --nproc-per-node 8 --no-python bin/trainer train --config my.yaml  # or Slurm, Kubernetes\n" +
			"  trainer train --dry-run --config my.yaml        # check a config without training",
		Flags: flags,
		Before: func(c *cli.Context) error {
			if c.Bool(flagResume) && c.NArg() > 0 {
				return fmt.Errorf("train: --%s takes no value: name the run with --%s (trainer train --%s %s --%s)",
					flagResume, flagRun, flagRun, c.Args().First(), flagResume)
			}
			return nil
		},
		Action: func(c *cli.Context) error {
			cfg, err := trainConfig(c)
			if err != nil {
				return err
			}
			if c.Bool("dry-run") {
				return dryRun(c, cfg)
			}
			storePath, err := job.Run(c.Context, cfg, job.Options{Progress: bars, GitRev: gitRev(), Signals: signalContext,
				Relaunch: os.Args[1:], LaunchGrace: launchGrace})
			if err != nil || storePath == "" || c.Bool("no-report") {
				return err
			}
			return endReport(storePath, trainer.RunDir(cfg))
		},
	}
}

// endReport writes the end-of-job report of the run in runDir, whose
// store is storePath, to <run>/report and prints where its page is.
func endReport(storePath, runDir string) error {
	html, err := report.Write(storePath, filepath.Join(runDir, "report"))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Printf("report: %s\n", html)
	return nil
}

// launchGrace is how long the --nproc launcher lets the surviving ranks
// stop by themselves (SIGTERM) before it kills them.
const launchGrace = 10 * time.Second

// trainConfig is loadConfig for train. A resumed run (--run RUN --resume,
// or run.resume) starts from the config.yaml saved in its folder, with the
// command line applied over it, so it continues with the data, model and
// settings it began with; only the flags given change anything.
func trainConfig(c *cli.Context) (config.Config, error) {
	cfg := config.Default()
	if err := config.ApplyFlags(c, &cfg); err != nil {
		return cfg, err
	}
	if cfg.Run.Resume {
		name, dir := cfg.Run.Name, cfg.Run.Dir
		run := trainer.RunDir(cfg)
		// Before anything is built or written (a log, an index): a run
		// without a checkpoint cannot be resumed.
		ck, _, err := models.FindCheckpoint(run)
		if err != nil {
			return cfg, fmt.Errorf("resume %s: %w", name, err)
		}
		if ck == "" {
			return cfg, fmt.Errorf("resume %s: %s has no checkpoint to resume from (nothing was started)", name, run)
		}
		saved := filepath.Join(run, "config.yaml")
		base, err := config.Load(saved)
		switch {
		case err == nil:
			cfg = base
			if err := config.ApplyFlags(c, &cfg); err != nil {
				return cfg, err
			}
			cfg.Run.Name, cfg.Run.Dir, cfg.Run.Resume = name, dir, true
			if bad := cfg.ResumeConflicts(base); len(bad) > 0 {
				return cfg, fmt.Errorf("resume %s: a resumed run cannot change %s (the checkpoint fixes them; %s keeps the run's values): "+
					"start a new run to change them", name, strings.Join(bad, ", "), saved)
			}
		case !errors.Is(err, fs.ErrNotExist):
			return cfg, fmt.Errorf("resume %s: %w", name, err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// linearLayers counts the Gated DeltaNet layers of c.
func linearLayers(c torch.Config) int {
	n := 0
	for _, t := range c.LayerTypes {
		if t == torch.LinearAttention {
			n++
		}
	}
	return n
}

func dryRun(c *cli.Context, cfg config.Config) error {
	r, err := dryrun.Run(c.Context, cfg)
	if err != nil {
		return err
	}
	gb := func(b int64) string { return fmt.Sprintf("%.2f GB", float64(b)/1e9) }
	fmt.Printf("data:      %d training and %d evaluation questions\n", r.TrainTasks, r.EvalTasks)
	fmt.Printf("index:     %s (%d passages)\n", r.IndexPath, r.Passages)
	fmt.Printf("tools:     %s\n", strings.Join(r.Tools, ", "))
	fmt.Printf("tokenizer: %d tokens\n", r.Vocab)
	layers := fmt.Sprintf("%d layers", r.Model.Layers)
	if n := linearLayers(r.Model); n > 0 {
		layers += fmt.Sprintf(" (%d Gated DeltaNet)", n)
	}
	if r.Model.IsNemotron() {
		layers += fmt.Sprintf(" (Nemotron-H blocks %s)", r.Model.Nemotron.Pattern())
	}
	fmt.Printf("model:     %s, vocab %d, hidden %d, %s, %d heads (%d kv), %.1fM parameters\n",
		r.Model.ModelType, r.Model.Vocab, r.Model.Hidden, layers, r.Model.Heads, r.Model.KVHeads, float64(r.Params)/1e6)
	if r.ActiveParams != r.Params {
		fmt.Printf("           %.1fM active per token (%d of %d experts in each sparse layer)\n",
			float64(r.ActiveParams)/1e6, r.Model.MoE.ExpertsPerToken, r.Model.MoE.Experts)
	}
	m := r.Memory
	parts := map[string]int64{"weights": m.Weights, "grads": m.Grads, "optimizer": m.Optimizer, "reference": m.Reference,
		"critic": m.Critic, "kv cache": m.KVCache, "activations": m.Activations}
	if m.DeltaNetState > 0 {
		parts["deltanet state"] = m.DeltaNetState
	}
	if m.Merged > 0 {
		parts["merged decode weights"] = m.Merged
	}
	if dev, err := torch.ParseDevice(cfg.Device.Device); err == nil && dev == torch.CPU {
		parts["checkpoint writing"] = m.Checkpoint
	}
	keys := make([]string, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	where := cfg.Device.Device
	if r.World > 1 || r.Zero > 0 {
		where = fmt.Sprintf("%s per rank, %d ranks, ZeRO stage %d", where, r.World, r.Zero)
	}
	fmt.Printf("memory:    ~%s on %s (", gb(m.Total), where)
	for i, k := range keys {
		if i > 0 {
			fmt.Print(", ")
		}
		fmt.Printf("%s %s", k, gb(parts[k]))
	}
	fmt.Println(")")
	if r.Decode != "" {
		fmt.Printf("decode:    %s\n", r.Decode)
	}
	for _, w := range r.Warnings {
		fmt.Printf("warning:   %s\n", w)
	}
	fmt.Println("dry run: ok")
	return nil
}
