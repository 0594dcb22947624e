package gateway

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/gateway/openai"
	"github.com/agentrl/agentrl/internal/localorigin"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/toolcall"
)

// MaxBody is the largest request body the handler reads.
const MaxBody = 32 << 20

// DefaultBodyTimeout is how long a request's body may take to arrive when
// Handler.BodyTimeout is 0.
const DefaultBodyTimeout = time.Minute

// Handler answers the OpenAI Chat Completions API (POST
// /v1/chat/completions, GET /v1/models) from a Scheduler.
type Handler struct {
	Scheduler *Scheduler
	Format    *tokenizer.ChatFormat
	// Model is the name the model is served under; requests must name it.
	Model string
	// APIKey, when not "", is the bearer key every request must carry.
	APIKey string
	// Keys, when set, makes every request belong to the episode its key
	// names (training agent programs); APIKey is then unused.
	Keys    *Keys
	Created int64 // the model's "created" time
	// Host is the address the server listens on: requests must name it or
	// a loopback host, and browser requests from other origins are refused
	// (localorigin.Check). "" is this machine only.
	Host string
	// BodyTimeout bounds the time from a request's headers to the end of
	// its body, read or left unread (0 = DefaultBodyTimeout): a client that
	// trickles one holds its connection no longer.
	BodyTimeout time.Duration
}

// ServeHTTP routes a request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	body := h.BodyTimeout
	if body <= 0 {
		body = DefaultBodyTimeout
	}
	http.NewResponseController(w).SetReadDeadline(started.Add(body))
	if err := localorigin.Check(r, h.Host); err != nil {
		(&openai.Error{Status: http.StatusForbidden, Type: openai.TypeInvalidRequest, Code: "forbidden_origin", Message: err.Error()}).Write(w)
		return
	}
	ep, e := h.authorize(r)
	if e != nil {
		e.Write(w)
		return
	}
	switch path := strings.TrimSuffix(r.URL.Path, "/"); path {
	case "/v1/models", "/models":
		if r.Method != http.MethodGet {
			openai.MethodNotAllowed(r.Method, path).Write(w)
			return
		}
		writeJSON(w, openai.ModelList{Object: "list", Data: []openai.Model{h.model()}})
	case "/v1/models/" + h.Model, "/models/" + h.Model:
		writeJSON(w, h.model())
	case "/v1/chat/completions", "/chat/completions":
		if r.Method != http.MethodPost {
			openai.MethodNotAllowed(r.Method, path).Write(w)
			return
		}
		if e := h.chat(w, r, ep, started); e != nil {
			if ep != nil {
				ep.refused(e, started)
			}
			e.Write(w)
		}
	default:
		openai.NotFound(r.Method, r.URL.Path).Write(w)
	}
}

func (h *Handler) model() openai.Model {
	return openai.Model{ID: h.Model, Object: "model", Created: h.Created, OwnedBy: "agentrl"}
}

// authorize checks the bearer key: against APIKey, or as an episode's key
// when Keys is set.
func (h *Handler) authorize(r *http.Request) (*ProgramEpisode, *openai.Error) {
	if h.Keys == nil && h.APIKey == "" {
		return nil, nil
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return nil, openai.Unauthorized("You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
	}
	if h.Keys != nil {
		if ep, ok := h.Keys.Lookup(key); ok {
			return ep, nil
		}
	} else if subtle.ConstantTimeCompare([]byte(key), []byte(h.APIKey)) == 1 {
		return nil, nil
	}
	return nil, openai.Unauthorized("Incorrect API key provided: " + redact(key) + ".")
}

// redact shows a key's first and last characters only.
func redact(key string) string {
	if len(key) <= 8 {
		return "****"
	}
	return key[:3] + "****" + key[len(key)-4:]
}

// ChatMessages are a request's messages as the chat template renders them
// for a family that writes calls in syntax: each tool call's arguments as
// callArguments gives them to the template, and each tool message named
// as Gemma 4's template names it: after the call of the assistant message
// before it whose id its tool_call_id gives (the last such), else its own
// name, else "unknown".
func ChatMessages(req *openai.Request, syntax toolcall.CallSyntax) []tokenizer.Message {
	msgs := make([]tokenizer.Message, len(req.Messages))
	var calls []openai.ToolCall // the calls the tool messages answer
	for i, m := range req.Messages {
		msgs[i] = tokenizer.Message{Role: m.Role}
		if m.Content != nil {
			msgs[i].Content = *m.Content
		}
		if m.Role != "tool" {
			calls = m.ToolCalls
		} else {
			msgs[i].Name = cmp.Or(m.Name, "unknown")
			for _, c := range calls {
				if c.ID == m.ToolCallID {
					msgs[i].Name = c.Function.Name
				}
			}
		}
		for _, c := range m.ToolCalls {
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, tokenizer.ToolCall{Name: c.Function.Name,
				Arguments: callArguments(c.Function.Arguments, syntax)})
		}
	}
	return msgs
}

