package agent

import (
	"fmt"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/torch"
)

// CheckVocab refuses a tokenizer with more tokens than the model's
// vocabulary: its ids past vocab_size have no embedding row and no logit,
// so a prompt holding one fails mid-run. Training and serving both check
// with it before they start.
func CheckVocab(tok *tokenizer.Tokenizer, model torch.Config) error {
	if v := tok.VocabSize(); v > model.Vocab {
		return fmt.Errorf("the tokenizer has %d tokens but the model's vocab_size is %d: ids %d to %d are outside the model's vocabulary",
			v, model.Vocab, model.Vocab, v-1)
	}
	return nil
}
