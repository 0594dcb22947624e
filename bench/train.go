package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/learner"
	"github.com/agentrl/agentrl/trainer/memory"
	"github.com/agentrl/agentrl/trajectory"
)

// clipEps is PPO's ratio clip range and maxGradNorm the gradient clip.
const (
	clipEps     = 0.2
	maxGradNorm = 1.0
)

// Train benchmarks the learner's Update on Batch trajectories of SeqLen
// tokens (see the package doc for what it includes).
func Train(cfg Config) (Result, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return Result{}, err
	}
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	if cfg.SeqLen < 2 {
		return Result{}, fmt.Errorf("bench train: seq_len must be at least 2, got %d", cfg.SeqLen)
	}
	cfg.Threads = cfg.threads()
	var res Result
	err = onWorker(cfg.Threads, func() error {
		var err error
		res, err = train(cfg)
		return err
	})
	return res, err
}

// trainRun is the timing and outcome of one update.
type trainRun struct {
	wall, cpu      time.Duration
	timing         learner.Timing
	loss, gradNorm float64
	oldFromStep    bool
}

func train(cfg Config) (Result, error) {
	dev, err := cfg.device()
	if err != nil {
		return Result{}, err
	}
	dt, err := cfg.dtype()
	if err != nil {
		return Result{}, err
	}
	mc, err := cfg.model(cfg.SeqLen)
	if err != nil {
		return Result{}, err
	}
	m, err := torch.NewRandomModel(mc, dt, dev, false, 1)
	if err != nil {
		return Result{}, fmt.Errorf("bench train: model: %w", err)
	}
	if l := cfg.lora(); l != nil {
		// The LoRA model keeps the base's weights alive on its own.
		lm, err := torch.NewLoRAModel(m, *l, false, 1)
		m.Free()
		if err != nil {
			return Result{}, fmt.Errorf("bench train: %w", err)
		}
		m = lm
	}
	trainable, err := paramCount(m)
	if err != nil {
		m.Free()
		return Result{}, fmt.Errorf("bench train: %w", err)
	}
	if err := m.SetCheckpointing(cfg.Checkpointing); err != nil {
		m.Free()
		return Result{}, fmt.Errorf("bench train: %w", err)
	}
	if err := m.SetLogitsChunk(cfg.LogitsChunk); err != nil {
		m.Free()
		return Result{}, fmt.Errorf("bench train: %w", err)
	}
	l, err := learner.New(m, nil, learner.NoCritic, trainSettings(cfg), nil, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		m.Free()
		return Result{}, fmt.Errorf("bench train: learner: %w", err)
	}
	defer l.Close()
	batch := trainBatch(cfg)
	runs := make([]trainRun, 0, cfg.Repeats)
	for i := 0; i <= cfg.Repeats; i++ {
		cpu0, t0 := cpuTime(), time.Now()
		r, err := l.Update(1, learner.NewBatch(batch, false))
		if err != nil {
			return Result{}, fmt.Errorf("bench train run %d: %w", i, err)
		}
		run := trainRun{wall: time.Since(t0), cpu: cpuTime() - cpu0, timing: r.Timing, loss: r.PolicyLoss, gradNorm: r.GradNorm,
			oldFromStep: r.OldFromStep}
		if i > 0 { // run 0 warms up
			runs = append(runs, run)
		}
	}
	res := trainResult(cfg, runs)
	res.PeakRSSMB = peakRSSMB()
	var stats torch.MemoryStats
	if dev.CUDA {
		stats, err = torch.CUDAMemory(dev)
	} else {
		stats, err = torch.HostMemory()
	}
	if err != nil {
		return Result{}, fmt.Errorf("bench train: %w", err)
	}
	res.AllocatorPeakMB = float64(stats.Peak) / 1e6
	if cfg.LoRARank == 0 {
		res.EstimateMB = float64(updateEstimate(mc, trainable, dt, cfg, dev.CUDA)) / 1e6
	}
	if res.AdamW, err = l.OptimizerStep(); err != nil {
		return Result{}, fmt.Errorf("bench train: %w", err)
	}
	if cfg.KernelProfile {
		p, err := torch.RecordProfile(dev.CUDA, func() error {
			_, err := l.Update(1, learner.NewBatch(batch, false))
			return err
		})
		if err != nil {
			return Result{}, fmt.Errorf("bench train: kernel profile: %w", err)
		}
		res.Kernels = &p
	}
	res.TrainableParams = trainable
	if res.SDPABackend, err = m.SDPABackend(); err != nil {
		return Result{}, fmt.Errorf("bench train: %w", err)
	}
	return res, nil
}

