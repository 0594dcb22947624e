// Package torchtest is the TestMain of the packages whose tests run
// libtorch: it re-executes the test binary with passive OpenMP workers
// (see torch.PassiveOpenMP) before running the tests.
package torchtest

import (
	"fmt"
	"os"
	"testing"

	"github.com/agentrl/agentrl/torch"
)

// Main sets up passive OpenMP workers, runs the tests and exits.
func Main(m *testing.M) {
	if err := torch.PassiveOpenMP(); err != nil {
		fmt.Fprintln(os.Stderr, "OMP_WAIT_POLICY:", err)
	}
	os.Exit(m.Run())
}

// BF16Param makes a bf16 leaf tensor that requires grad from vals (rounded
// to bf16) and returns it with the values it holds. The test frees it.
func BF16Param(t *testing.T, vals []float32) (*torch.Tensor, []float64) {
	t.Helper()
	f, err := torch.FromFloat32(vals, int64(len(vals)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Free()
	p, err := f.To(torch.CPU, torch.BFloat16)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetRequiresGrad(true); err != nil {
		t.Fatal(err)
	}
	held, err := p.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return p, held
}

// LinearSteps runs n optimizer steps on the loss sum(c * p), whose
// gradient is the constant c, accumulated over two micro-batches of half
// the loss each (Accumulate after each backward pass).
func LinearSteps(t *testing.T, opt *torch.AdamW, p *torch.Tensor, c []float32, n int) {
	t.Helper()
	for range n {
		for range 2 {
			s := torch.NewScope()
			ct := s.To(s.Float32(c, int64(len(c))), torch.CPU, p.DType())
			loss := s.MulScalar(s.Sum(s.Mul(p, ct)), 0.5)
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if err := loss.Backward(); err != nil {
				t.Fatal(err)
			}
			if err := opt.Accumulate(); err != nil {
				t.Fatal(err)
			}
			s.Close()
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		if err := opt.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
	}
}
