package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/report"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

func chatCommand() *cli.Command {
	return &cli.Command{
		Name:  "chat",
		Usage: "talk to a policy in the terminal through the same ToolEnv the agent trains in",
		Description: "Each line you type is a question; the agent's turns, tool calls and tool responses are shown as\n" +
			"they happen.\n\nExamples:\n  trainer chat --run default  # run 'default''s final policy, shown what it was trained on\n" +
			"  trainer chat --model runs/default/final --index runs/default/index.db\n" +
			"  trainer chat --model Qwen2.5-3B-Instruct --adapter runs/lora/final   # a base plus a PEFT LoRA adapter\n" +
			"  trainer chat --model Qwen2.5-3B-Instruct --tools search,calculator --index wiki.db --temperature 0.7\n" +
			"  trainer chat --model DIR --config tools.yaml   # the tools.* and env.* of a trainer config: MCP servers, HTTP tools, code\n\n" +
			"With --run RUN the run's saved config (<run-dir>/RUN/config.yaml) sets the tools (tools.*), whether their\n" +
			"schemas are shown (tools.schemas), the episode limits and rewards (env.*), and the policy is the run's final\n" +
			"checkpoint; every flag given still overrides it.",
		Flags: []cli.Flag{
			runFlag("", "chat with the final policy of run `NAME` under the run's saved config (its tools, schemas, env limits, rewards)"),
			runDirFlag(),
			modelFlag("Hugging Face model `DIR` (with its tokenizer); with --run, default: the run's final policy"),
			adapterFlag(adapterDecoded),
			&cli.StringSliceFlag{Name: "tools", Value: cli.NewStringSlice("search"), Usage: "registered tools the agent may call (with --run or --config, default: its tools.enabled)"},
			&cli.StringFlag{Name: "config", Usage: "trainer config `FILE` whose tools and env sections are used: tools.enabled, tools.mcp servers, tools.http tools, tools.code limits, env limits and rewards", TakesFile: true},
			&cli.StringFlag{Name: "index", Usage: "search index `DB` (for search and lookup; with --run or --config, default: its tools.search.index, or the run's index.db)", TakesFile: true},
			&cli.IntFlag{Name: "k", Value: 2, Usage: "passages per search (with --run or --config, default: its tools.search.k)"},
			&cli.Float64Flag{Name: "temperature", Value: 0, Usage: "sampling temperature (0 = greedy)"},
			&cli.IntFlag{Name: "max-turns", Usage: "assistant turns per question (default: env.max_turns of the config, " + fmt.Sprint(config.Default().Env.MaxTurns) + " built in)"},
			&cli.IntFlag{Name: "max-tokens", Usage: "token budget per question (default: env.max_tokens of the config, " + fmt.Sprint(config.Default().Env.MaxTokens) + " built in)"},
			&cli.IntFlag{Name: "max-turn-tokens", Usage: "tokens per turn (default: env.max_turn_tokens of the config, " + fmt.Sprint(config.Default().Env.MaxTurnTokens) + " built in)"},
			&cli.BoolFlag{Name: "hide-schemas", Usage: "leave the tools' JSON schemas out of the system prompt (as the synthetic world's tiny models are trained; with --run, default: as the run was trained)"},
			&cli.StringFlag{Name: "device", Value: "cpu", Usage: "cpu or cuda:N"},
			&cli.IntFlag{Name: "threads", Value: 0, Usage: "CPU threads (0 = all)"},
		},
		Action: func(c *cli.Context) error { return chat(c, os.Stdin, os.Stdout) },
	}
}

func chat(c *cli.Context, in io.Reader, out io.Writer) error {
	dev, err := torch.ParseDevice(c.String("device"))
	if err != nil {
		return err
	}
	if n := c.Int("threads"); n > 0 {
		if err := torch.SetThreads(n); err != nil {
			return err
		}
	}
	cc, err := chatConfigOf(c)
	if err != nil {
		return err
	}
	dir := cc.model
	a, err := agent.New(context.Background(), agent.Spec{Config: cc.cfg, Index: cc.index, TokenizerDir: dir, ShowSchemas: cc.showSchemas})
	if err != nil {
		return err
	}
	defer a.Close()
	m, free, err := loadPolicy(dir, cc.adapter, torch.Float32, dev)
	if err != nil {
		return err
	}
	defer free()
	ecfg := a.Env
	e, err := agent.NewSampler(m, torch.Float32, agent.Mode{}, 1, ecfg.MaxTokens+1)
	if err != nil {
		return err
	}
	defer e.Free()
	var names []string
	for _, t := range a.Tools {
		names = append(names, t.Name())
	}
	color := false
	if f, ok := out.(*os.File); ok {
		color = isatty.IsTerminal(f.Fd())
	}
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
	sc := bufio.NewScanner(in)
	label := dir
	if cc.adapter != "" {
		label = dir + " + adapter " + cc.adapter
	}
	fmt.Fprintf(out, "agentrl chat: %s with tools %s. Ask a question (Ctrl-D to quit).\n", label, strings.Join(names, ", "))
	shown := "shown"
	if !cc.showSchemas {
		shown = "hidden"
	}
	fmt.Fprintf(out, "limits: %d turns, %d tokens, %d per turn; tool schemas %s\n", ecfg.MaxTurns, ecfg.MaxTokens, ecfg.MaxTurnTokens, shown)
	for n := 0; ; n++ {
		fmt.Fprint(out, paint("1", "you> "))
		if !sc.Scan() {
			fmt.Fprintln(out)
			return sc.Err()
		}
		q := strings.TrimSpace(sc.Text())
		if q == "" {
			continue
		}
		task := envs.Task{ID: fmt.Sprintf("chat-%d", n), Question: q}
		factory := func(t envs.Task) (rollout.Setup, error) {
			s, err := a.Episode(t)
			if err != nil {
				return s, err
			}
			s.Env = &showingEnv{env: s.Env, out: out, paint: paint}
			return s, nil
		}
		trs, _, err := rollout.Run(context.Background(), e.Decoder(), a.Chat, factory,
			[]rollout.Request{{Task: task, Samples: 1}}, rollout.Options{
				Sampling: decoding.Sampling{Temperature: c.Float64("temperature")}, MaxTurnTokens: ecfg.MaxTurnTokens,
				MaxTotalTokens: ecfg.MaxTokens, Seed: uint64(time.Now().UnixNano()), Iteration: n, Split: trajectory.Eval})
		if err != nil {
			return err
		}
		t := trs[0]
		switch {
		case t.Stop == trajectory.StopError:
			fmt.Fprintln(out, paint("31", "error: "+t.Error))
		case t.Answer != "":
			fmt.Fprintln(out, paint("32", "answer: "+t.Answer))
		default:
			fmt.Fprintln(out, paint("33", fmt.Sprintf("(no answer: %s)", t.Stop)))
		}
	}
}

