package torch

import (
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
)

// ropeConfig is a Llama of head_dim 8 and rope_theta 10000, whose plain
// inverse frequencies are 10000^(-2j/8) = 1, 0.1, 0.01, 0.001 (wavelengths
// 2π/inv: 6.28, 62.8, 628, 6283).
func ropeConfig(r RoPE) Config {
	return Config{ModelType: "llama", Vocab: 16, Hidden: 16, Intermediate: 16, Layers: 1, Heads: 2, KVHeads: 1,
		HeadDim: 8, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 256, Rope: r}
}

func wantFrequencies(t *testing.T, cfg Config, want []float64, wantFactor float64) {
	t.Helper()
	inv, f, err := cfg.RopeFrequencies()
	if err != nil {
		t.Fatal(err)
	}
	if len(inv) != len(want) {
		t.Fatalf("%d frequencies, want %d", len(inv), len(want))
	}
	for j := range want {
		if math.Abs(inv[j]-want[j]) > 3e-7*want[j] { // (transformers' float32: an ulp and a half)
			t.Errorf("inv_freq[%d] = %.15g, want %.15g", j, inv[j], want[j])
		}
	}
	if math.Abs(f-wantFactor) > 1e-12 {
		t.Errorf("attention factor %.15g, want %.15g", f, wantFactor)
	}
}

// Each RoPE type's inverse frequencies, worked by hand from the published
// formulas on the head_dim 8 config (see ropeConfig).
func TestRopeFrequenciesByHand(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		wantFrequencies(t, ropeConfig(RoPE{}), []float64{1, 0.1, 0.01, 0.001}, 1)
	})
	t.Run("linear", func(t *testing.T) {
		// Positions divided by the factor: the frequencies are.
		wantFrequencies(t, ropeConfig(RoPE{Type: "linear", Factor: 4}), []float64{0.25, 0.025, 0.0025, 0.00025}, 1)
	})
	t.Run("llama3", func(t *testing.T) {
		// factor 8, low 1, high 4, original context 1024: wavelengths
		// under 1024/4 = 256 are kept (6.28, 62.8), those over 1024/1 are
		// divided by 8 (6283: 0.001/8), and 628.3 is smoothed with
		// s = (1024/628.3185 - 1)/(4 - 1) = 0.2099155:
		// (1-s) 0.01/8 + s 0.01 = 0.0030867610.
		s := (1024/(2*math.Pi/0.01) - 1) / 3
		wantFrequencies(t, ropeConfig(RoPE{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 1024}),
			[]float64{1, 0.1, (1-s)*0.01/8 + s*0.01, 0.001 / 8}, 1)
		if math.Abs((1-s)*0.01/8+s*0.01-0.0030867610) > 1e-10 {
			t.Fatal("the hand-worked smoothed frequency is wrong")
		}
	})
	t.Run("yarn", func(t *testing.T) {
		// factor 4, original context 64, beta_fast 32 and beta_slow 1:
		// the dimension where 64 positions turn n times is
		// 8 ln(64/(2πn)) / (2 ln 10000): -0.497 for n = 32 (floored to
		// -1, clamped to 0) and 1.008 for n = 1 (ceiled to 2). The ramp
		// (j-0)/(2-0) is 0, 0.5, 1, 1, so dimension 0 keeps its
		// frequency, 1 is half and half (0.5 0.1/4 + 0.5 0.1 = 0.0625),
		// 2 and 3 are interpolated (/4); cos and sin are scaled by
		// 0.1 ln 4 + 1.
		yarn := RoPE{Type: "yarn", Factor: 4, OriginalMaxPositions: 64}
		wantFrequencies(t, ropeConfig(yarn), []float64{1, 0.0625, 0.0025, 0.00025}, 0.1*math.Log(4)+1)
		// truncate false: the ramp runs from 0 to 1.0080001 unrounded,
		// so dimension 1 is 1/1.0080001 interpolated.
		yarn.Untruncated = true
		hi := 8 * math.Log(64/(2*math.Pi)) / (2 * math.Log(10000))
		r := 1 / hi
		wantFrequencies(t, ropeConfig(yarn), []float64{1, 0.1/4*r + 0.1*(1-r), 0.0025, 0.00025}, 0.1*math.Log(4)+1)
		// An explicit attention_factor is used as it is; mscale and
		// mscale_all_dim give (0.1 m ln 4 + 1)/(0.1 a ln 4 + 1).
		yarn.Untruncated, yarn.AttentionFactor = false, 0.75
		wantFrequencies(t, ropeConfig(yarn), []float64{1, 0.0625, 0.0025, 0.00025}, 0.75)
		yarn.AttentionFactor, yarn.MScale, yarn.MScaleAllDim = 0, 2, 1
		wantFrequencies(t, ropeConfig(yarn), []float64{1, 0.0625, 0.0025, 0.00025}, (0.2*math.Log(4)+1)/(0.1*math.Log(4)+1))
	})
}

