package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var searchTool = json.RawMessage(`{"type":"function","function":{"name":"search","description":"Search Wikipedia passages.",` +
	`"parameters":{"type":"object","properties":{"query":{"type":"string","description":"The search query."}},"required":["query"]}}}`)

// twoCallConversation has an assistant turn with one tool call, one with
// thinking and two tool calls (whose two responses share a user turn), and
// a final answer.
var twoCallConversation = []Message{
	{Role: "system", Content: "You are a helpful assistant. Answer with <answer></answer>."},
	{Role: "user", Content: "Were Scott Derrickson and Ed Wood of the same nationality?"},
	{Role: "assistant", ToolCalls: []ToolCall{{Name: "search", Arguments: json.RawMessage(`{"query":"Scott Derrickson"}`)}}},
	{Role: "tool", Content: "Scott Derrickson (born July 16, 1966) is an American director."},
	{Role: "assistant", Content: "<think>\nDerrickson is American.\n</think>\n\nNow Ed Wood.", ToolCalls: []ToolCall{
		{Name: "search", Arguments: json.RawMessage(`{"query":"Ed Wood"}`)},
		{Name: "search", Arguments: json.RawMessage(`{"query": "Ed Wood nationality", "k": 2}`)},
	}},
	{Role: "tool", Content: "Edward Davis Wood Jr. was an American filmmaker."},
	{Role: "tool", Content: "Ed Wood was American."},
	{Role: "assistant", Content: "<answer>yes</answer>"},
}

// The text Qwen3's chat template renders for twoCallConversation, written out
// by hand from the template: the system turn with the tools block (the tool
// through tojson, i.e. Python's json.dumps with ", " and ": "); the middle
// assistant turns after the last user query show their thinking only when
// they have some; the last one gets an empty <think> block; consecutive tool
// messages share one user turn.
const twoCallText = "<|im_start|>system\n" +
	"You are a helpful assistant. Answer with <answer></answer>.\n\n" +
	"# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
	"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
	`{"type": "function", "function": {"name": "search", "description": "Search Wikipedia passages.", ` +
	`"parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "The search query."}}, "required": ["query"]}}}` +
	"\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
	"<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" +
	"<|im_start|>user\nWere Scott Derrickson and Ed Wood of the same nationality?<|im_end|>\n" +
	"<|im_start|>assistant\n" + gen1 + "\n" +
	"<|im_start|>user\n<tool_response>\nScott Derrickson (born July 16, 1966) is an American director.\n</tool_response><|im_end|>\n" +
	"<|im_start|>assistant\n" + gen2 + "\n" +
	"<|im_start|>user\n<tool_response>\nEdward Davis Wood Jr. was an American filmmaker.\n</tool_response>" +
	"\n<tool_response>\nEd Wood was American.\n</tool_response><|im_end|>\n" +
	"<|im_start|>assistant\n" + gen3 + "\n"

// What the assistant generates in each turn: everything after
// "<|im_start|>assistant\n" through "<|im_end|>".
const (
	gen1 = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"Scott Derrickson\"}}\n</tool_call><|im_end|>"
	gen2 = "<think>\nDerrickson is American.\n</think>\n\nNow Ed Wood.\n" +
		"<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"Ed Wood\"}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"Ed Wood nationality\", \"k\": 2}}\n</tool_call><|im_end|>"
	gen3 = "<think>\n\n</think>\n\n<answer>yes</answer><|im_end|>"
)

