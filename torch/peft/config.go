// Package peft reads and writes LoRA adapters as Hugging Face PEFT's
// adapter folders, which transformers (PeftModel.from_pretrained) and vLLM
// (LoRARequest) load:
//
//	adapter_config.json        PEFT's LoraConfig (peft_type LORA, r, lora_alpha, target_modules, ...)
//	adapter_model.safetensors  the adapters, f32, under PEFT's saved keys:
//	                           base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight [r, in]
//	                           base_model.model.model.layers.{i}.self_attn.q_proj.lora_B.weight [out, r]
//	                           (linear_attn.in_proj_qkv, ..., mlp.down_proj, Gemma 4's
//	                           layers.{i}.per_layer_input_gate likewise; its model-level
//	                           base_model.model.model.per_layer_model_projection.lora_A.weight); no adapter
//	                           name ("default") in the keys, as PEFT strips it when saving
//	value_head.safetensors     a critic's value head (v_head.summary.weight, .bias), beside the
//	                           adapters as beside a full model (torch.ValueHeadFile): PEFT and
//	                           vLLM never read it, and vLLM would refuse an unknown key inside
//	                           adapter_model.safetensors
//
// Only safetensors adapters are read: adapter_model.bin (a pickle) is refused.
package peft

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/internal/atomicfile"
	"github.com/agentrl/agentrl/internal/regular"
	"github.com/agentrl/agentrl/torch"
)

// The files of an adapter folder.
const (
	ConfigFile  = "adapter_config.json"
	WeightsFile = "adapter_model.safetensors"
	binFile     = "adapter_model.bin"
)

// allLinear is PEFT's target_modules shorthand for every linear layer but
// the output layer.
const allLinear = "all-linear"

// fileConfig is adapter_config.json: the keys of PEFT's LoraConfig that
// agentrl writes, in the sorted order PEFT writes them, each as PEFT
// spells it. Read back, the keys that would change what the adapters
// compute (bias, fan_in_fan_out, use_dora, rank and alpha
// patterns, layers_to_transform, modules_to_save) must have the values
// agentrl implements.
type fileConfig struct {
	AlphaPattern        map[string]float64 `json:"alpha_pattern"`
	AutoMapping         json.RawMessage    `json:"auto_mapping"`
	BaseModelNameOrPath string             `json:"base_model_name_or_path"`
	Bias                string             `json:"bias"`
	FanInFanOut         bool               `json:"fan_in_fan_out"`
	InferenceMode       bool               `json:"inference_mode"`
	InitLoraWeights     json.RawMessage    `json:"init_lora_weights"`
	LayersPattern       json.RawMessage    `json:"layers_pattern"`
	LayersToTransform   json.RawMessage    `json:"layers_to_transform"`
	LoraAlpha           float64            `json:"lora_alpha"`
	LoraDropout         float64            `json:"lora_dropout"`
	ModulesToSave       []string           `json:"modules_to_save"`
	PeftType            string             `json:"peft_type"`
	R                   int                `json:"r"`
	RankPattern         map[string]int     `json:"rank_pattern"`
	Revision            *string            `json:"revision"`
	TargetModules       json.RawMessage    `json:"target_modules"`
	TaskType            string             `json:"task_type"`
	UseDora             bool               `json:"use_dora"`
	UseRslora           bool               `json:"use_rslora"`
}

// Config is what an adapter folder says of its adapters: their shape and
// the base they were trained on (base_model_name_or_path, as written).
// Over a base, the shape is Over's.
type Config struct {
	LoRA torch.LoRA
	Base string
	// allLinear says target_modules is the string all-linear: the targets
	// are those the base has.
	allLinear bool
	// layers are the layers named of each target named by its path.
	layers map[string][]int
}

