package all

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs/tools/httptool"
	"github.com/agentrl/agentrl/envs/tools/search"
)

func TestNames(t *testing.T) {
	if got := strings.Join(Names(), ","); got != "calculator,code,lookup,search" {
		t.Errorf("Names = %s", got)
	}
}

// Built-in and HTTP tools come out in order; every tool, whatever its
// source, is checked for a clashing name.
func TestBuild(t *testing.T) {
	ping := httptool.Config{Name: "ping", URL: "http://127.0.0.1:1/"}
	ts, err := Build(context.Background(), Config{Enabled: []string{"calculator"}, HTTP: []httptool.Config{ping}})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	if len(ts.Tools) != 2 || ts.Tools[0].Name() != "calculator" || ts.Tools[1].Name() != "ping" {
		t.Errorf("tools %v, want calculator then ping", ts.Tools)
	}
	clash := httptool.Config{Name: "calculator", URL: "http://127.0.0.1:1/"}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Enabled: []string{"sarch"}}, `unknown tool "sarch" (known: calculator, code, lookup, search)`},
		{Config{Enabled: []string{"calculator", "calculator"}}, `tool "calculator" listed twice`},
		{Config{Enabled: []string{"search"}, Search: search.Config{K: 2}}, `build tool "search": search: needs an index`},
		{Config{Enabled: []string{"calculator"}, HTTP: []httptool.Config{clash}}, `tools.http[0]: two tools are called "calculator"`},
		{Config{HTTP: []httptool.Config{{URL: "http://h/"}}}, "tools.http[0]: http tool: needs a name"},
	} {
		if _, err := Build(context.Background(), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Build(%+v) = %v, want %q", c.cfg, err, c.want)
		}
	}
}
