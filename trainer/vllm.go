package trainer

import (
	"path/filepath"

	"github.com/agentrl/agentrl/decoding/vllm"
	"github.com/agentrl/agentrl/trainer/rollout"
)

// startVLLM connects to rollout.vllm's server, starting it first when
// rollout.vllm.command is set (its log in the run folder as vllm.log,
// stopped by Close), and waits until it is ready, its --logprobs-mode
// checked against the run's samplings. Before it starts the command it
// writes the policy it starts with to the run folder's vllm-weights, which
// the command may serve (--model <run>/vllm-weights): with
// rollout.vllm.lora adapters, the LoRA base, whose adapters the server
// loads from <run>/vllm-adapter at every sync.
func startVLLM(t *Trainer) (*rollout.VLLMRollouts, error) {
	c := t.cfg.Rollout.VLLM
	env := []string{vllm.DevModeEnv}
	w := rollout.VLLMWeights{Dir: filepath.Join(t.dir, "vllm-weights"), Export: t.models.ExportWeights}
	if c.LoRA == "adapters" {
		env = append(env, vllm.LoRAUpdateEnv)
		w.Export, w.Adapters = t.models.ExportBase, t.models.ExportAdapters
		w.AdapterDir, w.AdapterName = filepath.Join(t.dir, "vllm-adapter"), "policy"
	}
	return rollout.StartVLLM(vllm.ServerConfig{
		Address: c.Address, Command: c.Command, Env: env, Log: filepath.Join(t.dir, "vllm.log"),
		StartupTimeout: c.StartupTimeout, RequestTimeout: c.RequestTimeout,
	}, w, t.cfg.Rollout.Slots, t.cfg.Rollout.Samplings(), t.log)
}