// Over is the adapters' shape over a base of config base: all-linear is
// the projections the base has (torch.Config.AllLinear), and a target
// named by its module paths must be named on every layer of the base that
// has its projection (a hybrid model's q_proj on its attention layers,
// in_proj_qkv on its Gated DeltaNet layers) and on no other.
func (c Config) Over(base torch.Config) (torch.LoRA, error) {
	l := c.LoRA
	l.Targets = slices.Clone(l.Targets)
	if c.allLinear {
		l.Targets = base.AllLinear()
	}
	for _, t := range torch.LoRATargets {
		ls, ok := c.layers[t]
		if !ok {
			continue
		}
		has := base.LoRALayers(t)
		for _, i := range ls {
			if !slices.Contains(has, i) {
				return torch.LoRA{}, fmt.Errorf("target_modules name %s on layer %d, which has no %s (the base has it on layers %v)",
					t, i, base.LoRAModule(t), has)
			}
		}
		if len(ls) < len(has) {
			return torch.LoRA{}, fmt.Errorf("target_modules name %s on layers %v only, the base has it on %v: adapters on a subset of layers are not supported", t, ls, has)
		}
	}
	return l, nil
}

// ReadConfig reads dir's adapter_config.json (use_rslora as torch.LoRA's
// RSLoRA), refusing what agentrl cannot compute the same way (a bias, DoRA,
// per-module ranks, a subset of layers, extra trained modules, target
// modules it has no adapter for).
func ReadConfig(dir string) (Config, error) {
	path := filepath.Join(dir, ConfigFile)
	b, err := regular.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("adapter folder %s: %w", dir, err)
	}
	var f fileConfig
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &f); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	if err := checkVariants(raw); err != nil {
		return bad("%v", err)
	}
	switch {
	case f.PeftType != "LORA":
		return bad("peft_type %q, want LORA", f.PeftType)
	case f.TaskType != "" && f.TaskType != "CAUSAL_LM":
		return bad("task_type %q, want CAUSAL_LM", f.TaskType)
	case f.Bias != "" && f.Bias != "none":
		return bad("bias %q: trained biases are not supported, want none", f.Bias)
	case f.FanInFanOut:
		return bad("fan_in_fan_out true (Conv1D layers of GPT-2), want false")
	case f.UseDora:
		return bad("use_dora true: DoRA is not supported, want false")
	case len(f.RankPattern) > 0 || len(f.AlphaPattern) > 0:
		return bad("rank_pattern or alpha_pattern set: per-module ranks are not supported")
	case len(f.ModulesToSave) > 0:
		return bad("modules_to_save %v: fully trained extra modules are not supported", f.ModulesToSave)
	case !isNull(f.LayersToTransform):
		return bad("layers_to_transform %s: adapters on a subset of layers are not supported", f.LayersToTransform)
	}
	targets, allLinear, layers, err := parseTargets(f.TargetModules)
	if err != nil {
		return bad("%v", err)
	}
	c := Config{LoRA: torch.LoRA{Rank: f.R, Alpha: f.LoraAlpha, Dropout: f.LoraDropout, Targets: targets, RSLoRA: f.UseRslora},
		Base: f.BaseModelNameOrPath, allLinear: allLinear, layers: layers}
	if err := c.LoRA.Validate(); err != nil {
		return bad("%v", err)
	}
	return c, nil
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// parseTargets reads target_modules: a list of module names, or a string
// (all-linear, or one module name; PEFT's regular expressions are not
// supported). A list may name modules by their path, as PEFT writes the
// all-linear of a model (model.layers.{i}.self_attn.q_proj, ...); the
// layers so named of each come back in layers, for Config.Over to hold to
// a base. The names come back in a layer's order (torch.LoRATargets):
// all of them for all-linear, which all reports.
func parseTargets(raw json.RawMessage) (targets []string, all bool, layers map[string][]int, err error) {
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		var one string
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, false, nil, fmt.Errorf("target_modules %s, want a list of module names or a string", raw)
		}
		if one == allLinear {
			return slices.Clone(torch.LoRATargets), true, nil, nil
		}
		names = []string{one}
	}
	if len(names) == 0 {
		return nil, false, nil, fmt.Errorf("target_modules is empty")
	}
	layers = map[string][]int{}
	for i, n := range names {
		if k := targetPath.FindStringSubmatch(n); k != nil {
			if module := torch.LoRAModule(k[3]); module != modulePath(k[2], k[3]) && k[2] != "mixer" {
				return nil, false, nil, fmt.Errorf("target module %q: the base has no %s in %s", n, k[3], layerBlock(k[2]))
			}
			l, _ := strconv.Atoi(k[1])
			layers[k[3]] = append(layers[k[3]], l)
			names[i] = k[3]
		}
		if n == "model."+torch.ModelLoRATarget {
			names[i] = torch.ModelLoRATarget
		}
		if !slices.Contains(torch.LoRATargets, names[i]) {
			return nil, false, nil, fmt.Errorf("target module %q: the base has no such projection, want some of %s", n, strings.Join(torch.LoRATargets, ", "))
		}
	}
	for t, ls := range layers {
		slices.Sort(ls)
		layers[t] = slices.Compact(ls)
	}
	for _, t := range torch.LoRATargets {
		if slices.Contains(names, t) {
			targets = append(targets, t)
		}
	}
	return targets, false, layers, nil
}