// The values transformers reads in its own way: truncate null is no
// truncation (transformers tests it for truth), a yarn factor of null is
// the ratio of the contexts, a null attention_factor is derived, and
// rope_theta 1 with plain RoPE turns every dimension once per position.
// The expected numbers are those of TestRopeFrequenciesByHand's config
// (head_dim 8, theta 10000, yarn factor 4 over an original context of 64).
func TestRopeNullsReadAsTransformersDoes(t *testing.T) {
	llama := `{"model_type":"llama","vocab_size":16,"hidden_size":16,"intermediate_size":16,"num_hidden_layers":1,` +
		`"num_attention_heads":2,"num_key_value_heads":1,"head_dim":8,"max_position_embeddings":256`
	hi := 8 * math.Log(64/(2*math.Pi)) / (2 * math.Log(10000))
	r := 1 / hi
	untruncated := []float64{1, 0.1/4*r + 0.1*(1-r), 0.0025, 0.00025}
	truncated := []float64{1, 0.0625, 0.0025, 0.00025}
	att := 0.1*math.Log(4) + 1
	cases := []struct {
		name, rope string
		want       []float64
		factor     float64
	}{
		{"truncate null", `"rope_parameters":{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":64,"truncate":null}`, untruncated, att},
		{"truncate true", `"rope_parameters":{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":64,"truncate":true}`, truncated, att},
		{"factor null", `"rope_parameters":{"rope_type":"yarn","factor":null,"original_max_position_embeddings":64}`, truncated, att},
		{"attention_factor null", `"rope_parameters":{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":64,"attention_factor":null}`, truncated, att},
		{"theta 1", `"rope_theta":1`, []float64{1, 1, 1, 1}, 1},
		{"top-level theta null, the dict's", `"rope_theta":null,"rope_parameters":{"rope_type":"default","rope_theta":10000.0}`, []float64{1, 0.1, 0.01, 0.001}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(llama+","+c.rope+"}"), c.name)
			if err != nil {
				t.Fatal(err)
			}
			wantFrequencies(t, cfg, c.want, c.factor)
		})
	}
}

// pythonRope is the script that prints transformers' own inverse
// frequencies and attention factor for each config.json of the list given
// on stdin.
const pythonRope = `
import json, sys
from transformers import AutoConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
out = []
for c in json.load(sys.stdin):
    cfg = AutoConfig.for_model(**c)
    t = cfg.rope_parameters["rope_type"]
    fn = LlamaRotaryEmbedding.compute_default_rope_parameters if t == "default" else ROPE_INIT_FUNCTIONS[t]
    inv, f = fn(cfg)
    out.append({"inv_freq": inv.tolist(), "attention_factor": float(f)})
print(json.dumps(out))
`

