package trainer

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/safetensors"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/models"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

// The resume tests run the training in a child process (this test binary,
// running only TestResumeChild), SIGKILL it, resume the run in-process and
// compare everything with an uninterrupted run of the same seed.
const (
	resumeDirEnv   = "AGENTRL_RESUME_CHILD"       // the child's run.dir
	resumePauseEnv = "AGENTRL_RESUME_CHILD_PAUSE" // the iterations whose rollout the child pauses in
	resumeStopEnv  = "AGENTRL_RESUME_CHILD_STOP"  // the iteration in whose rollout the child is asked to stop (Ctrl-C)
	resumeKillEnv  = "AGENTRL_RESUME_CHILD_KILL"  // "stage:n": the child SIGKILLs itself at the n-th checkpoint stage
	resumeLoRAEnv  = "AGENTRL_RESUME_LORA"        // set: resumeConfig trains LoRA adapters (TestResumeLoRA)
	resumeIters    = 4
)

// pausedFile is written by the child when it pauses in the rollout of
// iteration it; it then waits for goOnFile (or the kill).
func pausedFile(run string, it int) string { return filepath.Join(run, fmt.Sprintf("paused-%d", it)) }
func goOnFile(run string, it int) string   { return filepath.Join(run, fmt.Sprintf("go-on-%d", it)) }

// resumeConfig is the reduced default job with every piece of state a
// resume must restore in play: a separate critic (gae) with its own
// optimizer, a KL loss to the saved reference, a warm-up-then-cosine
// learning rate that depends on the restored optimizer step, and the
// shuffled data order. Rollouts are deterministic and every iteration is
// checkpointed.
func resumeConfig(dir string) config.Config {
	c := smallConfig(dir)
	c.Run.Name = "resume"
	c.Run.Iterations = resumeIters
	c.Run.SaveEvery = 1
	c.Run.EvalEvery = 0 // evaluate at the end only
	c.Rollout.Deterministic = true
	c.Algorithm.Estimator = "gae"
	c.Model.Critic = "separate"
	c.Algorithm.KLCoef = 0.01
	c.Algorithm.KLMode = "loss"
	c.Optim.Schedule = "cosine"
	c.Optim.WarmupSteps = 2
	c.Eval.MaxEval = 4
	c.Eval.Baselines = false
	if os.Getenv(resumeLoRAEnv) != "" {
		// Adapters over the warm-started tiny base (saved as <run>/base),
		// a critic of its own adapters, the KL to the base, and dropout,
		// whose masks a resume must draw again alike.
		c.Run.Name = "resume-lora"
		c.Model.LoRA.Rank, c.Model.LoRA.Alpha, c.Model.LoRA.Dropout = 4, 8, 0.1
		c.Optim.LR, c.Optim.CriticLR = 1e-3, 1e-3
	}
	return c
}

// TestResumeChild is the child process of the resume tests: it trains the
// run in $AGENTRL_RESUME_CHILD. When the rollout of an iteration listed in
// $AGENTRL_RESUME_CHILD_PAUSE (e.g. "2,3") is half done, it writes
// <run>/paused-<iteration> and waits for <run>/go-on-<iteration>, so the
// parent acts at a known point of the run. Run directly, it skips.
func TestResumeChild(t *testing.T) {
	dir := os.Getenv(resumeDirEnv)
	if dir == "" {
		t.Skip("child process of the resume tests")
	}
	cfg := resumeConfig(dir)
	run := RunDir(cfg)
	stop := make(chan struct{})
	progress := func(label string, total int) Bar {
		if label == "iter "+os.Getenv(resumeStopEnv)+" rollout" {
			return stopBar{stop}
		}
		for _, it := range strings.Split(os.Getenv(resumePauseEnv), ",") {
			if label == "iter "+it+" rollout" {
				n, _ := strconv.Atoi(it)
				return &resumePauseBar{run: run, iter: n, at: (total + 1) / 2}
			}
		}
		return noBar{}
	}
	if at := os.Getenv(resumeKillEnv); at != "" {
		name, n, _ := strings.Cut(at, ":")
		want, _ := strconv.Atoi(n)
		seen := 0
		models.CheckpointStage = func(s string) {
			if s == name {
				if seen++; seen == want {
					syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {} // the signal is on its way
				}
			}
		}
	}
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop(), Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background(), stop); err != nil {
		tr.Close()
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
}

// stopBar asks the run to stop (as Ctrl-C does) at its first step.
type stopBar struct{ stop chan struct{} }

