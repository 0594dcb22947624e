package main

import (
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"
)

func sftCommand() *cli.Command {
	return &cli.Command{
		Name:  "sft",
		Usage: "supervised warm start: masked NLL on the assistant's tokens of demonstrations; writes a HF model folder",
		Description: "Demonstrations are JSONL, one {\"messages\": [...]} per line, with tool calls as\n" +
			"{\"name\": ..., \"arguments\": {...}} (or OpenAI's {\"function\": {...}}). Without --sft-data the\n" +
			"synthetic world's scripted demonstrations are used.\n\nExamples:\n" +
			"  trainer sft --out runs/sft-model\n  trainer sft --model Qwen2.5-3B-Instruct --sft-data demos.jsonl --out runs/warm",
		Flags: append(configFlags(), &cli.StringFlag{Name: "out", Usage: "output model `DIR` (default: <run>/sft)"}),
		Action: func(c *cli.Context) error {
			cfg, err := loadConfig(c)
			if err != nil {
				return err
			}
			t, closer, err := startRun(c, cfg)
			if err != nil {
				return err
			}
			defer closer.Close()
			defer t.Close()
			out := c.String("out")
			if out == "" {
				out = filepath.Join(t.Dir(), "sft")
			}
			if err := t.SFT(c.Context, out); err != nil {
				return err
			}
			fmt.Printf("model written to %s\n", out)
			return nil
		},
	}
}