// chat answers one chat completion request; a refusal is returned, not
// written.
func (h *Handler) chat(w http.ResponseWriter, r *http.Request, ep *ProgramEpisode, started time.Time) *openai.Error {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return &openai.Error{Status: http.StatusRequestTimeout, Type: openai.TypeInvalidRequest, Code: "request_timeout",
			Message: "The request body did not arrive in time."}
	}
	if err != nil {
		return openai.BadRequest("", "invalid_body", "could not read the request body: %v", err)
	}
	// Read whole: no deadline while the answer is decoded (the server's
	// watch for a client that goes away reads the connection).
	http.NewResponseController(w).SetReadDeadline(time.Time{})
	if len(body) > MaxBody {
		return &openai.Error{Status: http.StatusRequestEntityTooLarge, Type: openai.TypeInvalidRequest, Code: "request_too_large",
			Message: fmt.Sprintf("The request body is larger than %d bytes.", MaxBody)}
	}
	req, e := openai.ParseRequest(body, h.Scheduler.Window())
	if e != nil {
		return e
	}
	if req.Model != h.Model {
		return openai.BadRequest("model", "model_not_found", "The model `%s` does not exist or you do not have access to it; this server serves `%s`.", req.Model, h.Model)
	}
	msgs := ChatMessages(req, h.Format.CallSyntax())
	window, maxTok := h.Scheduler.Window(), req.MaxTokens
	if ep != nil {
		window = min(window, ep.MaxTotalTokens)
	}
	// Encoded no further than the window: a huge body costs no more.
	prompt, over, err := h.Format.RenderLimit(msgs, req.Tools, true, window)
	if err != nil {
		return openai.BadRequest("messages", "invalid_value", "Invalid 'messages': %v", err)
	}
	if over {
		return openai.BadRequest("messages", "context_length_exceeded",
			"This model's maximum context length is %d tokens. However, your messages are more than %d tokens. Please reduce the length of the messages.", window, window)
	}
	sampling := decoding.Sampling{Temperature: req.Temperature, TopP: req.TopP}
	if ep != nil {
		if req.N != 1 {
			return openai.BadRequest("n", "invalid_value", "Invalid 'n': an agent episode takes one choice per request, got %d.", req.N)
		}
		sampling = ep.Sampling
		if maxTok == 0 || maxTok > ep.MaxTurnTokens {
			maxTok = ep.MaxTurnTokens
		}
		maxTok = min(maxTok, window-len(prompt))
	}
	if len(prompt) >= window || len(prompt)+maxTok > window {
		return openai.BadRequest("messages", "context_length_exceeded",
			"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			window, len(prompt)+max(maxTok, 1), len(prompt), max(maxTok, 1))
	}
	if maxTok == 0 {
		maxTok = window - len(prompt)
	}
	if req.N > h.Scheduler.Slots() {
		return openai.BadRequest("n", "integer_above_max_value", "Invalid 'n': this server decodes at most %d choices at once, got %d.", h.Scheduler.Slots(), req.N)
	}
	seeds := make([]uint64, req.N)
	base := randomSeed()
	switch {
	case ep != nil:
		base = ep.nextSeed()
	case req.Seed != nil:
		base = uint64(*req.Seed)
	}
	for i := range seeds {
		seeds[i] = mix(base, uint64(i), 1)
	}
	job := Job{Prompt: prompt, N: req.N, Sampling: sampling, MaxTokens: maxTok, Seeds: seeds}
	if ep != nil {
		job.Session = ep.ID
	}
	if req.Logprobs {
		job.TopLogprobs = req.TopLogprobs
	}
	if len(req.Stop) > 0 {
		tok := h.Format.Tokenizer()
		job.Stop = func(_ int, completion []int32) bool {
			_, found := cutAtStop(tok.Decode(completion, false), req.Stop)
			return found
		}
	}
	res, err := h.Scheduler.Submit(r.Context(), job)
	if err != nil {
		return openai.ServerError(err)
	}
	c := &call{h: h, req: req, prompt: prompt, res: res, id: "chatcmpl-" + callID()[5:], created: time.Now().Unix(),
		toolsOn: len(req.Tools) > 0 && req.ToolChoice != "none"}
	if req.Stream {
		c.stream(w, r.Context())
	} else if e := c.complete(w, r.Context()); e != nil {
		return e
	}
	if ep != nil {
		toks, fin := res.Snapshot(0)
		o := c.output(0)
		text := h.Format.Tokenizer().Decode(tokenIDs(toks), false)
		ep.completed(prompt, toks, fin, text, o.finish, started)
	}
	return nil
}

