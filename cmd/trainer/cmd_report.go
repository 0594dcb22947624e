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
		Name:  "report",
		Usage: "write a run's report (PNG plots + one self-contained HTML page), or compare runs",
		Description: "--run NAME is a run under --run-dir; --store PATH a store file or a run folder. One run: its report;\n" +
			"several: their comparison, in the order given (--run first).\n\nExamples:\n  trainer report --run default\n" +
			"  trainer report --run grpo --run ppo --run rloo --out runs/compare",
		Flags: []cli.Flag{
			runsFlag("run `NAME` under --run-dir"),
			runDirFlag(),
			storesFlag("trajectory store `PATH`: a store file or a run folder"),
			&cli.StringFlag{Name: "out", Usage: "output folder (default: <run>/report, or <run-dir>/compare)"},
		},
		Action: func(c *cli.Context) error {
			if len(c.StringSlice(flagStore)) == 0 && len(c.StringSlice(flagRun)) == 0 {
				return exitErr("report: name at least one --run NAME or --store PATH")
			}
			var stores, labels []string
			for _, name := range c.StringSlice(flagRun) {
				p, err := namedStore("report", c.String(flagRunDir), name)
				if err != nil {
					return err
				}
				stores = append(stores, p)
			}
			for _, a := range c.StringSlice(flagStore) {
				st, err := os.Stat(a)
				if err != nil {
					return fmt.Errorf("report: no file or folder %s (a run under --%s is named with --%s %s)", a, flagRunDir, flagRun, a)
				}
				p := a
				if st.IsDir() {
					if p = filepath.Join(a, "store.db"); !exists(p) {
						return fmt.Errorf("report: %s holds no store.db", a)
					}
				}
				stores = append(stores, p)
			}
			for _, p := range stores {
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
					out = filepath.Join(c.String(flagRunDir), "compare")
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