func (b stopBar) Add(int) {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
}

func (stopBar) Done() {}

// resumePauseBar pauses the child at its at-th step of the rollout of
// iteration iter (see TestResumeChild).
type resumePauseBar struct {
	run         string
	iter, at, n int
}

func (b *resumePauseBar) Add(n int) {
	b.n += n
	if b.n < b.at || b.n-n >= b.at {
		return
	}
	if err := os.WriteFile(pausedFile(b.run, b.iter), nil, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "child: %v\n", err)
		os.Exit(2)
	}
	// The parent kills the child or lets it go on within seconds; a minute
	// without either means the parent is gone.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(2 * time.Millisecond) {
		if _, err := os.Stat(goOnFile(b.run, b.iter)); err == nil {
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "child: paused for a minute without being killed or released")
			os.Exit(2)
		}
	}
}

func (b *resumePauseBar) Done() {}

// trainChild is a training child process.
type trainChild struct {
	cmd  *exec.Cmd
	out  bytes.Buffer
	done chan struct{} // closed when it has exited
	err  error         // its exit status, once done
}

// startChild starts the training of resumeConfig(dir) in a child process
// that pauses in the rollouts of the iterations listed in pause ("2,3");
// env adds to its environment (resumeStopEnv, resumeKillEnv).
func startChild(t *testing.T, dir, pause string, env ...string) *trainChild {
	t.Helper()
	c := &trainChild{done: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^TestResumeChild$", "-test.count=1", "-test.v")
	c.cmd.Env = append(append(os.Environ(), resumeDirEnv+"="+dir, resumePauseEnv+"="+pause), env...)
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			c.cmd.Process.Signal(syscall.SIGKILL)
			<-c.done
		}
	})
	return c
}

// waitFor polls until cond holds, failing when the child exits first or
// after a minute.
func (c *trainChild) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		select {
		case <-c.done:
			t.Fatalf("child exited (%v) before %s; its output:\n%s", c.err, what, c.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("child: no %s after a minute; its output:\n%s", what, c.out.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// kill SIGKILLs the child and checks that the signal is what ended it.
func (c *trainChild) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill child: %v", err)
	}
	<-c.done
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, not by SIGKILL; its output:\n%s", c.err, c.out.String())
	}
}

