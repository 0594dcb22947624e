package torch

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// A CUDA graph captured on the wrong device or stream records nothing, and
// libtorch only warns about it; every replay would then leave stale logits.
// The capture poisons the graph's output with NaN, replays it once and
// checks it against the eager step: an unwritten output, or other logits,
// is an error.
func TestGraphReplayCheck(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	s := NewScope()
	defer s.Close()
	eager := s.Float32([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	nan := float32(math.NaN())
	for _, c := range []struct {
		name     string
		replayed []float32
		want     string // "" is no error
	}{
		{"the eager logits", []float32{1, 2, 3, 4, 5, 6}, ""},
		{"within rounding", []float32{1, 2, 3, 4, 5, 6.001}, ""},
		{"nothing recorded", []float32{nan, nan, nan, nan, nan, nan}, "recorded nothing"},
		{"one row unwritten", []float32{1, 2, 3, nan, nan, nan}, "recorded nothing"},
		{"other logits", []float32{1, 2, 3, 4, 5, 7}, "other logits"},
	} {
		err := checkGraphReplay(eager, s.Float32(c.replayed, 2, 3), 2)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

// On a CUDA device ($AGENTRL_TEST_DEVICE), the fused path's decode step
// replays a CUDA graph captured per row count. For 1, 3 and 8 slots
// (slots 1..n of n+1, so row 0 is a scratch row of every graph) and three
// greedy steps, the replayed step, the eager unfused step on the same GPU
// and the unfused step on the CPU choose the same tokens, and their
// logprobs and pending logits agree within 1e-4 (f32, TF32 off: see
// parityDevice). The model is the shared qwen2-tiny-a fixture loaded on
// both devices. On the CPU the test skips: there are no graphs to check.
func TestGraphDecodeAgrees(t *testing.T) {
	dev := parityDevice(t)
	if !dev.CUDA {
		t.Skipf("CUDA graphs run only on a CUDA device: set %s=cuda:0 in a CUDA build", testDeviceEnv)
	}
	dir := fixtureDir(t, "AGENTRL_QWEN2_FIXTURE", "qwen2-tiny-a")
	onCPU, err := LoadModel(dir, Float32, CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer onCPU.Free()
	onGPU, err := LoadModel(dir, Float32, dev, false)
	if err != nil {
		t.Fatal(err)
	}
	defer onGPU.Free()
	for _, n := range []int{1, 3, 8} {
		ref := newEngineOn(t, onCPU, n+1, DecodeUnfused)
		eager := newEngineOn(t, onGPU, n+1, DecodeUnfused)
		graph := newEngineOn(t, onGPU, n+1, DecodeFused)
		engines := []*Engine{ref, eager, graph}
		names := []string{"cpu", "eager", "graph"}
		slots := make([]int, n)
		for i := range slots {
			slots[i] = i + 1
			for _, e := range engines {
				if err := e.Prefill(i+1, seq(2+3*i, int64(11+i))); err != nil {
					t.Fatal(err)
				}
			}
		}
		var worstLP, worstLogits float64
		toks := make([][]int64, len(engines))
		lps := make([][]float32, len(engines))
		for step := 0; step < 3; step++ {
			for k, e := range engines {
				toks[k], lps[k] = make([]int64, n), make([]float32, n)
				if err := e.Step(slots, Sampling{}, toks[k], lps[k]); err != nil {
					t.Fatalf("%d slots, step %d, %s: %v", n, step, names[k], err)
				}
			}
			for k := 1; k < len(engines); k++ {
				if !slices.Equal(toks[k], toks[0]) {
					t.Fatalf("%d slots, step %d: %s tokens %v, cpu %v", n, step, names[k], toks[k], toks[0])
				}
				worstLP = math.Max(worstLP, maxDiff32(lps[k], lps[0]))
				for _, s := range slots {
					want, _ := ref.PendingLogits(s)
					got, err := engines[k].PendingLogits(s)
					if err != nil {
						t.Fatal(err)
					}
					worstLogits = math.Max(worstLogits, maxDiff32(got, want))
				}
			}
		}
		for _, e := range engines {
			e.Free()
		}
		t.Logf("%d slots: max |diff| to the CPU: logprobs %.2e, pending logits %.2e", n, worstLP, worstLogits)
		if worstLP > 1e-4 || worstLogits > 1e-4 {
			t.Fatalf("%d slots: the GPU steps differ from the CPU by %.2e (logprobs), %.2e (logits) > 1e-4", n, worstLP, worstLogits)
		}
	}
}