// The inverse frequencies and attention factor of every implemented RoPE
// type equal those of transformers' own functions, for configs read in the
// transformers 5 form, among them Llama 3.2's llama3 scaling and Qwen's
// yarn: within 1e-6 relative, as transformers computes them in float32
// (llama3's smoothed band rounds several times: 3 ulp), and default RoPE's
// equal to the bit (computed by libtorch as transformers computes them:
// rounded from float64, a third of them were an ulp off). Skips without
// the Python environment.
func TestInteropRopeFrequencies(t *testing.T) {
	py := pyinterop.Python(t)
	base := `"vocab_size":16,"hidden_size":256,"intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1`
	cases := []struct{ name, js string }{
		{"qwen2 default", `{"model_type":"qwen2",` + base + `,"rope_parameters":{"rope_type":"default","rope_theta":1000000.0}}`},
		{"llama3.2", `{"model_type":"llama",` + base + `,"max_position_embeddings":131072,"rope_parameters":{"rope_type":"llama3","rope_theta":500000.0,` +
			`"factor":32.0,"low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":8192}}`},
		{"qwen3 yarn", `{"model_type":"qwen3","head_dim":64,` + base + `,"max_position_embeddings":131072,"rope_parameters":{"rope_type":"yarn","rope_theta":1000000.0,` +
			`"factor":4.0,"original_max_position_embeddings":32768}}`},
		{"yarn untruncated mscale", `{"model_type":"llama",` + base + `,"max_position_embeddings":4096,"rope_parameters":{"rope_type":"yarn","rope_theta":10000.0,` +
			`"factor":8.0,"original_max_position_embeddings":512,"beta_fast":16,"beta_slow":2,"mscale":1.0,"mscale_all_dim":0.5,"truncate":false}}`},
		{"linear", `{"model_type":"llama",` + base + `,"rope_parameters":{"rope_type":"linear","rope_theta":10000.0,"factor":2.5}}`},
		{"yarn truncate null", `{"model_type":"llama",` + base + `,"max_position_embeddings":4096,"rope_parameters":{"rope_type":"yarn","rope_theta":10000.0,` +
			`"factor":8.0,"original_max_position_embeddings":512,"truncate":null}}`},
		{"yarn factor null", `{"model_type":"llama",` + base + `,"max_position_embeddings":4096,"rope_parameters":{"rope_type":"yarn","rope_theta":10000.0,` +
			`"factor":null,"original_max_position_embeddings":512}}`},
		{"theta 1", `{"model_type":"llama",` + base + `,"rope_parameters":{"rope_type":"default","rope_theta":1.0}}`},
	}
	var in []string
	for _, c := range cases {
		in = append(in, c.js)
	}
	cmd := exec.Command(py, "-c", pythonRope)
	cmd.Stdin = strings.NewReader("[" + strings.Join(in, ",") + "]")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("transformers: %v\n%s", err, stderrOf(err))
	}
	var want []struct {
		InvFreq         []float64 `json:"inv_freq"`
		AttentionFactor float64   `json:"attention_factor"`
	}
	if err := json.Unmarshal(out, &want); err != nil || len(want) != len(cases) {
		t.Fatalf("transformers printed %q: %v", out, err)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(c.js), c.name)
			if err != nil {
				t.Fatal(err)
			}
			inv, f, err := cfg.RopeFrequencies()
			if err != nil {
				t.Fatal(err)
			}
			w := want[i]
			if len(inv) != len(w.InvFreq) {
				t.Fatalf("%d frequencies, transformers has %d", len(inv), len(w.InvFreq))
			}
			for j := range inv {
				if math.Abs(inv[j]-w.InvFreq[j]) > 1e-6*w.InvFreq[j] || cfg.Rope.Type == "" && inv[j] != w.InvFreq[j] {
					t.Errorf("inv_freq[%d] = %.9g, transformers %.9g", j, inv[j], w.InvFreq[j])
				}
			}
			if math.Abs(f-w.AttentionFactor) > 1e-12 {
				t.Errorf("attention factor %.15g, transformers %.15g", f, w.AttentionFactor)
			}
		})
	}
}

