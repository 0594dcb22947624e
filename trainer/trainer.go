package trainer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/datasets"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/learner"
	"github.com/agentrl/agentrl/trainer/models"
	"github.com/agentrl/agentrl/trainer/program"
	"github.com/agentrl/agentrl/trainer/records"
	"github.com/agentrl/agentrl/trainer/rollout"
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
// format, episode settings), sampler and records; its models (the
// learner's policy, critic and reference, a LoRA base) belong to
// models.Set, which loads, checkpoints and exports them. All its methods
// must be called from one goroutine locked to its OS thread (libtorch
// keeps per-thread state); with rollout.max_staleness > 0, Run starts the
// rollout role on a second one (async.go).
type Trainer struct {
	cfg    config.Config
	log    zerolog.Logger
	dir    string
	device torch.Device
	data   *datasets.Sets
	agent  *agent.Agent

	models  heldModels            // the policy, critic, reference, LoRA base and their optimizers
	sampler *agent.Sampler        // decodes the rollouts, from the policy or a copy in rollout.dtype
	program *program.Runner       // runs agent.command's episodes through the gateway; nil: the built-in loop
	episode rollout.Factory       // starts the policy's own episodes: the agent's (a test may slow its tools down)
	batches batches               // the loop's training batches and the rollouts' decoder: lockstep, or the rollout role while the loop runs
	vllm    *rollout.VLLMRollouts // rollout.engine vllm: the server the rollouts sample on; nil: the built-in engine

	rec  *records.Records // rank 0 only: the store and TensorBoard
	dist *dist.Group      // nil: a single process

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

// heldModels are the run's models as the loop holds them: their owner
// (loading, checkpoints, export) and the learner it made, which updates
// them every iteration.
type heldModels struct {
	*models.Set
	learner *learner.Learner
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
	var err error
	if t.device, err = torch.ParseDevice(cfg.Device.Device); err != nil {
		return nil, err
	}
	dtype, err := torch.ParseDType(cfg.Device.DType)
	if err != nil {
		return nil, err
	}
	threads := cfg.Device.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	if err := torch.SetThreads(threads); err != nil {
		return nil, err
	}
	t.log.Info().Str("device", t.device.String()).Int("threads", torch.Threads()).Msg("torch ready")
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
	if t.data, err = datasets.Load(ctx, cfg, local); err != nil {
		return nil, err
	}
	ck, warning, err := models.Resume(cfg, t.dir, t.dist)
	if err != nil {
		return nil, err
	}
	if warning != "" {
		t.log.Warn().Msg(warning)
	}
	// The tokenizer is the checkpoint's, model.path's, or the synthetic
	// world's word-level one.
	tokDir := cfg.Model.Path
	if ck != "" {
		tokDir = filepath.Join(ck, "policy")
	}
	spec := t.data.AgentSpec(cfg, tokDir)
	spec.RewardErrors = func(err error) { t.log.Warn().Err(err).Msg("external reward failed (counted 0)") }
	if t.agent, err = agent.New(ctx, spec); err != nil {
		return nil, err
	}
	t.episode = t.agent.Episode
	if len(cfg.Agent.Command) > 0 {
		t.program = &program.Runner{Cfg: cfg.Agent, Format: t.agent.Format, Rewards: cfg.Env.Rewards}
	}
	set, err := models.New(cfg, t.dir, t.dist, t.agent.Tokenizer, t.device, dtype, t.rng, ck)
	if err != nil {
		return nil, err
	}
	t.models = heldModels{set, set.Learner()}
	if ck != "" { // the weights were loaded with the models
		if err := t.state.read(ck, t.pcg); err != nil {
			return nil, err
		}
		if err := t.models.Restore(ck, t.state.OptSteps); err != nil {
			return nil, err
		}
	}
	if err := t.models.SyncReplicas(); err != nil {
		return nil, err
	}
	step, err := t.models.learner.OptimizerStep()
	if err != nil {
		return nil, err
	}
	t.log.Info().Str("adamw", step).Msg("optimizer ready")
	if t.sampler, err = agent.NewRolloutSampler(cfg, t.models.learner.Policy(), dtype); err != nil {
		return nil, err
	}
	if cfg.Rollout.Engine == "vllm" {
		if t.vllm, err = startVLLM(t); err != nil {
			return nil, err
		}
	}
	if t.dist.Leader() {
		if t.rec, err = records.Open(cfg, t.dir, o.GitRev, ck != "", t.state.Iteration, func() bool { return t.stop.asked() }, t.log); err != nil {
			return nil, err
		}
	}
	ok = true
	return t, nil
}

// Close releases models, sampler and records (flushing pending writes).
func (t *Trainer) Close() error {
	var first error
	t.agent.Close()
	if t.vllm != nil {
		t.vllm.Close()
	}
	if t.rec != nil {
		first = t.rec.Close()
		t.rec = nil
	}
	t.sampler.Free()
	t.models.Close()
	return first
}

// Dir is the run's folder.
func (t *Trainer) Dir() string { return t.dir }

// StorePath is the run's trajectory store ("" on ranks other than 0).
func (t *Trainer) StorePath() string {
	if t.rec == nil {
		return ""
	}
	return t.rec.StorePath()
}
