package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs/tools/all"
)

// outcomeLine is how chat ends an episode: the answer, why there is none,
// or the error.
var outcomeLine = regexp.MustCompile(`(?m)^(answer: |\(no answer: [a-z_]+\)$|error: )`)

func TestChat(t *testing.T) {
	run := trainedRun(t)
	model, index := filepath.Join(run.dir(), "final"), filepath.Join(run.dir(), "index.db")
	r := runCLI(t, "\nWhat is the capital of the nation of Kamo?\n", "chat", "--model", model, "--index", index,
		"--threads", "1", "--max-turns", "2", "--max-turn-tokens", "8")
	if r.code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	if !strings.HasPrefix(r.stdout, "agentrl chat: "+model+" with tools search.") {
		t.Errorf("no greeting naming the model and tools:\n%s", r)
	}
	// The blank line is skipped (a second prompt, no episode); the question
	// gets assistant turns and ends in an answer, no answer or an error
	// line; end of input ends the session after a last prompt.
	ls := lines(r.stdout)
	if n := strings.Count(r.stdout, "you> "); n != 3 {
		t.Errorf("%d prompts, want 3 (blank line, question, end of input):\n%s", n, r)
	}
	turns := 0
	for _, l := range ls {
		for strings.HasPrefix(l, "you> ") {
			l = strings.TrimPrefix(l, "you> ")
		}
		if strings.HasPrefix(l, "assistant: ") {
			turns++
		}
	}
	if turns < 1 || turns > 2 {
		t.Errorf("%d assistant turns, want 1 or 2 (--max-turns 2):\n%s", turns, r)
	}
	if !outcomeLine.MatchString(r.stdout) {
		t.Errorf("the episode does not end with its outcome:\n%s", r)
	}
	if len(ls) == 0 || strings.TrimSpace(ls[len(ls)-1]) != "you>" {
		t.Errorf("the session does not end at the prompt:\n%s", r)
	}
}

func TestChatErrors(t *testing.T) {
	fails(t, []string{`"model"`}, "chat")
	missing := filepath.Join(t.TempDir(), "nomodel")
	fails(t, []string{filepath.Join(missing, "tokenizer.json")}, "chat", "--model", missing)
	run := trainedRun(t)
	model := filepath.Join(run.dir(), "final")
	fails(t, []string{"search", "index"}, "chat", "--model", model)
	noIndex := filepath.Join(t.TempDir(), "none.db")
	fails(t, []string{noIndex}, "chat", "--model", model, "--index", noIndex)
}

// TestChatWithEveryRegisteredTool enables, in one chat, every built-in tool
// of the registry (envs/tools/all): each can be built from the flags and
// the defaults of the tools section.
func TestChatWithEveryRegisteredTool(t *testing.T) {
	names := all.Names()
	for _, want := range []string{"calculator", "lookup", "search"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tool %q is not in the registry (registered: %v)", want, names)
		}
	}
	run := trainedRun(t)
	model, index := filepath.Join(run.dir(), "final"), filepath.Join(run.dir(), "index.db")
	r := runCLI(t, "What is 6 times 7?\n", "chat", "--model", model, "--index", index, "--tools", strings.Join(names, ","),
		"--threads", "1", "--max-turns", "1", "--max-turn-tokens", "4")
	if r.code != 0 {
		t.Fatalf("want exit 0 with tools %v:\n%s", names, r)
	}
	if want := "with tools " + strings.Join(names, ", ") + "."; !strings.Contains(r.stdout, want) {
		t.Errorf("greeting does not list every tool (%q):\n%s", want, r)
	}
}

// chat with the tools of a trainer config: here no built-in tool, and the
// synthetic world's search served by an MCP server (examples/mcp), which
// the agent calls as it would the built-in one.
func TestChatWithMCPTool(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("the MCP search server needs /usr/bin/python3")
	}
	run := trainedRun(t)
	model, index := filepath.Join(run.dir(), "final"), filepath.Join(run.dir(), "index.db")
	server, err := filepath.Abs("../../examples/mcp/search_server.py")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "tools.yaml")
	yaml := fmt.Sprintf("tools:\n  enabled: []\n  mcp:\n    - name: world\n      command: /usr/bin/python3\n      args: [%q, --index, %q]\n", server, index)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "What is the capital of the nation of Kamo?\n", "chat", "--model", model, "--config", cfg,
		"--hide-schemas", "--threads", "1", "--max-turns", "2", "--max-turn-tokens", "8")
	if r.code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	if !strings.HasPrefix(r.stdout, "agentrl chat: "+model+" with tools search.") {
		t.Errorf("no greeting naming the MCP server's tool:\n%s", r)
	}
	// The shared test model is barely trained and may not search at all
	// (the README shows a trained one searching through this server); when
	// it does, the MCP server answers.
	for _, l := range lines(r.stdout) {
		if strings.Contains(l, "← ") && !strings.Contains(l, "← Doc 1 (Title: ") && !strings.Contains(l, "← No results.") &&
			!strings.Contains(l, "has no words to search for") && !strings.Contains(l, "invalid arguments") {
			t.Errorf("a search not answered by the MCP server: %q\n%s", l, r)
		}
	}
	if !outcomeLine.MatchString(r.stdout) {
		t.Errorf("the episode does not end with its outcome:\n%s", r)
	}
}

