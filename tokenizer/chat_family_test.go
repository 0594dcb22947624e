package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/toolcall"
)

func readTestTemplate(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "templates", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withTemplate saves tok with tokenizer_config.json's chat_template set to
// template and loads it back.
func withTemplate(t *testing.T, tok *Tokenizer, template string) *Tokenizer {
	t.Helper()
	dir := t.TempDir()
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tokenizer_config.json")
	var config map[string]any
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &config); err != nil {
		t.Fatal(err)
	}
	config["chat_template"] = template
	writeJSONFile(t, path, config)
	out, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// llamaSpecials are Llama 3's added tokens for word-level stand-ins.
var llamaSpecials = []string{"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"}

// llamaWordLevel is a word-level tokenizer with Llama 3's special tokens,
// the pieces of texts, and the given template.
func llamaWordLevel(t *testing.T, template string, texts ...string) *Tokenizer {
	t.Helper()
	tok, err := BuildWordLevel(texts, llamaSpecials)
	if err != nil {
		t.Fatal(err)
	}
	return withTemplate(t, tok, template)
}

func TestTemplateFamilies(t *testing.T) {
	shared, err := os.ReadFile(filepath.Join(qwenDir(t), "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var config struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(shared, &config); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		template string
		want     Family
	}{
		{readTestTemplate(t, "qwen2.5-instruct.jinja"), Qwen25},
		{config.ChatTemplate, Qwen3},
		{qwenChatTemplate, Qwen3},
		{readTestTemplate(t, "llama3.1-instruct.jinja"), Llama31},
		{readTestTemplate(t, "llama3.2-instruct.jinja"), Llama32},
		{readTestTemplate(t, "qwen3.8.jinja"), Qwen38},
		{qwen35ChatTemplate, Qwen35},
		{readTestTemplate(t, "gemma4-e2b.jinja"), Gemma4},
		{readTestTemplate(t, "gemma4-31b.jinja"), Gemma4Large},
		{"", Qwen3},
		{"\n" + readTestTemplate(t, "llama3.2-instruct.jinja") + "\n\n", Llama32},
	}
	for i, c := range cases {
		got, err := templateFamily(c.template)
		if err != nil || got != c.want {
			t.Errorf("template %d: %q, %v; want %q", i, got, err, c.want)
		}
	}
	// One changed character is another template, refused with its hash.
	edited := strings.Replace(readTestTemplate(t, "qwen2.5-instruct.jinja"), "You are Qwen", "You are Kwen", 1)
	if _, err := templateFamily(edited); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("an edited template gave %v, want a refusal naming its sha256", err)
	}
	tok := withTemplate(t, qwen(t), edited)
	if _, err := NewChatFormat(tok); err == nil || !strings.Contains(err.Error(), "is not one agentrl renders") {
		t.Errorf("NewChatFormat with an unknown template: %v", err)
	}
}

// Each family's format says the call syntax its template renders: Hermes
// tags for Qwen (and the word-level tokenizers), Llama 3's bare JSON.
func TestChatFormatCallSyntax(t *testing.T) {
	words, err := BuildWordLevel(nil, QwenSpecials)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		tok  *Tokenizer
		want toolcall.CallSyntax
	}{
		{words, toolcall.Hermes},
		{withTemplate(t, words, readTestTemplate(t, "qwen2.5-instruct.jinja")), toolcall.Hermes},
		{llamaWordLevel(t, readTestTemplate(t, "llama3.1-instruct.jinja")), toolcall.LlamaJSON},
		{llamaWordLevel(t, readTestTemplate(t, "llama3.2-instruct.jinja")), toolcall.LlamaJSON},
	}
	for _, c := range cases {
		f, err := NewChatFormat(c.tok)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.CallSyntax(); got != c.want {
			t.Errorf("%s: call syntax %v, want %v", f.Family(), got, c.want)
		}
	}
}

// Llama 3's format needs Llama 3's special tokens; the Qwen tokenizer with
// Llama's template is refused by name.
func TestChatFormatNeedsFamilyTokens(t *testing.T) {
	tok := withTemplate(t, qwen(t), readTestTemplate(t, "llama3.1-instruct.jinja"))
	if _, err := NewChatFormat(tok); err == nil || !strings.Contains(err.Error(), "<|begin_of_text|>") {
		t.Errorf("NewChatFormat(Qwen tokenizer, Llama template) = %v, want a refusal naming <|begin_of_text|>", err)
	}
}

