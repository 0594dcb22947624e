package main

import (
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
