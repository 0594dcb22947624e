package config

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// runFlags parses args with Flags() as a cli app would and returns
// Default() with ApplyFlags applied.
func runFlags(t *testing.T, args ...string) (Config, error) {
	t.Helper()
	cfg := Default()
	var applyErr error
	app := &cli.App{
		Name:  "trainer",
		Flags: Flags(),
		Action: func(c *cli.Context) error {
			applyErr = ApplyFlags(c, &cfg)
			return nil
		},
	}
	if err := app.Run(append([]string{"trainer"}, args...)); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return cfg, applyErr
}

func TestFlagName(t *testing.T) {
	for path, want := range map[string]string{
		"algorithm.clip_high": "algorithm-clip-high",
		"run.dir":             "run-dir",
		"run.name":            "run", // the locating keys, named as every subcommand names them
		"run.resume":          "resume",
		"model.path":          "model",
	} {
		if got := FlagName(path); got != want {
			t.Errorf("FlagName(%s) = %q, want %q", path, got, want)
		}
	}
}

// TestFlagsCoverEveryKey gives every key's flag a value different from
// its default, one run per key, and checks the key took it.
func TestFlagsCoverEveryKey(t *testing.T) {
	def := Default()
	names := map[string]bool{}
	for _, f := range Flags() {
		for _, n := range f.Names() {
			if names[n] {
				t.Errorf("flag name %q used twice", n)
			}
			names[n] = true
		}
	}
	for _, k := range leaves(reflect.ValueOf(&def).Elem(), "") {
		name := FlagName(k.path)
		if !names[name] {
			t.Errorf("key %s has no flag --%s", k.path, name)
			continue
		}
		var arg string
		var want any
		switch v := k.value.Interface().(type) {
		case bool:
			arg, want = fmt.Sprintf("--%s=%v", name, !v), !v
		case int:
			arg, want = "--"+name+"=123", 123
		case float64:
			arg, want = "--"+name+"=0.625", 0.625
		case time.Duration:
			arg, want = "--"+name+"=7s", 7*time.Second
		case []string:
			arg, want = "--"+name+"=p,q", []string{"p", "q"}
		case string:
			arg, want = "--"+name+"=zz", "zz"
		case []MCPServer:
			arg, want = "--"+name+"=[{name: s, url: 'http://h/mcp'}]", []MCPServer{mcpEntry("s", "http://h/mcp")}
		case []HTTPTool:
			arg, want = "--"+name+"=[{name: t, url: 'http://h/t', retries: 2}]", []HTTPTool{{Name: "t", URL: "http://h/t", Headers: []string{}, Retries: 2}}
		}
		got, err := runFlags(t, arg)
		if err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		k2, _ := lookup(reflect.ValueOf(&got).Elem(), k.path)
		if !reflect.DeepEqual(k2.value.Interface(), want) {
			t.Errorf("%s: %s = %#v, want %#v", arg, k.path, k2.value.Interface(), want)
		}
		// nothing else moved
		k2.value.Set(k.value)
		if !equal(got, def) {
			t.Errorf("%s changed other keys", arg)
		}
	}
}

// TestFlagPrecedence: defaults < --config file < key flags < --set.
func TestFlagPrecedence(t *testing.T) {
	file := writeFile(t, "run:\n  seed: 3\n  iterations: 5\nalgorithm:\n  clip_high: 0.3\n")
	cfg, err := runFlags(t,
		"--set", "algorithm.clip_high=0.32",
		"--algorithm-clip-high", "0.31",
		"--iterations", "6",
		"--config", file,
		"--set", "data.train=[a.jsonl, b.jsonl]",
		"--set", "algorithm.clip_high=0.33",
	)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Run.Seed != 3 { // file over default 1
		t.Errorf("seed %d, want 3 from the file", cfg.Run.Seed)
	}
	if cfg.Run.Iterations != 6 { // alias flag over file 5
		t.Errorf("iterations %d, want 6 from --iterations", cfg.Run.Iterations)
	}
	if cfg.Algorithm.ClipHigh != 0.33 { // last --set over flag 0.31 and file 0.3
		t.Errorf("clip_high %v, want 0.33 from the last --set", cfg.Algorithm.ClipHigh)
	}
	if !slices.Equal(cfg.Data.Train, []string{"a.jsonl", "b.jsonl"}) { // --set keeps the comma inside [ ]
		t.Errorf("train %q", cfg.Data.Train)
	}
	if cfg.Run.Name != "default" { // untouched
		t.Errorf("name %q", cfg.Run.Name)
	}
}

func TestFlagErrors(t *testing.T) {
	_, err := runFlags(t, "--set", "algorithm.clip_hgh=0.3")
	wantErr(t, err, "--set", "algorithm.clip_hgh", "did you mean algorithm.clip_high")
	_, err = runFlags(t, "--config", writeFile(t, "run:\n  sed: 3\n"))
	wantErr(t, err, "line 2", "run.sed")
	_, err = runFlags(t, "--config", "/nonexistent.yaml")
	wantErr(t, err, "/nonexistent.yaml")
}