// transformers 5 saves the template as chat_template.jinja; a list of named
// templates uses the one named "default".
func TestLoadChatTemplate(t *testing.T) {
	q25 := readTestTemplate(t, "qwen2.5-instruct.jinja")
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(qwenDir(t), "tokenizer.json"), filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	writeJSONFile(t, filepath.Join(dir, "tokenizer_config.json"), map[string]any{"eos_token": "<|im_end|>", "chat_template": "ignored"})
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(q25), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tok.ChatTemplate() != q25 {
		t.Fatalf("ChatTemplate() is not chat_template.jinja's text")
	}
	// Save keeps it (in tokenizer_config.json).
	out := t.TempDir()
	if err := tok.Save(out); err != nil {
		t.Fatal(err)
	}
	back, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := NewChatFormat(back); err != nil || f.Family() != Qwen25 {
		t.Fatalf("after Save and Load: %v, %v", f, err)
	}

	os.Remove(filepath.Join(dir, "chat_template.jinja"))
	writeJSONFile(t, filepath.Join(dir, "tokenizer_config.json"), map[string]any{
		"chat_template": []map[string]string{{"name": "tool_use", "template": "x"}, {"name": "default", "template": q25}}})
	if tok, err := Load(dir); err != nil || tok.ChatTemplate() != q25 {
		t.Errorf("a list of named templates: %v (template %d bytes)", err, len(tok.ChatTemplate()))
	}
	writeJSONFile(t, filepath.Join(dir, "tokenizer_config.json"), map[string]any{
		"chat_template": []map[string]string{{"name": "tool_use", "template": "x"}}})
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), `"default"`) {
		t.Errorf("a list with no default template: %v", err)
	}
	writeJSONFile(t, filepath.Join(dir, "tokenizer_config.json"), map[string]any{"chat_template": 3})
	if _, err := Load(dir); err == nil {
		t.Error("a chat_template that is a number was accepted")
	}
}

// Each option belongs to one family; the others refuse it by name.
func TestChatOptionsRefused(t *testing.T) {
	q3 := qwenChat(t)
	q25, err := NewChatFormat(withTemplate(t, qwen(t), readTestTemplate(t, "qwen2.5-instruct.jinja")))
	if err != nil {
		t.Fatal(err)
	}
	l31, err := NewChatFormat(llamaWordLevel(t, readTestTemplate(t, "llama3.1-instruct.jinja")))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		f    *ChatFormat
		opts ChatOptions
		name string
	}{
		{q25, ChatOptions{NoThinking: true}, "NoThinking"},
		{q3, ChatOptions{Date: "01 Jan 2025"}, "Date"},
		{l31, ChatOptions{NoThinking: true}, "NoThinking"},
	}
	for _, c := range cases {
		if _, err := c.f.WithOptions(c.opts); err == nil || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s with %+v: %v, want a refusal naming %s", c.f.Family(), c.opts, err, c.name)
		}
	}
	if _, err := q3.WithOptions(ChatOptions{NoThinking: true}); err != nil {
		t.Error(err)
	}
	if _, err := l31.WithOptions(ChatOptions{Date: "01 Jan 2025"}); err != nil {
		t.Error(err)
	}
}

// genRuns decodes the mask-1 runs of a rendering.
func genRuns(t *testing.T, f *ChatFormat, msgs []Message, tools []json.RawMessage, gen bool) []string {
	t.Helper()
	ids, mask, err := f.Render(msgs, tools, gen)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, run := range maskRuns(ids, mask) {
		out = append(out, f.Tokenizer().Decode(run, false))
	}
	return out
}

