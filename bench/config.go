package bench

import (
	"fmt"
	"os"
	"runtime"

	"github.com/agentrl/agentrl/torch"
)

// Config is the model shape and workload of one benchmark. Generate uses
// Batch, PromptLen and NewTokens; Train uses Batch and SeqLen.
type Config struct {
	Vocab     int `json:"vocab"`
	Hidden    int `json:"hidden"`
	Inter     int `json:"inter"`
	Layers    int `json:"layers"`
	Heads     int `json:"heads"`
	KVHeads   int `json:"kv_heads"`
	Batch     int `json:"batch"`
	PromptLen int `json:"prompt_len"`
	NewTokens int `json:"new_tokens"`
	SeqLen    int `json:"seq_len"`
	Threads   int `json:"threads"` // 0 = all cores
	Repeats   int `json:"repeats"` // measured runs after one warm-up
	// Tied ties the LM head to the embedding, as Qwen2.5's small models do.
	Tied bool `json:"tied,omitempty"`
	// Model is a model folder (or a Hugging Face model id in the local
	// cache) or a config.json file whose architecture the benchmark builds
	// with random weights, in place of the Qwen2-style shape of the fields
	// above, which resolve then fills from it (a Qwen3.5 or Qwen3 shape, as
	// published). "" = the shape fields.
	Model string `json:"model,omitempty"`
	// LogitsChunk is the model's logits chunk in Train's forwards (see
	// torch.Model.SetLogitsChunk): 0 computes the logits whole.
	LogitsChunk int `json:"logits_chunk"`
	// Checkpointing turns on activation checkpointing in Train's forward
	// (model.checkpointing).
	Checkpointing bool `json:"checkpointing,omitempty"`
	// EngineDType is the precision generation decodes in ("" or "f32": the
	// model's f32 weights; "bf16": a bf16 copy of them, as rollout.dtype
	// does in training).
	EngineDType string `json:"engine_dtype,omitempty"`
	// Decode is the engine's decode path: "" or "auto" (the default),
	// "kernels", "fused" or "unfused" (libtorch ops as the training
	// forward runs them: the path before the hand-written kernels). The
	// result's decode_path says which ran.
	Decode string `json:"-"`
	// BandwidthGBs is the memory read bandwidth the bound is computed
	// from (e.g. refbench peak's sum_gbs_read); 0 measures it in-process.
	// The result's read_gbs is the figure used.
	BandwidthGBs float64 `json:"-"`
	// Profile adds the decode step's time by phase (step_ms) to the result.
	Profile bool `json:"-"`
	// KernelProfile records, after the measured runs, one more update
	// (Train) or one decode step in the middle of one more run (Generate)
	// under libtorch's profiler, into the result's Kernels: on CUDA the
	// kernels, on the CPU the operators.
	KernelProfile bool `json:"-"`
	// LoRARank > 0 benchmarks LoRA adapters of that rank over the random
	// base (torch.NewLoRAModel): Train trains the adapters alone (the
	// optimizer holds only them), Generate decodes from the merged weights
	// (torch.NewMergedModel). 0 is full fine-tuning.
	LoRARank int `json:"lora_rank,omitempty"`
	// LoRAAlpha is lora_alpha (0: twice the rank), LoRATargets the adapted
	// projections (none: all the model has, PEFT's all-linear); the
	// result's config holds them resolved.
	LoRAAlpha   float64  `json:"lora_alpha,omitempty"`
	LoRATargets []string `json:"lora_targets,omitempty"`
	// Device is where Generate and Train run: "" or "cpu", "cuda" or
	// "cuda:N" (a CUDA build). On CUDA the times are wall times of calls
	// that end by copying their results to the host, so each is complete.
	Device string `json:"device,omitempty"`
	// DType is the parameter dtype of Train's model: "" or "f32", "bf16"
	// or "f16" (AdamW keeping f32 master weights, as device.dtype does).
	// Generate's precision is EngineDType.
	DType string `json:"dtype,omitempty"`
}

// DefaultLogitsChunk is the presets' and the CLI's logits chunk, the
// default of model.logits_chunk.
const DefaultLogitsChunk = 256

// Preset returns a named configuration ("small" or "medium") for mode
// ("generate" or "train"), with 2 threads and 3 repeats.
func Preset(name, mode string) (Config, error) {
	var c Config
	switch name {
	case "small":
		c = Config{Vocab: 2048, Hidden: 256, Inter: 688, Layers: 4, Heads: 8, KVHeads: 4}
		c.Batch, c.PromptLen, c.NewTokens, c.SeqLen = 16, 64, 128, 256
		if mode == "train" {
			c.Batch = 8
		}
	case "medium":
		c = Config{Vocab: 32000, Hidden: 768, Inter: 2048, Layers: 12, Heads: 12, KVHeads: 4}
		c.Batch, c.PromptLen, c.NewTokens, c.SeqLen = 8, 128, 64, 512
		if mode == "train" {
			c.Batch = 4
		}
	default:
		return Config{}, fmt.Errorf("bench preset %q: want small or medium", name)
	}
	if mode != "generate" && mode != "train" {
		return Config{}, fmt.Errorf("bench preset %q: mode %q: want generate or train", name, mode)
	}
	c.Threads, c.Repeats, c.LogitsChunk = 2, 3, DefaultLogitsChunk
	return c, nil
}

