// Command trainer is agentrl's command line: train tool-using agents with
// end-to-end RL, evaluate them, build search indexes, inspect stored
// rollouts, write reports and benchmark the machine.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/agentrl/agentrl/torch"
)

// libtorch keeps per-thread state: all torch work runs on the main
// goroutine, pinned to the main OS thread.
func init() { runtime.LockOSThread() }

func main() {
	if err := torch.PassiveOpenMP(); err != nil {
		fmt.Fprintln(os.Stderr, "trainer: setting OMP_WAIT_POLICY:", err)
	}
	app := &cli.App{
		Name:  "trainer",
		Usage: "end-to-end RL for tool-using LLM agents (Go on libtorch)",
		Description: "Run `trainer train` with no arguments for the built-in CPU demo job: a synthetic multi-hop\n" +
			"world, a tiny model, a supervised warm start, GRPO, evaluation against baselines and a report.",
		Commands:             commands(),
		EnableBashCompletion: true,
		Version:              buildInfo(),
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "trainer:", err)
		var ec cli.ExitCoder
		if errors.As(err, &ec) {
			os.Exit(ec.ExitCode())
		}
		os.Exit(1)
	}
}

// commands are trainer's subcommands.
func commands() []*cli.Command {
	return refuseRenamed(flagsOnly([]*cli.Command{
		trainCommand(), sftCommand(), evalCommand(), indexCommand(), searchCommand(),
		rolloutsCommand(), reportCommand(), benchCommand(), configCommand(), chatCommand(), serveCommand(),
		experimentCommand(), inspectCommand(), mergeCommand(),
	}))
}

// flagsOnly makes every command that names no arguments (no ArgsUsage)
// refuse them: the flag parser stops at the first argument, so the flags
// after a stray one would otherwise be dropped without a word. A command
// that reads stores says that a store is named with --store.
func flagsOnly(cmds []*cli.Command) []*cli.Command {
	for _, cmd := range cmds {
		flagsOnly(cmd.Subcommands)
		if cmd.Action == nil || cmd.ArgsUsage != "" {
			continue
		}
		action := cmd.Action
		takesStore := slices.ContainsFunc(cmd.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), flagStore) })
		cmd.Action = func(c *cli.Context) error {
			if c.NArg() > 0 {
				arg := c.Args().First()
				if takesStore {
					return fmt.Errorf("%s: unexpected argument %q (a store is named with --%s %s; flags after it were not read)", c.Command.FullName(), arg, flagStore, arg)
				}
				return fmt.Errorf("%s: unexpected argument %q (it takes flags only; flags after it were not read)", c.Command.FullName(), arg)
			}
			return action(c)
		}
	}
	return cmds
}

// signalContext returns a context and a channel closed on the first
// SIGINT/SIGTERM: a run stops after the current iteration (or, in the warm
// start, the current step). A second signal stops the process at once,
// whatever it is doing, with exit status 130: nothing is lost, as the store
// commits whole iterations and checkpoints are renamed into place whole.
func signalContext() (context.Context, <-chan struct{}, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan struct{})
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		if _, ok := <-sig; !ok {
			return
		}
		fmt.Fprintln(os.Stderr, "\ninterrupt: finishing the current iteration, then checkpointing (Ctrl-C again to stop at once)")
		close(first)
		if _, ok := <-sig; !ok {
			return
		}
		fmt.Fprintln(os.Stderr, "\ninterrupt: stopping now; continue from the last checkpoint with --resume")
		os.Exit(130)
	}()
	return ctx, first, func() { signal.Stop(sig); cancel() }
}

// gitRev is the revision of the source tree the binary runs from, when it
// is a git checkout ("" otherwise).
func gitRev() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// buildInfo names the build flavour and the libtorch versions (compiled
// against, loaded), for --version.
func buildInfo() string {
	compiled, loaded := torch.Version()
	return fmt.Sprintf("%s build, libtorch %s (loaded %s)", torch.BuildKind, compiled, loaded)
}
