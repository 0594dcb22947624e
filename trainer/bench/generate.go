package bench

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/agentrl/agentrl/torch"
)

// Generate benchmarks batched generation: Batch random prompts of PromptLen
// tokens prefilled into slots 0..Batch-1, then NewTokens decode steps of all
// slots together at temperature 1 (see the package doc for the rates).
func Generate(cfg Config) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	if cfg.PromptLen <= 0 || cfg.NewTokens <= 0 {
		return Result{}, fmt.Errorf("bench generate: prompt_len and new_tokens must be positive, got %d and %d", cfg.PromptLen, cfg.NewTokens)
	}
	cfg.Threads = cfg.threads()
	var res Result
	err := onWorker(cfg.Threads, func() error {
		var err error
		res, err = generate(cfg)
		return err
	})
	return res, err
}

// genRun is the timing of one generate run.
type genRun struct{ prefill, decode, cpu time.Duration }

func generate(cfg Config) (Result, error) {
	maxLen := cfg.PromptLen + cfg.NewTokens
	m, err := torch.NewRandomModel(cfg.model(maxLen), torch.Float32, torch.CPU, false, 1)
	if err != nil {
		return Result{}, fmt.Errorf("bench generate: model: %w", err)
	}
	defer m.Free()
	if cfg.EngineDType != "" && cfg.EngineDType != "f32" {
		dt, err := torch.ParseDType(cfg.EngineDType)
		if err != nil {
			return Result{}, fmt.Errorf("bench generate: engine_dtype: %w", err)
		}
		cp, err := torch.NewModel(m.Config, dt, torch.CPU, false)
		if err != nil {
			return Result{}, err
		}
		defer cp.Free()
		if err := cp.CopyWeightsFrom(m); err != nil {
			return Result{}, err
		}
		m = cp
	}
	e, err := torch.NewEngine(m, cfg.Batch, maxLen)
	if err != nil {
		return Result{}, fmt.Errorf("bench generate: engine: %w", err)
	}
	defer e.Free()
	r := rand.New(rand.NewPCG(1, 2))
	prompts := make([][]int64, cfg.Batch)
	for i := range prompts {
		prompts[i] = randomTokens(r, cfg.PromptLen, cfg.Vocab)
	}
	runs := make([]genRun, 0, cfg.Repeats)
	for i := 0; i <= cfg.Repeats; i++ {
		run, err := generateOnce(e, prompts, cfg.NewTokens)
		if err != nil {
			return Result{}, fmt.Errorf("bench generate run %d: %w", i, err)
		}
		if i > 0 { // run 0 warms up
			runs = append(runs, run)
		}
	}
	return generateResult(cfg, runs), nil
}

// generateOnce empties and reseeds every slot, so each run does the same
// work, then prefills the prompts and decodes newTokens steps.
func generateOnce(e *torch.Engine, prompts [][]int64, newTokens int) (genRun, error) {
	slots := make([]int, len(prompts))
	for i := range slots {
		slots[i] = i
		if err := e.Release(i); err != nil {
			return genRun{}, err
		}
		if err := e.Seed(i, uint64(i)+1); err != nil {
			return genRun{}, err
		}
	}
	tokens := make([]int64, len(slots))
	logprobs := make([]float32, len(slots))
	cpu0, t0 := cpuTime(), time.Now()
	for i, p := range prompts {
		if err := e.Prefill(i, p); err != nil {
			return genRun{}, err
		}
	}
	t1 := time.Now()
	for s := 0; s < newTokens; s++ {
		if err := e.Step(slots, torch.Sampling{Temperature: 1}, tokens, logprobs); err != nil {
			return genRun{}, fmt.Errorf("decode step %d: %w", s, err)
		}
	}
	t2 := time.Now()
	return genRun{prefill: t1.Sub(t0), decode: t2.Sub(t1), cpu: cpuTime() - cpu0}, nil
}

func generateResult(cfg Config, runs []genRun) Result {
	var total, prefill, decode, cpu []float64
	for _, r := range runs {
		p, d := r.prefill.Seconds(), r.decode.Seconds()
		total, prefill, decode = append(total, p+d), append(prefill, p), append(decode, d)
		cpu = append(cpu, r.cpu.Seconds())
	}
	res := Result{Mode: "generate", Config: cfg, RunsS: total, MedianS: median(total), CPUS: median(cpu),
		PrefillS: median(prefill), DecodeS: median(decode)}
	gen := float64(cfg.Batch * cfg.NewTokens)
	res.TokensPerS = gen / res.MedianS
	res.DecodeTokensPerS = gen / res.DecodeS
	res.PrefillTokensPerS = float64(cfg.Batch*cfg.PromptLen) / res.PrefillS
	res.MsPerStep = 1000 * res.DecodeS / float64(cfg.NewTokens)
	res.PrefillShare = res.PrefillS / (res.PrefillS + res.DecodeS)
	return res
}
