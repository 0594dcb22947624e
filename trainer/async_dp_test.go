package trainer

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/metric"
)

// asyncDPIters is the length of the asynchronous data-parallel job.
const asyncDPIters = 3

// Asynchronous training with data parallelism: two ranks (this test
// binary, as TestAsyncDataParallelRank) run the reduced default job with
// rollout.max_staleness 1 over Gloo on loopback. Both must finish with
// bit-identical weights; every rank logs, for every iteration, a maximum
// version lag within 1 and the same lags as the other rank (each checks
// the gathered batch, which both hold whole); and rank 0's store holds
// each iteration's whole batch (both ranks' shares) once, every turn
// sampled within the bound.
func TestAsyncDataParallel(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	out, runs := t.TempDir(), t.TempDir()
	runAsyncRanks(t, "whole", out, runs)
	w0 := readFloats(t, filepath.Join(out, "weights-0.bin"))
	w1 := readFloats(t, filepath.Join(out, "weights-1.bin"))
	if len(w0) == 0 {
		t.Fatal("rank 0 wrote no weights")
	}
	if i := firstBitDiff(w0, w1); i >= 0 {
		t.Errorf("the ranks' final weights differ at element %d", i)
	}
	lags := make([][]asyncDPLag, 2)
	for r := range lags {
		lags[r] = readLags(t, filepath.Join(out, fmt.Sprintf("rank-%d.log", r)))
		if len(lags[r]) != asyncDPIters {
			t.Fatalf("rank %d logged %d iterations with their staleness, want %d: %v", r, len(lags[r]), asyncDPIters, lags[r])
		}
		for _, l := range lags[r] {
			if l.Max > 1 || l.Mean > l.Max || l.Mean < 0 {
				t.Errorf("rank %d iteration %d: staleness mean %v max %v, want 0 <= mean <= max <= 1", r, l.Iteration, l.Mean, l.Max)
			}
		}
	}
	if fmt.Sprint(lags[0]) != fmt.Sprint(lags[1]) {
		t.Errorf("the ranks logged different version lags:\nrank 0 %v\nrank 1 %v", lags[0], lags[1])
	}
	t.Logf("version lags by iteration (both ranks): %v", lags[0])
	cfg := asyncConfig(runs, asyncDPIters)
	its := storedTrain(t, filepath.Join(RunDir(cfg), "store.db"), asyncDPIters)
	ms := storedMetrics(t, filepath.Join(RunDir(cfg), "store.db"))
	v := []int{its[0][0].Turns[0].PolicyVersion}
	for i := 1; i <= asyncDPIters; i++ {
		v = append(v, v[i-1]+int(ms[i].Metrics[metric.OptimizerSteps]))
	}
	for i, trs := range its {
		iter := i + 1
		want := cfg.Rollout.BatchSize * cfg.Rollout.GroupSize
		ids := map[string]bool{}
		groups := map[int]bool{}
		for _, x := range trs {
			ids[x.ID] = true
			groups[x.Group] = true
			for k, u := range x.Turns {
				if u.PolicyVersion < v[max(iter-2, 0)] || u.PolicyVersion > v[iter-1] {
					t.Errorf("iteration %d %s turn %d: version %d, want in [%d, %d]", iter, x.ID, k, u.PolicyVersion, v[max(iter-2, 0)], v[iter-1])
				}
			}
		}
		if len(trs) != want || len(ids) != want || len(groups) != cfg.Rollout.BatchSize {
			t.Errorf("iteration %d: %d stored training episodes (%d distinct, %d groups), want both ranks' shares: %d episodes of %d groups",
				iter, len(trs), len(ids), len(groups), want, cfg.Rollout.BatchSize)
		}
	}
}

// runAsyncRanks runs the two ranks of an asynchronous data-parallel job
// (TestAsyncDataParallelRank) in mode (whole: to the end; stop: stopped
// after iteration 1 with iteration 2 in flight; resume: resumed to the
// end), in the run folder under runs, their files written to out.
func runAsyncRanks(t *testing.T, mode, out, runs string) {
	t.Helper()
	port, err := dist.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	logs := make([]string, 2)
	errs := make([]error, 2)
	for r := 0; r < 2; r++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAsyncDataParallelRank$", "-test.v")
		e := dist.Env{Rank: r, World: 2, LocalRank: r, LocalWorld: 2, MasterAddr: "127.0.0.1", MasterPort: port}
		cmd.Env = append(append(os.Environ(), e.Vars()...), "AGENTRL_ASYNC_DP_OUT="+out, "AGENTRL_ASYNC_DP_RUNS="+runs, "AGENTRL_ASYNC_DP_MODE="+mode)
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			b, err := cmd.CombinedOutput()
			logs[r], errs[r] = string(b), err
		}(r)
	}
	wg.Wait()
	for r := range errs {
		if errs[r] != nil || !strings.Contains(logs[r], "--- PASS: TestAsyncDataParallelRank") {
			t.Fatalf("%s, rank %d: %v\n%s", mode, r, errs[r], logs[r])
		}
	}
}

