package trainer

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/episodes"
	"github.com/agentrl/agentrl/trainer/learner"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// The data-parallel test: two processes (this test binary, as
// TestDataParallelRank) each hold half of a fixed batch, gather it, and
// learn from it k times over Gloo on loopback, with the optimizer state
// whole on each rank (dist.zero 0) and sharded (ZeRO 1 and 2); their
// weights must equal those of one process learning from the whole batch,
// within 1e-5, with the same optimizer step counts, and be bit-identical
// to each other. Checkpoints cross between the two: one written by two
// ZeRO-2 ranks resumes in one process (dist.zero 0), one written by one
// process resumes on two ZeRO-2 ranks, each ending like the uninterrupted
// run it continues.
const (
	dpUpdates = 3 // learn calls (k), each 2 epochs over mini-batches of 8
	dpGroups  = 5 // an odd count: the ranks' shares differ in size
	dpSamples = 4
	dpSaveAt  = 1 // the resumed runs' checkpoint is taken after this learn call
	// dpTrajectories are the batch's: each group's first episode has two
	// segments (dpSegment).
	dpTrajectories = dpGroups * (dpSamples + 1)
)

// dpEstimators cover the critic-free path (grpo), PPO with a value head on
// the policy (gae), whose value loss is all-reduced too, PPO during
// critic warm-up (gae-warmup), where the untied lm_head gets no gradient
// on any rank and must not be stepped (weight decay would move it), and
// GRPO in one step over the whole batch (dpOnPolicy), whose old logprobs
// come from the step's training forward, each rank's from its shard.
var dpEstimators = []string{"grpo", "gae", "gae-warmup", dpOnPolicy}

// dpOnPolicy is GRPO with one epoch of one mini-batch of the whole batch.
const dpOnPolicy = "grpo-onestep"

// dpEstimator is the estimator of an entry of dpEstimators.
func dpEstimator(entry string) string {
	est, _, _ := strings.Cut(entry, "-")
	return est
}

// dpStages are the dist.zero settings the ranks run.
var dpStages = []int{0, 1, 2}

// dpResumed is the estimator and ZeRO stage of the resume tests.
const (
	dpResumedEstimator = "gae"
	dpResumedStage     = 2
)

// dpBatch is a fixed batch of two-turn trajectories: a two-token prompt, a
// first turn, a tool response (mask 0), a second turn; lengths, tokens and
// rewards drawn from a seeded RNG. Each group's first episode has a second
// segment (dpSegment).
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
			if s == 0 {
				out = append(out, dpSegment(tr, rng))
			}
		}
	}
	return out
}

// dpSegment is a second segment of tr's episode, as a rewritten context
// makes one: tr's prompt and first turn as its context (mask 0), then a
// turn of its own, with the episode's outcome and reward. The learner
// trains the two packed (algorithm.pack_segments), on one rank or on two.
func dpSegment(tr *trajectory.Trajectory, rng *rand.Rand) *trajectory.Trajectory {
	first := slices.Index(tr.TurnOf, 0)
	for first < len(tr.Mask) && tr.Mask[first] == 1 {
		first++
	}
	seg := &trajectory.Trajectory{ID: tr.ID + ".1", Group: tr.Group, Sample: tr.Sample, PromptLen: first, Split: tr.Split,
		Stop: tr.Stop, Turns: []trajectory.Turn{{}}, Outcome: tr.Outcome, Reward: tr.Reward,
		Tokens: slices.Clone(tr.Tokens[:first]), Mask: make([]uint8, first), TurnOf: make([]int16, first), Logprobs: make([]float32, first)}
	for i := range seg.TurnOf {
		seg.TurnOf[i] = -1
	}
	for range 1 + rng.IntN(3) {
		seg.Tokens = append(seg.Tokens, int32(rng.IntN(banditVocab)))
		seg.Mask, seg.TurnOf, seg.Logprobs = append(seg.Mask, 1), append(seg.TurnOf, 0), append(seg.Logprobs, 0)
	}
	return seg
}

// dpTrainer is the bandit trainer of the data-parallel tests on g (nil:
// one process), with the optimizer state as dist.zero says.
func dpTrainer(t *testing.T, estimator string, zero int, g *dist.Group) *Trainer {
	tr := newBanditOn(t, g, dpEstimator(estimator), func(c *config.Config) {
		c.Algorithm.MiniBatch = 8
		c.Algorithm.MicroBatch = 3
		c.Algorithm.Epochs = 2
		// Adam's first steps move each weight by about lr·sign(g), so the
		// float rounding that differs between the two ways of summing a
		// gradient reappears as a fraction of lr: measured 5e-7 here at lr
		// 1e-4, 5e-6 at 1e-3 and 4e-5 at the bandit's 1e-2 (linear in lr).
		c.Optim.LR, c.Optim.CriticLR = 1e-4, 1e-4
		c.Optim.WeightDecay = 0.1
		c.Dist.Zero = zero
		if strings.HasSuffix(estimator, "-warmup") {
			c.Algorithm.CriticWarmup = 100
		}
		if estimator == dpOnPolicy {
			// One step per update instead of six: a higher rate, so that
			// three of them move the weights as far (the rounding grows
			// with it, see above).
			c.Algorithm.Epochs, c.Algorithm.MiniBatch = 1, dpTrajectories
			c.Optim.LR = 3e-4
		}
	})
	if err := tr.dist.Broadcast(tr.models.learner.Params()); err != nil { // as New does
		t.Fatal(err)
	}
	return tr
}

