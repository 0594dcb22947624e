package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// Every subcommand that listens names its address as trainer serve does,
// with --host and --port, and none takes another spelling of it.
func TestListenFlagsAreTheSame(t *testing.T) {
	var walk func(prefix string, cmds []*cli.Command)
	listening := 0
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			name := prefix + c.Name
			var flags []string
			for _, f := range c.Flags {
				flags = append(flags, f.Names()...)
			}
			for _, other := range []string{"addr", "address", "listen", "bind"} {
				if slices.Contains(flags, other) {
					t.Errorf("trainer %s takes --%s: name the address with --host and --port, as trainer serve does", name, other)
				}
			}
			if slices.Contains(flags, "host") != slices.Contains(flags, "port") {
				t.Errorf("trainer %s takes only one of --host and --port", name)
			}
			if slices.Contains(flags, "host") {
				listening++
			}
			walk(name+" ", c.Subcommands)
		}
	}
	walk("", commands())
	if listening < 2 { // serve and inspect
		t.Errorf("%d subcommands take --host and --port, want serve and inspect at least", listening)
	}
}

// A stray argument before flags is refused by name, not read as the end of
// the flags: `trainer train out --iterations 1` used to run the default job
// with every flag after "out" dropped. Every command that names no
// arguments refuses them.
func TestStrayArgumentRefused(t *testing.T) {
	dir := t.TempDir()
	for stray, args := range map[string][]string{
		"out":   {"train", "out", "--iterations", "1", "--run-dir", dir},
		"paper": {"experiment", "paper", "paper", "--seeds", "1", "--run-dir", dir},
		"extra": {"bench", "generate", "extra"},
	} {
		fails(t, []string{"unexpected argument \"" + stray + "\"", "flags after it were not read"}, args...)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("a refused command wrote %v (%v)", entries, err)
	}
}

// The flags that locate things have one spelling in every subcommand:
// --run-dir, --run, --model, --resume, --adapter, --tokenizer, --store.
// The old spellings are hidden refusals, a command that takes a run by
// name takes the folder it is in too, no command takes a store as an
// argument, and --tokenizer means the same everywhere.
func TestLocatingFlagsAreTheSame(t *testing.T) {
	var walk func(prefix string, cmds []*cli.Command)
	seen := map[string]int{}
	tokenizerUsage := map[string]bool{}
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			name := prefix + c.Name
			names := map[string]bool{}
			if strings.Contains(c.ArgsUsage, "STORE") || strings.Contains(c.ArgsUsage, "FOLDER") {
				t.Errorf("trainer %s takes %s as arguments: name a store with --store", name, c.ArgsUsage)
			}
			for _, f := range c.Flags {
				if sf, ok := f.(*cli.StringFlag); ok && sf.Name == flagTokenizer {
					tokenizerUsage[sf.Usage] = true
				}
				for _, n := range f.Names() {
					names[n] = true
					hidden := false
					if vf, ok := f.(cli.VisibleFlag); ok {
						hidden = !vf.IsVisible()
					}
					if slices.Contains([]string{"runs", "of", "name", "run-name", "model-path", "run-resume"}, n) && !hidden {
						t.Errorf("trainer %s shows --%s, an old spelling of a locating flag", name, n)
					}
					if !hidden {
						seen[n]++
					}
				}
			}
			if c.Action != nil && names["run"] && !names["run-dir"] {
				t.Errorf("trainer %s takes --run but not --run-dir", name)
			}
			walk(name+" ", c.Subcommands)
		}
	}
	walk("", commands())
	// --run and --run-dir: the config's commands (train, sft, eval,
	// experiment paper), chat, serve, merge, inspect, report and the four
	// rollouts subcommands; --model: the config's commands, chat, serve,
	// merge, and bench generate and train (the architecture benchmarked);
	// --resume: the config's commands; --adapter: chat, eval, serve and
	// merge; --tokenizer: inspect and rollouts show; --store: inspect,
	// report and the four rollouts subcommands.
	for flag, want := range map[string]int{"run": 13, "run-dir": 13, "model": 9, "resume": 4, "adapter": 4, "tokenizer": 2, "store": 6} {
		if seen[flag] != want {
			t.Errorf("%d subcommands take --%s, want %d", seen[flag], flag, want)
		}
	}
	if len(tokenizerUsage) != 1 {
		t.Errorf("--tokenizer has %d usages, want one: %v", len(tokenizerUsage), tokenizerUsage)
	}
}

// An old spelling of a locating flag is refused with an error naming the
// flag that replaced it, before anything is written.
func TestRenamedFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--run-dir", dir, "--name", "x"}, "--name was renamed: use --run"},
		{[]string{"train", "--run-dir", dir, "--run-name", "x"}, "--run-name was renamed: use --run"},
		{[]string{"train", "--run-dir", dir, "--model-path", "m"}, "--model-path was renamed: use --model"},
		{[]string{"train", "--run-dir", dir, "--run-resume"}, "--run-resume was renamed: use --resume"},
		{[]string{"train", "--run-dir", dir, "--resume", "x", "--iterations", "1"}, "--resume takes no value: name the run with --run (trainer train --run x --resume)"},
		{[]string{"eval", "--run-dir", dir, "--of", "x"}, "--of was renamed: use --run"},
		{[]string{"chat", "--of", "x"}, "--of was renamed: use --run"},
		{[]string{"serve", "--model", dir, "--name", "x"}, "--name was renamed: use --served-model-name"},
		{[]string{"merge", "--of", "x", "--out", filepath.Join(dir, "merged")}, "--of was renamed: use --run"},
		{[]string{"rollouts", "list", "--runs", dir}, "--runs was renamed: use --run-dir"},
		{[]string{"report", "--runs", dir, "--run", "x"}, "--runs was renamed: use --run-dir"},
		{[]string{"inspect", "--runs", dir, "--run", "x"}, "--runs was renamed: use --run-dir"},
	} {
		fails(t, []string{c.want}, c.args...)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("a refused command wrote %v (%v)", entries, err)
	}
}