// call is one request being answered.
type call struct {
	h       *Handler
	req     *openai.Request
	prompt  []int32
	res     *Pending
	id      string
	created int64
	toolsOn bool
}

// text is choice i's text so far, cut at a stop string, and the ids it
// was decoded from.
func (c *call) text(i int) (string, []Token, Finish) {
	toks, fin := c.res.Snapshot(i)
	ids := textIDs(c.h.Format, tokenIDs(toks), fin)
	text, _ := cutAtStop(c.h.Format.Tokenizer().Decode(ids, false), c.req.Stop)
	return text, toks[:len(ids)], fin
}

// schemas are the parameter schemas of the request's functions, by name,
// which type Qwen3.5's XML call values.
func (c *call) schemas() toolcall.ParamSchemas {
	s := toolcall.ParamSchemas{}
	for _, raw := range c.req.Tools {
		var t struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Function.Name != "" {
			s[t.Function.Name] = t.Function.Parameters
		}
	}
	return s
}

// output is finished choice i as the API shows it.
func (c *call) output(i int) output {
	text, _, fin := c.text(i)
	return makeOutput(text, fin, c.toolsOn, c.h.Format.CallSyntax(), c.schemas())
}

// logprobs are the entries of toks; a log-probability that is NaN or
// infinite (broken weights) is an error, as JSON cannot carry it.
func (c *call) logprobs(toks []Token) ([]openai.TokenLogprob, *openai.Error) {
	tok := c.h.Format.Tokenizer()
	entry := func(id int32) (string, []int) {
		s := tok.Decode([]int32{id}, false)
		b := make([]int, len(s))
		for i := 0; i < len(s); i++ {
			b[i] = int(s[i])
		}
		return s, b
	}
	out := make([]openai.TokenLogprob, len(toks))
	for i, t := range toks {
		if e := finite(t.Logprob, i); e != nil {
			return nil, e
		}
		s, b := entry(t.ID)
		out[i] = openai.TokenLogprob{Token: s, Logprob: float64(t.Logprob), Bytes: b, TopLogprobs: []openai.TopLogprob{}}
		for _, a := range t.Top {
			if e := finite(a.Logprob, i); e != nil {
				return nil, e
			}
			s, b := entry(a.ID)
			out[i].TopLogprobs = append(out[i].TopLogprobs, openai.TopLogprob{Token: s, Logprob: float64(a.Logprob), Bytes: b})
		}
	}
	return out, nil
}

// finite refuses a log-probability that is NaN or infinite: completion
// token i's.
func finite(lp float32, i int) *openai.Error {
	if !math.IsNaN(float64(lp)) && !math.IsInf(float64(lp), 0) {
		return nil
	}
	return &openai.Error{Status: http.StatusInternalServerError, Type: openai.TypeServer, Code: "non_finite_output",
		Message: fmt.Sprintf("The model's log-probabilities are not finite (%v at completion token %d): its weights or an adapter's are broken.", lp, i)}
}

