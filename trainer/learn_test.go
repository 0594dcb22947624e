package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/learner"
	"github.com/agentrl/agentrl/trainer/models"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// The learning test is a contextual bandit over tokens: a two-token prompt
// naming one of two contexts, one sampled token per episode, reward 1 when
// that token is the context's good token and 0 otherwise. A tiny random
// model starts near uniform over its 16 tokens, so the expected reward
// starts near 1/16; every estimator must raise it well above that within
// banditIters iterations, in both contexts.
const (
	banditVocab   = 16
	banditGroups  = 8 // prompts per iteration, alternating between the contexts
	banditSamples = 4 // samples per prompt (the group)
	banditIters   = 20
	banditSeed    = 11
	banditLen     = 3 // prompt of two tokens + one sampled token
)

// banditPrompt and banditGood are each context's prompt and good token.
var (
	banditPrompt = [2][]int32{{1, 8}, {1, 9}}
	banditGood   = [2]int32{3, 6}
)

// banditChat renders the prompt of the context named in the user text;
// every token ends and closes the turn, so an episode is exactly one
// sampled token.
type banditChat struct{}

func (banditChat) Prompt(_, user string, _ []json.RawMessage) ([]int32, error) {
	var c int
	if _, err := fmt.Sscanf(user, "context %d", &c); err != nil || c < 0 || c > 1 {
		return nil, fmt.Errorf("bandit prompt %q: want context 0 or 1", user)
	}
	return append([]int32(nil), banditPrompt[c]...), nil
}

func (banditChat) Observation(_, _ []string, _ bool) []int32 { return nil }

func (banditChat) EndsTurn(int32) (bool, bool) { return true, true }

func (banditChat) Decode(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("t%d", id)
	}
	return strings.Join(parts, " ")
}

// banditEpisode pays 1 when the turn's single token is its context's good
// token.
type banditEpisode struct {
	good   string
	reward float64
}

func (e *banditEpisode) Step(_ context.Context, a envs.Action) (envs.StepResult, error) {
	if a.Text == e.good {
		e.reward = 1
	}
	return envs.StepResult{Done: true, Stop: trajectory.StopAnswer}, nil
}

func (e *banditEpisode) Outcome() (float64, map[string]float64) { return e.reward, nil }

// banditFactory starts task "c" (the context c) as an episode.
func banditFactory(task envs.Task) (rollout.Setup, error) {
	var c int
	if _, err := fmt.Sscanf(task.ID, "%d", &c); err != nil || c < 0 || c > 1 {
		return rollout.Setup{}, fmt.Errorf("bandit task %q: want context 0 or 1", task.ID)
	}
	ep := &banditEpisode{good: fmt.Sprintf("t%d", banditGood[c])}
	return rollout.Setup{User: fmt.Sprintf("context %d", c), Env: ep}, nil
}

// banditConfig is the run config of the bandit: the real algorithm and
// optimiser settings at a learning rate a tiny model learns a bandit with
// in a few dozen steps. gae uses a value head on the policy (shared critic).
func banditConfig(estimator string) config.Config {
	c := config.Default()
	c.Run.Seed = banditSeed
	c.Run.Iterations = banditIters
	c.Algorithm.Estimator = estimator
	c.Algorithm.MiniBatch = 16 // two optimizer steps per iteration
	c.Algorithm.MicroBatch = 8 // two micro-batches per step (gradient accumulation)
	c.Model.Critic = "shared"
	c.Optim.LR = 1e-2
	c.Optim.CriticLR = 1e-2
	c.Rollout.BatchSize = banditGroups
	c.Rollout.GroupSize = banditSamples
	c.Rollout.Temperature = 1
	c.Rollout.Deterministic = true
	c.Env.MaxTurnTokens = 1
	c.Env.MaxTokens = banditLen
	return c
}

// newBandit builds the part of a Trainer that learn needs: a tiny random
// Qwen2 policy (with a value head for gae), its optimizers, the decode
// engine and the run RNG. Nothing else of New (data, tools, store) is made.
// tweaks change the config first.
func newBandit(t *testing.T, estimator string, tweaks ...func(*config.Config)) *Trainer {
	t.Helper()
	return newBanditOn(t, nil, estimator, tweaks...)
}

