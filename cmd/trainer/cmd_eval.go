package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/results"
)

func evalCommand() *cli.Command {
	return &cli.Command{
		Name:  "eval",
		Usage: "evaluate a policy (greedy) on the evaluation split, with the naive-RAG baseline",
		Description: "Without --model, --run RUN evaluates the final policy of run RUN with the run's saved config (a LoRA\n" +
			"run's: its base with its adapters), as the run RUN-eval; with --model DIR, --run names the evaluation's run.\n\n" +
			"Examples:\n  trainer eval --run default               # the final policy of run 'default', with its config\n" +
			"  trainer eval --model runs/default/final --run my-eval\n" +
			"  trainer eval --model Qwen2.5-3B-Instruct --adapter runs/lora/final --run lora-eval",
		Flags: append(configFlags(),
			adapterFlag(adapterDecoded+"; sets model.lora from its adapter_config.json"),
		),
		Action: func(c *cli.Context) error {
			cfg := config.Default()
			run := ""
			if c.IsSet(flagRun) && !c.IsSet(flagModel) {
				run = c.String(flagRun)
				base := c.String(flagRunDir)
				if base == "" {
					base = config.Default().Run.Dir
				}
				dir := filepath.Join(base, run)
				saved, err := config.Load(filepath.Join(dir, "config.yaml"))
				if err != nil {
					return fmt.Errorf("eval --run %s: %w", run, err)
				}
				cfg = saved
				model, adapter, err := runFinal(dir)
				if err != nil {
					return fmt.Errorf("eval --run %s: %w", run, err)
				}
				cfg.Model.Path, cfg.Model.LoRA = model, config.Default().Model.LoRA
				if adapter != "" {
					if err := loraFromAdapter(&cfg, adapter); err != nil {
						return err
					}
				}
			}
			if err := config.ApplyFlags(c, &cfg); err != nil {
				return err
			}
			if run != "" {
				cfg.Run.Name = run + "-eval"
			}
			if a := c.String(flagAdapter); a != "" {
				if err := loraFromAdapter(&cfg, a); err != nil {
					return err
				}
			}
			cfg.Run.Resume, cfg.SFT.Data = false, ""
			if cfg.Model.Path == "" {
				return exitErr("eval: give --run RUN or --model DIR")
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			t, closer, err := startRun(c, cfg)
			if err != nil {
				return err
			}
			defer closer.Close()
			res, err := t.Evaluate(c.Context)
			storePath := t.StorePath()
			if cerr := t.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			results.Print(os.Stdout, res, nil)
			fmt.Printf("\nstore: %s\n", storePath)
			return nil
		},
	}
}
