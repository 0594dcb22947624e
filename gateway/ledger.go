package gateway

import "slices"

// Segment is one token sequence of an episode's ledger: a prompt, then
// completions (action tokens, mask 1) separated by what the agent program
// added between them (observation tokens, mask 0). It becomes one
// trajectory.
type Segment struct {
	PromptLen int
	Tokens    []int32
	Logprobs  []float32 // the behaviour logprob of each completion token, 0 elsewhere
	Mask      []uint8
	TurnOf    []int16 // the turn (completion) a token belongs to, -1 for the prompt
	Turns     []LedgerTurn
}

// LedgerTurn is one completion of a segment.
type LedgerTurn struct {
	Text      string // the completion's text (display only)
	GenTokens int
	// PolicyVersion is the version that sampled the completion's first
	// token, the oldest of its tokens' (Token.Version); 0 without tokens.
	PolicyVersion int
}

// Link says how a request joined the ledger.
type Link string

// The ways a request joins the ledger.
const (
	// LinkStart: the episode's first request starts the first segment.
	LinkStart Link = "start"
	// LinkExtend: the rendered prompt extends the previous request's prompt
	// and completion token for token; the new tokens between are
	// observation tokens of the same segment.
	LinkExtend Link = "extend"
	// LinkSplit: the prompt does not extend it (the program rewrote or
	// truncated its history): a new segment starts.
	LinkSplit Link = "split"
)

// Ledger is the record of one episode's requests, token for token: the
// prompts as the chat template rendered them, the completions as sampled.
type Ledger struct {
	Segments []*Segment
}

// Add records a request's rendered prompt and its completion (the tokens
// as sampled, with their logprobs) and says how it joined the ledger.
func (l *Ledger) Add(prompt []int32, completion []Token, text string) Link {
	link := LinkStart
	var seg *Segment
	if n := len(l.Segments); n > 0 {
		last := l.Segments[n-1]
		if len(prompt) >= len(last.Tokens) && slices.Equal(prompt[:len(last.Tokens)], last.Tokens) {
			seg, link = last, LinkExtend
		} else {
			link = LinkSplit
		}
	}
	if seg == nil {
		seg = &Segment{PromptLen: len(prompt)}
		l.Segments = append(l.Segments, seg)
	}
	turn := int16(len(seg.Turns))
	obsTurn := turn - 1 // observations belong to the turn they answer, as in the built-in loop
	if link != LinkExtend {
		obsTurn = -1
	}
	for _, id := range prompt[len(seg.Tokens):] {
		seg.Tokens = append(seg.Tokens, id)
		seg.Logprobs = append(seg.Logprobs, 0)
		seg.Mask = append(seg.Mask, 0)
		seg.TurnOf = append(seg.TurnOf, obsTurn)
	}
	for _, t := range completion {
		seg.Tokens = append(seg.Tokens, t.ID)
		seg.Logprobs = append(seg.Logprobs, t.Logprob)
		seg.Mask = append(seg.Mask, 1)
		seg.TurnOf = append(seg.TurnOf, turn)
	}
	lt := LedgerTurn{Text: text, GenTokens: len(completion)}
	if len(completion) > 0 {
		lt.PolicyVersion = completion[0].Version
	}
	seg.Turns = append(seg.Turns, lt)
	return link
}