// newBanditOn is newBandit as a rank of the data-parallel group g (nil:
// one process): its learner and optimizers work over g.
func newBanditOn(t *testing.T, g *dist.Group, estimator string, tweaks ...func(*config.Config)) *Trainer {
	t.Helper()
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	cfg := banditConfig(estimator)
	for _, f := range tweaks {
		f(&cfg)
	}
	tr := &Trainer{cfg: cfg, log: zerolog.Nop(), pcg: rand.NewPCG(uint64(cfg.Run.Seed), 0x5eed), dist: g}
	tr.rng = rand.New(tr.pcg)
	tr.batches = lockstep{tr} // as New sets it
	mode := models.CriticMode(cfg)
	mc := torch.Config{ModelType: "qwen2", Vocab: banditVocab, Hidden: 32, Intermediate: 64, Layers: 1, Heads: 2,
		KVHeads: 1, HeadDim: 16, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 16}
	policy, err := torch.NewRandomModel(mc, torch.Float32, torch.CPU, mode == learner.SharedCritic, uint64(cfg.Run.Seed))
	if err != nil {
		t.Fatal(err)
	}
	var critic *torch.Model
	if mode == learner.SeparateCritic {
		if critic, err = torch.NewRandomModel(mc, torch.Float32, torch.CPU, true, uint64(cfg.Run.Seed)+1); err != nil {
			t.Fatal(err)
		}
	}
	if tr.models.learner, err = learner.New(policy, critic, mode, models.LearnerSettings(cfg), g, tr.rng); err != nil {
		t.Fatal(err)
	}
	// No models.Set (it loads its models from files): the learner is freed
	// here, after the sampler that decodes from its policy.
	t.Cleanup(func() {
		tr.Close()
		tr.models.learner.Close()
	})
	if tr.sampler, err = agent.NewSampler(policy, torch.Float32, agent.Mode{}, banditGroups*banditSamples, cfg.Env.MaxTokens); err != nil {
		t.Fatal(err)
	}
	return tr
}

// banditTrajectories samples banditGroups x banditSamples episodes with
// the rollout scheduler. It returns the trajectories and the mean reward
// of each context.
func banditTrajectories(t *testing.T, tr *Trainer, iter int) (trs []*trajectory.Trajectory, reward [2]float64) {
	t.Helper()
	reqs := make([]rollout.Request, banditGroups)
	for g := range reqs {
		reqs[g] = rollout.Request{Task: envs.Task{ID: fmt.Sprint(g % 2)}, Group: g, Samples: banditSamples}
	}
	opt := tr.rolloutOptions(iter, trajectory.Train, rollout.Options{Sampling: decoding.Sampling{Temperature: tr.cfg.Rollout.Temperature}})
	trs, _, err := rollout.Run(context.Background(), tr.sampler.Decoder(), banditChat{}, banditFactory, reqs, opt)
	if err != nil {
		t.Fatalf("iteration %d rollout: %v", iter, err)
	}
	if len(trs) != banditGroups*banditSamples {
		t.Fatalf("iteration %d: %d trajectories, want %d", iter, len(trs), banditGroups*banditSamples)
	}
	for _, x := range trs {
		if x.Stop != trajectory.StopAnswer || x.ActionTokens() != 1 || len(x.Tokens) != banditLen {
			t.Fatalf("iteration %d: %s stopped %q (%s) with %d tokens, want one sampled token after the prompt",
				iter, x.ID, x.Stop, x.Error, len(x.Tokens))
		}
		reward[x.Group%2] += x.Reward / (banditGroups / 2 * banditSamples)
	}
	return trs, reward
}

// banditIteration samples an iteration's episodes (banditTrajectories) and
// learns from them with the trainer's own learn (old logprobs, values,
// advantages, PPO update). It returns the trajectories and the mean reward
// of each context.
func banditIteration(t *testing.T, tr *Trainer, iter int) (trs []*trajectory.Trajectory, reward [2]float64) {
	t.Helper()
	trs, reward = banditTrajectories(t, tr, iter)
	m := map[string]float64{}
	if err := tr.learn(iter, trs, m); err != nil {
		t.Fatalf("iteration %d learn: %v", iter, err)
	}
	if m["lr"] != tr.cfg.Optim.LR {
		t.Fatalf("iteration %d: lr %v, want the constant %v", iter, m["lr"], tr.cfg.Optim.LR)
	}
	tr.state.Iteration = iter
	return trs, reward
}

// banditSeqs are one sequence per context: its prompt and its good token.
func banditSeqs() []*trajectory.Trajectory {
	out := make([]*trajectory.Trajectory, 2)
	for c := range out {
		out[c] = &trajectory.Trajectory{Tokens: append(append([]int32(nil), banditPrompt[c]...), banditGood[c])}
	}
	return out
}