// chat --run RUN shows the run's final policy what it was trained on: the
// saved config's tools, schemas and env limits, each flag still winning.
func TestChatOfRun(t *testing.T) {
	run := trainedRun(t)
	// The shared run as saved: the synthetic world's tiny model was
	// trained without schemas (tools.schemas auto), 4 turns of at most 48
	// tokens in 768; its index is the run's index.db.
	r := runCLI(t, "What is the capital of the nation of Kamo?\n", "chat", "--run", run.name, "--run-dir", run.runs, "--threads", "1")
	if r.code != 0 {
		t.Fatalf("want exit 0:\n%s", r)
	}
	final := filepath.Join(run.dir(), "final")
	if !strings.HasPrefix(r.stdout, "agentrl chat: "+final+" with tools search.") ||
		!strings.Contains(r.stdout, "\nlimits: 4 turns, 768 tokens, 48 per turn; tool schemas hidden\n") {
		t.Errorf("not the run's final policy, tools, limits and hidden schemas:\n%s", r)
	}
	if !outcomeLine.MatchString(r.stdout) {
		t.Errorf("the episode does not end with its outcome:\n%s", r)
	}

	// A run saved with other settings gets them; flags override them.
	runs := t.TempDir()
	dir := filepath.Join(runs, "other")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(final, filepath.Join(dir, "final")); err != nil {
		t.Fatal(err)
	}
	saved := fmt.Sprintf("env:\n  max_turns: 3\n  max_tokens: 500\n  max_turn_tokens: 5\ntools:\n  schemas: show\n  search:\n    index: %q\n"+
		"data:\n  synthetic:\n    fresh_worlds: false\n",
		filepath.Join(run.dir(), "index.db"))
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(saved), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, "What is the capital of the nation of Kamo?\n", "chat", "--run", "other", "--run-dir", runs, "--threads", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "\nlimits: 3 turns, 500 tokens, 5 per turn; tool schemas shown\n") {
		t.Errorf("want exit 0 and the saved run's limits and shown schemas:\n%s", r)
	}
	r = runCLI(t, "What is the capital of the nation of Kamo?\n", "chat", "--run", "other", "--run-dir", runs, "--threads", "1",
		"--max-turns", "1", "--max-turn-tokens", "6", "--hide-schemas")
	if r.code != 0 || !strings.Contains(r.stdout, "\nlimits: 1 turns, 500 tokens, 6 per turn; tool schemas hidden\n") {
		t.Errorf("want exit 0 and the flags over the saved config:\n%s", r)
	}
	if n := strings.Count(r.stdout, "assistant: "); n != 1 {
		t.Errorf("%d assistant turns, want 1 (--max-turns 1):\n%s", n, r)
	}

	fails(t, []string{"chat --run nosuch", filepath.Join(runs, "nosuch", "config.yaml")}, "chat", "--run", "nosuch", "--run-dir", runs)
	fails(t, []string{"--run", "--config", "not both"}, "chat", "--run", "other", "--run-dir", runs, "--config", filepath.Join(dir, "config.yaml"))
}

// chat --config validates the config as train does, before it loads
// anything: two MCP servers of one name are refused.
func TestChatConfigValidated(t *testing.T) {
	t.Parallel() // independent of the shared run
	cfg := writeFile(t, "tools.yaml", "tools:\n  mcp:\n    - name: dup\n      command: /bin/true\n    - name: dup\n      command: /bin/true\n")
	fails(t, []string{"chat: ", `tools.mcp[1].name: "dup" is used twice`}, "chat", "--model", filepath.Join(t.TempDir(), "none"), "--config", cfg)
}
