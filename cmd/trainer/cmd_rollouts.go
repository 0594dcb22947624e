package main

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/report"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

// storeFlags name a run's store: --store PATH, or --run NAME under
// --run-dir.
func storeFlags() []cli.Flag {
	return []cli.Flag{
		storeFlag("trajectory store `PATH`: a store file or a run folder (default: <run-dir>/<run>/store.db)"),
		runFlag(config.Default().Run.Name, "run `NAME`"),
		runDirFlag(),
	}
}

// storePath is the store the store flags name.
func storePath(c *cli.Context) (string, error) {
	p := c.String(flagStore)
	if p == "" {
		p = filepath.Join(c.String(flagRunDir), c.String(flagRun), "store.db")
	} else if st, err := os.Stat(p); err == nil && st.IsDir() {
		p = filepath.Join(p, "store.db")
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("trajectory store %s: %w", p, err)
	}
	return p, nil
}

// openRunStore opens the store named by the store flags read-only (the
// inspection commands never write), and returns its path.
func openRunStore(c *cli.Context) (*store.Store, string, error) {
	p, err := storePath(c)
	if err != nil {
		return nil, "", err
	}
	s, err := store.OpenReadOnly(p)
	return s, p, err
}

func rolloutsCommand() *cli.Command {
	return &cli.Command{
		Name:  "rollouts",
		Usage: "inspect the stored rollouts of a run",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list trajectories (newest iteration first)",
				Description: "Examples:\n  trainer rollouts list --run default --iteration 3 --split eval\n" +
					"  trainer rollouts list --where \"hops = 3 AND correct = 0\" --limit 20",
				Flags: append(storeFlags(),
					&cli.IntFlag{Name: "iteration", Value: -1, Usage: "only this iteration"},
					&cli.StringFlag{Name: "split", Usage: "train or eval"},
					&cli.StringFlag{Name: "where", Usage: "extra SQL condition on the trajectories table"},
					&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most N rows (0 = all)"},
				),
				Action: func(c *cli.Context) error {
					switch sp := c.String("split"); sp {
					case "", string(trajectory.Train), string(trajectory.Eval):
					default:
						return exitErr("rollouts list: --split %q, want %s or %s", sp, trajectory.Train, trajectory.Eval)
					}
					s, _, err := openRunStore(c)
					if err != nil {
						return err
					}
					defer s.Close()
					f := store.ListFilter{Split: trajectory.Split(c.String("split")), Where: c.String("where")}
					if it := c.Int("iteration"); it >= 0 {
						f.Iteration = &it
					}
					rows, err := s.List(f)
					if err != nil {
						return err
					}
					rows = newestFirst(rows, c.Int("limit"))
					w := tabwriter.NewWriter(os.Stdout, 0, 2, 2, ' ', 0)
					fmt.Fprintln(w, "ID\tITER\tSPLIT\tTASK\tHOPS\tTURNS\tTOKENS\tREWARD\tSTOP\tOK\tANSWER")
					for _, r := range rows {
						fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%d\t%d\t%d\t%.3f\t%s\t%v\t%s\n", r.ID, r.Iteration, r.Split, r.TaskID, r.Hops,
							r.Turns, r.Tokens, r.Reward, r.Stop, r.Correct, report.Clip(r.Answer, 40))
					}
					return w.Flush()
				},
			},
			{
				Name:      "show",
				Usage:     "show one trajectory as a conversation",
				ArgsUsage: "ID",
				Flags: append(storeFlags(),
					&cli.BoolFlag{Name: "mask", Usage: "show the tokens grouped by action-mask bit"},
					tokenizerFlag(),
				),
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return exitErr("rollouts show: give one trajectory ID (see rollouts list)")
					}
					s, p, err := openRunStore(c)
					if err != nil {
						return err
					}
					defer s.Close()
					t, err := s.Get(c.Args().First())
					if err != nil {
						return err
					}
					opts := report.RenderOptions{ShowMask: c.Bool("mask"), Color: isatty.IsTerminal(os.Stdout.Fd())}
					if opts.ShowMask {
						tok, err := runTokenizer(c, p)
						if err != nil {
							return err
						}
						if tok != nil {
							opts.Decode = func(ids []int32) string { return tok.Decode(ids, false) }
						}
					}
					return report.Render(os.Stdout, t, opts)
				},
			},
			{
				Name:      "sql",
				Usage:     "run a read-only SQL query on the store (writes are refused)",
				ArgsUsage: "QUERY",
				Description: "Examples:\n  trainer rollouts sql \"SELECT * FROM reward_by_iteration\"\n" +
					"  trainer rollouts sql \"SELECT tool, calls, success_rate FROM tool_success\"",
				Flags: storeFlags(),
				Action: func(c *cli.Context) error {
					q := strings.Join(c.Args().Slice(), " ")
					if q == "" {
						return exitErr("rollouts sql: give a QUERY")
					}
					p, err := storePath(c)
					if err != nil {
						return err
					}
					cols, rows, err := store.QueryReadOnly(p, q)
					if err != nil {
						return err
					}
					w := tabwriter.NewWriter(os.Stdout, 0, 2, 2, ' ', 0)
					fmt.Fprintln(w, strings.Join(cols, "\t"))
					for _, r := range rows {
						cells := make([]string, len(r))
						for i, v := range r {
							cells[i] = report.Clip(strings.ReplaceAll(store.Cell(v), "\n", " "), 80)
						}
						fmt.Fprintln(w, strings.Join(cells, "\t"))
					}
					return w.Flush()
				},
			},
			{
				Name:  "migrate",
				Usage: "bring a store written by an older agentrl to this build's schema (the only rollouts subcommand that writes)",
				Flags: storeFlags(),
				Action: func(c *cli.Context) error {
					p, err := storePath(c)
					if err != nil {
						return err
					}
					s, err := store.OpenWaiting(p, store.LockWait{Warn: func(_ string, waited time.Duration) {
						fmt.Fprintf(os.Stderr, "%s is locked by another connection: waiting for its write lock (%s so far)\n", p, waited.Round(time.Second))
					}})
					if err != nil {
						return err
					}
					fmt.Printf("%s: schema version %d\n", p, store.SchemaVersion())
					return s.Close()
				},
			},
		},
	}
}

// newestFirst orders rows (in the order they were written) by iteration,
// newest first, keeping the written order within an iteration, and keeps
// at most limit of them (limit <= 0: all).
func newestFirst(rows []store.Summary, limit int) []store.Summary {
	slices.SortStableFunc(rows, func(a, b store.Summary) int { return cmp.Compare(b.Iteration, a.Iteration) })
	if limit > 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	return rows
}
