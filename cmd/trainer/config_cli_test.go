package main

import (
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// yamlLeaves collects the dotted paths of the scalar and list values of a
// YAML mapping: the keys of a config file.
func yamlLeaves(n *yaml.Node, prefix string, out *[]string) {
	if n.Kind == yaml.DocumentNode {
		yamlLeaves(n.Content[0], prefix, out)
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		path := n.Content[i].Value
		if prefix != "" {
			path = prefix + "." + path
		}
		if v := n.Content[i+1]; v.Kind == yaml.MappingNode {
			yamlLeaves(v, path, out)
		} else {
			*out = append(*out, path)
		}
	}
}

func TestConfigPrintListsEveryKey(t *testing.T) {
	t.Parallel() // independent of the shared run
	// The keys of the full default file (config print --yaml) are the keys
	// there are; config print, the Markdown table and train's flags must
	// each show all of them.
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(ok(t, "config", "print", "--yaml").stdout), &doc); err != nil {
		t.Fatalf("config print --yaml is not YAML: %v", err)
	}
	var keys []string
	yamlLeaves(&doc, "", &keys)
	sort.Strings(keys)
	for _, k := range []string{"run.iterations", "algorithm.clip_high", "algorithm.loss_mask", "model.tiny.kv_heads",
		"data.synthetic.max_hops", "tools.enabled", "eval.max_eval"} {
		if i := sort.SearchStrings(keys, k); i == len(keys) || keys[i] != k {
			t.Errorf("default YAML lacks key %s", k)
		}
	}

	// The keys of the entries of a list of mappings (tools.mcp[].name)
	// are documented after the list's key.
	var printed, entryKeys []string
	for _, l := range lines(ok(t, "config", "print").stdout) {
		k := strings.Fields(l)[0]
		if list, _, isEntry := strings.Cut(k, "[]."); isEntry {
			if i := sort.SearchStrings(keys, list); i == len(keys) || keys[i] != list {
				t.Errorf("config print documents %s, but there is no list %s", k, list)
			}
			entryKeys = append(entryKeys, k)
			continue
		}
		printed = append(printed, k)
	}
	sort.Strings(printed)
	if strings.Join(printed, " ") != strings.Join(keys, " ") {
		t.Errorf("config print lists\n%v\nwant the keys of the default file\n%v", printed, keys)
	}
	if len(entryKeys) == 0 {
		t.Errorf("config print documents no keys of tools.mcp or tools.http entries")
	}

	md := lines(ok(t, "config", "print", "--markdown").stdout)
	if len(md) < 2 || md[0] != "| key | type | default | description |" || md[1] != "|---|---|---|---|" {
		t.Fatalf("markdown table header:\n%s", strings.Join(md[:min(2, len(md))], "\n"))
	}
	if len(md)-2 != len(keys)+len(entryKeys) {
		t.Errorf("markdown table has %d rows, want one per key (%d) and entry key (%d)", len(md)-2, len(keys), len(entryKeys))
	}
	for _, k := range append(keys, entryKeys...) {
		if !strings.Contains(strings.Join(md, "\n"), "| `"+k+"` |") {
			t.Errorf("markdown table lacks a row for %s", k)
		}
	}

	help := ok(t, "train", "--help").stdout
	// The keys that locate things are named as every subcommand names
	// them; the rest by the rule.
	locating := map[string]string{"run.name": "--run", "model.path": "--model", "run.resume": "--resume"}
	for _, k := range keys {
		flag := "--" + strings.NewReplacer(".", "-", "_", "-").Replace(k)
		if f, ok := locating[k]; ok {
			flag = f
		}
		if !strings.Contains(help, flag+" ") && !strings.Contains(help, flag+",") {
			t.Errorf("train --help lacks the flag %s of key %s", flag, k)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	t.Parallel() // independent of the shared run
	good := writeFile(t, "good.yaml", "run:\n  name: small\n  iterations: 3\nalgorithm:\n  clip_high: 0.3\n")
	r := ok(t, "config", "check", good)
	if !strings.Contains(r.stdout, "# "+good+": ok") {
		t.Errorf("no ok line:\n%s", r)
	}
	// The effective config echoes the file's values over the defaults.
	var got struct {
		Run struct {
			Name       string
			Iterations int
			Seed       int
		}
		Algorithm struct {
			ClipHigh float64 `yaml:"clip_high"`
		}
	}
	if err := yaml.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("effective config is not YAML: %v\n%s", err, r)
	}
	if got.Run.Name != "small" || got.Run.Iterations != 3 || got.Algorithm.ClipHigh != 0.3 || got.Run.Seed != 1 {
		t.Errorf("effective config %+v, want name small, 3 iterations, clip_high 0.3 and the default seed 1", got)
	}

	cases := []struct {
		name, yaml string
		want       []string
	}{
		// clip_hihg sits on line 5; the message names its dotted path and
		// suggests the key meant.
		{"unknown key", "run:\n  name: x\n  iterations: 3\nalgorithm:\n  clip_hihg: 0.3\n",
			[]string{"line 5", "algorithm.clip_hihg", "unknown key", "algorithm.clip_high"}},
		{"unknown section", "run:\n  name: x\nalgorithmz:\n  clip_high: 0.3\n",
			[]string{"line 3", "algorithmz", "unknown key"}},
		{"type error", "run:\n  iterations: lots\n", []string{"line 2", "run.iterations", "integer", `"lots"`}},
		{"bad enum", "algorithm:\n  estimator: ppoo\n", []string{"algorithm.estimator", `"ppoo"`, "grpo"}},
		{"out of range", "run:\n  iterations: 0\n", []string{"run.iterations", "at least 1"}},
		{"malformed YAML", "run:\n  name: [x\n", []string{"yaml:"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, "bad.yaml", c.yaml)
			fails(t, append([]string{p}, c.want...), "config", "check", p)
		})
	}
	fails(t, []string{"give one config FILE"}, "config", "check")
	fails(t, []string{"/nonexistent.yaml", "no such file"}, "config", "check", "/nonexistent.yaml")
}

