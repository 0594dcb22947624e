package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTrainInterruptThenResume stops a long run with Ctrl-C after its first
// iteration, then resumes it for exactly one more iteration.
func TestTrainInterruptThenResume(t *testing.T) {
	t.Parallel() // independent of the shared run
	runs := filepath.Join(t.TempDir(), "runs")
	// The later --iterations wins over tinyRun's.
	args := append([]string{"train", "--run-dir", runs, "--name", "stop"}, tinyRun...)
	args = append(args, "--iterations", "100000", "--no-report")
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := command(ctx, args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	interrupted := false
	for sc.Scan() {
		stderr.WriteString(sc.Text() + "\n")
		if !interrupted && strings.Contains(sc.Text(), `"message":"iteration"`) {
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			interrupted = true
		}
	}
	err = cmd.Wait()
	got := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	if ctx.Err() != nil || err != nil || !interrupted {
		t.Fatalf("want a clean stop after the interrupt (err %v):\n%s", err, got)
	}
	hint := "stopped; checkpoint written. Continue with: trainer train --resume stop --run-dir " + runs
	if !strings.Contains(got.stderr, hint) {
		t.Fatalf("no resume hint %q:\n%s", hint, got)
	}

	store := filepath.Join(runs, "stop", "store.db")
	last := atoi(t, strings.TrimSpace(lines(ok(t, "rollouts", "sql", "--store", store,
		"SELECT MAX(iteration) FROM trajectories WHERE split = 'train'").stdout)[1]))
	if last < 1 {
		t.Fatalf("stopped at iteration %d", last)
	}
	// The resumed run keeps its saved config (2 prompts x 2 samples per
	// iteration) and runs iterations last+1 only: 4(last+1) in all.
	r := ok(t, "train", "--run-dir", runs, "--resume", "stop", "--iterations", strconv.Itoa(last+1), "--no-report")
	checkResults(t, r.stdout, "Naive RAG", "Base Tool Call", "RL (grpo)")
	// The checkpoint was written at the stop: nothing is redone.
	if n := strings.Count(r.stderr, `"message":"iteration"`); n != 1 {
		t.Errorf("the resumed run ran %d iterations, want 1:\n%s", n, r)
	}
	if n := trajectoryCounts(t, store)["train"]; n != 4*(last+1) {
		t.Errorf("%d training trajectories after resuming to iteration %d, want %d", n, last+1, 4*(last+1))
	}
}