// paramCount is the number of values in m's parameters: what the
// optimizer trains (a LoRA model's adapters only).
func paramCount(m *torch.Model) (int64, error) {
	ps, err := m.Params()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, p := range ps {
		n += p.Numel()
		p.Free()
	}
	return n, nil
}

// updateEstimate is the dry run's estimate of a full fine-tune's update
// of params parameters of dtype dt (one micro-batch of cfg.Batch x
// cfg.SeqLen tokens): weights, gradients and AdamW's state
// (memory.TrainingState) and the activations (memory.Activations, under
// SDPA on CUDA).
func updateEstimate(mc torch.Config, params int64, dt torch.DType, cfg Config, cuda bool) int64 {
	b := int64(dt.Size())
	grads, optimizer := memory.TrainingState(params, b, 1, 0)
	acts := memory.Activations(mc, memory.Workload{Micro: cfg.Batch, Seq: cfg.SeqLen, LogitsChunk: cfg.LogitsChunk,
		Checkpointing: cfg.Checkpointing, HeadGrad: true, Bytes: b, SDPA: cuda})
	return params*b + grads + optimizer + acts
}

// trainSettings are GRPO's update as one optimizer step over the whole
// batch: PPO's clipped surrogate (clip clipEps both ways, token means over
// the policy's tokens), no KL term, no entropy bonus, AdamW at lr 1e-5
// after clipping the gradient norm at maxGradNorm.
func trainSettings(cfg Config) learner.Settings {
	group := torch.DefaultAdamW
	group.LR = 1e-5
	return learner.Settings{Estimator: "grpo", Advantage: algo.DefaultOptions(), FilterKeepRatio: 1,
		Loss: algo.LossConfig{PolicyLoss: "ppo", ClipLow: clipEps, ClipHigh: clipEps, LossAgg: "token-mean", KLEstimator: "k3"}, Epochs: 1,
		MiniBatch: cfg.Batch, MicroBatch: cfg.Batch, LossMask: true, MaxGradNorm: maxGradNorm, Temperature: 1,
		PolicyOptim: group, CriticOptim: group}
}

// trainBatch is the benchmark's batch: Batch trajectories of SeqLen random
// tokens in Batch/4 groups (at least one), trajectory i a prompt of
// SeqLen/2 + i%3 tokens (at most SeqLen-1) and one turn of policy tokens
// with uniform behaviour logprobs, rewarded i%3.
func trainBatch(cfg Config) []*trajectory.Trajectory {
	r := rand.New(rand.NewPCG(5, 6))
	groups := max(1, cfg.Batch/4)
	batch := make([]*trajectory.Trajectory, cfg.Batch)
	for i := range batch {
		t := &trajectory.Trajectory{ID: fmt.Sprint(i), Group: i * groups / cfg.Batch, Outcome: float64(i % 3),
			PromptLen: min(cfg.SeqLen/2+i%3, cfg.SeqLen-1), Turns: []trajectory.Turn{{}}}
		t.Reward = t.Outcome
		for j, id := range randomTokens(r, cfg.SeqLen, cfg.Vocab) {
			t.Tokens = append(t.Tokens, int32(id))
			if j < t.PromptLen {
				t.Mask, t.TurnOf, t.Logprobs = append(t.Mask, 0), append(t.TurnOf, -1), append(t.Logprobs, 0)
			} else {
				t.Mask, t.TurnOf, t.Logprobs = append(t.Mask, 1), append(t.TurnOf, 0), append(t.Logprobs, float32(-math.Log(float64(cfg.Vocab))))
			}
		}
		batch[i] = t
	}
	return batch
}

func trainResult(cfg Config, runs []trainRun) Result {
	var total, prep, adv, fwd, bwd, opt, cpu []float64
	for _, r := range runs {
		total, cpu = append(total, r.wall.Seconds()), append(cpu, r.cpu.Seconds())
		prep, adv = append(prep, r.timing.Prepare.Seconds()), append(adv, r.timing.Advantages.Seconds())
		fwd, bwd, opt = append(fwd, r.timing.Forward.Seconds()), append(bwd, r.timing.Backward.Seconds()), append(opt, r.timing.Optim.Seconds())
	}
	last := runs[len(runs)-1]
	res := Result{Mode: "train", Config: cfg, RunsS: total, MedianS: median(total), CPUS: median(cpu),
		PrepareS: median(prep), AdvantagesS: median(adv), ForwardS: median(fwd), BackwardS: median(bwd), OptimS: median(opt),
		Loss: last.loss, GradNorm: last.gradNorm, OldFromStep: last.oldFromStep}
	res.TokensPerS = float64(cfg.Batch*cfg.SeqLen) / res.MedianS
	return res
}
