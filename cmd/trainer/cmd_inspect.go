package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/inspect"
	"github.com/agentrl/agentrl/tokenizer"
)

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "browse runs and their trajectories in a local web app (read-only)",
		ArgsUsage: "RUN|STORE [RUN|STORE...]",
		Description: "RUN is a run name under --runs, a run folder, or a folder of runs (every run in it); STORE a store file.\n" +
			"The stores are opened read-only: a live run can be inspected while it trains.\n\nExamples:\n" +
			"  trainer inspect default\n  trainer inspect runs/ --open\n  trainer inspect grpo ppo --port 8080",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "runs", Value: "runs", Usage: "folder of runs"},
			&cli.StringFlag{Name: "host", Value: "127.0.0.1", Usage: "address to listen on (as trainer serve's); beyond loopback anyone who can reach it can read the stores"},
			&cli.IntFlag{Name: "port", Value: 0, Usage: "port to listen on (0: any free port, printed)"},
			&cli.BoolFlag{Name: "open", Usage: "open the app in the default browser"},
			&cli.StringFlag{Name: "tokenizer", Usage: "tokenizer `DIR` to show token text (default: each run's final policy, when it has one; else ids)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return exitErr("inspect: name at least one RUN or STORE")
			}
			var sources []inspect.Source
			for _, a := range c.Args().Slice() {
				paths, err := inspectStores(a, c.String("runs"))
				if err != nil {
					return err
				}
				for _, p := range paths {
					src := inspect.Source{Label: filepath.Base(filepath.Dir(p)), Path: p}
					dir := c.String("tokenizer")
					if dir == "" {
						dir = filepath.Join(filepath.Dir(p), "final")
					}
					if tok, err := tokenizer.Load(dir); err == nil {
						src.Decode = func(id int32) string { return tok.Decode([]int32{id}, false) }
					} else if c.String("tokenizer") != "" {
						return fmt.Errorf("inspect: %w", err)
					}
					sources = append(sources, src)
				}
			}
			srv, err := inspect.New(sources)
			if err != nil {
				return err
			}
			defer srv.Close()
			addr := net.JoinHostPort(c.String("host"), strconv.Itoa(c.Int("port")))
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("inspect: listen on %s (--host, --port): %w", addr, err)
			}
			url := "http://" + ln.Addr().String() + "/"
			if host, _, _ := net.SplitHostPort(ln.Addr().String()); !net.ParseIP(host).IsLoopback() {
				fmt.Fprintf(os.Stderr, "inspect: listening on %s, which is not loopback: anyone who can reach it can read the stores\n", host)
			}
			fmt.Printf("inspect: %d run(s) at %s (Ctrl-C to stop)\n", len(sources), url)
			if c.Bool("open") {
				openBrowser(url)
			}
			if srv.Host = c.String("host"); srv.Host == "" {
				srv.Host = "0.0.0.0" // an empty host listens on every interface
			}
			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				hs.Shutdown(context.Background())
			}()
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("inspect: %w", err)
			}
			return nil
		},
	}
}

// inspectStores resolves an argument of inspect to store files: a store
// file, a run folder (its store.db), a folder of run folders (each one's),
// or a run name under runs.
func inspectStores(arg, runs string) ([]string, error) {
	st, err := os.Stat(arg)
	switch {
	case err == nil && !st.IsDir():
		return []string{arg}, nil
	case err == nil:
		if p := filepath.Join(arg, "store.db"); exists(p) {
			return []string{p}, nil
		}
		found, _ := filepath.Glob(filepath.Join(arg, "*", "store.db"))
		if len(found) > 0 {
			return found, nil
		}
		return nil, fmt.Errorf("inspect: %s holds no store.db, nor run folders with one", arg)
	}
	if p := filepath.Join(runs, arg, "store.db"); exists(p) {
		return []string{p}, nil
	}
	return nil, fmt.Errorf("inspect: run %s: no store at %s, and no file or folder %s", arg, filepath.Join(runs, arg, "store.db"), arg)
}

// openBrowser asks the desktop to open url, best effort: the URL is
// printed anyway.
func openBrowser(url string) {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	if err := exec.Command(name, url).Start(); err != nil {
		fmt.Fprintf(os.Stderr, "inspect: could not open a browser (%v): open %s yourself\n", err, url)
	}
}
