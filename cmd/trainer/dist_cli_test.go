package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrl/agentrl/trainer/dist"
)

// distTimeout is dist.timeout in these tests: short, so a hang would show.
const distTimeout = 8 * time.Second

// TestTrainNProc2 trains the tiny job as two local ranks (trainer train
// --nproc 2): it must finish like one process does, with every trajectory
// in rank 0's store exactly once.
func TestTrainNProc2(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	// 3 prompts per iteration: the ranks' shares differ in size.
	args := append([]string{"train", "--run-dir", runs, "--run", "dp", "--nproc", "2"}, tinyRun...)
	args = append(args, "--iterations", "2", "--set", "rollout.batch_size=3", "--set", "dist.timeout="+distTimeout.String(), "--no-report")
	r := ok(t, args...)
	checkResults(t, r.stdout, "Naive RAG", "Base Tool Call", "RL (grpo)")
	if !strings.Contains(r.stderr, "launched local ranks") || !strings.Contains(r.stderr, `"rank":0`) {
		t.Errorf("no launcher or rank 0 log lines:\n%s", r)
	}
	store := filepath.Join(runs, "dp", "store.db")
	q := ok(t, "rollouts", "sql", "--store", store,
		"SELECT iteration, split, COUNT(*), COUNT(DISTINCT id) FROM trajectories GROUP BY 1, 2 ORDER BY 1, 2").stdout
	// Iteration 0: 4 evaluation questions for the policy and 4 for naive
	// RAG; iterations 1 and 2: 3 prompts x 2 samples; 2 also evaluates.
	want := []string{"0 eval 8 8", "1 train 6 6", "2 eval 4 4", "2 train 6 6"}
	got := lines(q)[1:]
	for i := range got {
		got[i] = strings.Join(strings.Fields(strings.ReplaceAll(got[i], "|", " ")), " ")
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("store rows per iteration and split:\n%s\nwant (count, distinct ids) %q", q, want)
	}
	// Only rank 0 writes the run's files; rank 1 keeps its own index.
	for _, f := range []string{"dp/final/model.safetensors", "dp/checkpoints/latest", "dp/ranks/1/index.db"} {
		if _, err := os.Stat(filepath.Join(runs, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(runs, "dp", "ranks", "1", "store.db")); err == nil {
		t.Error("rank 1 opened a store of its own")
	}
}

// TestTrainNProc2Async trains the tiny job as two local ranks with
// rollout.max_staleness 1: each iteration's batch, sampled a share per
// rank, is stored whole and once, with its staleness within the bound;
// dynamic sampling, which asynchronous ranks do not support, is refused
// by name before any rank starts.
func TestTrainNProc2Async(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	args := append([]string{"train", "--run-dir", runs, "--run", "dpasync", "--nproc", "2"}, tinyRun...)
	args = append(args, "--iterations", "2", "--set", "rollout.batch_size=3", "--set", "rollout.max_staleness=1",
		"--set", "dist.timeout="+distTimeout.String(), "--no-report")
	fails(t, []string{"algorithm.dynamic_sampling", "rollout.max_staleness 1 and 2 ranks: not supported"},
		append(append([]string{}, args...), "--set", "algorithm.dynamic_sampling=true")...)
	ok(t, args...)
	q := ok(t, "rollouts", "sql", "--store", filepath.Join(runs, "dpasync", "store.db"),
		"SELECT t.iteration, COUNT(*), COUNT(DISTINCT t.id), json_extract(i.metrics, '$.staleness_max') <= 1 FROM trajectories t JOIN iterations i ON i.iteration = t.iteration WHERE t.split = 'train' GROUP BY 1 ORDER BY 1").stdout
	want := []string{"1 6 6 1", "2 6 6 1"}
	got := lines(q)[1:]
	for i := range got {
		got[i] = strings.Join(strings.Fields(strings.ReplaceAll(got[i], "|", " ")), " ")
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("training rows per iteration:\n%s\nwant (iteration, count, distinct ids, staleness_max <= 1) %q", q, want)
	}
}

// rankProc is one rank started the way torchrun starts it: this binary
// with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set.
type rankProc struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	mu     sync.Mutex
	exited chan struct{}
	at     time.Time // when it exited
	err    error
}

func (p *rankProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// startRank starts one rank of a long run; iteration receives once when
// its stderr logs a finished iteration.
func startRank(t *testing.T, ctx context.Context, rank, port int, args []string, iteration chan<- int) *rankProc {
	t.Helper()
	cmd := command(ctx, args...)
	cmd.Env = append(cmd.Env, "RANK="+strconv.Itoa(rank), "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port))
	return startProc(t, cmd, rank, iteration)
}

// startProc starts cmd, collects its stderr, and sends tag on iteration
// (when not nil) the first time it logs a finished iteration.
func startProc(t *testing.T, cmd *exec.Cmd, tag int, iteration chan<- int) *rankProc {
	t.Helper()
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &rankProc{cmd: cmd, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if !sent && iteration != nil && strings.Contains(sc.Text(), `"message":"iteration"`) {
				iteration <- tag
				sent = true
			}
		}
		p.err = cmd.Wait()
		p.at = time.Now()
		close(p.exited)
	}()
	return p
}

// TestKilledRankStopsJob kills one rank of a running two-rank job (as an
// OOM killer or a lost machine would) and wants the other to exit with an
// error within dist.timeout (plus start-up slack), whichever rank dies.
func TestKilledRankStopsJob(t *testing.T) {
	for _, victim := range []int{1, 0} {
		t.Run(fmt.Sprintf("kill rank %d", victim), func(t *testing.T) {
			port, err := dist.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			runs := filepath.Join(t.TempDir(), "runs")
			args := append([]string{"train", "--run-dir", runs, "--run", "killed"}, tinyRun...)
			args = append(args, "--iterations", "100000", "--set", "dist.timeout="+distTimeout.String(), "--no-report")
			ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
			defer cancel()
			iteration := make(chan int, 1)
			ranks := []*rankProc{startRank(t, ctx, 0, port, args, iteration), startRank(t, ctx, 1, port, args, nil)}
			select {
			case <-iteration:
			case <-ranks[0].exited:
				t.Fatalf("rank 0 exited before training (%v):\n%s\nrank 1:\n%s", ranks[0].err, ranks[0].log(), ranks[1].log())
			case <-ctx.Done():
				t.Fatal("no iteration before the command timeout")
			}
			if err := ranks[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed := time.Now()
			survivor := ranks[1-victim]
			select {
			case <-survivor.exited:
			case <-time.After(distTimeout + 30*time.Second):
				t.Fatalf("rank %d still runs %s after rank %d was killed (dist.timeout %s):\n%s", 1-victim, time.Since(killed), victim, distTimeout, survivor.log())
			}
			took := survivor.at.Sub(killed)
			t.Logf("rank %d exited %s after rank %d was killed: %v\n%s", 1-victim, took.Round(time.Millisecond), victim, survivor.err, lastLine(survivor.log()))
			if survivor.err == nil {
				t.Fatalf("rank %d exited 0 after losing rank %d:\n%s", 1-victim, victim, survivor.log())
			}
			if took > distTimeout+15*time.Second {
				t.Errorf("took %s, dist.timeout is %s", took, distTimeout)
			}
			msg := survivor.log()
			if !strings.Contains(msg, "another rank probably stopped") && !strings.Contains(msg, "has not sent a heartbeat") &&
				!strings.Contains(msg, "stopped answering") {
				t.Errorf("rank %d's error does not say a rank was lost:\n%s", 1-victim, msg)
			}
		})
	}
}

// TestLauncherStopsJobWhenRankDies: under trainer train --nproc 2, a rank
// killed from outside makes the launcher stop the other and fail, naming
// the rank.
func TestLauncherStopsJobWhenRankDies(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	args := append([]string{"train", "--run-dir", runs, "--run", "launched", "--nproc", "2"}, tinyRun...)
	args = append(args, "--iterations", "100000", "--set", "dist.timeout="+distTimeout.String(), "--no-report")
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	iteration := make(chan int, 1)
	p := startProc(t, command(ctx, args...), 0, iteration)
	select {
	case <-iteration:
	case <-p.exited:
		t.Fatalf("launcher exited before training (%v):\n%s", p.err, p.log())
	}
	cmd := p.cmd
	child, other := rankChild(t, cmd.Process.Pid, 1), rankChild(t, cmd.Process.Pid, 0)
	if child == 0 || other == 0 {
		t.Fatalf("ranks not found among the launcher's children (rank 1: %d, rank 0: %d)", child, other)
	}
	if err := syscall.Kill(child, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	select {
	case <-p.exited:
	case <-time.After(distTimeout + 30*time.Second):
		t.Fatalf("the launcher still runs %s after rank 1 was killed:\n%s", time.Since(killed), p.log())
	}
	t.Logf("launcher exited %s after rank 1 was killed: %v", p.at.Sub(killed).Round(time.Millisecond), p.err)
	if p.err == nil || !strings.Contains(p.log(), "rank 1 failed") {
		t.Fatalf("want a failure naming rank 1 (err %v):\n%s", p.err, p.log())
	}
	// The launcher returns only after reaping every rank.
	if err := syscall.Kill(other, 0); err != syscall.ESRCH {
		t.Errorf("rank 0 (pid %d) outlived the launcher: %v", other, err)
	}
}

// rankChild finds the child process of parent whose environment has
// RANK=rank (0 when there is none).
func rankChild(t *testing.T, parent, rank int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if string(kv) == "RANK="+strconv.Itoa(rank) {
				return pid
			}
		}
	}
	return 0
}

func lastLine(s string) string {
	l := lines(s)
	if len(l) == 0 {
		return ""
	}
	return l[len(l)-1]
}

// TestNProcResumeMatchesUninterrupted: a two-rank run stopped after 2
// iterations and resumed to 3 ends with the same weights, bit for bit, as
// a two-rank run of 3: the ranks resume at the same data cursor, RNG and
// optimizer state as the uninterrupted ones had.
func TestNProcResumeMatchesUninterrupted(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	base := append([]string{"train", "--run-dir", runs, "--nproc", "2"}, tinyRun...)
	base = append(base, "--set", "rollout.deterministic=true", "--set", "dist.timeout="+distTimeout.String(), "--no-report")
	run := func(args ...string) { ok(t, append(append([]string{}, base...), args...)...) }
	run("--run", "whole", "--iterations", "3")
	run("--run", "parts", "--iterations", "2")
	run("--run", "parts", "--resume", "--iterations", "3")
	a, err := os.ReadFile(filepath.Join(runs, "whole", "final", "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(runs, "parts", "final", "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("the resumed two-rank run ends with other weights than the uninterrupted one")
	}
	q := "SELECT COUNT(*), COUNT(DISTINCT id) FROM trajectories"
	for _, name := range []string{"whole", "parts"} {
		out := lines(ok(t, "rollouts", "sql", "--store", filepath.Join(runs, name, "store.db"), q).stdout)
		if f := strings.Fields(strings.ReplaceAll(out[len(out)-1], "|", " ")); len(f) != 2 || f[0] != f[1] {
			t.Errorf("%s: %q, want each trajectory once", name, out)
		}
	}
}

// TestSFTRefusesToRunAsRanks: only train is data-parallel; sft started as
// one of several ranks says so instead of having every rank write the run.
func TestSFTRefusesToRunAsRanks(t *testing.T) {
	args := append([]string{"sft", "--run-dir", t.TempDir(), "--run", "ranked", "--out", t.TempDir()}, tinyRun...)
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := command(ctx, args...)
	cmd.Env = append(cmd.Env, "RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "trainer sft runs as one process, but this is rank 1 of 2") {
		t.Fatalf("want a refusal (err %v):\n%s", err, out)
	}
}
