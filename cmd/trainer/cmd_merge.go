package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/internal/hubcache"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/torch"
)

func mergeCommand() *cli.Command {
	return &cli.Command{
		Name:  "merge",
		Usage: "merge a PEFT LoRA adapter into its base: write a full Hugging Face model folder",
		Description: "The target weights become W + (alpha/r) B A (alpha/sqrt(r) for an rsLoRA adapter), computed in f32 and rounded to the dtype once;\n" +
			"the other weights are the base's. The folder (config.json, model.safetensors, the base's tokenizer) loads\n" +
			"in transformers and vLLM as a plain model.\n\n" +
			"Examples:\n  trainer merge --model Qwen2.5-3B-Instruct --adapter runs/lora/final --out runs/lora/merged\n" +
			"  trainer merge --run lora --out merged   # a LoRA run's final adapters over its base",
		Flags: []cli.Flag{
			modelFlag("the base: Hugging Face model `DIR`"),
			adapterFlag(""),
			runFlag("", "merge the final adapters of LoRA run `NAME` into its base"),
			runDirFlag(),
			&cli.StringFlag{Name: "out", Usage: "the merged model's `DIR` (must not exist, or be empty)", Required: true, TakesFile: true},
			&cli.StringFlag{Name: "dtype", Value: "auto", Usage: "dtype of the merged weights: auto (the base's torch_dtype, else f32), f32, bf16 or f16"},
		},
		Action: merge,
	}
}

func merge(c *cli.Context) error {
	model, adapter := c.String(flagModel), c.String(flagAdapter)
	switch run := c.String(flagRun); {
	case run != "" && (model != "" || adapter != ""):
		return exitErr("merge: give --run RUN or --model DIR --adapter DIR, not both")
	case run != "":
		var err error
		if model, adapter, err = runFinal(filepath.Join(c.String(flagRunDir), run)); err != nil {
			return fmt.Errorf("merge --run %s: %w", run, err)
		}
		if adapter == "" {
			return exitErr("merge --run %s: its final policy is a full model folder already (no adapters)", run)
		}
	case model == "" || adapter == "":
		return exitErr("merge: give --model DIR and --adapter DIR (or --run RUN)")
	}
	// The base's own folder, for its tokenizer below, when --model is a
	// Hugging Face id in the local cache.
	model, err := hubcache.Resolve(model)
	if err != nil {
		return err
	}
	out := c.String("out")
	if ents, err := os.ReadDir(out); err == nil && len(ents) > 0 {
		return exitErr("merge: --out %s is not empty", out)
	}
	cfg, err := torch.ReadConfig(model)
	if err != nil {
		return err
	}
	dt, err := mergeDType(c.String("dtype"), cfg.TorchDType)
	if err != nil {
		return err
	}
	lora, free, err := loadPolicy(model, adapter, dt, torch.CPU)
	if err != nil {
		return err
	}
	defer free()
	merged, err := torch.NewMergedModel(lora)
	if err != nil {
		return err
	}
	defer merged.Free()
	if err := merged.Save(out); err != nil {
		return err
	}
	if exists(filepath.Join(model, "tokenizer.json")) {
		tok, err := tokenizer.Load(model)
		if err != nil {
			return fmt.Errorf("merge: tokenizer of %s: %w", model, err)
		}
		if err := tok.Save(out); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.App.Writer, "merged %s into %s: %s (%s)\n", adapter, model, out, dt)
	return nil
}

// mergeDType is --dtype: auto takes the base's torch_dtype.
func mergeDType(flag, torchDType string) (torch.DType, error) {
	if flag == "auto" {
		switch torchDType {
		case "bfloat16":
			return torch.BFloat16, nil
		case "float16":
			return torch.Float16, nil
		}
		return torch.Float32, nil
	}
	dt, err := torch.ParseDType(flag)
	if err != nil {
		return 0, fmt.Errorf("merge --dtype: %w", err)
	}
	return dt, nil
}