func (c *call) usage() openai.Usage {
	u := openai.Usage{PromptTokens: len(c.prompt)}
	for i := 0; i < c.req.N; i++ {
		toks, _ := c.res.Snapshot(i)
		u.CompletionTokens += len(toks)
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// complete answers with one chat.completion object when every choice has
// finished.
func (c *call) complete(w http.ResponseWriter, ctx context.Context) *openai.Error {
	if err := c.res.Wait(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // the client went away; the scheduler freed its slots
		}
		return openai.ServerError(err)
	}
	out := openai.Completion{ID: c.id, Object: "chat.completion", Created: c.created, Model: c.h.Model,
		SystemFingerprint: fingerprint, Usage: c.usage()}
	for i := 0; i < c.req.N; i++ {
		o := c.output(i)
		ch := openai.Choice{Index: i, FinishReason: o.finish,
			Message: openai.Message{Role: "assistant", Content: o.content, ToolCalls: o.toolCalls}}
		if c.req.Logprobs {
			_, toks, _ := c.text(i)
			lp, e := c.logprobs(toks)
			if e != nil {
				return e
			}
			ch.Logprobs = &openai.Logprobs{Content: lp, Refusal: nil}
		}
		out.Choices = append(out.Choices, ch)
	}
	writeJSON(w, out)
	return nil
}

// stream answers with server-sent chat.completion.chunk events as the
// choices grow, then the usage (when asked for) and "data: [DONE]". A
// client that goes away cancels the job, which frees its slots.
func (c *call) stream(w http.ResponseWriter, ctx context.Context) {
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if fl != nil {
			fl.Flush()
		}
	}
	// fail ends the stream with an error event.
	fail := func(e *openai.Error) {
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", e.Body())
		flush()
	}
	send := func(v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			fail(openai.ServerError(err))
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		flush()
		return true
	}
	chunk := func(choices ...openai.ChunkChoice) openai.Chunk {
		ch := openai.Chunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.h.Model,
			SystemFingerprint: fingerprint, Choices: choices}
		if c.req.IncludeUsage {
			ch.Usage = openai.UsageNull
		}
		return ch
	}
	n := c.req.N
	sent, sentToks, ended := make([]int, n), make([]int, n), make([]bool, n)
	empty := ""
	for i := 0; i < n; i++ {
		if !send(chunk(openai.ChunkChoice{Index: i, Delta: openai.Delta{Role: "assistant", Content: &empty}})) {
			return
		}
	}
	for {
		done, err := c.res.Done()
		for i := 0; i < n; i++ {
			if ended[i] {
				continue
			}
			text, toks, fin := c.text(i)
			upto := len(text)
			var o output
			if fin == Running {
				upto = streamable(text, c.req.Stop, c.toolsOn, c.h.Format.CallSyntax())
			} else {
				o = makeOutput(text, fin, c.toolsOn, c.h.Format.CallSyntax(), c.schemas())
				upto = 0
				if o.content != nil {
					upto = len(*o.content)
				}
			}
			var ch openai.ChunkChoice
			ch.Index = i
			if upto > sent[i] {
				d := text[sent[i]:upto]
				ch.Delta.Content = &d
				sent[i] = upto
			}
			if c.req.Logprobs && len(toks) > sentToks[i] {
				lp, e := c.logprobs(toks[sentToks[i]:])
				if e != nil {
					fail(e)
					return
				}
				ch.Logprobs = &openai.Logprobs{Content: lp}
				sentToks[i] = len(toks)
			}
			if fin != Running {
				for j := range o.toolCalls {
					tc := o.toolCalls[j]
					tc.Index = &j
					ch.Delta.ToolCalls = append(ch.Delta.ToolCalls, tc)
				}
				ch.FinishReason = &o.finish
				ended[i] = true
			}
			if ch.Delta.Content != nil || ch.Logprobs != nil || ch.FinishReason != nil {
				if !send(chunk(ch)) {
					return
				}
			}
		}
		if done {
			if err != nil {
				fmt.Fprintf(w, "data: %s\n\n", openai.ServerError(err).Body())
			}
			break
		}
		select {
		case <-c.res.Updated():
		case <-ctx.Done():
			return
		}
	}
	if c.req.IncludeUsage {
		u, _ := json.Marshal(c.usage())
		last := chunk()
		last.Choices, last.Usage = []openai.ChunkChoice{}, u
		send(last)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	flush()
}

// fingerprint names the serving backend in system_fingerprint.
const fingerprint = "fp_agentrl"

func tokenIDs(toks []Token) []int32 {
	out := make([]int32, len(toks))
	for i, t := range toks {
		out[i] = t.ID
	}
	return out
}

// writeJSON sends v as a 200, or, when it cannot be encoded, a JSON server
// error: never an empty 200.
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		openai.ServerError(err).Write(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

func randomSeed() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}
