package tokenizer_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs/reward"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
	"github.com/agentrl/agentrl/toolcall"
)

// demo is a scripted demonstration as the trainer renders one: a search,
// its response, the answer.
var demo = []tokenizer.Message{
	{Role: "system", Content: toolcall.SystemPrompt},
	{Role: "user", Content: "What is the capital of the nation of Kamo?"},
	{Role: "assistant", ToolCalls: []tokenizer.ToolCall{{Name: "search", Arguments: json.RawMessage(`{"query": "Kamo"}`)}}},
	{Role: "tool", Content: "Doc 1 (Title: Kamo) Kamo is a nation. Its capital is Sava."},
	{Role: "assistant", Content: toolcall.Answer("Sava")},
}

// assistantTurns cuts the assistant turns out of a rendered conversation,
// each up to and with its end-of-turn token.
func assistantTurns(t *testing.T, text string) []string {
	t.Helper()
	var out []string
	for _, part := range strings.Split(text, toolcall.TurnStart+"assistant\n")[1:] {
		end := strings.Index(part, toolcall.TurnEnd)
		if end < 0 {
			t.Fatalf("assistant turn without %s: %q", toolcall.TurnEnd, part)
		}
		out = append(out, part[:end+len(toolcall.TurnEnd)])
	}
	return out
}

