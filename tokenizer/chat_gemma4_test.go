package tokenizer

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/toolcall"
)

// gemma4Specials are Gemma 4's added tokens that the format writes.
var gemma4Specials = []string{gemma4BOS, "<eos>", gemma4TurnStart, toolcall.Gemma4TurnEnd, toolcall.Gemma4CallOpen, toolcall.Gemma4CallClose,
	toolcall.Gemma4ResponseOpen, toolcall.Gemma4ResponseClose, toolcall.Gemma4Quote, gemma4ToolOpen, gemma4ToolClose, gemma4ChannelOpen, gemma4ChannelClose}

// gemma4Format is a word-level tokenizer with Gemma 4's specials, every
// piece of texts a token, and the template named.
func gemma4Format(t *testing.T, template string, texts ...string) *ChatFormat {
	t.Helper()
	tok, err := BuildWordLevel(texts, gemma4Specials)
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewChatFormat(withTemplate(t, tok, readTestTemplate(t, template)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestGemma4Format checks what transformers' rendering (the interop test)
// cannot: the family and its stops, the mask of an episode (the calls and
// the <|tool_response> that hands the turn over are the model's; the
// responses are not; the answer goes on in the same turn), an episode
// built from Prompt, the generated texts and Observation giving the same
// ids, and the refusals.
func TestGemma4Format(t *testing.T) {
	user, answer, result := "Who directed Doctor Strange?", "Scott Derrickson.", "It was Scott Derrickson <turn|>"
	calls := toolcall.Gemma4ToolCall("search", "query:"+toolcall.Gemma4Quote+"Doctor Strange"+toolcall.Gemma4Quote)
	f := gemma4Format(t, "gemma4-e2b.jinja", user, answer, result, calls, "response:search{value:", "}", "thought\n", "<|think|>\n")
	if f.Family() != Gemma4 || f.CallSyntax() != toolcall.Gemma4 || f.RewritesHistory() {
		t.Fatalf("family %s, syntax %v, rewrites %v", f.Family(), f.CallSyntax(), f.RewritesHistory())
	}
	for _, stop := range []string{toolcall.Gemma4TurnEnd, toolcall.Gemma4ResponseOpen} {
		if id, _ := f.Special(stop); !slices.Contains(f.StopIDs(), id) {
			t.Errorf("%s is not a stop", stop)
		}
	}
	msgs := []Message{{Role: "user", Content: user},
		{Role: "assistant", ToolCalls: []ToolCall{{Name: "search", Arguments: json.RawMessage(`{"query":"Doctor Strange"}`)}}},
		{Role: "tool", Content: result}, {Role: "assistant", Content: answer}}
	text, err := f.RenderText(msgs, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	q := toolcall.Gemma4Quote
	want := "<bos><|turn>user\n" + user + "<turn|>\n<|turn>model\n" + calls + "<|tool_response>response:search{value:" + q + result + q + "}<tool_response|>" + answer + "<turn|>\n"
	if text != want {
		t.Fatalf("text\n got %q\nwant %q", text, want)
	}
	ids, mask, err := f.Render(msgs, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var gen []string
	for _, run := range maskRuns(ids, mask) {
		gen = append(gen, f.Tokenizer().Decode(run, false))
	}
	if wantGen := []string{calls + toolcall.Gemma4ResponseOpen, answer + toolcall.Gemma4TurnEnd}; !slices.Equal(gen, wantGen) {
		t.Errorf("generated runs %q, want %q", gen, wantGen)
	}
	// The tool's result spells <turn|>, which stays text.
	if turnEnd, _ := f.Special(toolcall.Gemma4TurnEnd); countID(ids, turnEnd) != 2 {
		t.Errorf("the result's <turn|> became a token: %v", ids)
	}
	// The episode as a rollout builds it.
	ep, err := f.Prompt("", user, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok := f.Tokenizer()
	ep = append(ep, tok.Encode(calls+toolcall.Gemma4ResponseOpen)...)
	ep = append(ep, f.Observation(msgs[1].ToolCalls, []string{result}, true)...)
	ep = append(ep, tok.Encode(answer+toolcall.Gemma4TurnEnd+"\n")...)
	if !slices.Equal(ep, ids) {
		t.Errorf("episode\n got %q\nwant %q", tok.Decode(ep, false), tok.Decode(ids, false))
	}
	// The model stopped before handing the turn over: the observation
	// writes <|tool_response> first.
	if obs := tok.Decode(f.Observation(msgs[1].ToolCalls, []string{result}, false), false); !strings.HasPrefix(obs, "<|tool_response>response:search{") {
		t.Errorf("observation %q", obs)
	}
	// The 31B template's generation prompt closes an empty thought channel.
	large := gemma4Format(t, "gemma4-31b.jinja", user, "thought")
	if large.Family() != Gemma4Large || !large.RewritesHistory() {
		t.Errorf("family %s, rewrites %v", large.Family(), large.RewritesHistory())
	}
	if p, _ := large.RenderText(msgs[:1], nil, true); !strings.HasSuffix(p, "<|turn>model\n<|channel>thought\n<channel|>") {
		t.Errorf("31B generation prompt %q", p)
	}
	// Refusals: arguments that are a string, a tool message after no call,
	// a tool with a response declaration, Llama's date, another family's
	// tokens.
	refused := []struct {
		msgs  []Message
		tools []json.RawMessage
		want  string
	}{
		{[]Message{{Role: "user", Content: user}, {Role: "assistant", ToolCalls: []ToolCall{{Name: "search", Arguments: json.RawMessage(`"{}"`)}}}}, nil, "JSON object"},
		{[]Message{{Role: "user", Content: user}, {Role: "tool", Content: result}}, nil, "must follow"},
		{msgs[:1], []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"f","response":{"type":"object"}}}`)}, "response"},
		{msgs[:1], []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"o":{"type":"object"}}}}}`)}, "without \"properties\""},
	}
	for _, c := range refused {
		if _, err := f.RenderText(c.msgs, c.tools, true); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a refusal naming %q", c.msgs, err, c.want)
		}
	}
	// Thinking: <|think|> opens the system turn; after the responses the
	// observation opens the thought channel (mask 0), and the model's
	// reasoning and answer follow it (mask 1).
	thinking, err := f.WithOptions(ChatOptions{Thinking: true})
	if err != nil {
		t.Fatal(err)
	}
	reasoned := slices.Clone(msgs)
	reasoned[3].Content = "<|channel>thought\n" + result + "\n<channel|>" + answer
	ids, mask, err = thinking.Render(reasoned, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	gen = nil
	for _, run := range maskRuns(ids, mask) {
		gen = append(gen, f.Tokenizer().Decode(run, false))
	}
	if wantGen := []string{calls + toolcall.Gemma4ResponseOpen, result + "\n<channel|>" + answer + toolcall.Gemma4TurnEnd}; !slices.Equal(gen, wantGen) {
		t.Errorf("thinking: generated runs %q, want %q", gen, wantGen)
	}
	if obs := tok.Decode(thinking.Observation(msgs[1].ToolCalls, []string{result}, true), false); !strings.HasSuffix(obs, "<tool_response|><|channel>thought\n") {
		t.Errorf("thinking: observation %q", obs)
	}
	qf, err := NewChatFormat(qwen(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qf.WithOptions(ChatOptions{Thinking: true}); err == nil || !strings.Contains(err.Error(), "Thinking") {
		t.Errorf("Thinking on Qwen3: %v", err)
	}
	if _, err := f.WithOptions(ChatOptions{Thinking: true, NoThinking: true}); err == nil {
		t.Errorf("Thinking and NoThinking together were accepted")
	}
	if _, err := f.WithOptions(ChatOptions{Date: "01 Jan 2026"}); err == nil || !strings.Contains(err.Error(), "date_string") {
		t.Errorf("Date: %v", err)
	}
	if _, err := NewChatFormat(withTemplate(t, qwen(t), readTestTemplate(t, "gemma4-e2b.jinja"))); err == nil || !strings.Contains(err.Error(), "<bos>") {
		t.Errorf("the Qwen tokenizer with Gemma 4's template: %v, want a refusal naming <bos>", err)
	}
}

func countID(ids []int32, id int32) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}
