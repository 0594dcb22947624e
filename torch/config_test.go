package torch

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// qwen25Transformers5 is config.json as transformers 5 saves a
// Qwen2.5-0.5B (Qwen2Config(...).save_pretrained): the RoPE base only in
// rope_parameters, dtype instead of torch_dtype, layer_types written out.
const qwen25Transformers5 = `{
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643, "dtype": "bfloat16",
  "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
  "intermediate_size": 4864, "layer_types": ["full_attention", "full_attention"], "max_position_embeddings": 32768,
  "max_window_layers": 21, "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 2,
  "num_key_value_heads": 2, "pad_token_id": null, "rms_norm_eps": 1e-06,
  "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}, "sliding_window": null,
  "tie_word_embeddings": true, "transformers_version": "5.24.0", "use_cache": true, "use_sliding_window": false,
  "vocab_size": 151936
}`

// llama32Transformers4 is Llama-3.2-1B-Instruct's config.json as Meta
// ships it (transformers 4.45): rope_scaling with the llama3 type, an eos
// list, tied embeddings.
const llama32Transformers4 = `{
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009], "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
  "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.45.0.dev0",
  "use_cache": true, "vocab_size": 128256
}`

// llama32Transformers5 is the same model as transformers 5 saves it.
const llama32Transformers5 = `{
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 128000,
  "dtype": "bfloat16", "eos_token_id": [128001, 128008, 128009], "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048,
  "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
  "pad_token_id": null, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_parameters": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192,
    "rope_theta": 500000.0, "rope_type": "llama3"},
  "tie_word_embeddings": true, "transformers_version": "5.24.0", "use_cache": true, "vocab_size": 128256
}`

