package trainer

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/trainer/results"
)

// SFT runs only the supervised warm start (sft.data, or the synthetic
// world's scripted demonstrations) and writes the policy as a Hugging Face
// folder to out.
func (t *Trainer) SFT(ctx context.Context, out string) error {
	if t.models.LoRA() {
		return fmt.Errorf("sft: model.lora is set, but the warm start trains the whole model: run trainer sft without model.lora, then train adapters over its output")
	}
	if t.cfg.SFT.Data == "" && (t.data.World == nil || t.cfg.SFT.Demos <= 0) {
		return fmt.Errorf("sft: no demonstrations: give sft.data (a JSONL file), or use the synthetic world")
	}
	if err := t.warmStart(ctx, nil); err != nil {
		return err
	}
	return t.models.ExportPolicy(out)
}

// Evaluate evaluates the policy as it is (greedy) and, with eval.baselines,
// the naive-RAG baseline, stores them as iteration 0 of the run, and returns
// the table.
func (t *Trainer) Evaluate(ctx context.Context) (*results.Table, error) {
	if err := t.iterationZero(ctx); err != nil {
		return nil, err
	}
	if err := t.rec.Flush(); err != nil {
		return nil, err
	}
	r, err := t.rec.Results(t.cfg.Algorithm.Estimator)
	if err != nil {
		return nil, err
	}
	// Without RL the policy's row is the one evaluated at iteration 0.
	r.Rename(results.BaseToolCall, "Policy")
	return r, nil
}
