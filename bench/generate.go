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
	cfg, err := cfg.resolve()
	if err != nil {
		return Result{}, err
	}
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	if cfg.PromptLen <= 0 || cfg.NewTokens <= 0 {
		return Result{}, fmt.Errorf("bench generate: prompt_len and new_tokens must be positive, got %d and %d", cfg.PromptLen, cfg.NewTokens)
	}
	cfg.Threads = cfg.threads()
	var res Result
	err = onWorker(cfg.Threads, func() error {
		var err error
		res, err = generate(cfg)
		return err
	})
	return res, err
}

// genRun is the timing of one generate run, with the engine's decode
// profile when asked for.
type genRun struct {
	prefill, decode, cpu time.Duration
	prof                 torch.StepProfile
}

func generate(cfg Config) (Result, error) {
	maxLen := cfg.PromptLen + cfg.NewTokens
	dev, err := cfg.device()
	if err != nil {
		return Result{}, err
	}
	mc, err := cfg.model(maxLen)
	if err != nil {
		return Result{}, err
	}
	if mc.Sparse() {
		return Result{}, fmt.Errorf("bench generate: model %s: a %s model is not benchmarked (the weight-read bound counts every weight once; a mixture of experts reads the chosen experts')", cfg.Model, mc.ModelType)
	}
	m, err := torch.NewRandomModel(mc, torch.Float32, dev, false, 1)
	if err != nil {
		return Result{}, fmt.Errorf("bench generate: model: %w", err)
	}
	defer m.Free()
	if cfg.EngineDType != "" && cfg.EngineDType != "f32" {
		dt, err := torch.ParseDType(cfg.EngineDType)
		if err != nil {
			return Result{}, fmt.Errorf("bench generate: engine_dtype: %w", err)
		}
		cp, err := torch.NewModel(m.Config, dt, dev, false)
		if err != nil {
			return Result{}, err
		}
		defer cp.Free()
		if err := cp.CopyWeightsFrom(m); err != nil {
			return Result{}, err
		}
		m = cp
	}
	if l := cfg.lora(); l != nil {
		merged, err := mergedModel(m, *l)
		if err != nil {
			return Result{}, fmt.Errorf("bench generate: %w", err)
		}
		defer merged.Free()
		m = merged
	}
	e, err := torch.NewEngine(m, cfg.Batch, maxLen)
	if err != nil {
		return Result{}, fmt.Errorf("bench generate: engine: %w", err)
	}
	defer e.Free()
	if cfg.Decode != "" {
		p, ok := decodePaths[cfg.Decode]
		if !ok {
			return Result{}, fmt.Errorf("bench generate: decode path %q: want auto, kernels, fused or unfused", cfg.Decode)
		}
		if err := e.SetDecodePath(p); err != nil {
			return Result{}, fmt.Errorf("bench generate: %w", err)
		}
	}
	decode, err := e.Decode()
	if err != nil {
		return Result{}, err
	}
	r := rand.New(rand.NewPCG(1, 2))
	prompts := make([][]int64, cfg.Batch)
	for i := range prompts {
		prompts[i] = randomTokens(r, cfg.PromptLen, cfg.Vocab)
	}
	runs := make([]genRun, 0, cfg.Repeats)
	for i := 0; i <= cfg.Repeats; i++ {
		run, err := generateOnce(e, prompts, cfg.NewTokens, cfg.Profile, nil)
		if err != nil {
			return Result{}, fmt.Errorf("bench generate run %d: %w", i, err)
		}
		if i > 0 { // run 0 warms up
			runs = append(runs, run)
		}
	}
	res := generateResult(cfg, runs)
	res.DecodePath, res.NoKernels = decode.String(), decode.Why
	if cfg.KernelProfile {
		var p torch.Profile
		record := func(step func() error) error {
			var err error
			p, err = torch.RecordProfile(dev.CUDA, step)
			return err
		}
		if _, err := generateOnce(e, prompts, cfg.NewTokens, false, record); err != nil {
			return Result{}, fmt.Errorf("bench generate: kernel profile: %w", err)
		}
		res.Kernels = &p
	}
	elem := int64(4)
	if m.DType != torch.Float32 {
		elem = 2
	}
	shapes, err := m.ParamShapes()
	if err != nil {
		return Result{}, fmt.Errorf("bench generate: %w", err)
	}
	res.WeightBytesPerStep = weightBytes(shapes, m.Config, cfg.Batch, elem)
	res.ReadGBs = cfg.BandwidthGBs
	if res.ReadGBs == 0 {
		if res.ReadGBs, err = readGBs(dev); err != nil {
			return Result{}, fmt.Errorf("bench generate: bandwidth: %w", err)
		}
		res.ReadGBsMeasured = true
	}
	res.BoundTokensPerS = float64(cfg.Batch) * res.ReadGBs * 1e9 / float64(res.WeightBytesPerStep)
	res.BoundFraction = res.DecodeTokensPerS / res.BoundTokensPerS
	return res, nil
}

