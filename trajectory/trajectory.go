// Package trajectory holds the data of one multi-turn agent episode: the
// tokens with their behaviour log-probabilities and action mask, the turns
// with their tool calls, the rewards and why the episode stopped. The
// environment records turns and stop reasons, the rollout scheduler fills
// the tokens, the algorithms add advantages, the store persists it. It is a
// leaf: it imports nothing of the project, so every layer can share it.
package trajectory

// Split says whether a trajectory was sampled for training or evaluation.
type Split string

// The two splits.
const (
	Train Split = "train"
	Eval  Split = "eval"
)

// Trajectory is one episode: a prompt, the policy's turns and the
// environment's observations, as one token sequence with per-token arrays of
// equal length.
type Trajectory struct {
	ID            string // unique within a run: "<iteration>-<split>-<group>-<sample>"
	TaskID        string
	Dataset       string
	Hops          int
	Group         int // index of the prompt within the iteration's batch
	Sample        int // index of the sample within its group
	Split         Split
	Iteration     int
	PolicyVersion int // number of updates the sampling policy had seen
	Question      string
	Gold          []string // gold answer and aliases
	Answer        string   // the final answer extracted from the last turn, "" when none
	Correct       bool     // the answer matches a gold answer (exact match after normalisation)
	Outcome       float64  // outcome reward (scorer + format), enters at the last action token
	Reward        float64  // Outcome plus the sum of process rewards
	// Support is how many supporting passages the task names (0 when it
	// names none); Evidence how many of them the episode retrieved: the
	// sum of its turns' Evidence over all its segments.
	Support, Evidence int
	Components        map[string]float64
	Stop              StopReason
	Error             string // what ended the episode when Stop == StopError
	DurationMS        float64
	// Dropped says why the update left the episode out of its batch:
	// "" (it did not), DroppedZeroVariance or DroppedSurplus (dynamic
	// sampling).
	Dropped string
	// ContinuedFrom is the ID of the episode this one continues
	// (algorithm.near_miss): its first turns are that episode's, replayed
	// as context and trained in no loss; "" for an episode sampled from
	// its prompt.
	ContinuedFrom string

	PromptLen  int       // tokens of the initial prompt (all mask 0)
	Tokens     []int32   // the whole token history
	Logprobs   []float32 // behaviour log-probability of each sampled token, 0 elsewhere
	Mask       []uint8   // action mask: 1 where the policy sampled the token
	TurnOf     []int16   // index of the turn a token belongs to, -1 for the prompt
	Values     []float32 // critic values (PPO), nil otherwise
	Advantages []float32 // per-token advantages, filled by the algorithm
	Returns    []float32 // per-token returns (value targets), filled by the algorithm

	// TrainLogprobs is the log-probability of each action token under the
	// training forward of the policy that sampled it (the recomputed "old"
	// logprobs), 0 elsewhere; nil when not computed. Against Logprobs it
	// measures the rollout/training mismatch.
	TrainLogprobs []float32
	// Entropies is the policy's entropy at each action token under the
	// training forward, 0 elsewhere; nil when not computed.
	Entropies []float32
	// Routing is, for a mixture-of-experts policy with routing replay on
	// (algorithm.routing_replay), the experts each token took at each
	// sparse layer while the rollout computed it, as torch.Routing.Bytes
	// packs them (tokens x sparse layers x experts per token, a byte a
	// choice up to 256 experts); nil when not recorded.
	Routing []byte

	Turns []Turn

	// Requests are the gateway requests of an agent program's episode
	// (agent.command), kept on its first segment; nil otherwise.
	Requests []Request
}

// Why dynamic sampling (algorithm.dynamic_sampling) left an episode out of
// the update: its group's rewards all agreed, or the batch already had its
// informative groups when its group was drawn.
const (
	DroppedZeroVariance = "zero_variance"
	DroppedSurplus      = "surplus"
)

// EvidenceRecall is the share of the task's supporting passages the
// episode retrieved; ok is false when the task names none.
func (t *Trajectory) EvidenceRecall() (recall float64, ok bool) {
	if t.Support <= 0 {
		return 0, false
	}
	return float64(t.Evidence) / float64(t.Support), true
}

// ActionTokens counts the tokens the policy generated.
func (t *Trajectory) ActionTokens() int {
	n := 0
	for _, m := range t.Mask {
		n += int(m)
	}
	return n
}

// TurnStart is the index of the first token of turn turn (0-based), where
// an episode keeping the turns before it samples on; -1 when t has no
// token of that turn or the turn does not start with the policy's token.
func (t *Trajectory) TurnStart(turn int) int {
	for i := t.PromptLen; i < len(t.Tokens) && i < len(t.TurnOf) && i < len(t.Mask); i++ {
		if int(t.TurnOf[i]) >= turn {
			if t.Mask[i] == 0 {
				return -1
			}
			return i
		}
	}
	return -1
}
