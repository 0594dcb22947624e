package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/experiment"
	"github.com/agentrl/agentrl/job"
	"github.com/agentrl/agentrl/report"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/results"
)

func experimentCommand() *cli.Command {
	return &cli.Command{
		Name:  "experiment",
		Usage: "run a named experiment",
		Subcommands: []*cli.Command{{
			Name: "paper",
			Usage: "the Agent-R1 comparison at CPU scale: Naive RAG, Base Tool Call and every RL row of experiment.PaperSpecs " +
				"(the algorithms and the mask ablations), over seeds; writes the table, the claims checked seed by seed and the curves to --out",
			Description: "Example:\n  trainer experiment paper --seeds 1,2 --out docs/results.md\n" +
				"Config flags change the base config of every run (e.g. --iterations 20); --resume keeps the finished warm\n" +
				"starts and runs under --run-dir and runs only the rest (each other run starts afresh).",
			Flags: append(configFlags(),
				&cli.StringFlag{Name: "seeds", Value: "1,2,3,4,5", Usage: "comma-separated training seeds of the core rows"},
				&cli.StringFlag{Name: "other-seeds", Value: "1,2,3", Usage: "comma-separated seeds the rows not marked core run on (those of --seeds that are in it)"},
				&cli.StringFlag{Name: "world-seeds", Usage: "comma-separated world seeds (data.synthetic.seed), one per entry of --seeds: each seed's runs, " +
					"its warm start's included, use its own world, so its test questions are its own (default: every seed uses the config's world)"},
				&cli.BoolFlag{Name: "extra", Usage: "add the rows outside the paper's table (GiGPO, GSPO's loss, bf16 rollouts), on the other seeds"},
				&cli.StringFlag{Name: "rows", Usage: "semicolon-separated row names: train and show only these rows (the first evaluates each seed's baselines), " +
					"e.g. \"PPO;PPO + process rewards, 80 its\" (default: every row)"},
				&cli.StringFlag{Name: "out", Value: "docs/results.md", Usage: "Markdown `FILE` to write (curves go beside it)"},
				&cli.BoolFlag{Name: "collect", Usage: "train nothing: rebuild the table and curves from the finished paper runs under --run-dir"},
				&cli.IntFlag{Name: "jobs", Value: 1, Usage: "runs training at once in this process (each has its own seeded generators, so at a fixed " +
					"device.threads a run's figures do not depend on it); with device.threads 0 each gets cores/jobs threads"},
			),
			Action: func(c *cli.Context) error {
				if c.Bool("collect") {
					for _, f := range []string{"world-seeds", "jobs", "resume"} {
						if c.IsSet(f) {
							return fmt.Errorf("--%s with --collect: --collect trains nothing, and reads each run's world and outcomes from its store", f)
						}
					}
				}
				cfg, err := loadConfig(c)
				if err != nil {
					return err
				}
				if c.Bool("collect") {
					if err := collectOnly(c, cfg); err != nil {
						return err
					}
				}
				cfg.Run.Resume = false // --resume keeps whole runs here (experiment.Options); none continues from a checkpoint
				seeds, err := seedList("--seeds", c.String("seeds"))
				if err != nil {
					return err
				}
				other, err := seedList("--other-seeds", c.String("other-seeds"))
				if err != nil {
					return err
				}
				var rows []string
				if c.String("rows") != "" {
					rows = strings.Split(c.String("rows"), ";")
				}
				worlds, err := worldSeeds(c.String("world-seeds"), seeds, cfg.Data.Source)
				if err != nil {
					return err
				}
				jobs := c.Int("jobs")
				if jobs < 1 {
					return fmt.Errorf("--jobs %d: want 1 or more", jobs)
				}
				if jobs > 1 && cfg.Device.Threads == 0 {
					cfg.Device.Threads = max(1, runtime.NumCPU()/jobs)
				}
				progress := bars
				if jobs > 1 {
					progress = nil // one bar at a time; the log says when each run starts
				}
				cfg.Run.Name = "paper"
				log, closer, err := job.OpenRun(cfg)
				if err != nil {
					return err
				}
				defer closer.Close()
				ctx, _, done := signalContext()
				defer done()
				var tab *experiment.Table
				if c.Bool("collect") {
					tab, err = experiment.Collect(cfg.Run.Dir, seeds, other, c.Bool("extra"), rows)
				} else {
					tab, err = experiment.Run(ctx, cfg, experiment.Options{Seeds: seeds, OtherSeeds: other, Worlds: worlds, Extra: c.Bool("extra"), Rows: rows,
						Resume: c.Bool("resume"), Log: log, Progress: progress, Jobs: jobs,
						OnRun: func(name string, i, total int) {
							log.Info().Str("run", name).Int("of", total).Int("index", i+1).Msg("experiment run")
						}})
				}
				if err != nil {
					return err
				}
				out := c.String("out")
				curves := strings.TrimSuffix(out, filepath.Ext(out)) + "_curves"
				var stores, labels []string
				for _, spec := range experiment.PaperSpecs {
					if runs := tab.Runs[spec.Name]; len(runs) > 0 {
						stores = append(stores, filepath.Join(cfg.Run.Dir, runs[0], "store.db"))
						labels = append(labels, spec.Name)
					}
				}
				html, err := report.Compare(stores, labels, curves)
				if err != nil {
					return err
				}
				command := strings.Join(os.Args, " ")
				if c.Bool("collect") {
					command = "make paper (table rebuilt from its runs with: " + command + ")"
				}
				md, err := paperMarkdown(tab, cfg.Run.Dir, command, out, html)
				if err != nil {
					return err
				}
				if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
					return err
				}
				fmt.Print(tab.Markdown())
				fmt.Printf("\nwall time %s; written to %s (curves: %s)\n", tab.Wall.Round(time.Second), out, html)
				return nil
			},
		}},
	}
}

