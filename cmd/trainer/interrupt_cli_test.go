package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestTrainInterruptThenResume stops a long run with Ctrl-C after its first
// iteration, then resumes it for exactly one more iteration.
func TestTrainInterruptThenResume(t *testing.T) {
	t.Parallel() // independent of the shared run
	runs := filepath.Join(t.TempDir(), "runs")
	// The later --iterations wins over tinyRun's.
	args := append([]string{"train", "--run-dir", runs, "--run", "stop"}, tinyRun...)
	args = append(args, "--iterations", "100000", "--no-report")
	got := signalled(t, []signalAt{{`"message":"iteration"`, os.Interrupt}}, args...)
	if got.code != 0 {
		t.Fatalf("want a clean stop after the interrupt:\n%s", got)
	}
	hint := "stopped; checkpoint written. Continue with: trainer train --run stop --resume --run-dir " + runs
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
	r := ok(t, "train", "--run-dir", runs, "--run", "stop", "--resume", "--iterations", strconv.Itoa(last+1), "--no-report")
	checkResults(t, r.stdout, "Naive RAG", "Base Tool Call", "RL (grpo)")
	// The checkpoint was written at the stop: nothing is redone.
	if n := strings.Count(r.stderr, `"message":"iteration"`); n != 1 {
		t.Errorf("the resumed run ran %d iterations, want 1:\n%s", n, r)
	}
	if n := trajectoryCounts(t, store)["train"]; n != 4*(last+1) {
		t.Errorf("%d training trajectories after resuming to iteration %d, want %d", n, last+1, 4*(last+1))
	}
}

// signalAt is a signal to send once a stderr line contains trigger.
type signalAt struct {
	trigger string
	sig     os.Signal
}

// signalled starts trainer with args, sends each signal once a stderr line
// contains its trigger (in order: the next is awaited after the previous is
// sent), and returns the result with the exit code. It fails when a
// trigger never comes.
func signalled(t *testing.T, sigs []signalAt, args ...string) result {
	t.Helper()
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
	sent := 0
	for sc.Scan() {
		stderr.WriteString(sc.Text() + "\n")
		if sent < len(sigs) && strings.Contains(sc.Text(), sigs[sent].trigger) {
			if err := cmd.Process.Signal(sigs[sent].sig); err != nil {
				t.Fatal(err)
			}
			sent++
		}
	}
	err = cmd.Wait()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	if ctx.Err() != nil || sent < len(sigs) {
		t.Fatalf("%d of %d signals sent (no line to signal at), or no stop (err %v):\n%s", sent, len(sigs), err, r)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	}
	return r
}

// SIGTERM in the warm start stops it before its next step (1,600 steps
// would take far longer), with nothing to resume and a message saying so.
func TestTrainSIGTERMInWarmStart(t *testing.T) {
	t.Parallel()
	runs := filepath.Join(t.TempDir(), "runs")
	args := append([]string{"train", "--run-dir", runs, "--run", "term"}, tinyRun...)
	args = append(args, "--set", "sft.demos=64", "--set", "sft.batch=2", "--set", "sft.epochs=50", "--no-report")
	r := signalled(t, []signalAt{{`"message":"warm start"`, syscall.SIGTERM}}, args...)
	if r.code != 0 || !strings.Contains(r.stderr, "stopped during the warm start") {
		t.Fatalf("want a clean stop in the warm start:\n%s", r)
	}
	m := regexp.MustCompile(`"step":(\d+),"of":(\d+),[^\n]*"message":"warm start stopped"`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no 'warm start stopped' line:\n%s", r)
	}
	if step, of := atoi(t, m[1]), atoi(t, m[2]); of != 1600 || step >= of/2 {
		t.Errorf("stopped at step %d of %d: want well before the end of the 1600 steps", step, of)
	}
	if strings.Contains(r.stderr, `"message":"iteration"`) {
		t.Errorf("the run went on to RL after SIGTERM in the warm start:\n%s", r)
	}
}

// A second Ctrl-C stops at once, in whatever phase (exit status 130, no
// checkpoint at the stop), and the run resumes from its last checkpoint.
func TestTrainSecondInterruptStopsAtOnce(t *testing.T) {
	t.Parallel()
	runs := filepath.Join(t.TempDir(), "runs")
	args := append([]string{"train", "--run-dir", runs, "--run", "twice"}, tinyRun...)
	// Iterations of 64 episodes (not tinyRun's 4) leave the test time to
	// send the second Ctrl-C while the first one's iteration still runs.
	args = append(args, "--iterations", "100000", "--no-report", "--set", "rollout.batch_size=16", "--set", "rollout.group_size=4")
	r := signalled(t, []signalAt{{`"message":"iteration"`, os.Interrupt}, {"interrupt: finishing", os.Interrupt}}, args...)
	if r.code != 130 || !strings.Contains(r.stderr, "stopping now") {
		t.Fatalf("want exit status 130 and 'stopping now':\n%s", r)
	}
	if strings.Contains(r.stderr, "checkpoint written") {
		t.Errorf("the second Ctrl-C still checkpointed:\n%s", r)
	}
	res := ok(t, "train", "--run-dir", runs, "--run", "twice", "--resume", "--iterations", "1", "--no-report")
	checkResults(t, res.stdout, "Naive RAG", "Base Tool Call", "RL (grpo)")
}