// Stop and resume with rollouts in flight, data-parallel: two ranks of
// k = 1 stopped (asked on rank 0 alone) as rank 0's rollout role starts
// iteration 2's batch both stop after iteration 1 at the cursor of
// iteration 1's prompts (iteration 2's, in flight on both ranks, not
// consumed); resumed, they train on the same prompts, iteration by
// iteration, as one process that never stopped, store each trajectory
// once, and end at its data cursor.
func TestAsyncDataParallelResume(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	ref := asyncConfig(t.TempDir(), asyncDPIters)
	runJob(t, ref)
	refState := readState(t, RunDir(ref))

	out, runs := t.TempDir(), t.TempDir()
	runAsyncRanks(t, "stop", out, runs)
	for r := 0; r < 2; r++ {
		b, err := os.ReadFile(filepath.Join(out, fmt.Sprintf("stopped-%d", r)))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("iteration 1 cursor %d", ref.Rollout.BatchSize); string(b) != want {
			t.Errorf("rank %d stopped at %q, want %q (iteration 2's prompts in flight, not consumed)", r, b, want)
		}
	}
	runAsyncRanks(t, "resume", out, runs)
	cfg := asyncConfig(runs, asyncDPIters)
	got := readState(t, RunDir(cfg))
	if got.Cursor != refState.Cursor || got.Pass != refState.Pass || fmt.Sprint(got.Order) != fmt.Sprint(refState.Order) {
		t.Errorf("resumed ranks end at pass %d cursor %d, want the uninterrupted run's pass %d cursor %d (same order)", got.Pass, got.Cursor, refState.Pass, refState.Cursor)
	}
	path := filepath.Join(RunDir(cfg), "store.db")
	have := storedTrain(t, path, asyncDPIters)
	want := taskSeq(storedTrain(t, filepath.Join(RunDir(ref), "store.db"), asyncDPIters))
	if fmt.Sprint(taskSeq(have)) != fmt.Sprint(want) {
		t.Errorf("prompts by iteration\n%v\nwant the uninterrupted run's\n%v", taskSeq(have), want)
	}
	for i, trs := range have {
		ids := map[string]bool{}
		for _, x := range trs {
			ids[x.ID] = true
		}
		if n := cfg.Rollout.BatchSize * cfg.Rollout.GroupSize; len(trs) != n || len(ids) != n {
			t.Errorf("iteration %d: %d stored training episodes (%d distinct), want %d once each", i+1, len(trs), len(ids), n)
		}
	}
}

// asyncDPLag is the version lag a rank logged for an iteration.
type asyncDPLag struct {
	Iteration int     `json:"iteration"`
	Mean      float64 `json:"staleness_mean"`
	Max       float64 `json:"staleness_max"`
}

// readLags reads the staleness a rank logged on its "iteration" lines.
func readLags(t *testing.T, path string) []asyncDPLag {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []asyncDPLag
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Message string `json:"message"`
			asyncDPLag
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Text())
		}
		if line.Message == "iteration" && strings.Contains(sc.Text(), `"staleness_max"`) {
			out = append(out, line.asyncDPLag)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAsyncDataParallelRank is one rank of TestAsyncDataParallel and
// TestAsyncDataParallelResume (runAsyncRanks' modes): the job in the
// shared run folder, its log (JSON lines), its final weights and, when
// stopped, where it stopped written to the test's output folder.
func TestAsyncDataParallelRank(t *testing.T) {
	out := os.Getenv("AGENTRL_ASYNC_DP_OUT")
	if out == "" {
		t.Skip("a rank of TestAsyncDataParallel and TestAsyncDataParallelResume, run in its own process")
	}
	env, ok, err := dist.FromEnv()
	if err != nil || !ok {
		t.Fatalf("torchrun environment: %v (set: %v)", err, ok)
	}
	g, err := dist.Join(env, dist.Options{Backend: "gloo", Device: torch.CPU, Timeout: 2 * time.Minute,
		Log: zerolog.Nop(), OnLost: func(err error) { fmt.Fprintln(os.Stderr, err); os.Exit(3) }})
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(out, fmt.Sprintf("rank-%d.log", env.Rank)))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cfg := asyncConfig(os.Getenv("AGENTRL_ASYNC_DP_RUNS"), asyncDPIters)
	cfg.Device.Threads = 1 // two ranks on this machine's cores
	mode := os.Getenv("AGENTRL_ASYNC_DP_MODE")
	cfg.Run.Resume = mode == "resume"
	o := Options{Log: zerolog.New(logf), Dist: g}
	stop := make(chan struct{})
	if mode == "stop" && env.Rank == 0 {
		// Asked as the rollout role starts iteration 2's batch, which it
		// does as soon as iteration 1's is handed over: the loop sees it
		// after iteration 1, with iteration 2's prompts in flight.
		o.Progress = func(label string, _ int) Bar {
			if label == "iter 2 rollout" {
				close(stop)
			}
			return noBar{}
		}
	}
	tr, err := New(context.Background(), cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background(), stop); err != nil {
		tr.Close()
		t.Fatal(err)
	}
	if mode == "stop" {
		st := fmt.Sprintf("iteration %d cursor %d", tr.state.Iteration, tr.state.Cursor)
		if err := os.WriteFile(filepath.Join(out, fmt.Sprintf("stopped-%d", env.Rank)), []byte(st), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := flatWeights(t, tr.models.learner.Policy())
	b := make([]byte, 4*len(w))
	for i, x := range w {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	if err := os.WriteFile(filepath.Join(out, fmt.Sprintf("weights-%d.bin", env.Rank)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}
