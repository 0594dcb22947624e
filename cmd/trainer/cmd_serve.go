package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/agent"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve a policy over the OpenAI Chat Completions API (POST /v1/chat/completions, GET /v1/models)",
		Description: "Requests decode together in the continuous-batching scheduler (--slots at once). Tools are rendered by the\n" +
			"model's chat template and the model's calls (Qwen's <tool_call> blocks, Llama 3's JSON) come back as\n" +
			"tool_calls. The server listens on 127.0.0.1 unless --host says otherwise, and another address needs an\n" +
			"API key that clients must send.\n\n" +
			"Examples:\n  trainer serve --run default                 # run 'default''s final policy on http://127.0.0.1:8000/v1\n" +
			"  trainer serve --model Qwen2.5-3B-Instruct --port 9000 --slots 32\n" +
			"  trainer serve --model Qwen2.5-3B-Instruct --adapter runs/lora/final   # a base plus a PEFT LoRA adapter\n" +
			"  AGENTRL_API_KEY=sk-... trainer serve --model DIR --host 0.0.0.0\n\n" +
			"Then: OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=none any OpenAI client, model name as --served-model-name.",
		Flags: []cli.Flag{
			modelFlag("Hugging Face model `DIR` (with its tokenizer)"),
			adapterFlag(adapterDecoded),
			runFlag("", "serve the final policy of run `NAME` (a LoRA run's: its base with its adapters)"),
			runDirFlag(),
			&cli.StringFlag{Name: "served-model-name", Usage: "the model's name in the API (default: the run's name, or the model folder's)"},
			renamedFlag("name", "served-model-name", false),
			&cli.StringFlag{Name: "host", Value: "127.0.0.1", Usage: "address to listen on; beyond loopback an API key is required"},
			&cli.IntFlag{Name: "port", Value: 8000, Usage: "port to listen on (0: any free port, printed)"},
			&cli.StringFlag{Name: "api-key", EnvVars: []string{"AGENTRL_API_KEY"}, Usage: "bearer key clients must send (required beyond loopback)"},
			&cli.IntFlag{Name: "slots", Value: 16, Usage: "sequences decoded together (KV-cache slots)"},
			&cli.IntFlag{Name: "context", Usage: "tokens per sequence, prompt and completion (default: the model's max positions, at most 4096)"},
			&cli.StringFlag{Name: "device", Value: "cpu", Usage: "cpu or cuda:N"},
			&cli.StringFlag{Name: "dtype", Value: "f32", Usage: "precision to decode in: f32, bf16 or f16"},
			&cli.IntFlag{Name: "threads", Value: 0, Usage: "CPU threads (0 = all)"},
		},
		Action: serve,
	}
}

func serve(c *cli.Context) error {
	dir, adapter, name := c.String(flagModel), c.String(flagAdapter), c.String("served-model-name")
	switch run := c.String(flagRun); {
	case run != "" && (dir != "" || adapter != ""):
		return exitErr("serve: give --run RUN or --model DIR (and --adapter DIR), not both")
	case run != "":
		var err error
		if dir, adapter, err = runFinal(filepath.Join(c.String(flagRunDir), run)); err != nil {
			return fmt.Errorf("serve --run %s: %w", run, err)
		}
		if name == "" {
			name = run
		}
	case dir == "":
		return exitErr("serve: give --run RUN or --model DIR")
	}
	if name == "" && adapter != "" {
		name = filepath.Base(filepath.Clean(adapter))
	}
	if name == "" {
		name = filepath.Base(filepath.Clean(dir))
	}
	host, key := c.String("host"), c.String("api-key")
	if err := gateway.CheckAddress(host, key); err != nil {
		return exitErr("serve: %v", err)
	}
	if c.Int("slots") < 1 {
		return exitErr("serve: --slots %d, want at least 1", c.Int("slots"))
	}
	dev, err := torch.ParseDevice(c.String("device"))
	if err != nil {
		return err
	}
	dtype, err := torch.ParseDType(c.String("dtype"))
	if err != nil {
		return fmt.Errorf("serve --dtype: %w", err)
	}
	if n := c.Int("threads"); n > 0 {
		if err := torch.SetThreads(n); err != nil {
			return err
		}
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return fmt.Errorf("serve: tokenizer of %s: %w", dir, err)
	}
	format, err := tokenizer.NewChatFormat(tok)
	if err != nil {
		return err
	}
	// A plain model decodes from a copy in dtype; a base with adapters is
	// loaded in dtype and decodes from its merged weights.
	ldt := torch.Float32
	if adapter != "" {
		ldt = dtype
	}
	m, free, err := loadPolicy(dir, adapter, ldt, dev)
	if err != nil {
		return err
	}
	defer free()
	if err := agent.CheckVocab(tok, m.Config); err != nil {
		return fmt.Errorf("serve %s: %w", dir, err)
	}
	window := c.Int("context")
	if window == 0 {
		window = min(m.Config.MaxPositions, 4096)
	}
	if window < 2 || window > m.Config.MaxPositions {
		return exitErr("serve: --context %d, want 2..%d (the model's max positions)", window, m.Config.MaxPositions)
	}
	e, err := agent.NewSampler(m, dtype, agent.Mode{}, c.Int("slots"), window)
	if err != nil {
		return err
	}
	defer e.Free()
	if err := e.Sync(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(c.Int("port"))))
	if err != nil {
		return err
	}
	sched := gateway.NewScheduler(e.Decoder(), format.StopIDs())
	h := &gateway.Handler{Scheduler: sched, Format: format, Model: name, APIKey: key, Created: modTime(dir), Host: host}
	// Ctrl-C (or SIGTERM) stops serving: requests in flight end.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(c.App.Writer, "serving %s on http://%s/v1 (%d slots, %d tokens each); Ctrl-C stops\n", name, ln.Addr(), c.Int("slots"), window)
	return gateway.Serve(ctx, sched, h, ln)
}

// modTime is the model folder's modification time, as the model's
// "created" time.
func modTime(dir string) int64 {
	if st, err := os.Stat(filepath.Join(dir, "config.json")); err == nil {
		return st.ModTime().Unix()
	}
	return time.Now().Unix()
}
