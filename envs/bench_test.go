package envs

import (
	"context"
	"testing"
)

// BenchmarkStep measures the env's own overhead around a trivial tool:
// parse, validate, run in a goroutine with a timeout, process reward.
func BenchmarkStep(b *testing.B) {
	cfg := testConfig()
	cfg.MaxTurns = 1 << 30
	e, err := NewToolEnv(testTask, []Tool{&echoTool{}}, cfg)
	if err != nil {
		b.Fatal(err)
	}
	a := Action{Text: call("echo", `{"text": "Paris", "refs": ["Paris"]}`)}
	for b.Loop() {
		if _, err := e.Step(context.Background(), a); err != nil {
			b.Fatal(err)
		}
	}
}
