package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/report"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "write a run's report (PNG plots + one self-contained HTML page), or compare runs",
		ArgsUsage: "RUN [RUN...]",
		Description: "RUN is a run name under --runs, a run folder, or a store file.\n\nExamples:\n  trainer report default\n" +
			"  trainer report grpo ppo rloo --out runs/compare",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "runs", Value: "runs", Usage: "folder of runs"},
			&cli.StringFlag{Name: "out", Usage: "output folder (default: <run>/report, or <runs>/compare)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return exitErr("report: name at least one RUN")
			}
			var stores, labels []string
			for _, a := range c.Args().Slice() {
				p := a
				if st, err := os.Stat(a); err != nil || st.IsDir() {
					p = filepath.Join(c.String("runs"), a, "store.db")
					if err == nil { // a folder: a run folder when it holds a store
						if _, err := os.Stat(filepath.Join(a, "store.db")); err == nil {
							p = filepath.Join(a, "store.db")
						}
					}
				}
				if _, err := os.Stat(p); err != nil {
					return fmt.Errorf("report: run %s: no store at %s", a, p)
				}
				stores = append(stores, p)
				labels = append(labels, filepath.Base(filepath.Dir(p)))
			}
			out := c.String("out")
			var html string
			var err error
			if len(stores) == 1 {
				if out == "" {
					out = filepath.Join(filepath.Dir(stores[0]), "report")
				}
				html, err = report.Write(stores[0], out)
			} else {
				if out == "" {
					out = filepath.Join(c.String("runs"), "compare")
				}
				html, err = report.Compare(stores, labels, out)
			}
			if err != nil {
				return err
			}
			fmt.Println(html)
			return nil
		},
	}
}
