package bench

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/loss"
)

// clipEps is PPO's ratio clip range and maxGradNorm the gradient clip.
const (
	clipEps     = 0.2
	maxGradNorm = 1.0
)

// Train benchmarks one PPO update on [Batch, SeqLen] random tokens (see the
// package doc for what it includes).
func Train(cfg Config) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	if cfg.SeqLen < 2 {
		return Result{}, fmt.Errorf("bench train: seq_len must be at least 2, got %d", cfg.SeqLen)
	}
	cfg.Threads = cfg.threads()
	var res Result
	err := onWorker(cfg.Threads, func() error {
		var err error
		res, err = train(cfg)
		return err
	})
	return res, err
}

// trainRun is the timing and outcome of one update.
type trainRun struct {
	forward, backward, optim, cpu time.Duration
	loss, gradNorm                float64
}

func train(cfg Config) (Result, error) {
	m, err := torch.NewRandomModel(cfg.model(cfg.SeqLen), torch.Float32, torch.CPU, false, 1)
	if err != nil {
		return Result{}, fmt.Errorf("bench train: model: %w", err)
	}
	defer m.Free()
	params, err := m.Params()
	if err != nil {
		return Result{}, fmt.Errorf("bench train: params: %w", err)
	}
	defer func() {
		for _, p := range params {
			p.Free()
		}
	}()
	group := torch.DefaultAdamW
	group.LR = 1e-5
	opt, err := torch.NewAdamW(params, nil, []torch.AdamWGroup{group})
	if err != nil {
		return Result{}, fmt.Errorf("bench train: optimizer: %w", err)
	}
	defer opt.Free()

	r := rand.New(rand.NewPCG(3, 4))
	b := fullBatch(randomTokens(r, cfg.Batch*cfg.SeqLen, cfg.Vocab), cfg.Batch, cfg.SeqLen)
	adv, mask := lossInputs(cfg)
	n := algo.Norm{Sequences: float64(cfg.Batch)}
	for _, v := range mask {
		n.Tokens += float64(v)
	}
	fixed := torch.NewScopeOn(m.Device)
	defer fixed.Close()
	advT := fixed.Float32(adv, int64(cfg.Batch), int64(cfg.SeqLen-1))
	maskT := fixed.Float32(mask, int64(cfg.Batch), int64(cfg.SeqLen-1))
	if err := fixed.Err(); err != nil {
		return Result{}, fmt.Errorf("bench train: loss inputs: %w", err)
	}

	runs := make([]trainRun, 0, cfg.Repeats)
	for i := 0; i <= cfg.Repeats; i++ {
		run, err := update(m, opt, b, advT, maskT, n)
		if err != nil {
			return Result{}, fmt.Errorf("bench train run %d: %w", i, err)
		}
		if i > 0 { // run 0 warms up
			runs = append(runs, run)
		}
	}
	return trainResult(cfg, runs), nil
}

// fullBatch is a batch of unpadded sequences at positions 0..T-1.
func fullBatch(ids []int64, B, T int) torch.Batch {
	attn := make([]int64, B*T)
	pos := make([]int64, B*T)
	for i := range attn {
		attn[i], pos[i] = 1, int64(i%T)
	}
	return torch.Batch{B: B, T: T, IDs: ids, Attn: attn, Positions: pos}
}

// lossInputs returns the fixed advantages (standard normal) and the loss
// mask, both [Batch, SeqLen-1] row-major. Entry t scores token t+1; the mask
// selects the tokens of the second half, t+1 >= SeqLen/2.
func lossInputs(cfg Config) (adv, mask []float32) {
	r := rand.New(rand.NewPCG(5, 6))
	n := cfg.SeqLen - 1
	adv = make([]float32, cfg.Batch*n)
	mask = make([]float32, cfg.Batch*n)
	for i := range adv {
		adv[i] = float32(r.NormFloat64())
		if i%n+1 >= cfg.SeqLen/2 {
			mask[i] = 1
		}
	}
	return adv, mask
}

// ppoLoss is the trainer's own PPO loss, loss.PolicyLoss, with the
// symmetric clip clipEps and no dual clip, averaged over the n.Tokens
// tokens of mask:
//
//	-mean_mask min(r*A, clip(r, 1-eps, 1+eps)*A),  r = exp(logp - old)
func ppoLoss(s *torch.Scope, logp, old, adv, mask *torch.Tensor, n algo.Norm) *torch.Tensor {
	cfg := algo.LossConfig{ClipLow: clipEps, ClipHigh: clipEps, Agg: "token-mean"}
	return loss.PolicyLoss(s, logp, old, adv, mask, cfg, n)
}

// update runs and times one PPO update. The old logprobs are the detached
// current ones (the first epoch of a PPO update, ratio 1).
func update(m *torch.Model, opt *torch.AdamW, b torch.Batch, adv, mask *torch.Tensor, n algo.Norm) (trainRun, error) {
	s := torch.NewScopeOn(m.Device)
	defer s.Close()
	cpu0, t0 := cpuTime(), time.Now()
	out, err := m.Forward(b, torch.ForwardOptions{Grad: true})
	if err != nil {
		return trainRun{}, err
	}
	s.Own(out.LogProbs)
	t1 := time.Now()
	loss := ppoLoss(s, out.LogProbs, s.Detach(out.LogProbs), adv, mask, n)
	if err := s.Err(); err != nil {
		return trainRun{}, fmt.Errorf("loss: %w", err)
	}
	if err := loss.Backward(); err != nil {
		return trainRun{}, err
	}
	t2 := time.Now()
	norm, err := opt.ClipGradNorm(maxGradNorm)
	if err != nil {
		return trainRun{}, err
	}
	if err := opt.Step(); err != nil {
		return trainRun{}, err
	}
	if err := opt.ZeroGrad(); err != nil {
		return trainRun{}, err
	}
	t3, cpu := time.Now(), cpuTime()-cpu0
	lv, err := loss.Item()
	if err != nil {
		return trainRun{}, err
	}
	return trainRun{forward: t1.Sub(t0), backward: t2.Sub(t1), optim: t3.Sub(t2), cpu: cpu, loss: lv, gradNorm: norm}, nil
}

func trainResult(cfg Config, runs []trainRun) Result {
	var total, fwd, bwd, opt, cpu []float64
	for _, r := range runs {
		f, b, o := r.forward.Seconds(), r.backward.Seconds(), r.optim.Seconds()
		total, fwd, bwd, opt = append(total, f+b+o), append(fwd, f), append(bwd, b), append(opt, o)
		cpu = append(cpu, r.cpu.Seconds())
	}
	last := runs[len(runs)-1]
	res := Result{Mode: "train", Config: cfg, RunsS: total, MedianS: median(total), CPUS: median(cpu),
		ForwardS: median(fwd), BackwardS: median(bwd), OptimS: median(opt), Loss: last.loss, GradNorm: last.gradNorm}
	res.TokensPerS = float64(cfg.Batch*cfg.SeqLen) / res.MedianS
	return res
}
