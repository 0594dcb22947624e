package trainer

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// The data-parallel test: two processes (this test binary, as
// TestDataParallelRank) each hold half of a fixed batch, gather it, and
// learn from it k times over Gloo on loopback; their weights must equal
// those of one process learning from the whole batch, within 1e-5, and
// be bit-identical to each other.
const (
	dpUpdates = 3 // learn calls (k), each 2 epochs over 3 mini-batches
	dpGroups  = 5 // an odd count: the ranks' shares differ in size
	dpSamples = 4
)

// dpEstimators cover the critic-free path (grpo), PPO with a value head on
// the policy (gae), whose value loss is all-reduced too, and PPO during
// critic warm-up (gae-warmup), where the untied lm_head gets no gradient
// on any rank and must not be stepped (weight decay would move it).
var dpEstimators = []string{"grpo", "gae", "gae-warmup"}

// dpBatch is a fixed batch of two-turn trajectories: a two-token prompt, a
// first turn, a tool response (mask 0), a second turn; lengths, tokens and
// rewards drawn from a seeded RNG.
func dpBatch() []*trajectory.Trajectory {
	rng := rand.New(rand.NewPCG(7, 7))
	var out []*trajectory.Trajectory
	for g := 0; g < dpGroups; g++ {
		for s := 0; s < dpSamples; s++ {
			tr := &trajectory.Trajectory{ID: fmt.Sprintf("dp-%d-%d", g, s), Group: g, Sample: s, PromptLen: 2, Split: trajectory.Train,
				Stop: trajectory.StopAnswer, Turns: []trajectory.Turn{{ProcessReward: 0.1 * float64(rng.IntN(3))}, {}}}
			add := func(n int, mask uint8, turn int16) {
				for i := 0; i < n; i++ {
					tr.Tokens = append(tr.Tokens, int32(rng.IntN(banditVocab)))
					tr.Mask = append(tr.Mask, mask)
					tr.TurnOf = append(tr.TurnOf, turn)
					tr.Logprobs = append(tr.Logprobs, 0)
				}
			}
			add(2, 0, -1)
			add(1+rng.IntN(3), 1, 0)
			add(1+rng.IntN(3), 0, 0)
			add(1+rng.IntN(3), 1, 1)
			tr.Outcome = float64(rng.IntN(2))
			tr.Reward = tr.Outcome + tr.Turns[0].ProcessReward
			out = append(out, tr)
		}
	}
	return out
}

// dpLearn runs dpUpdates learn calls on batch with the trainer of g (nil:
// one process) and returns the policy's weights followed by the optimizer's
// step count of each parameter (a parameter stepped in one setting and not
// in the other shows there, even where weight decay barely moves it).
func dpLearn(t *testing.T, estimator string, g *dist.Group, batch []*trajectory.Trajectory) []float32 {
	tr := newBandit(t, strings.TrimSuffix(estimator, "-warmup"), func(c *config.Config) {
		c.Algorithm.MiniBatch = 8
		c.Algorithm.MicroBatch = 3
		c.Algorithm.Epochs = 2
		// Adam's first steps move each weight by about lr·sign(g), so the
		// float rounding that differs between the two ways of summing a
		// gradient reappears as a fraction of lr: measured 5e-7 here at lr
		// 1e-4, 5e-6 at 1e-3 and 4e-5 at the bandit's 1e-2 (linear in lr).
		c.Optim.LR, c.Optim.CriticLR = 1e-4, 1e-4
		c.Optim.WeightDecay = 0.1
		if strings.HasSuffix(estimator, "-warmup") {
			c.Algorithm.CriticWarmup = 100
		}
	})
	tr.dist = g
	if err := tr.syncReplicas(); err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= dpUpdates; k++ {
		m := map[string]float64{}
		if err := tr.learn(k, batch, m); err != nil {
			t.Fatalf("%s update %d: %v", estimator, k, err)
		}
		if m["groups_dropped"] != 0 || !(m["grad_norm"] > 0) {
			t.Fatalf("%s update %d: metrics %v", estimator, k, m)
		}
	}
	out := flatWeights(t, tr.learner.Policy())
	opt, _ := tr.learner.Optimizers()
	for i := 0; i < opt.NumParams(); i++ {
		st, err := opt.State(i)
		if err != nil {
			t.Fatal(err)
		}
		st.M.Free()
		st.V.Free()
		out = append(out, float32(st.Step))
	}
	return out
}

