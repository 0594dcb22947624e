package models

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/hubcache/hubcachetest"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/config"
)

// trainer/config keeps its own list of target names (it builds without
// libtorch): it must be torch's.
func TestLoRATargetsAgree(t *testing.T) {
	if !slices.Equal(config.LoRATargets, torch.LoRATargets) {
		t.Fatalf("config.LoRATargets %v, torch.LoRATargets %v", config.LoRATargets, torch.LoRATargets)
	}
}

// model.lora.path must be adapters of model.lora's shape: each key that
// differs is named, an rsLoRA adapter (scaled alpha/sqrt(r), where
// model.lora scales alpha/r) among them.
func TestLoRAPathShape(t *testing.T) {
	cfg := config.Default()
	cfg.Model.LoRA.Rank, cfg.Model.LoRA.Alpha, cfg.Model.LoRA.TargetModules = 4, 8, []string{"q_proj"}
	m := &Set{cfg: cfg}
	write := func(extra string) string {
		d := t.TempDir()
		body := `{"peft_type": "LORA", "r": 4, "lora_alpha": 8, "lora_dropout": 0.0, "target_modules": ["q_proj"]` + extra + `}`
		if err := os.WriteFile(filepath.Join(d, "adapter_config.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	base := torch.Config{ModelType: "qwen2", Layers: 2}
	if err := m.sameShape(write(""), base); err != nil {
		t.Fatalf("the same shape: %v", err)
	}
	err := m.sameShape(write(`, "use_rslora": true`), base)
	if err == nil || !strings.Contains(err.Error(), "use_rslora true") {
		t.Fatalf("an rsLoRA adapter: %v, want a refusal naming use_rslora", err)
	}
	// all-linear is the projections the base has: a Qwen3.5's twelve (its
	// Gated DeltaNet layers' five among them), a Qwen2's seven.
	m.cfg.Model.LoRA.TargetModules = []string{"all-linear"}
	hybrid := torch.Config{ModelType: "qwen3_5_text", Layers: 2, LayerTypes: []string{torch.LinearAttention, torch.FullAttention}}
	if got := m.loraShape(hybrid).Targets; len(got) != 12 || !slices.Contains(got, "in_proj_qkv") {
		t.Errorf("all-linear over a Qwen3.5: %v", got)
	}
	if got := m.loraShape(base).Targets; len(got) != 7 || slices.Contains(got, "in_proj_qkv") {
		t.Errorf("all-linear over a Qwen2: %v", got)
	}
	d := t.TempDir()
	body := `{"peft_type": "LORA", "r": 4, "lora_alpha": 8, "lora_dropout": 0.0, "target_modules": "all-linear"}`
	if err := os.WriteFile(filepath.Join(d, "adapter_config.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.sameShape(d, hybrid); err != nil {
		t.Errorf("all-linear against all-linear over a Qwen3.5: %v", err)
	}
}

// An adapter names a base read by model id as the id, and one read at a
// revision as its snapshot folder (base_model_name_or_path cannot carry
// "@REVISION"); a local base by its absolute folder.
func TestLoRABaseName(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := hubcachetest.Put(t, cache, "org/base", "v1", "0123456789abcdef0123456789abcdef01234567", src)
	local := t.TempDir()
	for dir, want := range map[string]string{"org/base": "org/base", "org/base@v1": snap, local: local} {
		if got := (&Set{baseDir: dir}).baseName(); got != want {
			t.Errorf("baseName of %s = %s, want %s", dir, got, want)
		}
	}
}