// killedAtStage waits for the child to exit and reports whether a signal
// ended it (the SIGKILL it sends itself at the stage of resumeKillEnv).
func (c *trainChild) killedAtStage() bool {
	<-c.done
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

func pathExists(path string) bool { _, err := os.Stat(path); return err == nil }

// latestIs reports whether the run's checkpoints/latest names iteration it.
func latestIs(run string, it int) bool {
	b, err := os.ReadFile(filepath.Join(run, "checkpoints", "latest"))
	return err == nil && strings.TrimSpace(string(b)) == fmt.Sprintf("iter-%06d", it)
}

// trainResumeConfig runs (or, with resume, continues) resumeConfig(dir)
// in-process to the end.
func trainResumeConfig(t *testing.T, dir string, resume bool) {
	t.Helper()
	cfg := resumeConfig(dir)
	cfg.Run.Resume = resume
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background(), nil); err != nil {
		tr.Close()
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestResume trains resumeConfig once without interruption, then kills
// and resumes it in two places and compares.
func TestResume(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	refDir := t.TempDir()
	trainResumeConfig(t, refDir, false)
	ref := RunDir(resumeConfig(refDir))

	// Killed mid-iteration 3 and resumed from the checkpoint of iteration
	// 2, the run ends with the same policy, critic, optimizer moments, RNG
	// state and data cursor as the uninterrupted one, bit for bit; its
	// store holds every iteration once, with the same trajectories.
	t.Run("kill mid-iteration", func(t *testing.T) {
		dir := t.TempDir()
		run := RunDir(resumeConfig(dir))
		c := startChild(t, dir, "3")
		c.waitFor(t, "pause in the rollout of iteration 3", func() bool { return pathExists(pausedFile(run, 3)) })
		c.kill(t)
		if !latestIs(run, 2) {
			t.Fatalf("the killed run's latest checkpoint is not iteration 2")
		}
		checkStoreCovers(t, run)
		trainResumeConfig(t, dir, true)
		sameRun(t, ref, run)
	})

	// The store's writer commits an iteration on its own goroutine while
	// the loop goes on. Here it is kept waiting from the middle of
	// iteration 2 (the test holds the SQLite write lock, as a slow disk or
	// a reader's long write would) and the child is killed in the middle of
	// iteration 3, or, if it never gets there, once it has had four times
	// as long as iteration 1 took. Either way the latest checkpoint must
	// not cover an iteration the store lacks: the resumed run redoes only
	// what comes after the checkpoint, so such an iteration would be lost
	// for good.
	t.Run("kill while the store lags", func(t *testing.T) {
		dir := t.TempDir()
		run := RunDir(resumeConfig(dir))
		// The child passes its pause in iteration 1 at once: it only marks
		// the time.
		if err := os.MkdirAll(run, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goOnFile(run, 1), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		c := startChild(t, dir, "1,2,3")
		c.waitFor(t, "pause in the rollout of iteration 1", func() bool { return pathExists(pausedFile(run, 1)) })
		t1 := time.Now()
		c.waitFor(t, "pause in the rollout of iteration 2", func() bool { return pathExists(pausedFile(run, 2)) })
		iteration := time.Since(t1)
		t.Logf("iteration 1 took %v: the child gets %v to reach iteration 3", iteration, 4*iteration)
		db, err := sql.Open("sqlite3", "file:"+filepath.Join(run, "store.db")+"?_busy_timeout=10000&_txlock=immediate")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		lock, err := db.Begin() // BEGIN IMMEDIATE: the child's writer now waits
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goOnFile(run, 2), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		stall := time.Now().Add(4 * iteration)
		c.waitFor(t, "pause in iteration 3 or the stall", func() bool {
			return pathExists(pausedFile(run, 3)) || time.Now().After(stall)
		})
		c.kill(t)
		if err := lock.Rollback(); err != nil {
			t.Fatal(err)
		}
		checkStoreCovers(t, run)
		trainResumeConfig(t, dir, true)
		sameRun(t, ref, run)
	})

	// Ctrl-C during iteration 2: the run finishes iteration 2, checkpoints
	// it (save_every 1) and, stopping, checkpoints it again. The second
	// time must leave the folder latest names alone: the child is killed at
	// the moment a rewrite would replace iter-000002 (the 4th replace: after
	// iterations 0, 1 and 2), if it ever gets there. The run must resume
	// from iteration 2 and end as the uninterrupted one.
	t.Run("kill while re-checkpointing on stop", func(t *testing.T) {
		dir := t.TempDir()
		run := RunDir(resumeConfig(dir))
		c := startChild(t, dir, "", resumeStopEnv+"=2", resumeKillEnv+"=rename:4")
		if c.killedAtStage() {
			t.Errorf("the stopping run rewrote the checkpoint latest names (killed at that moment)")
		} else if c.err != nil {
			t.Fatalf("child: %v; its output:\n%s", c.err, c.out.String())
		}
		ck, warning, err := models.FindCheckpoint(run)
		if err != nil || filepath.Base(ck) != "iter-000002" || warning != "" {
			t.Fatalf("after the stop: checkpoint %q (warning %q, %v), want iter-000002 named by latest", ck, warning, err)
		}
		trainResumeConfig(t, dir, true)
		sameRun(t, ref, run)
	})

	// Killed between renaming iteration 3's checkpoint into place and
	// pointing latest at it: latest still names iteration 2, complete, and
	// the run resumes from there.
	t.Run("kill before latest moves", func(t *testing.T) {
		dir := t.TempDir()
		run := RunDir(resumeConfig(dir))
		c := startChild(t, dir, "", resumeKillEnv+"=latest:4")
		if !c.killedAtStage() {
			t.Fatalf("child was not killed at the 4th latest update (%v); its output:\n%s", c.err, c.out.String())
		}
		if !latestIs(run, 2) || !pathExists(filepath.Join(run, "checkpoints", "iter-000003", "state.json")) {
			t.Fatal("want iter-000003 in place and latest still naming iteration 2")
		}
		checkStoreCovers(t, run)
		trainResumeConfig(t, dir, true)
		sameRun(t, ref, run)
	})

	// Killed while exporting the final policy: no model folder holds a
	// partial or temporary file, and a resume of the finished run exports
	// it again, removing the leftover.
	t.Run("kill mid-export", func(t *testing.T) {
		dir := t.TempDir()
		run := RunDir(resumeConfig(dir))
		c := startChild(t, dir, "", resumeKillEnv+"=final:1")
		if !c.killedAtStage() {
			t.Fatalf("child was not killed in the final export (%v); its output:\n%s", c.err, c.out.String())
		}
		if pathExists(filepath.Join(run, "final")) {
			t.Error("a killed export left a final folder")
		}
		trainResumeConfig(t, dir, true)
		if pathExists(filepath.Join(run, ".tmp-final")) {
			t.Error("the resumed run left the killed export's .tmp-final")
		}
		sameRun(t, ref, run)
	})
}

// TestResumeLoRA is TestResume's first case for a LoRA run (adapters over
// the warm-started base, a separate critic's adapters, the KL to the base,
// dropout): killed mid-iteration 3, resumed from iteration 2's checkpoint
// (whose policy/ and critic/ are PEFT adapter folders), it ends as the
// uninterrupted run, bit for bit: final adapters, checkpoint, store.
func TestResumeLoRA(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	t.Setenv(resumeLoRAEnv, "1") // read by resumeConfig, here and in the child
	// Both runs train in the same folder (the uninterrupted one is moved
	// aside after), as the adapter folders name their base by its path.
	dir := t.TempDir()
	run := RunDir(resumeConfig(dir))
	trainResumeConfig(t, dir, false)
	ref := filepath.Join(t.TempDir(), "ref")
	if err := os.Rename(run, ref); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"base/config.json", "final/adapter_config.json", "final/adapter_model.safetensors",
		"checkpoints/iter-000004/policy/adapter_model.safetensors", "checkpoints/iter-000004/critic/adapter_model.safetensors",
		"checkpoints/iter-000004/critic/value_head.safetensors"} {
		if !pathExists(filepath.Join(ref, f)) {
			t.Errorf("the LoRA run has no %s", f)
		}
	}
	if pathExists(filepath.Join(ref, "ref")) {
		t.Error("the LoRA run saved a ref/ copy: its reference is the base")
	}
	// The adapters trained: lora_B, zero at the start, is not any more.
	r, err := safetensors.Open(filepath.Join(ref, "final", "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	trained := false
	for _, n := range r.Names() {
		if strings.Contains(n, ".lora_B.") {
			v, err := r.Float32s(n)
			if err != nil {
				t.Fatal(err)
			}
			trained = trained || slices.ContainsFunc(v, func(x float32) bool { return x != 0 })
		}
	}
	if !trained {
		t.Fatal("every lora_B of the final adapters is still zero: the run trained nothing to compare")
	}
	c := startChild(t, dir, "3")
	c.waitFor(t, "pause in the rollout of iteration 3", func() bool { return pathExists(pausedFile(run, 3)) })
	c.kill(t)
	if !latestIs(run, 2) {
		t.Fatalf("the killed run's latest checkpoint is not iteration 2")
	}
	trainResumeConfig(t, dir, true)
	sameRun(t, ref, run)
	sameFiles(t, filepath.Join(ref, "base"), filepath.Join(run, "base"))
}

// sameRun checks that a resumed run ended exactly as the uninterrupted
// one: the exported policy, the last checkpoint (policy, critic, optimizer
// moments, step counts, RNG state, data cursor) and the store.
func sameRun(t *testing.T, ref, run string) {
	t.Helper()
	sameFiles(t, filepath.Join(ref, "final"), filepath.Join(run, "final"))
	last := fmt.Sprintf("iter-%06d", resumeIters)
	sameFiles(t, filepath.Join(ref, "checkpoints", last), filepath.Join(run, "checkpoints", last))
	sameStore(t, ref, run)
}

// checkStoreCovers checks that the store of a killed run holds every
// iteration up to its latest checkpoint.
func checkStoreCovers(t *testing.T, run string) {
	t.Helper()
	ck, _, err := models.FindCheckpoint(run)
	if err != nil || ck == "" {
		t.Fatalf("killed run: latest checkpoint %q, %v", ck, err)
	}
	last, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(ck), "iter-"))
	if err != nil {
		t.Fatal(err)
	}
	ms := storedMetrics(t, filepath.Join(run, "store.db"))
	stored := map[int]bool{}
	for _, m := range ms {
		stored[m.Iteration] = true
	}
	for it := 0; it <= last; it++ {
		if !stored[it] {
			t.Errorf("killed run: the latest checkpoint is %s but the store lacks iteration %d (it holds %v): "+
				"a resume redoes only the iterations after the checkpoint, so iteration %d is lost",
				filepath.Base(ck), it, storedIterations(ms), it)
		}
	}
}

// storedIterations lists the iterations of a store's metrics rows.
func storedIterations(ms []store.IterationMetrics) []int {
	out := make([]int, len(ms))
	for i, m := range ms {
		out[i] = m.Iteration
	}
	return out
}

// sameFiles checks that two folders hold the same files with the same bytes;
// for safetensors files that differ it names the first differing tensor.
func sameFiles(t *testing.T, want, got string) {
	t.Helper()
	files := func(root string) []string {
		var out []string
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				rel, _ := filepath.Rel(root, p)
				out = append(out, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	wf, gf := files(want), files(got)
	if !slices.Equal(wf, gf) {
		t.Fatalf("%s holds %v, the uninterrupted run's %s holds %v", got, gf, want, wf)
	}
	for _, f := range wf {
		a, err := os.ReadFile(filepath.Join(want, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(got, f))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(a, b) {
			continue
		}
		if strings.HasSuffix(f, ".safetensors") {
			diff := tensorDiff(t, filepath.Join(want, f), filepath.Join(got, f))
			t.Errorf("%s differs from the uninterrupted run: %s", filepath.Join(got, f), diff)
		} else {
			t.Errorf("%s differs from the uninterrupted run:\n%s\nwant:\n%s", filepath.Join(got, f), b, a)
		}
	}
}

// tensorDiff describes the first tensor that differs between two
// safetensors files, with its largest absolute difference.
func tensorDiff(t *testing.T, want, got string) string {
	t.Helper()
	rw, err := safetensors.Open(want)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	rg, err := safetensors.Open(got)
	if err != nil {
		t.Fatal(err)
	}
	defer rg.Close()
	if !slices.Equal(rw.Names(), rg.Names()) {
		return fmt.Sprintf("tensors %v, want %v", rg.Names(), rw.Names())
	}
	for _, n := range rw.Names() {
		a, errA := rw.Float32s(n)
		b, errB := rg.Float32s(n)
		if errA != nil || errB != nil {
			return fmt.Sprintf("tensor %s: %v %v", n, errA, errB)
		}
		if i := firstBitDiff(a, b); i >= 0 {
			worst := 0.0
			for k := range min(len(a), len(b)) {
				worst = math.Max(worst, math.Abs(float64(a[k])-float64(b[k])))
			}
			return fmt.Sprintf("tensor %s first differs at element %d (max |diff| %g)", n, i, worst)
		}
	}
	return fmt.Sprintf("same tensors, different metadata: %v, want %v", rg.Metadata(), rw.Metadata())
}

// sameStore checks that the run's store holds iterations 0..resumeIters
// once each, and that every training trajectory equals the uninterrupted
// run's (tokens, behaviour logprobs, rewards, advantages).
func sameStore(t *testing.T, ref, run string) {
	t.Helper()
	open := func(run string) *store.Store {
		s, err := store.Open(filepath.Join(run, "store.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	sr, sg := open(ref), open(run)
	ms, err := sg.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	var all []int
	for it := 0; it <= resumeIters; it++ {
		all = append(all, it)
	}
	if iters := storedIterations(ms); !slices.Equal(iters, all) {
		t.Errorf("the resumed run's store holds iterations %v, want %v once each", iters, all)
	}
	for it := 1; it <= resumeIters; it++ {
		want, err := sr.LoadIteration(it, trajectory.Train)
		if err != nil {
			t.Fatal(err)
		}
		got, err := sg.LoadIteration(it, trajectory.Train)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != 8 || len(got) != len(want) {
			t.Errorf("iteration %d: %d training trajectories stored, the uninterrupted run %d, want 4 prompts x 2 samples",
				it, len(got), len(want))
			continue
		}
		byID := map[string]*trajectory.Trajectory{}
		for _, x := range want {
			byID[x.ID] = x
		}
		for _, x := range got {
			w := byID[x.ID]
			if w == nil {
				t.Errorf("iteration %d: trajectory %s is not in the uninterrupted run", it, x.ID)
				continue
			}
			if x.TaskID != w.TaskID || !slices.Equal(x.Tokens, w.Tokens) || !slices.Equal(x.Logprobs, w.Logprobs) ||
				x.Reward != w.Reward || !slices.Equal(x.Advantages, w.Advantages) {
				t.Errorf("iteration %d: trajectory %s (task %s) differs from the uninterrupted run's (task %s)",
					it, x.ID, x.TaskID, w.TaskID)
			}
		}
	}
}