// banditGoodProb is the policy's probability of each context's good token
// after its prompt, from the training forward (temperature 1).
func banditGoodProb(t *testing.T, tr *Trainer) [2]float64 {
	t.Helper()
	lp, err := learner.TokenLogprobs(nil, tr.models.learner.Policy(), banditSeqs(), 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	var p [2]float64
	for c := range p {
		p[c] = math.Exp(float64(lp[c][banditLen-1]))
	}
	return p
}

// Every estimator, and GRPO with each policy loss, raises the bandit's
// mean reward from about 1/16 to well above 1/2 in both contexts within
// banditIters iterations, through the real rollout, advantage, loss and
// optimizer code.
func TestLearnBandit(t *testing.T) {
	type run struct{ name, est, loss string }
	runs := []run{{"gae", "gae", "ppo"}, {"grpo", "grpo", "ppo"}, {"rloo", "rloo", "ppo"}, {"reinforce_pp", "reinforce_pp", "ppo"},
		{"reinforce_pp_baseline", "reinforce_pp_baseline", "ppo"}, {"gigpo", "gigpo", "ppo"}, {"turn_rloo", "turn_rloo", "ppo"},
		{"grpo+gspo", "grpo", "gspo"}, {"grpo+cispo", "grpo", "cispo"}}
	for _, r := range runs {
		est := r.est
		t.Run(r.name, func(t *testing.T) {
			tr := newBandit(t, est, func(c *config.Config) { c.Algorithm.PolicyLoss = r.loss })
			// Weights ~ N(0, 0.02) and hidden 32 give logits of std about
			// 0.02*sqrt(32) = 0.11 around one mean: p(good) = 1/16 = 0.0625
			// within a factor e^(±0.3); 0.1 is a loose upper bound.
			for c, p := range banditGoodProb(t, tr) {
				if p > 0.1 {
					t.Fatalf("context %d: initial p(good) = %.3f, want about 1/16", c, p)
				}
			}
			var means [banditIters][2]float64
			for it := 1; it <= banditIters; it++ {
				_, means[it-1] = banditIteration(t, tr, it)
			}
			p := banditGoodProb(t, tr)
			t.Logf("%s: mean reward (context 0, 1) by iteration %.2f; p(good) at the end %.3f", r.name, means, p)
			for c := range 2 {
				// The first two iterations sample 32 episodes of the context
				// at p about 1/16: 2 hits expected; 8 or more (0.25) has
				// probability below 1e-3 under Binomial(32, 0.07).
				if start := (means[0][c] + means[1][c]) / 2; start >= 0.25 {
					t.Errorf("context %d: mean reward of the first two iterations %.3f, want about 1/16", c, start)
				}
				last := 0.0
				for _, m := range means[banditIters-5:] {
					last += m[c] / 5
				}
				if last < 0.6 {
					t.Errorf("context %d: mean reward over the last 5 iterations %.3f, want > 0.6", c, last)
				}
				if p[c] < 0.6 {
					t.Errorf("context %d: final p(good) = %.3f, want > 0.6", c, p[c])
				}
			}
			if est == "gae" {
				checkBanditValues(t, tr, p)
			}
		})
	}
}

// checkBanditValues: the shared value head learned the expected reward.
// The value before the sampled token is the state after the prompt, whose
// return is the reward, 1 with probability p(good): its target is p(good),
// about 1 by now. An untrained head (weights ~ N(0, 0.02)) stays near 0;
// the clipped value loss moves V at most value_clip = 0.2 per iteration
// from the rollout's values and lags the policy, so within 0.5 of the
// target is what "learned" can ask (seeds 1-8 give 0.70-1.22).
func checkBanditValues(t *testing.T, tr *Trainer, p [2]float64) {
	t.Helper()
	vals, err := learner.TokenValues(nil, tr.models.learner.Policy(), banditSeqs(), 2)
	if err != nil {
		t.Fatal(err)
	}
	for c := range p {
		v := float64(vals[c][banditLen-1])
		t.Logf("context %d: value after the prompt %.3f, p(good) %.3f", c, v, p[c])
		if math.Abs(v-p[c]) > 0.5 {
			t.Errorf("context %d: value after the prompt %.3f, want about p(good) = %.3f", c, v, p[c])
		}
	}
}

// Two bandit runs with the same seed sample the same tokens and end with
// bit-identical weights.
func TestLearnDeterministic(t *testing.T) {
	run := func() ([]int32, []float32) {
		tr := newBandit(t, "gae")
		var toks []int32
		for it := 1; it <= 3; it++ {
			trs, _ := banditIteration(t, tr, it)
			for _, x := range trs {
				toks = append(toks, x.Tokens[len(x.Tokens)-1])
			}
		}
		return toks, flatWeights(t, tr.models.learner.Policy())
	}
	toksA, wA := run()
	toksB, wB := run()
	if fmt.Sprint(toksA) != fmt.Sprint(toksB) {
		t.Fatalf("sampled tokens differ between two seeded runs:\n%v\n%v", toksA, toksB)
	}
	if i := firstBitDiff(wA, wB); i >= 0 {
		t.Fatalf("weights differ between two seeded runs at element %d: %v vs %v", i, wA[i], wB[i])
	}
}

// flatWeights concatenates every parameter of m in Names order.
func flatWeights(t *testing.T, m *torch.Model) []float32 {
	t.Helper()
	ps, err := m.Params()
	if err != nil {
		t.Fatal(err)
	}
	var out []float32
	for _, p := range ps {
		v, err := p.Float32s()
		p.Free()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v...)
	}
	return out
}

// firstBitDiff is the first index where a and b differ bitwise, -1 when equal
// (and of one length).
func firstBitDiff(a, b []float32) int {
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}