// dpRun makes learn calls from to to (inclusive) on batch.
func dpRun(t *testing.T, tr *Trainer, batch []*trajectory.Trajectory, from, to int) {
	for k := from; k <= to; k++ {
		m := map[string]float64{}
		if err := tr.learn(k, batch, m); err != nil {
			t.Fatalf("update %d: %v", k, err)
		}
		// The segments were packed: fewer tokens ran than as samples.
		if m["groups_dropped"] != 0 || !(m["grad_norm"] > 0) || !(m["update_tokens"] < m["update_tokens_unpacked"]) {
			t.Fatalf("update %d: metrics %v", k, m)
		}
	}
}

// dpOutput is the policy's weights followed by the optimizer's step count
// of each parameter (a parameter stepped in one setting and not in the
// other shows there, even where weight decay barely moves it). With a
// sharded state every rank must call it.
func dpOutput(t *testing.T, tr *Trainer) []float32 {
	out := flatWeights(t, tr.models.learner.Policy())
	opt, _ := tr.models.learner.Optimizers()
	for i := 0; i < opt.NumParams(); i++ {
		st, err := opt.State(i)
		if err != nil {
			t.Fatal(err)
		}
		st.Free()
		out = append(out, float32(st.Step))
	}
	return out
}

// dpLearn runs dpUpdates learn calls on batch with the trainer of g (nil:
// one process) and returns dpOutput.
func dpLearn(t *testing.T, estimator string, zero int, g *dist.Group, batch []*trajectory.Trajectory) []float32 {
	tr := dpTrainer(t, estimator, zero, g)
	dpRun(t, tr, batch, 1, dpUpdates)
	return dpOutput(t, tr)
}

// dpSave writes a checkpoint of tr into dir as the trainer does: the
// policy, the optimizer state gathered whole (every rank takes part), the
// optimizer step count and the RNG; rank 0 writes.
func dpSave(t *testing.T, tr *Trainer, dir string) {
	st, err := tr.models.learner.GatherOptimizers()
	if err != nil {
		t.Fatal(err)
	}
	if !tr.dist.Leader() {
		return
	}
	if err := tr.models.learner.Policy().Save(filepath.Join(dir, "policy")); err != nil {
		t.Fatal(err)
	}
	if err := tr.models.learner.Save(dir, st); err != nil {
		t.Fatal(err)
	}
	rng, err := tr.pcg.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rng"), rng, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "steps"), []byte(strconv.Itoa(tr.models.learner.Steps())), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dpLoad restores what dpSave wrote into tr, as a resume does.
func dpLoad(t *testing.T, tr *Trainer, dir string) {
	m, err := torch.LoadModel(filepath.Join(dir, "policy"), torch.Float32, torch.CPU, tr.models.learner.Mode() == learner.SharedCritic)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if err := tr.models.learner.Policy().CopyWeightsFrom(m); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "steps"))
	if err != nil {
		t.Fatal(err)
	}
	steps, _ := strconv.Atoi(string(b))
	if err := tr.models.learner.Load(dir, steps); err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(filepath.Join(dir, "rng")); err != nil {
		t.Fatal(err)
	}
	if err := tr.pcg.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
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
	// The checkpoint of one process that two ranks resume from.
	one := dpTrainer(t, dpResumedEstimator, 0, nil)
	dpRun(t, one, dpBatch(), 1, dpSaveAt)
	dpSave(t, one, filepath.Join(out, "one"))
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
		single[est] = dpLearn(t, est, 0, nil, dpBatch())
	}
	singleOld := dpOnPolicyUpdate(t, nil, dpBatch())
	wg.Wait()
	for r := range errs {
		if errs[r] != nil || !strings.Contains(logs[r], "--- PASS: TestDataParallelRank") {
			t.Fatalf("rank %d: %v\n%s", r, errs[r], logs[r])
		}
	}
	for _, zero := range dpStages {
		for _, est := range dpEstimators {
			ranks := make([][]float32, 2)
			for r := range ranks {
				ranks[r] = readFloats(t, filepath.Join(out, fmt.Sprintf("%s-%d-%d.bin", est, zero, r)))
			}
			what := fmt.Sprintf("%s, dist.zero %d", est, zero)
			if i := firstBitDiff(ranks[0], ranks[1]); i >= 0 {
				t.Errorf("%s: the ranks' weights differ at element %d: %v vs %v", what, i, ranks[0][i], ranks[1][i])
			}
			dpCompare(t, what, ranks[0], single[est], dpInitial(t, est))
		}
	}
	// Every rank holds every trajectory's old logprobs and entropies from
	// an on-policy update, though each computed its shard's only.
	for r := 0; r < 2; r++ {
		got := readFloats(t, filepath.Join(out, fmt.Sprintf("onpolicy-%d.bin", r)))
		if d := maxDiff(got, singleOld); d > 1e-5 {
			t.Errorf("rank %d: the on-policy update's train logprobs and entropies differ from one process's by %g (> 1e-5)", r, d)
		}
	}
	// Two ZeRO-2 ranks' checkpoint, resumed in one process with the whole
	// state (dist.zero 0): the file format does not depend on the ranks.
	two := readFloats(t, filepath.Join(out, fmt.Sprintf("%s-%d-0.bin", dpResumedEstimator, dpResumedStage)))
	tr := dpTrainer(t, dpResumedEstimator, 0, nil)
	dpLoad(t, tr, filepath.Join(out, "two"))
	dpRun(t, tr, dpBatch(), dpSaveAt+1, dpUpdates)
	dpCompare(t, "one process resumed from two ZeRO-2 ranks' checkpoint, against the two ranks", dpOutput(t, tr), two, nil)
	resumed := readFloats(t, filepath.Join(out, "resumed-0.bin"))
	dpCompare(t, "two ZeRO-2 ranks resumed from one process's checkpoint, against one process", resumed, single[dpResumedEstimator], nil)
}

