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
)

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:  "inspect",
		Usage: "browse runs and their trajectories in a local web app (read-only)",
		Description: "--run NAME is a run under --run-dir; --store PATH a store file, a run folder or a folder of runs (every\n" +
			"run in it). The stores are opened read-only: a live run can be inspected while it trains.\n\nExamples:\n" +
			"  trainer inspect --run default\n  trainer inspect --open --store runs/\n  trainer inspect --run grpo --run ppo --port 8080",
		Flags: []cli.Flag{
			runsFlag("run `NAME` under --run-dir"),
			runDirFlag(),
			storesFlag("trajectory store `PATH`: a store file, a run folder, or a folder of runs (each one's)"),
			&cli.StringFlag{Name: "host", Value: "127.0.0.1", Usage: "address to listen on (as trainer serve's); beyond loopback anyone who can reach it can read the stores"},
			&cli.IntFlag{Name: "port", Value: 0, Usage: "port to listen on (0: any free port, printed)"},
			&cli.BoolFlag{Name: "open", Usage: "open the app in the default browser"},
			tokenizerFlag(),
		},
		Action: func(c *cli.Context) error {
			if len(c.StringSlice(flagStore)) == 0 && len(c.StringSlice(flagRun)) == 0 {
				return exitErr("inspect: name at least one --run NAME or --store PATH")
			}
			var paths []string
			for _, name := range c.StringSlice(flagRun) {
				p, err := namedStore("inspect", c.String(flagRunDir), name)
				if err != nil {
					return err
				}
				paths = append(paths, p)
			}
			for _, a := range c.StringSlice(flagStore) {
				found, err := inspectStores(a)
				if err != nil {
					return err
				}
				paths = append(paths, found...)
			}
			var sources []inspect.Source
			for _, p := range paths {
				src := inspect.Source{Label: filepath.Base(filepath.Dir(p)), Path: p}
				tok, err := runTokenizer(c, p)
				if err != nil {
					return err
				}
				if tok != nil {
					src.Decode = func(id int32) string { return tok.Decode([]int32{id}, false) }
				}
				sources = append(sources, src)
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

// inspectStores resolves inspect's --store to store files: a store file, a
// run folder (its store.db) or a folder of run folders (each one's). A run
// by its name is --run's.
func inspectStores(arg string) ([]string, error) {
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
	return nil, fmt.Errorf("inspect: no file or folder %s (a run under --%s is named with --%s %s)", arg, flagRunDir, flagRun, arg)
}

// namedStore is the store of the run name under runDir, for command cmd:
// an error says when it has none.
func namedStore(cmd, runDir, name string) (string, error) {
	p := filepath.Join(runDir, name, "store.db")
	if !exists(p) {
		return "", fmt.Errorf("%s: run %s: no store at %s", cmd, name, p)
	}
	return p, nil
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