// validate checks the fields every mode needs, naming the first bad one.
func (c Config) validate() error {
	pos := []struct {
		name string
		v    int
	}{{"vocab", c.Vocab}, {"hidden", c.Hidden}, {"inter", c.Inter}, {"layers", c.Layers},
		{"heads", c.Heads}, {"kv_heads", c.KVHeads}, {"batch", c.Batch}, {"repeats", c.Repeats}}
	for _, p := range pos {
		if p.v <= 0 {
			return fmt.Errorf("bench config: %s must be positive, got %d", p.name, p.v)
		}
	}
	if c.LogitsChunk < 0 {
		return fmt.Errorf("bench config: logits_chunk must not be negative, got %d", c.LogitsChunk)
	}
	if c.Threads < 0 {
		return fmt.Errorf("bench config: threads must not be negative, got %d", c.Threads)
	}
	if c.Model == "" && c.Hidden%c.Heads != 0 {
		return fmt.Errorf("bench config: hidden (%d) must be a multiple of heads (%d)", c.Hidden, c.Heads)
	}
	if c.LoRARank < 0 {
		return fmt.Errorf("bench config: lora_rank must not be negative (0 is full fine-tuning), got %d", c.LoRARank)
	}
	if l := c.lora(); l != nil {
		if err := l.Validate(); err != nil {
			return fmt.Errorf("bench config: %w", err)
		}
	}
	if _, err := c.device(); err != nil {
		return err
	}
	if _, err := c.dtype(); err != nil {
		return err
	}
	return nil
}

// device is the parsed Device.
func (c Config) device() (torch.Device, error) {
	d, err := torch.ParseDevice(c.Device)
	if err != nil {
		return d, fmt.Errorf("bench config: device: %w", err)
	}
	return d, nil
}

// dtype is the parsed DType (f32 when empty).
func (c Config) dtype() (torch.DType, error) {
	if c.DType == "" {
		return torch.Float32, nil
	}
	dt, err := torch.ParseDType(c.DType)
	if err != nil {
		return dt, fmt.Errorf("bench config: dtype: %w", err)
	}
	return dt, nil
}

// withLoRADefaults resolves LoRAAlpha 0 to twice the rank and no
// LoRATargets to all the model has (PEFT's all-linear), when LoRARank > 0.
func (c Config) withLoRADefaults() (Config, error) {
	if c.LoRARank <= 0 {
		return c, nil
	}
	if c.LoRAAlpha == 0 {
		c.LoRAAlpha = 2 * float64(c.LoRARank)
	}
	if len(c.LoRATargets) == 0 {
		mc, err := c.model(0)
		if err != nil {
			return c, err
		}
		c.LoRATargets = mc.AllLinear()
	}
	return c, nil
}

// lora is the adapters' shape (after withLoRADefaults), nil for full
// fine-tuning.
func (c Config) lora() *torch.LoRA {
	if c.LoRARank <= 0 {
		return nil
	}
	return &torch.LoRA{Rank: c.LoRARank, Alpha: c.LoRAAlpha, Targets: c.LoRATargets}
}

// threads resolves Threads 0 to the number of cores.
func (c Config) threads() int {
	if c.Threads == 0 {
		return runtime.NumCPU()
	}
	return c.Threads
}

// model is the torch configuration of the benchmarked decoder: Model's
// architecture, or a Qwen2-style one of the shape fields.
func (c Config) model(maxPositions int) (torch.Config, error) {
	if c.Model == "" {
		return torch.Config{ModelType: "qwen2", Vocab: c.Vocab, Hidden: c.Hidden, Intermediate: c.Inter,
			Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.Hidden / c.Heads,
			RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: maxPositions, TieEmbeddings: c.Tied}, nil
	}
	mc, err := readModelConfig(c.Model)
	if err != nil {
		return torch.Config{}, fmt.Errorf("bench config: model: %w", err)
	}
	if mc.MaxPositions < maxPositions {
		mc.MaxPositions = maxPositions
	}
	return mc, nil
}

// readModelConfig reads path's config.json: path is the file itself, or a
// folder or model id holding it.
func readModelConfig(path string) (torch.Config, error) {
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		b, err := os.ReadFile(path)
		if err != nil {
			return torch.Config{}, err
		}
		return torch.ParseConfig(b, path)
	}
	return torch.ReadConfig(path)
}

// resolve fills the shape fields from Model's config.json, so the result
// says what ran, and the LoRA defaults (withLoRADefaults); a config
// without Model keeps its shape fields.
func (c Config) resolve() (Config, error) {
	c, err := c.withLoRADefaults()
	if err != nil || c.Model == "" {
		return c, err
	}
	mc, err := c.model(0)
	if err != nil {
		return c, err
	}
	c.Vocab, c.Hidden, c.Inter, c.Layers = mc.Vocab, mc.Hidden, mc.Intermediate, mc.Layers
	c.Heads, c.KVHeads, c.Tied = mc.Heads, mc.KVHeads, mc.TieEmbeddings
	return c, nil
}
