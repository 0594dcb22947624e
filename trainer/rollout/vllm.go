package rollout

import (
	"context"
	"fmt"
	"math"

	"github.com/agentrl/agentrl/decoding/vllm"
)

// VLLM is the Generator of rollout.engine vllm: each turn is one
// token-in / token-out completion of a vLLM server (decoding/vllm), the
// episode's whole context sent as ids, stopped at the chat format's
// turn-ending ids, seeded per turn; the sampled ids and the logprobs the
// server reports for them come back as they are.
type VLLM struct {
	Client *vllm.Client
	// Model is the model the completions name ("": the served one; the
	// name of the LoRA adapters the server loaded).
	Model string
}

// Generate samples one turn on the server.
func (v VLLM) Generate(ctx context.Context, r GenRequest) (Generated, error) {
	seed := r.Seed
	c, err := v.Client.Generate(ctx, vllm.Request{Model: v.Model, Prompt: int64s(r.Context), Sampling: r.Sampling, MaxTokens: r.MaxTokens,
		StopIDs: int64s(r.StopIDs), Seed: &seed})
	if err != nil {
		return Generated{}, err
	}
	g := Generated{Tokens: make([]int32, len(c.Tokens)), Logprobs: c.Logprobs}
	for i, id := range c.Tokens {
		if id < 0 || id > math.MaxInt32 {
			return Generated{}, fmt.Errorf("vllm %s: sampled token %d is id %d, not a vocabulary id", v.Client.Address(), i, id)
		}
		g.Tokens[i] = int32(id)
	}
	return g, nil
}

func int64s(ids []int32) []int64 {
	out := make([]int64, len(ids))
	for i, v := range ids {
		out[i] = int64(v)
	}
	return out
}
