package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentrl/agentrl/trajectory"
)

// BenchmarkWriteIteration stores iterations of n trajectories of 1,000
// tokens and 3 turns each (all seven token arrays set), one transaction per
// iteration. It reports trajectories per second and milliseconds per
// iteration.
func BenchmarkWriteIteration(b *testing.B) {
	for _, n := range []int{64, 256} {
		b.Run(fmt.Sprintf("%dx1k", n), func(b *testing.B) {
			s := openTemp(b)
			if err := s.BeginRun(RunInfo{Name: "bench"}); err != nil {
				b.Fatal(err)
			}
			batch := synthBatch(0, n, 1000, 3)
			metrics := map[string]float64{"loss": 0.1, "kl": 0.01, "entropy": 1.2}
			b.ResetTimer()
			start := time.Now()
			for it := 0; b.Loop(); it++ {
				for i, t := range batch {
					t.Iteration, t.ID = it, fmt.Sprintf("%d-train-%d-%d", it, i/4, i%4)
				}
				if err := s.WriteIteration(it, metrics, batch); err != nil {
					b.Fatal(err)
				}
			}
			sec := time.Since(start).Seconds()
			b.ReportMetric(float64(n*b.N)/sec, "trajs/s")
			b.ReportMetric(1000*sec/float64(b.N), "ms/iter")
		})
	}
}

// BenchmarkLoadIteration reads back an iteration of 64 trajectories of
// 1,000 tokens, as an offline re-run of an update would.
func BenchmarkLoadIteration(b *testing.B) {
	s := openTemp(b)
	if err := s.BeginRun(RunInfo{Name: "bench"}); err != nil {
		b.Fatal(err)
	}
	if err := s.WriteIteration(0, nil, synthBatch(0, 64, 1000, 3)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		ts, err := s.LoadIteration(0, trajectory.Train)
		if err != nil || len(ts) != 64 {
			b.Fatalf("%d, %v", len(ts), err)
		}
	}
}
