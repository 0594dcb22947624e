package bench

import "testing"

// benchShape is the small preset's model with a lighter workload, so that
// `go test -bench .` (and `make bench`, 20 runs) exercises both paths in
// seconds. ns/op is overridden with the median run time.
func benchShape() Config {
	return Config{Vocab: 2048, Hidden: 256, Inter: 688, Layers: 4, Heads: 8, KVHeads: 4, Threads: 2}
}

func BenchmarkGenerate(b *testing.B) {
	cfg := benchShape()
	cfg.Batch, cfg.PromptLen, cfg.NewTokens, cfg.Repeats = 8, 32, 32, b.N
	res, err := Generate(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.MedianS*1e9, "ns/op")
	b.ReportMetric(res.TokensPerS, "tok/s")
	b.ReportMetric(res.DecodeTokensPerS, "decode-tok/s")
	b.ReportMetric(res.MsPerStep, "ms/step")
}

func BenchmarkTrain(b *testing.B) {
	cfg := benchShape()
	cfg.Batch, cfg.SeqLen, cfg.Repeats = 4, 128, b.N
	res, err := Train(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.MedianS*1e9, "ns/op")
	b.ReportMetric(res.TokensPerS, "tok/s")
	b.ReportMetric(res.ForwardS*1e3, "fwd-ms")
	b.ReportMetric(res.BackwardS*1e3, "bwd-ms")
	b.ReportMetric(res.OptimS*1e3, "optim-ms")
}
