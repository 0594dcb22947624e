package torch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/internal/memtest"
	"github.com/agentrl/agentrl/internal/regular/regulartest"
	"github.com/agentrl/agentrl/torch/safetensors"
)

// A model folder whose weights hold a NaN or an infinity (here in bf16,
// as checkpoints are shipped) is refused, naming the tensor.
func TestLoadRefusesNonFiniteWeights(t *testing.T) {
	m, _ := NewRandomModel(tinyConfig(), BFloat16, CPU, false, 21)
	defer m.Free()
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	const victim = "model.layers.0.mlp.up_proj.weight"
	for _, bits := range []uint16{0x7fc0, 0xff80} { // NaN, -Inf
		r, err := safetensors.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var ts []safetensors.Tensor
		for _, n := range r.Names() {
			info, _ := r.Info(n)
			data, _ := r.Bytes(n)
			if n == victim {
				data[6], data[7] = byte(bits), byte(bits>>8) // element 3
			}
			ts = append(ts, safetensors.Tensor{Name: n, DType: info.DType, Shape: info.Shape, Data: data})
		}
		r.Close()
		bad := t.TempDir()
		copyFile(t, filepath.Join(dir, "config.json"), filepath.Join(bad, "config.json"))
		if err := safetensors.Write(filepath.Join(bad, "model.safetensors"), ts, nil); err != nil {
			t.Fatal(err)
		}
		back, err := LoadModel(bad, Float32, CPU, false)
		if err == nil {
			back.Free()
			t.Fatalf("%#04x: loaded", bits)
		}
		if !strings.Contains(err.Error(), victim) || !strings.Contains(err.Error(), "not finite") || !strings.Contains(err.Error(), "element 3") {
			t.Errorf("%#04x: error %q does not name %s's element 3 as not finite", bits, err, victim)
		}
	}
}

// A named pipe in place of model.safetensors or config.json is refused at
// once, naming it.
func TestLoadRefusesFIFO(t *testing.T) {
	m, _ := NewRandomModel(tinyConfig(), Float32, CPU, false, 21)
	defer m.Free()
	for _, name := range []string{"model.safetensors", "config.json"} {
		dir := t.TempDir()
		if err := m.Save(dir); err != nil {
			t.Fatal(err)
		}
		regulartest.RefusesFIFO(t, filepath.Join(dir, name), func() error {
			back, err := LoadModel(dir, Float32, CPU, false)
			if err == nil {
				back.Free()
			}
			return err
		})
	}
}

// A config.json that disagrees with its weights is refused from the
// files' headers before the model it describes is allocated: 20,000
// layers of the tiny model (7,824 f32 values each) are 0.6 GB, and an
// intermediate_size of 10^6 makes each MLP matrix 10^6 x 32 f32 values,
// 0.77 GB over the two layers. Each error names the first tensor that
// does not fit, and the peak memory stays within 64 MB of where it was.
func TestLoadChecksShapesBeforeAllocating(t *testing.T) {
	m, _ := NewRandomModel(tinyConfig(), Float32, CPU, false, 21)
	defer m.Free()
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, value, want string }{
		{"num_hidden_layers", "20000", "num_hidden_layers 20000 in config.json, but the checkpoint holds 2 layers (no tensor model.layers.2.*)"},
		{"intermediate_size", "1000000", "tensor model.layers.0.mlp.gate_proj.weight has shape [48 32], the model config.json describes needs [1000000 32]"},
	} {
		writeConfig(t, dir, raw, func(cfg map[string]any) { cfg[c.key] = json.RawMessage(c.value) })
		grew := memtest.PeakRSS(t)
		back, err := LoadModel(dir, Float32, CPU, false)
		if err == nil {
			back.Free()
			t.Fatalf("%s %s: loaded", c.key, c.value)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: error %q, want one saying %q", c.key, c.value, err, c.want)
		}
		if g := grew(); g > 64<<20 {
			t.Errorf("%s %s: the peak memory rose %d MB before the refusal", c.key, c.value, g>>20)
		}
	}
}

// A config.json whose num_hidden_layers far exceeds the layers its
// checkpoint holds (9e18 and 10^9 beside the tiny model's 2 layers) is
// refused naming the key, its value and the layers the files hold, before
// any per-layer work: a walk over 9e18 layers would never end. A Qwen3.5
// config is refused at AR_MAX_MOE_LAYERS (1024, the shim's per-layer
// tables) before a list of 9e18 layer types, which would never fit, is
// derived. The watchdog only turns such a hang into a failure; a refusal
// takes milliseconds.
func TestLoadComparesLayerCountWithFilesFirst(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   Config
		value string
		want  string
	}{
		{"qwen2 9e18", tinyConfig(), "9000000000000000000", "the checkpoint holds 2 layers"},
		{"qwen2 1e9", tinyConfig(), "1000000000", "the checkpoint holds 2 layers"},
		{"qwen3_5 9e18", qwen35Config(), "9000000000000000000", "(at most 1024)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := NewRandomModel(c.cfg, Float32, CPU, false, 21)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Free()
			dir := t.TempDir()
			if err := m.Save(dir); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			writeConfig(t, dir, raw, func(cfg map[string]any) {
				cfg["num_hidden_layers"] = json.RawMessage(c.value)
				delete(cfg, "layer_types") // Qwen3.5's are then derived, one per configured layer
			})
			done := make(chan error, 1)
			go func() {
				back, err := LoadModel(dir, Float32, CPU, false)
				if err == nil {
					back.Free()
				}
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Fatalf("num_hidden_layers %s: still loading after a minute", c.value)
			}
			if err == nil {
				t.Fatalf("num_hidden_layers %s: loaded", c.value)
			}
			for _, want := range []string{"num_hidden_layers " + c.value, c.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// writeConfig writes dir/config.json as raw (a saved config) with edit
// applied to its keys.
func writeConfig(t *testing.T, dir string, raw []byte, edit func(cfg map[string]any)) {
	t.Helper()
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