func TestBadCommandLines(t *testing.T) {
	t.Parallel() // independent of the shared run
	// Each is refused before any work starts, with a message naming what
	// is wrong.
	fails(t, []string{"no-such-flag"}, "train", "--no-such-flag")
	fails(t, []string{"iterations", `"abc"`}, "train", "--iterations", "abc")
	fails(t, []string{"/nonexistent.yaml"}, "train", "--config", "/nonexistent.yaml")
	bad := writeFile(t, "broken.yaml", "run:\n  name: [x\n")
	fails(t, []string{bad, "yaml:"}, "train", "--config", bad)
	unknown := writeFile(t, "unknown.yaml", "rollout:\n  slotz: 4\n")
	fails(t, []string{unknown, "line 2", "rollout.slotz", "rollout.slots"}, "train", "--dry-run", "--config", unknown)
	fails(t, []string{"--set", "algorithm.clip_hihg", "algorithm.clip_high"}, "train", "--set", "algorithm.clip_hihg=0.3")
	fails(t, []string{"--set", "run.iterations", `"lots"`}, "train", "--set", "run.iterations=lots")
	fails(t, []string{"--set", "key=value"}, "train", "--set", "nonsense")
	// Validation reports every problem at once.
	fails(t, []string{"run.iterations", "algorithm.estimator", `"ppoo"`}, "train", "--iterations", "0", "--estimator", "ppoo")
	fails(t, []string{"--seeds", `"x"`}, "experiment", "paper", "--seeds", "1,x")
	fails(t, []string{"no-such-command"}, "no-such-command")
}

func TestRunsWithoutOMPWaitPolicy(t *testing.T) {
	t.Parallel() // independent of the shared run
	// The other tests set OMP_WAIT_POLICY; a user's shell usually does not,
	// and the binary then sets it and re-executes itself: arguments and
	// output must survive that.
	good := writeFile(t, "good.yaml", "run:\n  iterations: 3\n")
	cmd := exec.Command(binPath, "config", "check", good)
	cmd.Dir = workDir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OMP_WAIT_POLICY=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "iterations: 3") || !strings.Contains(string(out), "# "+good+": ok") {
		t.Errorf("config check %s without OMP_WAIT_POLICY: %v\n%s", good, err, out)
	}
}