// collectKeys are the config keys --collect reads: where the runs are,
// and how to log.
var collectKeys = []string{"run.dir", "logging.level", "logging.format"}

// collectOnly refuses, with --collect, every config key it does not read:
// a key's flag given (even at its default), or a key that --config or
// --set moved from its default. Each run's config is in its store; these
// would only be written into the results' command line.
func collectOnly(c *cli.Context, cfg config.Config) error {
	var unused []string
	for _, d := range config.Docs() {
		if flag := config.FlagName(d.Path); !slices.Contains(collectKeys, d.Path) && c.IsSet(flag) {
			unused = append(unused, "--"+flag)
		}
	}
	for _, k := range cfg.Diff(config.Default()) {
		if !slices.Contains(collectKeys, k) && !slices.Contains(unused, "--"+config.FlagName(k)) {
			unused = append(unused, k)
		}
	}
	if len(unused) > 0 {
		return fmt.Errorf("%s with --collect: --collect trains nothing and reads each run's config from its store, "+
			"so these would change nothing but the command line written into the results; drop them", strings.Join(unused, ", "))
	}
	return nil
}

// seedList parses a comma-separated list of seeds given as flag, each
// given once: a repeated seed would count one run as two seeds, and a
// repeated world one seed's questions as another's.
func seedList(flag, list string) ([]int, error) {
	var seeds []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a number", flag, s)
		}
		if slices.Contains(seeds, n) {
			return nil, fmt.Errorf("%s: %d is given twice: each entry must differ (a repeat would count the same runs or questions as independent twice)", flag, n)
		}
		seeds = append(seeds, n)
	}
	return seeds, nil
}

// worldSeeds parses --world-seeds into a map from each of seeds to its
// world's seed (nil when the flag is empty). It wants one world per seed,
// and the synthetic world (only it has a seed).
func worldSeeds(list string, seeds []int, source string) (map[int]int, error) {
	if list == "" {
		return nil, nil
	}
	if source != "synthetic" {
		return nil, fmt.Errorf("--world-seeds with data.source %s: only the synthetic world has a seed", source)
	}
	ws, err := seedList("--world-seeds", list)
	if err != nil {
		return nil, err
	}
	if len(ws) != len(seeds) {
		return nil, fmt.Errorf("--world-seeds has %d entries for %d --seeds: give one world per seed", len(ws), len(seeds))
	}
	worlds := map[int]int{}
	for i, s := range seeds {
		worlds[s] = ws[i]
	}
	return worlds, nil
}