// chatSetup is what a chat runs: the policy's folder, the configuration
// whose tools and env sections it uses, the search index and whether the
// system prompt lists the tools' schemas.
type chatSetup struct {
	model       string
	adapter     string // a PEFT adapter folder over model ("" = none)
	cfg         config.Config
	index       string
	showSchemas bool
}

// chatConfigOf reads chat's flags over their base: the saved config of
// the run named by --run (and its final policy), the trainer config of
// --config, or the built-in defaults.
func chatConfigOf(c *cli.Context) (chatSetup, error) {
	cs := chatSetup{model: c.String(flagModel), adapter: c.String(flagAdapter), cfg: config.Default(), showSchemas: true}
	run, runDir := c.String(flagRun), ""
	switch {
	case run != "" && c.IsSet("config"):
		return cs, exitErr("chat: give --run RUN or --config FILE, not both")
	case run != "":
		runDir = filepath.Join(c.String(flagRunDir), run)
		saved, err := config.Load(filepath.Join(runDir, "config.yaml"))
		if err != nil {
			return cs, fmt.Errorf("chat --run %s: %w", run, err)
		}
		cs.cfg, cs.showSchemas = saved, agent.SchemasShown(saved)
		if cs.model == "" {
			if cs.model, cs.adapter, err = runFinal(runDir); err != nil {
				return cs, fmt.Errorf("chat --run %s: %w", run, err)
			}
		}
	case c.IsSet("config"):
		full, err := config.Load(c.String("config"))
		if err != nil {
			return cs, err
		}
		cs.cfg.Tools, cs.cfg.Env = full.Tools, full.Env
		cs.showSchemas = full.Tools.Schemas != "hide"
	}
	if cs.model == "" {
		return cs, exitErr(`chat: give --run RUN or --model DIR (Required flag "model" not set)`)
	}
	base := run != "" || c.IsSet("config")
	tc, ec := &cs.cfg.Tools, &cs.cfg.Env
	if c.IsSet("tools") || !base {
		tc.Enabled = c.StringSlice("tools")
	}
	if c.IsSet("k") || !base {
		tc.Search.K = c.Int("k")
	}
	for flag, v := range map[string]*int{"max-turns": &ec.MaxTurns, "max-tokens": &ec.MaxTokens, "max-turn-tokens": &ec.MaxTurnTokens} {
		if c.IsSet(flag) {
			*v = c.Int(flag)
		}
	}
	if c.Bool("hide-schemas") {
		cs.showSchemas = false
	}
	// The validation train does, of the config as chat uses it.
	if err := cs.cfg.Validate(); err != nil {
		return cs, fmt.Errorf("chat: %w", err)
	}
	cs.index = c.String("index")
	if cs.index == "" {
		cs.index = tc.Search.Index
	}
	if cs.index == "" && runDir != "" {
		if p := filepath.Join(runDir, "index.db"); exists(p) {
			cs.index = p
		}
	}
	return cs, nil
}

// exists reports whether a file is at path.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// showingEnv prints each turn and its tool calls as the episode runs; a
// tool's response is shown with its control characters escaped.
type showingEnv struct {
	env   rollout.Env
	out   io.Writer
	paint func(code, s string) string
}

func (s *showingEnv) Step(ctx context.Context, a envs.Action) (envs.StepResult, error) {
	fmt.Fprintln(s.out, s.paint("36", "assistant: ")+strings.TrimSpace(a.Text))
	r, err := s.env.Step(ctx, a)
	for i, call := range r.Calls {
		if call.ParseError != "" {
			fmt.Fprintln(s.out, s.paint("31", "  tool call error: "+call.ParseError))
			continue
		}
		fmt.Fprintf(s.out, "  %s %s(%s)\n", s.paint("35", "→"), call.Name, call.Args)
		if i < len(r.Responses) {
			fmt.Fprintf(s.out, "  %s %s\n", s.paint("35", "←"), report.Clip(envs.Printable(strings.ReplaceAll(r.Responses[i], "\n", " | ")), 300))
		}
	}
	return r, err
}

func (s *showingEnv) Outcome() (float64, map[string]float64) { return s.env.Outcome() }
