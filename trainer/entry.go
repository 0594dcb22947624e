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
	if t.models.base != nil {
		return fmt.Errorf("sft: model.lora is set, but the warm start trains the whole model: run trainer sft without model.lora, then train adapters over its output")
	}
	if t.cfg.SFT.Data == "" && (t.data.world == nil || t.cfg.SFT.Demos <= 0) {
		return fmt.Errorf("sft: no demonstrations: give sft.data (a JSONL file), or use the synthetic world")
	}
	// Scripted demonstrations are meant for a model created here; sft.data
	// may warm-start any model.
	t.models.fresh = t.models.fresh || t.cfg.SFT.Data != ""
	if err := t.warmStart(ctx, nil); err != nil {
		return err
	}
	return t.models.exportPolicy(out)
}

// Evaluate evaluates the policy as it is (greedy) and, with eval.baselines,
// the naive-RAG baseline, stores them as iteration 0 of the run, and returns
// the table.
func (t *Trainer) Evaluate(ctx context.Context) (*results.Table, error) {
	if err := t.iterationZero(ctx); err != nil {
		return nil, err
	}
	if err := t.writer.Flush(); err != nil {
		return nil, err
	}
	r, err := t.results()
	if err != nil {
		return nil, err
	}
	// Without RL the policy's row is the one evaluated at iteration 0.
	if m, ok := r.Metrics[results.BaseToolCall]; ok {
		delete(r.Metrics, results.BaseToolCall)
		r.Metrics["Policy"] = m
		if o, ok := r.OOD[results.BaseToolCall]; ok {
			delete(r.OOD, results.BaseToolCall)
			r.OOD["Policy"] = o
		}
		for i, name := range r.Methods {
			if name == results.BaseToolCall {
				r.Methods[i] = "Policy"
			}
		}
	}
	return r, nil
}
