package peft

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/memtest"
	"github.com/agentrl/agentrl/internal/regular/regulartest"
	"github.com/agentrl/agentrl/torch/safetensors"
)

// A rank the tensors do not have is refused from the file's headers before
// any adapter is made: r = 1,000,000 over this base would allocate 0.9 GB.
// So is a missing tensor.
func TestLoadChecksShapesBeforeAllocating(t *testing.T) {
	base := newBase(t)
	for _, c := range []struct {
		name, config string
		tensors      []safetensors.Tensor
		want         []string
	}{
		{"huge rank", strings.Replace(peftConfig, `"r": 4`, `"r": 1000000`, 1), handTensors(t), []string{"has rank 4", "r = 1000000"}},
		{"huge rank, no tensors", strings.Replace(peftConfig, `"r": 4`, `"r": 1000000`, 1), []safetensors.Tensor{}, []string{"missing"}},
	} {
		dir := writeFolder(t, c.config, c.tensors)
		grew := memtest.PeakRSS(t)
		m, err := Load(dir, base, false, 1)
		if err == nil {
			m.Free()
			t.Fatalf("%s: loaded", c.name)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not name %q", c.name, err, w)
			}
		}
		if g := grew(); g > 64<<20 {
			t.Errorf("%s: the peak memory rose %d MB before the refusal", c.name, g>>20)
		}
	}
}

// An adapter tensor holding NaN or an infinity (F32, F16, or an F64 too
// large for f32) is refused, naming the tensor.
func TestLoadRefusesNonFinite(t *testing.T) {
	base := newBase(t)
	qA := "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
	vB := "base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight"
	for _, c := range []struct {
		name   string
		tensor string
		dtype  safetensors.DType
		v      float64
	}{
		{"NaN", qA, safetensors.F32, math.NaN()},
		{"+Inf", vB, safetensors.F32, math.Inf(1)},
		{"-Inf in f16", qA, safetensors.F16, math.Inf(-1)},
		{"f64 past f32", vB, safetensors.F64, 1e300},
	} {
		ts := handTensors(t)
		for i, st := range ts {
			if st.Name != c.tensor {
				continue
			}
			vals := make([]float32, st.Shape[0]*st.Shape[1])
			for j := range vals {
				vals[j] = 0.5
			}
			b, err := safetensors.FromFloat32s(st.Name, c.dtype, st.Shape, vals)
			if err != nil {
				t.Fatal(err)
			}
			// element 5, written in the file's own dtype
			switch c.dtype {
			case safetensors.F32:
				putLE(b.Data[4*5:], uint64(math.Float32bits(float32(c.v))), 4)
			case safetensors.F16:
				putLE(b.Data[2*5:], 0xfc00, 2)
			case safetensors.F64:
				putLE(b.Data[8*5:], math.Float64bits(c.v), 8)
			}
			ts[i] = b
		}
		m, err := Load(writeFolder(t, peftConfig, ts), base, false, 1)
		if err == nil {
			m.Free()
			t.Errorf("%s: loaded", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.tensor) || !strings.Contains(err.Error(), "not finite") {
			t.Errorf("%s: error %q does not name %s as not finite", c.name, err, c.tensor)
		}
	}
}

func putLE(b []byte, v uint64, n int) {
	for i := 0; i < n; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

// A named pipe in place of adapter_model.safetensors or adapter_config.json
// is refused at once, naming it, instead of blocking the load forever.
func TestLoadRefusesFIFO(t *testing.T) {
	base := newBase(t)
	for _, name := range []string{WeightsFile, ConfigFile} {
		dir := writeFolder(t, peftConfig, handTensors(t))
		regulartest.RefusesFIFO(t, filepath.Join(dir, name), func() error {
			m, err := Load(dir, base, false, 1)
			if err == nil {
				m.Free()
			}
			return err
		})
	}
}