// mergedModel is the model rollouts decode from when training adapters l
// over base: base's weights with l's fresh adapters merged into the
// targets (new tensors; the rest shared with base).
func mergedModel(base *torch.Model, l torch.LoRA) (*torch.Model, error) {
	lm, err := torch.NewLoRAModel(base, l, false, 1)
	if err != nil {
		return nil, err
	}
	defer lm.Free()
	return torch.NewMergedModel(lm)
}

var decodePaths = map[string]torch.DecodePath{"auto": torch.DecodeAuto, "kernels": torch.DecodeKernels,
	"fused": torch.DecodeFused, "unfused": torch.DecodeUnfused}

// weightBytes is what one decode step of batch rows reads of the model's
// weights (shapes, the model's parameter table), elem bytes each: every
// parameter once, the LM head included (a tied model's is the embedding
// matrix, read whole), and of an untied embedding only the batch's rows.
// The KV cache and a Gated DeltaNet layer's state are not counted.
func weightBytes(shapes []torch.ParamShape, c torch.Config, batch int, elem int64) int64 {
	var n int64
	for _, p := range shapes {
		n += p.Numel()
	}
	if !c.TieEmbeddings {
		n -= int64(c.Vocab) * int64(c.Hidden) // the embedding: only the batch's rows
	}
	return (n + int64(batch)*int64(c.Hidden)) * elem
}

// readGBs measures the memory read bandwidth of dev in-process, the way
// refbench peak's sum_gbs_read does: the median time of five sums of a
// 512 MB f32 tensor (libtorch's vectorised sum on the benchmark's threads,
// or the GPU's reduction), after one warm-up; each sum's value is read
// back, so a GPU's is complete when its time is taken. On a machine shared
// with other work it measures what is left.
func readGBs(dev torch.Device) (float64, error) {
	const n = 128 << 20
	t, err := torch.Zeros(torch.Float32, dev, n)
	if err != nil {
		return 0, err
	}
	defer t.Free()
	s := torch.NewScope()
	defer s.Close()
	var times []float64
	for i := 0; i < 6; i++ {
		t0 := time.Now()
		v := s.Sum(t)
		if err := s.Err(); err != nil {
			return 0, err
		}
		if _, err := v.Float32s(); err != nil {
			return 0, err
		}
		if i > 0 {
			times = append(times, time.Since(t0).Seconds())
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 4 * n / median(times) / 1e9, nil
}

// generateOnce empties and reseeds every slot, so each run does the same
// work, then prefills the prompts (all in one batched call) and decodes
// newTokens steps. With record, decode step newTokens/2 runs inside it (a
// kernel profile).
func generateOnce(e *torch.Engine, prompts [][]int64, newTokens int, profile bool, record func(step func() error) error) (genRun, error) {
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
	if err := e.PrefillBatch(slots, prompts); err != nil {
		return genRun{}, err
	}
	t1 := time.Now()
	if profile {
		if _, err := e.Profile(true); err != nil {
			return genRun{}, err
		}
	}
	for s := 0; s < newTokens; s++ {
		step := func() error { return e.Step(slots, torch.Sampling{Temperature: 1}, tokens, logprobs) }
		var err error
		if record != nil && s == newTokens/2 {
			err = record(step)
		} else {
			err = step()
		}
		if err != nil {
			return genRun{}, fmt.Errorf("decode step %d: %w", s, err)
		}
	}
	t2 := time.Now()
	run := genRun{prefill: t1.Sub(t0), decode: t2.Sub(t1), cpu: cpuTime() - cpu0}
	if profile {
		var err error
		if run.prof, err = e.Profile(true); err != nil {
			return genRun{}, err
		}
	}
	return run, nil
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
	if cfg.Profile {
		var ph [4][]float64
		for _, r := range runs {
			k := 1000 / float64(max(r.prof.Steps, 1))
			for i, v := range []float64{r.prof.Products, r.prof.Attention, r.prof.Sampling, r.prof.Other} {
				ph[i] = append(ph[i], v*k)
			}
		}
		res.StepMs = &StepPhases{Products: median(ph[0]), Attention: median(ph[1]), Sampling: median(ph[2]), Other: median(ph[3])}
	}
	return res
}