// dpCompare checks got against want within 1e-5 (weights, then step
// counts, which must be equal), and, given the weights before the update,
// that the update moved them enough for the comparison to prove anything.
func dpCompare(t *testing.T, what string, got, want, start []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var worst, moved float64
	for i, w := range want {
		worst = math.Max(worst, math.Abs(float64(got[i]-w)))
		if i < len(start) {
			moved = math.Max(moved, math.Abs(float64(w-start[i])))
		}
	}
	t.Logf("%s: max difference %.2g", what, worst)
	if worst > 1e-5 {
		t.Errorf("%s: differs by %g (> 1e-5)", what, worst)
	}
	if start != nil && moved < 5e-4 {
		t.Errorf("%s: the updates barely moved the weights (%g): the comparison would prove nothing", what, moved)
	}
}

// dpInitial is the weights before any update.
func dpInitial(t *testing.T, estimator string) []float32 {
	return flatWeights(t, newBandit(t, dpEstimator(estimator)).models.learner.Policy())
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
	// This rank holds the groups of its parity, as after its rollouts.
	var mine []*trajectory.Trajectory
	for _, tr := range dpBatch() {
		if tr.Group%2 == env.Rank {
			mine = append(mine, tr)
		}
	}
	batch, _, err := episodes.Gather(g, mine, rollout.Stats{})
	if err != nil {
		t.Fatal(err)
	}
	if len(batch) != dpTrajectories {
		t.Fatalf("gathered %d trajectories, want %d", len(batch), dpTrajectories)
	}
	write := func(name string, w []float32) {
		b := make([]byte, 4*len(w))
		for i, v := range w {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, zero := range dpStages {
		for _, est := range dpEstimators {
			write(fmt.Sprintf("%s-%d-%d.bin", est, zero, env.Rank), dpLearn(t, est, zero, g, batch))
		}
	}
	write(fmt.Sprintf("onpolicy-%d.bin", env.Rank), dpOnPolicyUpdate(t, g, batch))
	tr := dpTrainer(t, dpResumedEstimator, dpResumedStage, g)
	dpRun(t, tr, batch, 1, dpSaveAt)
	dpSave(t, tr, filepath.Join(out, "two"))
	tr = dpTrainer(t, dpResumedEstimator, dpResumedStage, g)
	dpLoad(t, tr, filepath.Join(out, "one"))
	dpRun(t, tr, batch, dpSaveAt+1, dpUpdates)
	write(fmt.Sprintf("resumed-%d.bin", env.Rank), dpOutput(t, tr))
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}

// dpOnPolicyUpdate runs one update of dpOnPolicy on batch with the learner
// of g (nil: one process), checks that it took the old logprobs from its
// step, and returns the trajectories' TrainLogprobs and Entropies, in the
// order of their ids.
func dpOnPolicyUpdate(t *testing.T, g *dist.Group, batch []*trajectory.Trajectory) []float32 {
	tr := dpTrainer(t, dpOnPolicy, 0, g)
	r, err := tr.models.learner.Update(1, learner.NewBatch(batch, tr.cfg.Algorithm.PackSegments))
	if err != nil {
		t.Fatal(err)
	}
	if !r.OldFromStep {
		t.Fatal("the on-policy update recomputed the old logprobs; want them from the step")
	}
	sorted := slices.Clone(batch)
	slices.SortFunc(sorted, func(a, b *trajectory.Trajectory) int { return strings.Compare(a.ID, b.ID) })
	var out []float32
	for _, x := range sorted {
		if len(x.TrainLogprobs) != len(x.Tokens) || len(x.Entropies) != len(x.Tokens) {
			t.Fatalf("%s: %d train logprobs and %d entropies for %d tokens", x.ID, len(x.TrainLogprobs), len(x.Entropies), len(x.Tokens))
		}
		out = append(append(out, x.TrainLogprobs...), x.Entropies...)
	}
	return out
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
