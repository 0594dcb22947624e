package gateway_test

import (
	"fmt"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrl/agentrl/decoding/torchdecoder"
	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/gateway/gatewaytest"
	"github.com/agentrl/agentrl/torch"
)

// BenchmarkClients measures completion tokens per second over HTTP for 1
// and for 16 concurrent clients on the small benchmark model (trainer bench's
// "small": vocab 2048, hidden 256, 4 layers, random weights), each request
// 128 tokens with no stop ids. The 16-client figure over the 1-client one is
// what continuous batching buys:
//
//	go test ./gateway -run '^$' -bench Clients -benchtime 3x
func BenchmarkClients(b *testing.B) {
	if err := torch.Check(); err != nil {
		b.Skipf("libtorch shim not available: %v", err)
	}
	fix := gatewaytest.Build(b)
	m, err := torch.NewRandomModel(torch.Config{ModelType: "qwen2", Vocab: 2048, Hidden: 256, Intermediate: 688, Layers: 4,
		Heads: 8, KVHeads: 4, HeadDim: 32, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 512}, torch.Float32, torch.CPU, false, 3)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Free()
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			te, err := torch.NewEngine(m, 16, 512)
			if err != nil {
				b.Fatal(err)
			}
			defer te.Free()
			sched := gateway.NewScheduler(torchdecoder.Decoder{Engine: te}, nil)
			stop := runScheduler(sched)
			srv := httptest.NewServer(&gateway.Handler{Scheduler: sched, Format: fix.Format, Model: "small"})
			defer func() { srv.Close(); stop() }()
			body := map[string]any{"model": "small", "messages": []map[string]any{{"role": "user", "content": "Say hello in one word."}},
				"max_tokens": 128, "temperature": 1}
			var tokens atomic.Int64
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				var wg sync.WaitGroup
				for c := 0; c < clients; c++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						status, out, err := postRaw(srv.URL, body, "")
						if err != nil || status != 200 {
							panic(fmt.Sprintf("status %d: %s %v", status, out, err))
						}
						tokens.Add(128)
					}()
				}
				wg.Wait()
				elapsed += time.Since(start)
			}
			b.ReportMetric(float64(tokens.Load())/elapsed.Seconds(), "tok/s")
		})
	}
}
