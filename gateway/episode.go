package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/gateway/openai"
)

// ProgramEpisode is an agent program's episode as the gateway sees it: the
// decoding the training run fixes for its requests, and the record of
// them. Its requests come in on the handler's goroutines.
type ProgramEpisode struct {
	// Sampling replaces the request's temperature and top_p: training
	// samples as rollout.* says, whatever the program asks.
	Sampling decoding.Sampling
	// MaxTurnTokens caps a request's completion (env.max_turn_tokens).
	MaxTurnTokens int
	// MaxTotalTokens caps prompt and completion (env.max_tokens).
	MaxTotalTokens int
	// Seed derives each request's sampling seed.
	Seed uint64
	// ID, when not "", names the episode's session in the scheduler: its
	// requests continue in the slot of the previous one when they extend
	// it, and Scheduler.EndSession(ID) gives the slot up.
	ID string

	mu         sync.Mutex
	ledger     Ledger
	requests   []RequestRecord
	bad        *openai.Error
	overBudget bool
}

// RequestRecord is what the store keeps of one request of an episode.
type RequestRecord struct {
	Index            int
	PromptTokens     int
	CompletionTokens int
	Link             Link // "" when the request got no completion (refused or cancelled)
	Segment          int  // the ledger segment the completion went to, -1 when none
	Finish           string
	Status           int // the HTTP status the program got
	LatencyMS        float64
}

// nextSeed is the seed of the episode's next request.
func (e *ProgramEpisode) nextSeed() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return mix(e.Seed, uint64(len(e.requests)), 0)
}

// refused records a request answered with an error: the first such error
// makes the episode fail as a malformed request, except a prompt past the
// token budget, which ends the episode as the budget does in the built-in
// loop (OverBudget).
func (e *ProgramEpisode) refused(err *openai.Error, started time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case err.Code == "context_length_exceeded":
		e.overBudget = true
	case e.bad == nil:
		e.bad = err
	}
	e.requests = append(e.requests, RequestRecord{Index: len(e.requests), Segment: -1, Status: err.Status,
		LatencyMS: ms(time.Since(started))})
}

// completed records a request's completion in the ledger.
func (e *ProgramEpisode) completed(prompt []int32, toks []Token, fin Finish, text, finish string, started time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rec := RequestRecord{Index: len(e.requests), PromptTokens: len(prompt), CompletionTokens: len(toks), Segment: -1,
		Finish: finish, Status: 200, LatencyMS: ms(time.Since(started))}
	// Only a finished completion is what the program was given; one cut
	// short by a client that went away (still Running, or Cancelled) was not.
	if fin == EndToken || fin == StopMatch || fin == Length {
		rec.Link = e.ledger.Add(prompt, toks, text)
		rec.Segment = len(e.ledger.Segments) - 1
	}
	e.requests = append(e.requests, rec)
}

// Record returns the episode's ledger, its requests and the first error a
// request of it was refused with (nil when none).
func (e *ProgramEpisode) Record() (*Ledger, []RequestRecord, *openai.Error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return &e.ledger, append([]RequestRecord(nil), e.requests...), e.bad
}

// OverBudget reports whether a request of the episode was refused for a
// prompt that left no room under the token budget.
func (e *ProgramEpisode) OverBudget() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.overBudget
}

// Keys maps the API keys of the episodes in flight to them. A key is valid
// while its episode runs; any other key, or none, is refused.
type Keys struct {
	mu sync.Mutex
	m  map[string]*ProgramEpisode
}

// Open makes a fresh key for ep.
func (k *Keys) Open(ep *ProgramEpisode) string {
	b := make([]byte, 24)
	rand.Read(b)
	key := "sk-agentrl-" + hex.EncodeToString(b)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]*ProgramEpisode{}
	}
	k.m[key] = ep
	return key
}

// Close revokes key.
func (k *Keys) Close(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, key)
}

// Lookup is the episode key names.
func (k *Keys) Lookup(key string) (*ProgramEpisode, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ep, ok := k.m[key]
	return ep, ok
}

// mix is splitmix64 over a seed and two coordinates.
func mix(seed, a, b uint64) uint64 {
	x := seed ^ a<<32 ^ b
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
