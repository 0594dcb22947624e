package main

import (
	"os"
	"slices"
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
