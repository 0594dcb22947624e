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
	port, err := dist.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	out, runs := t.TempDir(), t.TempDir()
	var wg sync.WaitGroup
	logs := make([]string, 2)
	errs := make([]error, 2)
	for r := 0; r < 2; r++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAsyncDataParallelRank$", "-test.v")
		e := dist.Env{Rank: r, World: 2, LocalRank: r, LocalWorld: 2, MasterAddr: "127.0.0.1", MasterPort: port}
		cmd.Env = append(append(os.Environ(), e.Vars()...), "AGENTRL_ASYNC_DP_OUT="+out, "AGENTRL_ASYNC_DP_RUNS="+runs)
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
			t.Fatalf("rank %d: %v\n%s", r, errs[r], logs[r])
		}
	}
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

// TestAsyncDataParallelRank is one rank of TestAsyncDataParallel: the job
// in the shared run folder, its log (JSON lines) and its final weights
// written to the test's output folder.
func TestAsyncDataParallelRank(t *testing.T) {
	out := os.Getenv("AGENTRL_ASYNC_DP_OUT")
	if out == "" {
		t.Skip("a rank of TestAsyncDataParallel, run in its own process")
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
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.New(logf), Dist: g})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background(), nil); err != nil {
		tr.Close()
		t.Fatal(err)
	}
	w := flatWeights(t, tr.learner.Policy())
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