func TestDataParallelMatchesOneProcess(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	port, err := dist.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var wg sync.WaitGroup
	logs := make([]string, 2)
	errs := make([]error, 2)
	for r := 0; r < 2; r++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDataParallelRank$", "-test.v")
		e := dist.Env{Rank: r, World: 2, LocalRank: r, LocalWorld: 2, MasterAddr: "127.0.0.1", MasterPort: port}
		cmd.Env = append(append(os.Environ(), e.Vars()...), "AGENTRL_DP_OUT="+out)
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			b, err := cmd.CombinedOutput()
			logs[r], errs[r] = string(b), err
		}(r)
	}
	single := map[string][]float32{}
	for _, est := range dpEstimators {
		single[est] = dpLearn(t, est, nil, dpBatch())
	}
	wg.Wait()
	for r := range errs {
		if errs[r] != nil || !strings.Contains(logs[r], "--- PASS: TestDataParallelRank") {
			t.Fatalf("rank %d: %v\n%s", r, errs[r], logs[r])
		}
	}
	for _, est := range dpEstimators {
		ranks := make([][]float32, 2)
		for r := range ranks {
			ranks[r] = readFloats(t, filepath.Join(out, fmt.Sprintf("%s-%d.bin", est, r)))
		}
		if i := firstBitDiff(ranks[0], ranks[1]); i >= 0 {
			t.Errorf("%s: the ranks' weights differ at element %d: %v vs %v", est, i, ranks[0][i], ranks[1][i])
		}
		if len(ranks[0]) != len(single[est]) {
			t.Fatalf("%s: %d weights, one process has %d", est, len(ranks[0]), len(single[est]))
		}
		var worst, moved float64
		start := dpInitial(t, est)
		for i, w := range single[est] {
			worst = math.Max(worst, math.Abs(float64(ranks[0][i]-w)))
			if i < len(start) {
				moved = math.Max(moved, math.Abs(float64(w-start[i])))
			}
		}
		t.Logf("%s: max |2 ranks - 1 process| = %.2g; the update moved weights by up to %.2g", est, worst, moved)
		if worst > 1e-5 {
			t.Errorf("%s: 2 ranks and 1 process differ by %g (> 1e-5)", est, worst)
		}
		if moved < 5e-4 {
			t.Errorf("%s: the updates barely moved the weights (%g): the comparison would prove nothing", est, moved)
		}
	}
}

// dpInitial is the weights before any update.
func dpInitial(t *testing.T, estimator string) []float32 {
	return flatWeights(t, newBandit(t, strings.TrimSuffix(estimator, "-warmup")).learner.Policy())
}

// TestDataParallelRank is one rank of TestDataParallelMatchesOneProcess.
func TestDataParallelRank(t *testing.T) {
	out := os.Getenv("AGENTRL_DP_OUT")
	if out == "" {
		t.Skip("a rank of TestDataParallelMatchesOneProcess, run in its own process")
	}
	env, ok, err := dist.FromEnv()
	if err != nil || !ok {
		t.Fatalf("torchrun environment: %v (set: %v)", err, ok)
	}
	// Tiny buckets, so the gradient all-reduce sends many.
	g, err := dist.Join(env, dist.Options{Backend: "gloo", Device: torch.CPU, Timeout: time.Minute, BucketMB: 1.0 / 1024,
		Log: zerolog.Nop(), OnLost: func(err error) { fmt.Fprintln(os.Stderr, err); os.Exit(3) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, est := range dpEstimators {
		// This rank holds the groups of its parity, as after its rollouts.
		var mine []*trajectory.Trajectory
		for _, tr := range dpBatch() {
			if tr.Group%2 == env.Rank {
				mine = append(mine, tr)
			}
		}
		batch, _, err := gatherBatch(g, mine, rollout.Stats{})
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) != dpGroups*dpSamples {
			t.Fatalf("gathered %d trajectories, want %d", len(batch), dpGroups*dpSamples)
		}
		w := dpLearn(t, est, g, batch)
		b := make([]byte, 4*len(w))
		for i, v := range w {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		if err := os.WriteFile(filepath.Join(out, est+"-"+strconv.Itoa(env.Rank)+".bin"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}

func readFloats(t *testing.T, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
