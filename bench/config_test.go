package bench

import (
	"reflect"
	"strings"
	"testing"
)

func TestConfigErrorsNameTheField(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Config)
		run  func(Config) (Result, error)
		want string
	}{
		{"vocab", func(c *Config) { c.Vocab = 0 }, Generate, "vocab"},
		{"kv_heads", func(c *Config) { c.KVHeads = -1 }, Train, "kv_heads"},
		{"repeats", func(c *Config) { c.Repeats = 0 }, Train, "repeats"},
		{"threads", func(c *Config) { c.Threads = -2 }, Generate, "threads"},
		{"hidden", func(c *Config) { c.Hidden = 30 }, Generate, "hidden (30)"},
		{"prompt", func(c *Config) { c.PromptLen = 0 }, Generate, "prompt_len"},
		{"new", func(c *Config) { c.NewTokens = 0 }, Generate, "new_tokens"},
		{"seq", func(c *Config) { c.SeqLen = 1 }, Train, "seq_len"},
		{"logits_chunk", func(c *Config) { c.LogitsChunk = -1 }, Train, "logits_chunk"},
		{"torch", func(c *Config) { c.KVHeads = 3 }, Generate, "num_key_value_heads"},
		{"device", func(c *Config) { c.Device = "gpu" }, Generate, `device: device "gpu"`},
		{"device index", func(c *Config) { c.Device = "cuda:x" }, Train, "device: device"},
		{"dtype", func(c *Config) { c.DType = "f8" }, Train, "dtype"},
	}
	for _, c := range cases {
		cfg := tiny()
		c.edit(&cfg)
		_, err := c.run(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.want)
		}
	}
}

func TestPresets(t *testing.T) {
	g, err := Preset("small", "generate")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Vocab: 2048, Hidden: 256, Inter: 688, Layers: 4, Heads: 8, KVHeads: 4,
		Batch: 16, PromptLen: 64, NewTokens: 128, SeqLen: 256, Threads: 2, Repeats: 3, LogitsChunk: 256}
	if !reflect.DeepEqual(g, want) {
		t.Errorf("small generate %+v, want %+v", g, want)
	}
	tr, err := Preset("medium", "train")
	if err != nil {
		t.Fatal(err)
	}
	want = Config{Vocab: 32000, Hidden: 768, Inter: 2048, Layers: 12, Heads: 12, KVHeads: 4,
		Batch: 4, PromptLen: 128, NewTokens: 64, SeqLen: 512, Threads: 2, Repeats: 3, LogitsChunk: 256}
	if !reflect.DeepEqual(tr, want) {
		t.Errorf("medium train %+v, want %+v", tr, want)
	}
	if _, err := Preset("large", "train"); err == nil || !strings.Contains(err.Error(), "large") {
		t.Errorf("unknown preset: %v", err)
	}
	if _, err := Preset("small", "eval"); err == nil || !strings.Contains(err.Error(), "eval") {
		t.Errorf("unknown mode: %v", err)
	}
}