// targetPath is a target module named by its path in a layer: in a block,
// or directly under the layer (Gemma 4's per_layer_input_gate).
var targetPath = regexp.MustCompile(`^(?:model\.)?layers\.(\d+)\.(?:(self_attn|linear_attn|mlp|mixer)\.)?([a-z_]+)$`)

// modulePath is the path of module name in a layer's block ("": directly
// under the layer), as torch.LoRAModule spells it.
func modulePath(block, name string) string {
	if block == "" {
		return name
	}
	return block + "." + name
}

// layerBlock names a layer's block in an error ("": the layer itself).
func layerBlock(block string) string {
	if block == "" {
		return "the layer itself"
	}
	return block
}

// variants are the keys of newer PEFT LoraConfigs (0.21) that, when set,
// make the adapters compute something other than W x + scale B A x, or
// apply them elsewhere: LoRA variants, a bias on lora_B, replicated
// layers, trained token rows, adapted parameters, excluded modules.
var variants = []string{"alora_invocation_tokens", "arrow_config", "exclude_modules", "kasa_config", "layer_replication",
	"lora_bias", "monteclora_config", "target_parameters", "trainable_token_indices", "use_bdlora", "use_qalora", "velora_config"}

// checkVariants refuses, by name, a variant key of raw that is set (not
// absent, null, false or empty), and an init_lora_weights that leaves the
// adapters meant for a base whose weights it changed (PiSSA, OLoRA, LoftQ,
// CorDA, ...: only true, false and gaussian draw adapters over the base
// as it is).
func checkVariants(raw map[string]json.RawMessage) error {
	for _, k := range variants {
		switch v := strings.TrimSpace(string(raw[k])); v {
		case "", "null", "false", "[]", "{}", `""`:
		default:
			return fmt.Errorf("%s %s: this LoRA variant or setting is not supported, want it unset (null or false)", k, v)
		}
	}
	switch v := strings.TrimSpace(string(raw["init_lora_weights"])); v {
	case "", "null", "true", "false", `"gaussian"`:
	default:
		return fmt.Errorf("init_lora_weights %s: adapters initialised by changing the base's weights are not supported; convert them to plain LoRA over the original base first (PEFT's path_initial_model_for_weight_conversion)", v)
	}
	return nil
}

// writeConfig writes adapter_config.json for c, atomically.
func writeConfig(dir string, c torch.LoRA, base string) error {
	targets, err := json.Marshal(c.Targets)
	if err != nil {
		return err
	}
	f := fileConfig{
		AlphaPattern: map[string]float64{}, RankPattern: map[string]int{}, AutoMapping: json.RawMessage("null"),
		BaseModelNameOrPath: base, Bias: "none", InferenceMode: true, InitLoraWeights: json.RawMessage("true"),
		LayersPattern: json.RawMessage("null"), LayersToTransform: json.RawMessage("null"),
		LoraAlpha: c.Alpha, LoraDropout: c.Dropout, PeftType: "LORA", R: c.Rank,
		TargetModules: targets, TaskType: "CAUSAL_LM", UseRslora: c.RSLoRA,
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, ConfigFile), func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}