// Llama 3.1's layout, written out by hand from the template: the date
// lines, the trimmed system message, the tools (json.dumps indent 4) and
// the trimmed first user message in the user turn, the call as a bare JSON
// object with "parameters", the tool result through tojson (quoted), the
// trimmed answer.
func TestLlamaLayoutByHand(t *testing.T) {
	msgs := []Message{
		{Role: "system", Content: " Be brief.\n"},
		{Role: "user", Content: "  Who?  "},
		{Role: "assistant", Content: "ignored", ToolCalls: []ToolCall{{Name: "f", Arguments: json.RawMessage(`{"x":[1,2.50],"y":{}}`)}}},
		{Role: "tool", Content: "r \"q\"\n"},
		{Role: "assistant", Content: " A \n"},
	}
	tools := []json.RawMessage{json.RawMessage(`{"name":"f","parameters":{"type":"object","required":[]}}`)}
	gen1 := `{"name": "f", "parameters": {"x": [1, 2.5], "y": {}}}<|eot_id|>`
	gen2 := "A<|eot_id|>"
	want := "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n" +
		"Environment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n" +
		"Be brief.<|eot_id|>" +
		"<|start_header_id|>user<|end_header_id|>\n\n" +
		"Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n" +
		`Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.` + "\n\n" +
		"{\n    \"name\": \"f\",\n    \"parameters\": {\n        \"type\": \"object\",\n        \"required\": []\n    }\n}\n\n" +
		"Who?<|eot_id|>" +
		"<|start_header_id|>assistant<|end_header_id|>\n\n" + gen1 +
		"<|start_header_id|>ipython<|end_header_id|>\n\n\"r \\\"q\\\"\\n\"<|eot_id|>" +
		"<|start_header_id|>assistant<|end_header_id|>\n\n" + gen2
	obsWant := "<|start_header_id|>ipython<|end_header_id|>\n\n\"a\"<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n\"b\"<|eot_id|>" +
		"<|start_header_id|>assistant<|end_header_id|>\n\n"
	f, err := NewChatFormat(llamaWordLevel(t, readTestTemplate(t, "llama3.1-instruct.jinja"), want, obsWant))
	if err != nil {
		t.Fatal(err)
	}
	if f.Family() != Llama31 {
		t.Fatalf("family %s", f.Family())
	}
	got, err := f.RenderText(msgs, tools, false)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("RenderText:\n got %q\nwant %q", got, want)
	}
	if runs := genRuns(t, f, msgs, tools, false); !slices.Equal(runs, []string{gen1, gen2}) {
		t.Errorf("generated runs %q, want %q", runs, []string{gen1, gen2})
	}
	// No tools: no Environment line, the user turn as it is; a given date.
	d, err := f.WithOptions(ChatOptions{Date: "05 Mar 2025"})
	if err != nil {
		t.Fatal(err)
	}
	got, err = d.RenderText([]Message{{Role: "user", Content: "hi"}}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 05 Mar 2025\n\n<|eot_id|>" +
		"<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"; got != want {
		t.Errorf("prompt:\n got %q\nwant %q", got, want)
	}
	// Observation after a closed turn: one ipython turn per response.
	if obs := f.Tokenizer().Decode(f.Observation(nil, []string{"a", "b"}, true), false); obs != obsWant {
		t.Errorf("Observation:\n got %q\nwant %q", obs, obsWant)
	}
	// Two calls in one message, and tools with no user message, are refused.
	two := Message{Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: json.RawMessage(`{}`)}, {Name: "f", Arguments: json.RawMessage(`{}`)}}}
	if _, err := f.RenderText([]Message{{Role: "user", Content: "q"}, two}, nil, false); err == nil {
		t.Error("two tool calls in one message were rendered")
	}
	if _, err := f.RenderText([]Message{{Role: "system", Content: "s"}}, tools, false); err == nil {
		t.Error("tools without a user message were rendered")
	}
	// <|eot_id|> ends the turn (it is also the eos here), then <|eom_id|>
	// and <|end_of_text|>.
	var want3 []int32
	for _, s := range []string{"<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"} {
		id, _ := f.Special(s)
		want3 = append(want3, id)
	}
	if got := f.StopIDs(); !slices.Equal(got, want3) {
		t.Errorf("StopIDs = %v, want %v", got, want3)
	}
}

