package warmstart

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
)

// renderDemos turns conversations into token sequences whose mask is 1 on
// the assistant's tokens only, each generated turn's tokens as an episode
// has them (ChatFormat.RenderEpisode), so that the policy imitates turns
// it can sample. A demonstration with a piece the tokenizer lacks (a
// word-level tokenizer encodes it as its unknown token) is an error
// naming it.
func renderDemos(cf *tokenizer.ChatFormat, demos [][]tokenizer.Message, tools []json.RawMessage, maxTokens int) ([]*trajectory.Trajectory, int, error) {
	var out []*trajectory.Trajectory
	dropped := 0
	unk, hasUnk := cf.Tokenizer().TokenID(tokenizer.UnknownToken)
	for i, msgs := range demos {
		ids, mask, err := cf.RenderEpisode(msgs, tools)
		if err != nil {
			return nil, 0, fmt.Errorf("demonstration %d: %w", i+1, err)
		}
		if k := slices.Index(ids, unk); hasUnk && k >= 0 {
			return nil, 0, fmt.Errorf("demonstration %d: the text after %q is not in the tokenizer's vocabulary (it encodes as %s): "+
				"the warm start would teach the model to write %s", i+1, cf.Tokenizer().Decode(ids[max(0, k-8):k], false), tokenizer.UnknownToken, tokenizer.UnknownToken)
		}
		if maxTokens > 0 && len(ids) > maxTokens {
			dropped++
			continue
		}
		out = append(out, &trajectory.Trajectory{ID: fmt.Sprintf("demo-%d", i), Tokens: ids, Mask: mask})
	}
	return out, dropped, nil
}
