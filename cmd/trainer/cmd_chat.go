package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/engine"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trainer/traj"
)

func chatCommand() *cli.Command {
	return &cli.Command{
		Name:  "chat",
		Usage: "talk to a policy in the terminal through the same ToolEnv the agent trains in",
		Description: "Each line you type is a question; the agent's turns, tool calls and tool responses are shown as\n" +
			"they happen.\n\nExamples:\n  trainer chat --model runs/default/final --index runs/default/index.db\n" +
			"  trainer chat --model Qwen2.5-3B-Instruct --tools search,calculator --index wiki.db --temperature 0.7\n" +
			"  trainer chat --model DIR --config tools.yaml   # the tools.* of a trainer config: MCP servers, HTTP tools, code",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Required: true, Usage: "Hugging Face model `DIR` (with its tokenizer)", TakesFile: true},
			&cli.StringSliceFlag{Name: "tools", Value: cli.NewStringSlice("search"), Usage: "registered tools the agent may call (with --config, default: its tools.enabled)"},
			&cli.StringFlag{Name: "config", Usage: "trainer config `FILE` whose tools section is used: tools.enabled, tools.mcp servers, tools.http tools, tools.code limits", TakesFile: true},
			&cli.StringFlag{Name: "index", Usage: "search index `DB` (for search and lookup; with --config, default: its tools.search.index)", TakesFile: true},
			&cli.IntFlag{Name: "k", Value: 2, Usage: "passages per search (with --config, default: its tools.search.k)"},
			&cli.Float64Flag{Name: "temperature", Value: 0, Usage: "sampling temperature (0 = greedy)"},
			&cli.IntFlag{Name: "max-turns", Value: 6, Usage: "assistant turns per question"},
			&cli.IntFlag{Name: "max-tokens", Value: 2048, Usage: "token budget per question"},
			&cli.IntFlag{Name: "max-turn-tokens", Value: 256, Usage: "tokens per turn"},
			&cli.BoolFlag{Name: "hide-schemas", Usage: "leave the tools' JSON schemas out of the system prompt (as the synthetic world's tiny models are trained)"},
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
	dir := c.String("model")
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return err
	}
	cf, err := tokenizer.NewChatFormat(tok)
	if err != nil {
		return err
	}
	m, err := torch.LoadModel(dir, torch.Float32, dev, false)
	if err != nil {
		return err
	}
	defer m.Free()
	e, err := torch.NewEngine(m, 1, c.Int("max-tokens")+1)
	if err != nil {
		return err
	}
	defer e.Free()
	tcfg := config.Default().Tools
	if c.IsSet("config") {
		full, err := config.Load(c.String("config"))
		if err != nil {
			return err
		}
		tcfg = full.Tools
	}
	if c.IsSet("tools") || !c.IsSet("config") {
		tcfg.Enabled = c.StringSlice("tools")
	}
	if c.IsSet("k") || !c.IsSet("config") {
		tcfg.Search.K = c.Int("k")
	}
	index := c.String("index")
	if index == "" {
		index = tcfg.Search.Index
	}
	ts, err := trainer.BuildTools(context.Background(), tcfg, index)
	if err != nil {
		return err
	}
	defer ts.Close()
	tools := ts.Tools
	var names []string
	for _, t := range tools {
		names = append(names, t.Name())
	}
	schemas, err := envs.Schemas(tools)
	if err != nil {
		return err
	}
	if c.Bool("hide-schemas") {
		schemas = nil
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
	cfg := envs.DefaultEnvConfig()
	cfg.MaxTurns, cfg.MaxTokens = c.Int("max-turns"), c.Int("max-tokens")
	sc := bufio.NewScanner(in)
	fmt.Fprintf(out, "agentrl chat: %s with tools %s. Ask a question (Ctrl-D to quit).\n", dir, strings.Join(names, ", "))
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
			env, err := envs.NewToolEnv(t, tools, cfg)
			if err != nil {
				return rollout.Setup{}, err
			}
			return rollout.Setup{System: trainer.SystemPrompt, User: q, Tools: schemas,
				Env: &showingEnv{env: env, out: out, paint: paint}}, nil
		}
		trs, _, err := rollout.Run(context.Background(), engine.Decoder{Engine: e}, rollout.NewChat(cf), factory,
			[]rollout.Request{{Task: task, Samples: 1}}, rollout.Options{
				Sampling: rollout.Sampling{Temperature: c.Float64("temperature")}, MaxTurnTokens: c.Int("max-turn-tokens"),
				MaxTotalTokens: c.Int("max-tokens"), Seed: uint64(time.Now().UnixNano()), Iteration: n, Split: traj.Eval})
		if err != nil {
			return err
		}
		t := trs[0]
		switch {
		case t.Stop == traj.StopError:
			fmt.Fprintln(out, paint("31", "error: "+t.Error))
		case t.Answer != "":
			fmt.Fprintln(out, paint("32", "answer: "+t.Answer))
		default:
			fmt.Fprintln(out, paint("33", fmt.Sprintf("(no answer: %s)", t.Stop)))
		}
	}
}

// showingEnv prints each turn and its tool calls as the episode runs.
type showingEnv struct {
	env   *envs.ToolEnv
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
			fmt.Fprintf(s.out, "  %s %s\n", s.paint("35", "←"), clip(strings.ReplaceAll(r.Responses[i], "\n", " | "), 300))
		}
	}
	return r, err
}

func (s *showingEnv) Outcome() (float64, map[string]float64) { return s.env.Outcome() }