// A transformers 5 Qwen2 config has its rope_theta of 1e6 read from
// rope_parameters (it was 10000, silently), and its dtype.
func TestConfigTransformers5Qwen2(t *testing.T) {
	c, err := ParseConfig([]byte(qwen25Transformers5), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.RopeTheta != 1e6 || (c.Rope != RoPE{}) {
		t.Errorf("rope_theta %g, rope %+v; want 1e6, plain", c.RopeTheta, c.Rope)
	}
	if c.TorchDType != "bfloat16" || !c.TieEmbeddings || c.KVHeads != 2 || c.HeadDim != 64 || !c.QKVBias() {
		t.Errorf("dtype %q tied %v kv %d head_dim %d qkv bias %v; want bfloat16, tied, 2, 896/14 = 64, biases",
			c.TorchDType, c.TieEmbeddings, c.KVHeads, c.HeadDim, c.QKVBias())
	}
	inv, f, err := c.RopeFrequencies()
	if want := 1 / math.Pow(1e6, 2.0/64); err != nil || f != 1 || math.Abs(inv[1]-want) > 3e-7*want {
		t.Errorf("inv_freq[1] %v, factor %v (%v); want 1e6^(-2/64), 1", inv[1], f, err)
	}
}

// Llama 3.2's config in the transformers 4 form (rope_scaling, top-level
// rope_theta, torch_dtype) and the transformers 5 form (rope_parameters,
// dtype) read the same: llama3 scaling with factor 32, frequency factors 1
// and 4, original context 8192, theta 500000, tied, GQA 32/8, eos the
// first of its list.
func TestConfigLlama32BothForms(t *testing.T) {
	want := RoPE{Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8192}
	var freqs [][]float64
	for name, js := range map[string]string{"transformers 4": llama32Transformers4, "transformers 5": llama32Transformers5} {
		c, err := ParseConfig([]byte(js), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.Rope != want || c.RopeTheta != 500000 {
			t.Errorf("%s: rope %+v theta %g, want %+v theta 500000", name, c.Rope, c.RopeTheta, want)
		}
		if !c.TieEmbeddings || c.Heads != 32 || c.KVHeads != 8 || c.HeadDim != 64 || c.QKVBias() || c.QKNorm() ||
			c.EOS != 128001 || c.BOS != 128000 || c.TorchDType != "bfloat16" || c.RMSEps != 1e-5 {
			t.Errorf("%s: %+v", name, c)
		}
		inv, f, err := c.RopeFrequencies()
		if err != nil || f != 1 {
			t.Fatalf("%s: attention factor %v (%v)", name, f, err)
		}
		freqs = append(freqs, inv)
		// Written back in the form it was read in, the eos list kept.
		b, err := c.JSON()
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		json.Unmarshal(b, &out)
		key := map[string]string{"transformers 4": "rope_scaling", "transformers 5": "rope_parameters"}[name]
		other := map[string]string{"transformers 4": "rope_parameters", "transformers 5": "rope_scaling"}[name]
		if _, ok := out[key]; !ok || out[other] != nil {
			t.Errorf("%s: written back with %v and %v", name, out[key], out[other])
		}
		if l, ok := out["eos_token_id"].([]any); !ok || len(l) != 3 {
			t.Errorf("%s: eos_token_id written back as %v", name, out["eos_token_id"])
		}
		back, err := ParseConfig(b, name+" written back")
		if err != nil || back.Rope != c.Rope || back.RopeTheta != c.RopeTheta || back.TorchDType != c.TorchDType {
			t.Errorf("%s: read back as %+v (%v)", name, back, err)
		}
	}
	if !slices.Equal(freqs[0], freqs[1]) {
		t.Errorf("the two forms give different frequencies")
	}
}

// Defaults are transformers' config classes': num_key_value_heads 32 for
// Qwen2 and Qwen3 (num_attention_heads for Llama), head_dim 128 for Qwen3
// (hidden/heads otherwise), untied embeddings, rope_theta 10000.
func TestConfigDefaults(t *testing.T) {
	base := `"vocab_size":8,"hidden_size":64,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":32`
	for _, c := range []struct {
		js          string
		kv, headDim int
	}{
		{`{"model_type":"qwen2",` + base + `}`, 32, 2},
		{`{"model_type":"qwen3",` + base + `}`, 32, 128},
		{`{"model_type":"llama",` + base + `}`, 32, 2},
		{`{"model_type":"llama",` + base + `,"num_key_value_heads":null,"head_dim":null}`, 32, 2},
		{`{"model_type":"qwen2",` + base + `,"num_key_value_heads":4}`, 4, 2},
	} {
		cfg, err := ParseConfig([]byte(c.js), "config.json")
		if err != nil {
			t.Fatalf("%s: %v", c.js, err)
		}
		if cfg.KVHeads != c.kv || cfg.HeadDim != c.headDim || cfg.TieEmbeddings || cfg.RopeTheta != 10000 || cfg.Rope.Type != "" {
			t.Errorf("%s: kv %d head_dim %d tied %v theta %g rope %q; want %d, %d, untied, 10000, plain",
				c.js, cfg.KVHeads, cfg.HeadDim, cfg.TieEmbeddings, cfg.RopeTheta, cfg.Rope.Type, c.kv, c.headDim)
		}
	}
}

// Layers that all use full attention load: layer_types all
// full_attention, a sliding window switched off, or one that starts at
// max_window_layers beyond the last layer.
func TestConfigFullAttentionLoads(t *testing.T) {
	base := `"model_type":"qwen2","vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":2`
	for _, js := range []string{
		`{` + base + `,"layer_types":["full_attention","full_attention"],"use_sliding_window":true,"sliding_window":4}`,
		`{` + base + `,"use_sliding_window":false,"sliding_window":4096,"max_window_layers":0}`,
		`{` + base + `,"use_sliding_window":true,"sliding_window":4096,"max_window_layers":2}`,
		`{` + base + `,"use_sliding_window":true,"sliding_window":null,"max_window_layers":0}`,
		`{` + base + `,"rope_scaling":null,"rope_parameters":null,"hidden_act":"silu","attention_dropout":0,"mlp_bias":false}`,
	} {
		if c, err := ParseConfig([]byte(js), "config.json"); err != nil || c.Window != 0 {
			t.Errorf("%s: window %d, %v", js, c.Window, err)
		}
	}
}

// Qwen2's and Qwen3's sliding windows are read as their config classes
// derive them: layers from max_window_layers on, or those layer_types
// names, slide when use_sliding_window is true and sliding_window is set.
func TestConfigSlidingWindowLayers(t *testing.T) {
	base := `"vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":3,"num_attention_heads":2,"num_key_value_heads":2`
	for _, c := range []struct {
		js     string
		window int
		layers []bool
	}{
		{`{"model_type":"qwen2",` + base + `,"use_sliding_window":true,"sliding_window":4096,"max_window_layers":1}`, 4096, []bool{false, true, true}},
		{`{"model_type":"qwen3",` + base + `,"use_sliding_window":true,"sliding_window":64,"max_window_layers":0}`, 64, []bool{true, true, true}},
		{`{"model_type":"qwen2",` + base + `,"use_sliding_window":true,"sliding_window":8,` +
			`"layer_types":["sliding_attention","full_attention","sliding_attention"]}`, 8, []bool{true, false, true}},
	} {
		got, err := ParseConfig([]byte(c.js), "config.json")
		if err != nil || got.Window != c.window || !slices.Equal(got.WindowLayers, c.layers) {
			t.Errorf("%s: window %d layers %v (%v), want %d %v", c.js, got.Window, got.WindowLayers, err, c.window, c.layers)
		}
	}
	if _, err := ParseConfig([]byte(`{"model_type":"qwen2",`+base+`,"layer_types":["sliding_attention","full_attention","full_attention"]}`),
		"config.json"); err == nil || !strings.Contains(err.Error(), "needs use_sliding_window true") {
		t.Errorf("a sliding layer without use_sliding_window: %v", err)
	}
}

// Every key that would change the math and is not implemented is refused,
// the error naming it.
func TestConfigRefusesByName(t *testing.T) {
	base := `"vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":2,"num_attention_heads":2,"num_key_value_heads":2`
	qwen := `{"model_type":"qwen2",` + base
	llama := `{"model_type":"llama",` + base
	cases := []struct{ js, names string }{
		{`{"model_type":"mistral",` + base + `}`, "mistral"},
		{llama + `,"rope_parameters":{"rope_type":"dynamic","factor":2.0}}`, "dynamic"},
		{llama + `,"rope_scaling":{"type":"dynamic","factor":2.0}}`, "dynamic"},
		{llama + `,"rope_parameters":{"rope_type":"longrope","short_factor":[1],"long_factor":[1]}}`, "longrope"},
		{llama + `,"rope_parameters":{"rope_type":"su"}}`, `"su"`},
		{llama + `,"rope_parameters":{"rope_type":"default","mrope_section":[1,1]}}`, "mrope_section"},
		{llama + `,"rope_parameters":{"rope_type":"llama3","factor":8.0}}`, "low_freq_factor"},
		{llama + `,"rope_parameters":{"rope_type":"linear"}}`, "factor"},
		{llama + `,"max_position_embeddings":64,"rope_parameters":{"rope_type":"llama3","factor":8.0,"low_freq_factor":4,"high_freq_factor":1}}`, "high_freq_factor"},
		{llama + `,"rope_parameters":{"rope_type":"default","partial_rotary_factor":0.5}}`, "partial_rotary_factor"},
		{llama + `,"partial_rotary_factor":0.5}`, "partial_rotary_factor"},
		{llama + `,"rope_parameters":{"rope_theta":10000.0},"rope_scaling":{"rope_type":"linear","factor":2.0}}`, "rope_scaling"},
		{llama + `,"rope_parameters":{"full_attention":{"rope_type":"default"}}}`, "full_attention"},
		{llama + `,"hidden_act":"gelu"}`, "hidden_act"},
		{llama + `,"rope_theta":0}`, "rope_theta"},
		{llama + `,"rope_parameters":{"rope_type":"default","rope_theta":-1}}`, "rope_theta"},
		{llama + `,"mlp_bias":true}`, "mlp_bias"},
		{llama + `,"attention_bias":true}`, "attention_bias"},
		{`{"model_type":"qwen3",` + base + `,"attention_bias":true}`, "attention_bias"},
		{llama + `,"attention_dropout":0.1}`, "attention_dropout"},
		{llama + `,"quantization_config":{"quant_method":"awq"}}`, "quantization_config"},
		{llama + `,"architectures":["LlamaForSequenceClassification"]}`, "LlamaForSequenceClassification"},
		{qwen + `,"layer_types":["full_attention","sliding_attention"]}`, "layer_types[1]"},
		{qwen + `,"layer_types":["full_attention"]}`, "layer_types"},
		{llama + `,"layer_types":["chunked_attention","full_attention"]}`, "chunked_attention"},
		{qwen + `,"use_sliding_window":true,"sliding_window":0,"max_window_layers":1}`, "sliding_window must be a positive whole number"},
		{llama + `,"layer_types":["sliding_attention","full_attention"]}`, "layer_types[0]"},
		// Values of another JSON type than transformers 5's config classes
		// declare: refused, never read as false, absent or a default.
		{qwen + `,"use_sliding_window":1,"sliding_window":4,"max_window_layers":0}`, "use_sliding_window must be true or false, got 1"},
		{qwen + `,"use_sliding_window":null}`, "use_sliding_window must be true or false, got null"},
		{qwen + `,"use_sliding_window":true,"sliding_window":4,"max_window_layers":"0"}`, `max_window_layers must be a number, got "0"`},
		{qwen + `,"max_window_layers":null}`, "max_window_layers must be a number, got null"},
		{qwen + `,"max_window_layers":1.5}`, "max_window_layers must be a whole number"},
		{qwen + `,"sliding_window":"4096"}`, `sliding_window must be a number, got "4096"`},
		{qwen + `,"use_sliding_window":1,"layer_types":["full_attention","full_attention"]}`, "use_sliding_window"},
		{llama + `,"mlp_bias":1}`, "mlp_bias must be true or false, got 1"},
		{llama + `,"mlp_bias":"true"}`, "mlp_bias must be true or false"},
		{llama + `,"attention_dropout":"0.1"}`, "attention_dropout must be a number"},
		{llama + `,"architectures":"LlamaForSequenceClassification"}`, "architectures must be a list"},
		{llama + `,"partial_rotary_factor":"0.5"}`, "partial_rotary_factor must be a number"},
		{llama + `,"rope_theta":null}`, "rope_theta must be a number, got null"},
		{llama + `,"rope_parameters":{"rope_type":"default","rope_theta":null}}`, "rope_parameters.rope_theta must be a number, got null"},
		// Configs transformers cannot compute: refused, never given a
		// substitute value.
		{llama + `,"max_position_embeddings":256,"rope_scaling":{"rope_type":null,"type":"yarn","factor":4.0}}`, "rope_scaling.rope_type must name a RoPE type, got null"},
		{llama + `,"rope_scaling":{"type":null,"factor":4.0}}`, "rope_scaling.type must name a RoPE type, got null"},
		{llama + `,"rope_parameters":{"rope_type":5}}`, "rope_parameters.rope_type must name a RoPE type, got 5"},
		{llama + `,"max_position_embeddings":256,"rope_parameters":{"rope_type":"yarn","factor":0,"original_max_position_embeddings":64}}`, "factor must be positive, got 0"},
		{llama + `,"max_position_embeddings":256,"rope_parameters":{"rope_type":"yarn","factor":4.0,"attention_factor":0.0}}`, "attention_factor 0 is not supported"},
		{llama + `,"max_position_embeddings":256,"rope_theta":1,"rope_scaling":{"rope_type":"yarn","factor":4.0}}`, "rope_theta 1 is not supported"},
		{llama + `,"max_position_embeddings":256,"rope_parameters":{"rope_type":"yarn","rope_theta":1.0,"factor":4.0}}`, "rope_theta 1 is not supported"},
		{llama + `,"max_position_embeddings":256,"rope_parameters":{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":null}}`, "original_max_position_embeddings must be a number, got null"},
		{llama + `,"max_position_embeddings":256,"original_max_position_embeddings":"64","rope_parameters":{"rope_type":"yarn","factor":4.0}}`, `original_max_position_embeddings must be a number, got "64"`},
	}
	for _, c := range cases {
		_, err := ParseConfig([]byte(c.js), "config.json")
		if err == nil || !strings.Contains(err.Error(), c.names) {
			t.Errorf("%s: error %v, want one naming %s", c.js, err, c.names)
		}
	}
}