// Llama 3.2's template dates the system turn with the day of rendering.
func TestLlama32DefaultDate(t *testing.T) {
	f, err := NewChatFormat(llamaWordLevel(t, readTestTemplate(t, "llama3.2-instruct.jinja")))
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.RenderText([]Message{{Role: "user", Content: "hi"}}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if l := f.layout.(llamaLayout); !strings.Contains(got, "Today Date: "+l.date+"\n") || len(l.date) != len("05 Mar 2025") || l.date == "26 Jul 2024" {
		t.Errorf("date %q in %q", l.date, got)
	}
}

// Qwen2.5's layout, written out by hand from the template: its default
// system message (before the tools block too), content then each call after
// a "\n", arguments through tojson even when they are a string, and no
// thinking handling.
func TestQwen25LayoutByHand(t *testing.T) {
	f, err := NewChatFormat(withTemplate(t, qwen(t), readTestTemplate(t, "qwen2.5-instruct.jinja")))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{
		{Role: "user", Content: "q"},
		{Role: "assistant", Content: "<think>t</think>Let me look.", ToolCalls: []ToolCall{
			{Name: "f", Arguments: json.RawMessage(`{"a": 1}`)}, {Name: "g", Arguments: json.RawMessage(`"{\"b\":2}"`)}}},
		{Role: "tool", Content: "r1"}, {Role: "tool", Content: "r2"},
		{Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: json.RawMessage(`{}`)}}},
		{Role: "tool", Content: "r3"},
		{Role: "assistant", Content: "<think>\nx\n</think>\n\nA"},
	}
	gen1 := "<think>t</think>Let me look.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"g\", \"arguments\": \"{\\\"b\\\":2}\"}\n</tool_call><|im_end|>"
	gen2 := "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call><|im_end|>"
	gen3 := "<think>\nx\n</think>\n\nA<|im_end|>"
	want := "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n" +
		"<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n" + gen1 + "\n" +
		"<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n</tool_response><|im_end|>\n" +
		"<|im_start|>assistant\n" + gen2 + "\n" +
		"<|im_start|>user\n<tool_response>\nr3\n</tool_response><|im_end|>\n" +
		"<|im_start|>assistant\n" + gen3 + "\n"
	got, err := f.RenderText(msgs, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("RenderText:\n got %q\nwant %q", got, want)
	}
	if runs := genRuns(t, f, msgs, nil, false); !slices.Equal(runs, []string{gen1, gen2, gen3}) {
		t.Errorf("generated runs %q", runs)
	}
	prompt, err := f.Prompt("", "hi", []json.RawMessage{json.RawMessage(`{"name":"f"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.Tokenizer().Decode(prompt, false), "<|im_start|>system\n"+qwen25System+"\n\n"+toolsHeader+"\n{\"name\": \"f\"}"+toolsFooter+
		"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"; got != want {
		t.Errorf("Prompt:\n got %q\nwant %q", got, want)
	}
}

// Qwen3 with enable_thinking=false: the generation prompt (and the one the
// observation ends with) carries an empty think block, which in the last
// turn of a rendered conversation is the template's, not generated.
func TestQwen3NoThinking(t *testing.T) {
	on := qwenChat(t)
	off, err := on.WithOptions(ChatOptions{NoThinking: true})
	if err != nil {
		t.Fatal(err)
	}
	tok := on.Tokenizer()
	prompt, err := off.Prompt("", "hi", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.Decode(prompt, false), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"; got != want {
		t.Errorf("Prompt = %q, want %q", got, want)
	}
	if got, want := tok.Decode(off.Observation(nil, []string{"r"}, true), false),
		"\n<|im_start|>user\n<tool_response>\nr\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"; got != want {
		t.Errorf("Observation = %q, want %q", got, want)
	}
	msgs := []Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "A"}}
	if runs := genRuns(t, off, msgs, nil, false); !slices.Equal(runs, []string{"A<|im_end|>"}) {
		t.Errorf("NoThinking runs %q", runs)
	}
	if runs := genRuns(t, on, msgs, nil, false); !slices.Equal(runs, []string{"<think>\n\n</think>\n\nA<|im_end|>"}) {
		t.Errorf("thinking runs %q", runs)
	}
	// The text is the template's either way.
	a, _ := on.RenderText(msgs, nil, false)
	b, _ := off.RenderText(msgs, nil, false)
	if a != b {
		t.Errorf("the texts differ: %q and %q", a, b)
	}
}

// json.dumps(v, indent=4, ensure_ascii=False), written out by hand.
func TestPyJSONIndent(t *testing.T) {
	got, err := pyJSONIndent([]byte(`{"a":[1,{"b":null}],"c":{},"d":[],"é":"x\ny"}`), 4)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n    \"a\": [\n        1,\n        {\n            \"b\": null\n        }\n    ],\n    \"c\": {},\n    \"d\": [],\n    \"é\": \"x\\ny\"\n}"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// Python's str.strip also removes the separators U+001C..U+001F.
func TestPyStrip(t *testing.T) {
	if got := pyStrip("\x1c\u00a0 a b\u3000\x1f\n"); got != "a b" {
		t.Errorf("pyStrip = %q", got)
	}
}
