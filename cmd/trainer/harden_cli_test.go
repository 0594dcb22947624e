package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

// A reward program that is not there, or not executable, is refused by
// config check, by train --dry-run and by train, naming the key.
func TestMissingRewardProgramIsRefused(t *testing.T) {
	t.Parallel() // independent of the shared run
	notExec := writeFile(t, "score.py", "print('{\"reward\": 1}')\n")
	for _, prog := range []string{"/nonexistent/score.py", notExec} {
		cfg := writeFile(t, "c.yaml", "env:\n  rewards:\n    external:\n      command: ["+prog+"]\n")
		want := []string{"env.rewards.external.command", `reward program "` + prog + `" cannot be run`}
		fails(t, want, "config", "check", cfg)
		fails(t, want, "train", "--dry-run", "--config", cfg)
		fails(t, want, "train", "--run-dir", t.TempDir(), "--config", cfg)
	}
}

// ansiTool answers with ANSI escape sequences.
type ansiTool struct{}

func (ansiTool) Name() string                { return "ansi" }
func (ansiTool) Description() string         { return "ansi" }
func (ansiTool) Parameters() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (ansiTool) Call(context.Context, json.RawMessage) (envs.Result, error) {
	return envs.Result{Content: "\x1b[2J\x1b[31mred", OK: true}, nil
}

// chat shows a tool's response with its escape sequences as text.
func TestChatEscapesToolResponses(t *testing.T) {
	env, err := envs.NewToolEnv(envs.Task{ID: "t"}, []envs.Tool{ansiTool{}}, envs.DefaultEnvConfig())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s := &showingEnv{env: env, out: &out, paint: func(_, s string) string { return s }}
	if _, err := s.Step(context.Background(), envs.Action{Text: `<tool_call>{"name":"ansi","arguments":{}}</tool_call>`}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `← \x1b[2J\x1b[31mred`) || strings.Contains(out.String(), "\x1b") {
		t.Fatalf("%q", out.String())
	}
}