// The chat format renders, the parser parses and the format reward scores
// the same protocol: a rendered demonstration's first turn is the call,
// its last the answer, and the episode earns the whole format reward.
func TestParserReadsWhatTheChatFormatRenders(t *testing.T) {
	tok, err := tokenizer.BuildWordLevel(nil, toolcall.SpecialTokens())
	if err != nil {
		t.Fatal(err)
	}
	cf, err := tokenizer.NewChatFormat(tok)
	if err != nil {
		t.Fatal(err)
	}
	text, err := cf.RenderText(demo, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	turns := assistantTurns(t, text)
	if len(turns) != 2 {
		t.Fatalf("%d assistant turns in %q, want 2", len(turns), text)
	}
	calls, err := toolcall.ParseHermes(turns[0])
	if err != nil || len(calls) != 1 || calls[0].Name != "search" || string(calls[0].Arguments) != `{"query":"Kamo"}` {
		t.Errorf("ParseHermes(%q) = %+v, %v; want one search call with {\"query\":\"Kamo\"}", turns[0], calls, err)
	}
	if a, ok := toolcall.ParseAnswer(turns[1]); !ok || a != "Sava" {
		t.Errorf("ParseAnswer(%q) = %q, %v; want Sava", turns[1], a, ok)
	}
	if f := reward.Format(toolcall.Hermes, []reward.FormatTurn{{Text: turns[0], CallsOK: true}, {Text: turns[1]}}); f != 1 {
		t.Errorf("format reward of the rendered demonstration = %v, want 1", f)
	}
	if !strings.Contains(text, toolcall.ToolResponseBefore+demo[3].Content+toolcall.ToolResponseAfter) {
		t.Errorf("the tool response is not rendered between toolcall.ToolResponseBefore and After: %q", text)
	}
	if !strings.Contains(toolcall.SystemPrompt, toolcall.Answer("the answer")) {
		t.Errorf("the system prompt does not show the answer tags: %q", toolcall.SystemPrompt)
	}
}

// The same for Llama 3: the demonstration rendered by the Llama format, its
// generated spans (mask 1, the action tokens a policy warm-started on it
// learns) decoded, parse back to the same call and answer with the
// format's call syntax, and earn the format reward. Read as Hermes, the
// call is no call.
func TestParserReadsWhatTheLlamaFormatRenders(t *testing.T) {
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}`)}
	text, err := tokenizertest.LlamaFormat(t).RenderText(demo, tools, false)
	if err != nil {
		t.Fatal(err)
	}
	cf := tokenizertest.LlamaFormat(t, text)
	if cf.CallSyntax() != toolcall.LlamaJSON {
		t.Fatalf("%s's call syntax is %v, want %v", cf.Family(), cf.CallSyntax(), toolcall.LlamaJSON)
	}
	ids, mask, err := cf.Render(demo, tools, false)
	if err != nil {
		t.Fatal(err)
	}
	var turns []string
	for i := 0; i < len(ids); {
		if mask[i] == 0 {
			i++
			continue
		}
		j := i
		for j < len(ids) && mask[j] == 1 {
			j++
		}
		turns = append(turns, cf.Tokenizer().Decode(ids[i:j], false))
		i = j
	}
	wantCall := toolcall.LlamaToolCall("search", `{"query": "Kamo"}`) + toolcall.LlamaEOT
	if len(turns) != 2 || turns[0] != wantCall {
		t.Fatalf("generated spans %q, want the call %q and the answer", turns, wantCall)
	}
	calls, err := toolcall.Parse(cf.CallSyntax(), turns[0], nil)
	if err != nil || len(calls) != 1 || calls[0].Name != "search" || string(calls[0].Arguments) != `{"query":"Kamo"}` {
		t.Errorf("Parse(%v, %q) = %+v, %v; want one search call with {\"query\":\"Kamo\"}", cf.CallSyntax(), turns[0], calls, err)
	}
	if a, ok := toolcall.ParseAnswer(turns[1]); !ok || a != "Sava" {
		t.Errorf("ParseAnswer(%q) = %q, %v; want Sava", turns[1], a, ok)
	}
	if f := reward.Format(cf.CallSyntax(), []reward.FormatTurn{{Text: turns[0], CallsOK: true}, {Text: turns[1]}}); f != 1 {
		t.Errorf("format reward of the rendered demonstration = %v, want 1", f)
	}
	if calls, err := toolcall.ParseHermes(turns[0]); err != nil || len(calls) != 0 {
		t.Errorf("the Hermes parser reads %+v, %v in a Llama call; want nothing", calls, err)
	}
}

// The tiny models' vocabulary holds every special token of the protocol
// as one token, so the policy emits and the stop detection sees a tag as a
// single id; the tokenizer's own list is the protocol's.
func TestTinyVocabularyHoldsEverySpecialToken(t *testing.T) {
	if !slices.Equal(tokenizer.QwenSpecials, toolcall.SpecialTokens()) {
		t.Errorf("tokenizer.QwenSpecials = %q, want toolcall.SpecialTokens() = %q", tokenizer.QwenSpecials, toolcall.SpecialTokens())
	}
	tags := []string{toolcall.ThinkOpen, toolcall.ThinkClose, toolcall.ToolCallOpen, toolcall.ToolCallClose,
		toolcall.AnswerOpen, toolcall.AnswerClose, toolcall.ToolResponseOpen, toolcall.ToolResponseClose,
		toolcall.EndOfText, toolcall.TurnStart, toolcall.TurnEnd}
	for _, tag := range tags {
		if !slices.Contains(toolcall.SpecialTokens(), tag) {
			t.Errorf("%q is not among toolcall.SpecialTokens()", tag)
		}
	}
	tok, err := tokenizer.BuildWordLevel([]string{"a question"}, toolcall.SpecialTokens())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range toolcall.SpecialTokens() {
		id, ok := tok.TokenID(s)
		if ids := tok.Encode("a " + s + " a"); !ok || !slices.Contains(ids, id) {
			t.Errorf("%q: id %d (%v), encoded in context as %v: want one token", s, id, ok, ids)
		}
	}
	cf, err := tokenizer.NewChatFormat(tok)
	if err != nil {
		t.Fatal(err)
	}
	for _, stop := range []string{toolcall.TurnEnd, toolcall.EndOfText, toolcall.ToolCallClose} {
		if id, _ := tok.TokenID(stop); !slices.Contains(cf.StopIDs(), id) {
			t.Errorf("%q (id %d) does not end a turn: stops %v", stop, id, cf.StopIDs())
		}
	}
}
