package trainer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/tensorboard"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/program"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trainer/store"
)

// Bar is a progress bar (the CLI's, or none).
type Bar interface {
	Add(n int)
	Done()
}

// ProgressFunc starts a progress bar with a label and a total.
type ProgressFunc func(label string, total int) Bar

type noBar struct{}

func (noBar) Add(int) {}
func (noBar) Done()   {}

// Trainer is one run: the loop, its data, agent (tools, tokenizer, chat
// format, episode settings), sampler and store; its models (the learner's
// policy, critic and reference, a LoRA base) belong to models
// (models.go), which loads, restores and exports them. All its methods
// must be called from one goroutine locked to its OS thread (libtorch
// keeps per-thread state); with rollout.max_staleness > 0, Run starts the
// rollout role on a second one (async.go).
type Trainer struct {
	cfg   config.Config
	log   zerolog.Logger
	dir   string
	data  *datasets
	agent *agent.Agent

	models  *models         // owns the policy, critic, reference, LoRA base and their optimizers
	sampler *agent.Sampler  // decodes the rollouts, from the policy or a copy in rollout.dtype
	program *program.Runner // runs agent.command's episodes through the gateway; nil: the built-in loop
	episode rollout.Factory // starts the policy's own episodes: the agent's (a test may slow its tools down)
	batches batches         // the loop's training batches and the rollouts' decoder: lockstep, or the rollout role while the loop runs

	store  *store.Store        // rank 0 only
	writer *store.Writer       // rank 0 only
	tb     *tensorboard.Writer // rank 0 only: <run>/tb, the metrics for TensorBoard
	dist   *dist.Group         // nil: a single process

	pcg   *rand.PCG
	rng   *rand.Rand
	echo  *algo.EchoTrap // watches the echo-trap signals; made on the first update
	state runState
	bar   ProgressFunc
	// stop is Run's stop (New's until Run): asked, the run ends after the
	// current iteration, whose dynamic sampling draws no more, and a wait
	// for the store's write lock ends.
	stop stopSignal
	// graphsOff is why the sampler's CUDA graphs went off, once logged.
	graphsOff string
}

// runState is what a checkpoint needs besides the weights to continue a run
// exactly: the next iteration, the data cursor and the optimizer step.
type runState struct {
	Iteration int `json:"iteration"` // last finished iteration (0 = none)
	dataPos
	OptSteps int    `json:"opt_steps"` // policy optimizer steps taken
	RNG      []byte `json:"rng"`       // PCG state
	WarmedUp bool   `json:"warmed_up"` // the supervised warm start is done
}

// dataPos is where the run is in its training tasks: the prompts before
// Cursor in Order are consumed.
type dataPos struct {
	Cursor int   `json:"cursor"` // position in Order
	Order  []int `json:"order"`  // shuffled training-task order of this pass
	Pass   int   `json:"pass"`   // passes over the training tasks so far
}

// clone is a copy of p that shares nothing with it.
func (p dataPos) clone() dataPos {
	p.Order = append([]int(nil), p.Order...)
	return p
}

// Options are what the CLI hands the trainer besides the config.
type Options struct {
	Log      zerolog.Logger
	Progress ProgressFunc
	GitRev   string
	// Dist is the data-parallel job this process is a rank of (nil: it
	// trains alone). Rank 0 owns the store, the logs, the checkpoints and
	// the final policy; every rank keeps identical weights.
	Dist *dist.Group
	// Stop, asked (closed) while New waits for another connection's write
	// lock on the store, ends that wait: New returns an error wrapping
	// store.ErrLockWaitStopped. It is Run's stop too when Run is given none.
	Stop <-chan struct{}
}

// RunDir is where a run keeps everything: <run.dir>/<run.name>.
func RunDir(cfg config.Config) string { return filepath.Join(cfg.Run.Dir, cfg.Run.Name) }