// warmStarts says what each sft.warm_start teaches, for results.md.
var warmStarts = map[string]string{
	"general": "reading, and single searches of 1-hop questions",
	"calls":   "reading, single searches of 1-hop questions, a confirming search, and a multi-hop question's first search; no chain",
	"follow":  "reading, single searches of 1-hop questions, a second search whose result holds the answer, and a multi-hop question's first search; no chain",
	"expert":  "the scripted multi-hop expert, one search per hop",
}

// paperMarkdown is docs/results.md: the table with its intervals, how it
// was made, the curves, and the paper's claims, each tested with a paired
// bootstrap and stated as holding, failing or undecided.
func paperMarkdown(t *experiment.Table, runsDir, command, out, html string) (string, error) {
	claims, err := t.Claims()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# Results: the Agent-R1 comparison at CPU scale\n\n")
	b.WriteString("Generated by `trainer experiment paper` (`make paper`); do not edit by hand, rerun instead. " +
		"The protocol, fixed before the runs: [experiments.md](experiments.md#protocol-of-the-comparisons-second-version-written-before-its-runs).\n\n")
	fmt.Fprintf(&b, "- command: `%s`\n- seeds: %v (the core rows; the others on those of them they list under Seeds)\n- wall time of the runs: %s on this machine (%d cores; experiments.md says whether it was shared)\n",
		command, t.Seeds, t.Wall.Round(time.Second), runtime.NumCPU())
	b.WriteString("- task: the synthetic multi-hop world, exact match, greedy decoding; Avg EM and the hop columns are over " +
		"the held-out test questions, OOD EM over the out-of-domain questions (relation compositions no training question uses)\n")
	if t.Nested[results.SplitInDomain] {
		b.WriteString("- each seed has its own world (--world-seeds), so its own test and out-of-domain questions\n")
	}
	fmt.Fprintf(&b, "- every row of a seed starts from that seed's one warm start (sft.warm_start %s: %s)\n", t.WarmStart, warmStarts[t.WarmStart])
	if t.Nested[results.SplitInDomain] {
		b.WriteString("- Avg EM and OOD EM: mean of the seed means [95% interval: ± 1.96 SE, SE² = var(seed means)/S + Σ var(seed s's outcomes)/Q_s / S²]; hop columns: means\n")
	} else {
		b.WriteString("- Avg EM and OOD EM: mean over seeds and questions [95% interval: ± 1.96 SE, SE² = var(seed means)/S + var(question means)/Q]; hop columns: means\n")
	}
	fmt.Fprintf(&b, "- runs: `%s/paper-*` (each has store.db, report/, final/)\n\n", runsDir)
	b.WriteString(t.Markdown())
	rel, err := filepath.Rel(filepath.Dir(out), html)
	if err != nil {
		rel = html
	}
	fmt.Fprintf(&b, "\nTraining curves of the first seed, overlaid: [%s](%s)\n\n", filepath.Base(html), rel)
	dir := filepath.Dir(rel)
	for _, k := range []string{metric.Eval + metric.EM, metric.EvalOOD + metric.EM, metric.RewardMean, metric.TurnsMean, metric.Entropy} {
		file := report.CompareFile(k)
		fmt.Fprintf(&b, "![%s](%s/%s)\n", strings.TrimSuffix(strings.TrimPrefix(file, "compare_"), ".png"), dir, file)
	}
	b.WriteString("\n## Claims, each with a paired test\n\n")
	resampling := "resamples of seeds and questions"
	if t.Nested[results.SplitInDomain] {
		resampling = "resamples of seeds, then of each drawn seed's own questions"
	}
	fmt.Fprintf(&b, "Each claim compares two rows on the same questions and seeds: the mean over seeds and questions of A − c·B "+
		"(c = 1, or %.1f for the ratio claims), with a 95%% paired-bootstrap interval (%d %s). "+
		"It **holds** when the interval is above 0, **fails** when it is below 0, and is **undecided** otherwise. "+
		"No correction for the number of claims.\n\n", experiment.RLOverRAG, experiment.BootstrapResamples, resampling)
	for _, c := range claims {
		fmt.Fprintf(&b, "- %s\n", c.Markdown())
	}
	return b.String(), nil
}