func qwenChat(t *testing.T) *ChatFormat {
	t.Helper()
	c, err := NewChatFormat(qwen(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRenderMatchesTemplate(t *testing.T) {
	c := qwenChat(t)
	tok := c.Tokenizer()
	tools := []json.RawMessage{searchTool}
	text, err := c.RenderText(twoCallConversation, tools, false)
	if err != nil {
		t.Fatal(err)
	}
	if text != twoCallText {
		t.Fatalf("RenderText differs from the template's text:\n got %q\nwant %q", text, twoCallText)
	}
	ids, mask, err := c.Render(twoCallConversation, tools, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := tok.Encode(twoCallText); !slices.Equal(ids, want) {
		t.Fatalf("Render ids differ from Encode(template text):\n got %v\nwant %v", ids, want)
	}
	if len(mask) != len(ids) {
		t.Fatalf("len(mask) = %d, len(ids) = %d", len(mask), len(ids))
	}
	// The mask-1 runs are exactly the three generated spans, and each run
	// is that span's own encoding (each starts with an added token).
	var runs [][]int32
	for i := range ids {
		if mask[i] == 1 {
			if i == 0 || mask[i-1] == 0 {
				runs = append(runs, nil)
			}
			runs[len(runs)-1] = append(runs[len(runs)-1], ids[i])
		}
	}
	gens := []string{gen1, gen2, gen3}
	if len(runs) != len(gens) {
		t.Fatalf("%d generated runs, want %d", len(runs), len(gens))
	}
	for k, g := range gens {
		if got := tok.Decode(runs[k], false); got != g {
			t.Errorf("generated run %d decodes to %q, want %q", k, got, g)
		}
		if want := tok.Encode(g); !slices.Equal(runs[k], want) {
			t.Errorf("generated run %d = %v, want Encode(span) = %v", k, runs[k], want)
		}
	}
	// The rest decodes to the template's own text.
	var rest []int32
	for i := range ids {
		if mask[i] == 0 {
			rest = append(rest, ids[i])
		}
	}
	wantRest := twoCallText
	for _, g := range gens {
		wantRest = strings.Replace(wantRest, g, "", 1)
	}
	if got := tok.Decode(rest, false); got != wantRest {
		t.Errorf("mask-0 tokens decode to %q, want %q", got, wantRest)
	}
}

// A rollout builds the same ids by appending: the prompt, what the model
// generates (stopped at </tool_call>, or closing its own turn), and the
// environment's observations.
func TestTurnByTurnMatchesWholeText(t *testing.T) {
	c := qwenChat(t)
	tok := c.Tokenizer()
	tools := []json.RawMessage{searchTool}
	prompt, err := c.Prompt(twoCallConversation[0].Content, twoCallConversation[1].Content, tools)
	if err != nil {
		t.Fatal(err)
	}
	var traj []int32
	traj = append(traj, prompt...)
	traj = append(traj, tok.Encode(strings.TrimSuffix(gen1, "<|im_end|>"))...) // stopped at </tool_call>
	traj = append(traj, c.Observation(nil, []string{twoCallConversation[3].Content}, false)...)
	traj = append(traj, tok.Encode(gen2)...) // closed its own turn
	traj = append(traj, c.Observation(nil, []string{twoCallConversation[5].Content, twoCallConversation[6].Content}, true)...)
	traj = append(traj, tok.Encode(gen3)...)
	// The whole text ends with the "\n" the template puts after the last
	// <|im_end|>, which a rollout does not generate.
	want := tok.Encode(strings.TrimSuffix(twoCallText, "\n"))
	if !slices.Equal(traj, want) {
		t.Fatalf("turn-by-turn ids differ from the whole text:\n got %v\nwant %v", traj, want)
	}
}

func TestPromptLayouts(t *testing.T) {
	c := qwenChat(t)
	tok := c.Tokenizer()
	cases := []struct {
		system, user string
		tools        []json.RawMessage
		want         string
	}{
		{"", "hi", nil, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"},
		{"Be brief.", "hi", nil, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"},
		// With tools and no system message the tools block stands alone.
		{"", "hi", []json.RawMessage{json.RawMessage(`{"name":"f"}`)},
			"<|im_start|>system\n" + toolsHeader + "\n{\"name\": \"f\"}" + toolsFooter +
				"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"},
	}
	for _, cs := range cases {
		got, err := c.Prompt(cs.system, cs.user, cs.tools)
		if err != nil {
			t.Fatal(err)
		}
		if want := tok.Encode(cs.want); !slices.Equal(got, want) {
			t.Errorf("Prompt(%q, %q): %q, want %q", cs.system, cs.user, tok.Decode(got, false), cs.want)
		}
	}
	if _, err := c.Prompt("", "hi", []json.RawMessage{json.RawMessage(`{"name":`)}); err == nil {
		t.Error("Prompt accepted a tool that is not JSON")
	}
}

func TestObservation(t *testing.T) {
	c := qwenChat(t)
	// <|im_end|>=151645, "\n"=198, <|im_start|>=151644, "user"=872,
	// <tool_response>=151665, "\n"... the text between the response tags
	// is "\nok\n": Ċ | ok | Ċ -> 198, 562 ("ok"), 198.
	got := c.Observation(nil, []string{"ok"}, false)
	want := []int32{151645, 198, 151644, 872, 198, 151665, 198, 562, 198, 151666, 151645, 198, 151644, 77091, 198}
	if !slices.Equal(got, want) {
		t.Errorf("Observation = %v, want %v", got, want)
	}
	if got := c.Observation(nil, []string{"ok"}, true); !slices.Equal(got, want[1:]) {
		t.Errorf("Observation after a closed turn = %v, want %v", got, want[1:])
	}
	// No responses: close the turn and open the next assistant turn.
	if got := c.Observation(nil, nil, true); !slices.Equal(got, []int32{198, 151644, 77091, 198}) {
		t.Errorf("Observation(nil) = %v", got)
	}
}

func TestStopIDsAndSpecial(t *testing.T) {
	c := qwenChat(t)
	// <|im_end|> (also the eos), <|endoftext|>, </tool_call>.
	if got := c.StopIDs(); !slices.Equal(got, []int32{151645, 151643, 151658}) {
		t.Errorf("StopIDs = %v", got)
	}
	if id, ok := c.Special("<tool_call>"); !ok || id != 151657 {
		t.Errorf("Special(<tool_call>) = %d, %v", id, ok)
	}
	if _, ok := c.Special("<nope>"); ok {
		t.Error("Special found an unknown token")
	}
}

func TestAssistantLayouts(t *testing.T) {
	c := qwenChat(t)
	user := Message{Role: "user", Content: "q"}
	cases := []struct {
		name string
		msgs []Message
		want string
	}{
		// Before the last user query thinking is dropped; the content
		// keeps what follows </think> minus leading newlines.
		{"earlier round drops thinking",
			[]Message{user, {Role: "assistant", Content: "<think>r</think>\n\na"}, user},
			"<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\na<|im_end|>\n<|im_start|>user\nq<|im_end|>\n"},
		// A string argument is inserted as it is; no content means no
		// newline before the first call.
		{"string arguments",
			[]Message{user, {Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: json.RawMessage(`"{\"x\":1}"`)}}}, {Role: "tool", Content: "r"}},
			"<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\":1}}\n</tool_call><|im_end|>\n" +
				"<|im_start|>user\n<tool_response>\nr\n</tool_response><|im_end|>\n"},
		// A user message that wraps a tool response is not a query, so the
		// assistant turn before it is after the last query.
		{"wrapped tool response is not a query",
			[]Message{user, {Role: "assistant", Content: "<think>t</think>a"}, {Role: "user", Content: "<tool_response>x</tool_response>"}},
			"<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nt\n</think>\n\na<|im_end|>\n" +
				"<|im_start|>user\n<tool_response>x</tool_response><|im_end|>\n"},
		// A system message after the first is an ordinary turn.
		{"late system message",
			[]Message{user, {Role: "system", Content: "s"}},
			"<|im_start|>user\nq<|im_end|>\n<|im_start|>system\ns<|im_end|>\n"},
	}
	for _, cs := range cases {
		got, err := c.RenderText(cs.msgs, nil, false)
		if err != nil {
			t.Fatalf("%s: %v", cs.name, err)
		}
		if got != cs.want {
			t.Errorf("%s:\n got %q\nwant %q", cs.name, got, cs.want)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	c := qwenChat(t)
	bad := [][]Message{
		nil,
		{{Role: "robot", Content: "x"}},
		{{Role: "assistant", ToolCalls: []ToolCall{{Name: "f"}}}},
		{{Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: json.RawMessage(`{"x":`)}}}},
	}
	for _, msgs := range bad {
		if _, _, err := c.Render(msgs, nil, false); err == nil {
			t.Errorf("Render(%+v) gave no error", msgs)
		}
	}
}

// A newline at the start of an assistant's content merges with the header's
// newline into one token ("\n\n"), which then counts as generated.
func TestStraddlingTokenIsGenerated(t *testing.T) {
	c := qwenChat(t)
	ids, mask, err := c.Render([]Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "\nA"}, {Role: "user", Content: "q"}}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	// ... <|im_start|> assistant ĊĊ A <|im_end|> Ċ <|im_start|> ...:
	// "assistant"=77091, "ĊĊ"=271, "A"=32.
	i := slices.Index(ids, 77091)
	if i < 0 || !slices.Equal(ids[i:i+4], []int32{77091, 271, 32, 151645}) {
		t.Fatalf("ids %v", ids)
	}
	if !slices.Equal(mask[i:i+5], []uint8{0, 1, 1, 1, 0}) {
		t.Errorf("mask %v, want 0 1 1 1 0 from 'assistant'", mask[i:i+5])
	}
}

// TestChatTemplateCases compares RenderText with what Jinja2 renders from
// Qwen3's chat template for random conversations (testdata), and Render's
// ids with the encoding of that text where the plain text (user and tool
// contents, tools) spells no added token; all ids decode to that text.
func TestChatTemplateCases(t *testing.T) {
	c := qwenChat(t)
	data, err := os.ReadFile(filepath.Join("testdata", "chat_template_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Msgs []struct {
				Role      string `json:"role"`
				Content   string `json:"content"`
				ToolCalls []struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"tool_calls"`
			} `json:"msgs"`
			Tools []json.RawMessage `json:"tools"`
			Gen   bool              `json:"gen"`
			Text  string            `json:"text"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	for i, cs := range file.Cases {
		var msgs []Message
		for _, m := range cs.Msgs {
			msg := Message{Role: m.Role, Content: m.Content}
			for _, call := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{Name: call.Name, Arguments: call.Arguments})
			}
			msgs = append(msgs, msg)
		}
		text, err := c.RenderText(msgs, cs.Tools, cs.Gen)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if text != cs.Text {
			t.Errorf("case %d:\n got %q\nwant %q", i, text, cs.Text)
			continue
		}
		ids, mask, err := c.Render(msgs, cs.Tools, cs.Gen)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if len(mask) != len(ids) || c.Tokenizer().Decode(ids, false) != cs.Text {
			t.Errorf("case %d: Render's %d ids (mask %d) do not decode to the text", i, len(ids), len(mask))
		}
		plain := string(slices.Concat(cs.Tools...))
		for _, m := range msgs {
			if m.Role == "user" || m.Role == "tool" {
				plain += m.Content
			}
		}
		if !spellsAddedToken(c.Tokenizer(), plain) && !slices.Equal(ids, c.Tokenizer().Encode(cs.Text)) {
			t.Errorf("case %d: Render ids differ from Encode(text)", i)
		}
	}
}

// spellsAddedToken tells whether s contains an added token's text.
func spellsAddedToken(tok *Tokenizer, s string) bool {
	for a := range tok.addedID {
		if strings.Contains(s, a) {
			return true
		}
	}
	return false
}