// New prepares a run: data (and the synthetic world's index), the agent
// (tools, tokenizer, chat format, episode settings), policy (loaded,
// created, or restored from the run's latest checkpoint when
// cfg.Run.Resume), reference, critic, optimizers, sampler and store.
func New(ctx context.Context, cfg config.Config, o Options) (*Trainer, error) {
	if err := torch.Check(); err != nil {
		return nil, err
	}
	t := &Trainer{cfg: cfg, log: o.Log, dir: RunDir(cfg), bar: o.Progress, dist: o.Dist, stop: o.Stop}
	t.batches = lockstep{t}
	if cfg.Rollout.MaxStaleness > 0 && t.dist.World() > 1 && cfg.Algorithm.DynamicSampling {
		return nil, fmt.Errorf("algorithm.dynamic_sampling %s", config.AsyncDynamicSamplingRanks(cfg.Rollout.MaxStaleness, t.dist.World()))
	}
	if t.bar == nil || !t.dist.Leader() {
		t.bar = func(string, int) Bar { return noBar{} }
	}
	if err := os.MkdirAll(t.dir, 0o755); err != nil {
		return nil, err
	}
	device, err := torch.ParseDevice(cfg.Device.Device)
	if err != nil {
		return nil, err
	}
	dtype, err := torch.ParseDType(cfg.Device.DType)
	if err != nil {
		return nil, err
	}
	threads := cfg.Device.Threads
	if threads <= 0 {
		threads = numCPU()
	}
	if err := torch.SetThreads(threads); err != nil {
		return nil, err
	}
	t.log.Info().Str("device", device.String()).Int("threads", torch.Threads()).Msg("torch ready")
	if err := torch.ManualSeed(uint64(cfg.Run.Seed)); err != nil {
		return nil, err
	}
	t.pcg = rand.NewPCG(uint64(cfg.Run.Seed), 0x5eed)
	t.rng = rand.New(t.pcg)
	ok := false
	defer func() {
		if !ok {
			t.Close()
		}
	}()
	// Ranks other than 0 keep what they build (the synthetic world's
	// index) in a folder of their own.
	local := t.dir
	if !t.dist.Leader() {
		local = filepath.Join(t.dir, "ranks", fmt.Sprint(t.dist.Rank()))
		if err := os.MkdirAll(local, 0o755); err != nil {
			return nil, err
		}
	}
	if t.data, err = loadData(ctx, cfg, local); err != nil {
		return nil, err
	}
	// Rank 0 decides where the run starts from; the others load the same
	// checkpoint (a resumed multi-node run needs the run folder on a
	// shared filesystem).
	var ck string
	if t.dist.Leader() {
		var warning string
		if ck, warning, err = FindCheckpoint(t.dir); err != nil {
			return nil, err
		}
		if warning != "" && cfg.Run.Resume {
			t.log.Warn().Msg(warning)
		}
		if cfg.Run.Resume && ck == "" {
			return nil, fmt.Errorf("run %s: --resume given but %s has no checkpoint", cfg.Run.Name, t.dir)
		}
		if !cfg.Run.Resume && ck != "" {
			return nil, fmt.Errorf("run %s already has checkpoints in %s: resume it with --resume, or choose another run.name", cfg.Run.Name, t.dir)
		}
	}
	if ck, err = dist.FromLeader(t.dist, ck); err != nil {
		return nil, err
	}
	if ck != "" && !t.dist.Leader() {
		if _, err := os.Stat(filepath.Join(ck, "state.json")); err != nil {
			return nil, fmt.Errorf("rank %d cannot read rank 0's checkpoint (a resumed multi-node run needs the run folder on a shared filesystem): %w", t.dist.Rank(), err)
		}
	}
	if err := t.buildAgent(ctx, ck); err != nil {
		return nil, err
	}
	if t.models, err = newModels(cfg, t.dir, t.dist, t.agent.Tokenizer, device, dtype, t.rng, ck); err != nil {
		return nil, err
	}
	if ck != "" {
		if err := t.restore(ck); err != nil {
			return nil, err
		}
	}
	if err := t.models.syncReplicas(); err != nil {
		return nil, err
	}
	step, err := t.models.learner.OptimizerStep()
	if err != nil {
		return nil, err
	}
	t.log.Info().Str("adamw", step).Msg("optimizer ready")
	rdt := dtype
	if dt := cfg.Rollout.DType; dt != "auto" {
		if rdt, err = torch.ParseDType(dt); err != nil {
			return nil, err
		}
	}
	newSampler := agent.NewSampler
	if cfg.Rollout.MaxStaleness > 0 { // the rollout role decodes while the policy is updated
		newSampler = agent.NewCopySampler
	}
	if t.sampler, err = newSampler(t.models.learner.Policy(), rdt, agent.ModeOf(cfg), max(cfg.Rollout.Slots, cfg.Rollout.GroupSize), cfg.Env.MaxTokens+1); err != nil {
		return nil, err
	}
	if t.dist.Leader() {
		if err := t.openStore(o.GitRev, ck != ""); err != nil {
			return nil, err
		}
	}
	ok = true
	return t, nil
}

// buildAgent assembles the run's agent: its tokenizer is the
// checkpoint's, model.path's, or the synthetic world's word-level one.
func (t *Trainer) buildAgent(ctx context.Context, ck string) error {
	dir := t.cfg.Model.Path
	if ck != "" {
		dir = filepath.Join(ck, "policy")
	}
	var err error
	spec := agentSpec(t.cfg, t.data, dir)
	spec.RewardErrors = func(err error) { t.log.Warn().Err(err).Msg("external reward failed (counted 0)") }
	t.agent, err = agent.New(ctx, spec)
	if err != nil {
		return err
	}
	t.episode = t.agent.Episode
	if len(t.cfg.Agent.Command) > 0 {
		t.program = &program.Runner{Cfg: t.cfg.Agent, Format: t.agent.Format, Rewards: t.cfg.Env.Rewards}
	}
	return nil
}

// Close releases models, sampler and store (flushing pending writes).
func (t *Trainer) Close() error {
	var first error
	t.agent.Close()
	if t.writer != nil {
		first = t.writer.Close()
		t.writer = nil
	}
	if t.store != nil {
		if err := t.store.Close(); first == nil {
			first = err
		}
		t.store = nil
	}
	if t.tb != nil {
		if err := t.tb.Close(); first == nil {
			first = err
		}
		t.tb = nil
	}
	t.sampler.Free()
	t.models.close()
	return first
}

// Dir is the run's folder.
func (t *Trainer) Dir() string { return t.dir }

// StorePath is the run's trajectory store ("" on ranks other than 0).
func (t *Trainer) StorePath() string {
	if t.store == nil {
		return ""
	}
	return t.store.Path()
}