// pythonRopeRefusal prints, for each config.json of the list on stdin,
// what transformers makes of it: the error it raises reading the config or
// computing its RoPE, or the inverse frequencies and attention factor it
// computes (NaN and infinities as JSON strings).
const pythonRopeRefusal = `
import json, math, sys
from transformers import AutoConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
out = []
for c in json.load(sys.stdin):
    try:
        cfg = AutoConfig.for_model(**c)
        t = cfg.rope_parameters["rope_type"]
        fn = LlamaRotaryEmbedding.compute_default_rope_parameters if t == "default" else ROPE_INIT_FUNCTIONS[t]
        inv, f = fn(cfg)
        out.append({"inv_freq": [x if math.isfinite(x) else str(x) for x in inv.tolist()], "attention_factor": float(f)})
    except Exception as e:
        out.append({"error": type(e).__name__ + ": " + str(e)[:200]})
print(json.dumps(out))
`

// Each config that ParseConfig refuses because transformers cannot compute
// it, or reads a value of another type than its config class declares, is
// judged by transformers itself: it raises, or its RoPE has a frequency
// that is not finite, or an attention factor of 0 (every query and key
// zero). Skips without the Python environment.
func TestInteropRopeRefusals(t *testing.T) {
	py := pyinterop.Python(t)
	base := `"vocab_size":16,"hidden_size":256,"intermediate_size":16,"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":1,"max_position_embeddings":4096`
	llama, qwen := `{"model_type":"llama",`+base, `{"model_type":"qwen2",`+base
	cases := []struct{ name, js string }{
		{"rope_type null beside type yarn", llama + `,"rope_scaling":{"rope_type":null,"type":"yarn","factor":4.0,"original_max_position_embeddings":512}}`},
		{"yarn factor 0", llama + `,"rope_parameters":{"rope_type":"yarn","rope_theta":10000.0,"factor":0,"original_max_position_embeddings":512}}`},
		{"yarn attention_factor 0", llama + `,"rope_parameters":{"rope_type":"yarn","rope_theta":10000.0,"factor":8.0,"original_max_position_embeddings":512,"attention_factor":0.0}}`},
		{"yarn rope_theta 1", llama + `,"rope_parameters":{"rope_type":"yarn","rope_theta":1.0,"factor":8.0,"original_max_position_embeddings":512}}`},
		{"yarn original null", llama + `,"rope_parameters":{"rope_type":"yarn","rope_theta":10000.0,"factor":8.0,"original_max_position_embeddings":null}}`},
		{"rope_theta null", llama + `,"rope_theta":null}`},
		{"use_sliding_window 1", qwen + `,"use_sliding_window":1,"sliding_window":4,"max_window_layers":0}`},
		{"max_window_layers string", qwen + `,"use_sliding_window":true,"sliding_window":4,"max_window_layers":"0"}`},
		{"mlp_bias 1", llama + `,"mlp_bias":1}`},
	}
	var in []string
	for _, c := range cases {
		in = append(in, c.js)
	}
	cmd := exec.Command(py, "-c", pythonRopeRefusal)
	cmd.Stdin = strings.NewReader("[" + strings.Join(in, ",") + "]")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("transformers: %v\n%s", err, stderrOf(err))
	}
	var got []struct {
		Error           string  `json:"error"`
		InvFreq         []any   `json:"inv_freq"`
		AttentionFactor float64 `json:"attention_factor"`
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(cases) {
		t.Fatalf("transformers printed %q: %v", out, err)
	}
	for i, c := range cases {
		if _, err := ParseConfig([]byte(c.js), c.name); err == nil {
			t.Errorf("%s: agentrl loads it", c.name)
		}
		g := got[i]
		bad := g.Error != "" || g.AttentionFactor == 0
		for _, x := range g.InvFreq {
			if _, ok := x.(float64); !ok {
				bad = true // NaN or an infinity
			}
		}
		if !bad {
			t.Errorf("%s: transformers computes it: inv_freq %v, attention factor %g", c.name, g.InvFreq, g.AttentionFactor)
		}
		t.Logf("%s: transformers: %q, attention factor %g", c.name, g.Error, g.AttentionFactor)
	}
}

func stderrOf(err error) string {
	if e, ok := err.(*exec.ExitError); ok {
		return string(e.Stderr)
	}
	return fmt.Sprint(err)
}
