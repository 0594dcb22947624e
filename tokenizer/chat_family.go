package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/toolcall"
)

// Family is a model family whose chat template agentrl writes by hand.
//
// agentrl does not run the checkpoint's Jinja template: a template renders
// text, and the trainer needs more than text (which tokens the model
// generated, and which text came from outside and must not become control
// tokens). Instead each family's layout is written out here, and
// NewChatFormat recognises a template by the SHA-256 of its text (leading
// and trailing white space removed). A template that is none of the known
// ones, even an edited copy of one, is refused: rendering a layout the model
// was not trained on would train it on the wrong thing without a word.
type Family string

// The families and the published templates each stands for.
const (
	// Qwen25 is Qwen2.5-Instruct's template: a default system message,
	// Hermes-style tool calls, no thinking.
	Qwen25 Family = "qwen2.5"
	// Qwen3 is Qwen3's template (with thinking and enable_thinking); also
	// the layout of a tokenizer with no chat template.
	Qwen3 Family = "qwen3"
	// Qwen35 is Qwen3.5's template: thinking opened by the generation
	// prompt (enable_thinking), tool calls in XML (toolcall.QwenXML),
	// contents trimmed.
	Qwen35 Family = "qwen3.5"
	// Qwen38 is Qwen3.8's template: Qwen3.5's layout with reasoning_effort
	// (an instruction at the head of the system turn while thinking is
	// on) and preserve_thinking (every turn keeps its think block unless
	// it is false); the reasoning comes from reasoning_content, never
	// split off the content by the template, and a call's booleans and
	// nulls go through tojson.
	Qwen38 Family = "qwen3.8"
	// Gemma4 is Gemma 4's template as Google published it for E2B and E4B
	// on 2026-07-09: <|turn>ROLE turns, the tool declarations in the system
	// turn, calls as <|tool_call>call:NAME{...}<tool_call|>
	// (toolcall.Gemma4), the responses inside the model's turn, which goes
	// on after them; thinking off by default.
	Gemma4 Family = "gemma4"
	// Gemma4Large is the same revision's template for 26B-A4B and 31B:
	// Gemma4's layout with a generation prompt that closes an empty
	// thought channel.
	Gemma4Large Family = "gemma4-large"
	// Llama31 is Llama 3.1-Instruct's template, which Llama 3.3-Instruct
	// ships unchanged: date line "26 Jul 2024" unless given.
	Llama31 Family = "llama3.1"
	// Llama32 is Llama 3.2-Instruct's template: today's date by default,
	// no built-in tools.
	Llama32 Family = "llama3.2"
)

// knownTemplates maps the SHA-256 of a published chat template (trimmed)
// to its family; another size of a model that ships the same text matches
// too. The interop tests render each with transformers.
var knownTemplates = map[string]Family{
	// Qwen/Qwen2.5-7B-Instruct.
	"55b2f4a26ac9ee719330a61a0c39d9e538b0e9322212f048326318cff4f8674a": Qwen25,
	// Qwen/Qwen3-0.6B, and the shared Qwen3 tokenizer.
	"87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5": Qwen3,
	// Qwen/Qwen3.5-4B (as llama.cpp vendors it in models/templates/).
	"a4aee8afcf2e0711942cf848899be66016f8d14a889ff9ede07bca099c28f715": Qwen35,
	// Qwen/Qwen3.8-27B (revision 1d4bf0f2) and Qwen/Qwen3.8-2.4T-A95B
	// (revision 9d060ae8): the same chat_template.jinja.
	"c3cf9e34abf4f9e36c2d72165aa9c132d3e2a725b6c2586aaa3a8af9d7a81041": Qwen38,
	// google/gemma-4-E2B-it and E4B-it, the revision of 2026-07-09 (as
	// ollama checks it in; see tokenizer/testdata/templates/SOURCES.md).
	"523fc86ed4db0357763963f4b0fdbce319903f1f68b2d03f593bef7a56836533": Gemma4,
	// google/gemma-4-26B-A4B-it and 31B-it, the same revision.
	"2af48814bacaf2a35a2d57aa19eee6c42ed530011977e8f414cf1d467da446c2": Gemma4Large,
	// meta-llama/Llama-3.1-8B-Instruct and Llama-3.3-70B-Instruct.
	"93c0e9aa3629bbd77e68dbc0f5621f6e6b23aa8d74b932595cdb8d64684526d7": Llama31,
	// meta-llama/Llama-3.2-3B-Instruct.
	"d82792f95932f1c9cef5c4bd992f171225e3bf8c7b609b4557c9e1ec96be819f": Llama32,
}

// familySpec is what a family's format needs of the tokenizer.
type familySpec struct {
	required []string // added tokens the format writes
	turnEnd  string   // the token that ends an assistant turn
	stops    []string // other tokens that end generation, when present
	calls    toolcall.CallSyntax
}

// Llama 3's special tokens.
const (
	llamaBOS         = "<|begin_of_text|>"
	llamaHeaderStart = "<|start_header_id|>"
	llamaHeaderEnd   = "<|end_header_id|>"
	llamaEOT         = toolcall.LlamaEOT
)

var qwenSpec = familySpec{
	required: []string{toolcall.TurnStart, toolcall.TurnEnd},
	turnEnd:  toolcall.TurnEnd,
	stops:    []string{toolcall.EndOfText, toolcall.ToolCallClose},
	calls:    toolcall.Hermes,
}

var qwen35Spec = familySpec{
	required: []string{toolcall.TurnStart, toolcall.TurnEnd},
	turnEnd:  toolcall.TurnEnd,
	stops:    []string{toolcall.EndOfText, toolcall.ToolCallClose},
	calls:    toolcall.QwenXML,
}

var llamaSpec = familySpec{
	required: []string{llamaBOS, llamaHeaderStart, llamaHeaderEnd, llamaEOT},
	turnEnd:  llamaEOT,
	stops:    []string{toolcall.LlamaEOM, "<|end_of_text|>"},
	calls:    toolcall.LlamaJSON,
}

// gemma4Spec: the model ends its turn with <turn|>, or hands it to the
// tools with <|tool_response>.
var gemma4Spec = familySpec{
	required: []string{gemma4BOS, gemma4TurnStart, toolcall.Gemma4TurnEnd, toolcall.Gemma4CallOpen, toolcall.Gemma4CallClose,
		toolcall.Gemma4ResponseOpen, toolcall.Gemma4ResponseClose, toolcall.Gemma4Quote, gemma4ToolOpen, gemma4ToolClose},
	turnEnd: toolcall.Gemma4TurnEnd,
	stops:   []string{toolcall.Gemma4ResponseOpen, "<eos>"},
	calls:   toolcall.Gemma4,
}

var familySpecs = map[Family]familySpec{Qwen25: qwenSpec, Qwen3: qwenSpec, Qwen35: qwen35Spec, Qwen38: qwen35Spec,
	Gemma4: gemma4Spec, Gemma4Large: gemma4Spec, Llama31: llamaSpec, Llama32: llamaSpec}

// templateFamily recognises a chat template; "" (no template) is Qwen3's
// layout.
func templateFamily(template string) (Family, error) {
	template = strings.TrimSpace(template)
	if template == "" {
		return Qwen3, nil
	}
	sum := sha256.Sum256([]byte(template))
	hash := hex.EncodeToString(sum[:])
	if f, ok := knownTemplates[hash]; ok {
		return f, nil
	}
	return "", fmt.Errorf("chat format: the tokenizer's chat_template (sha256 %s, %d bytes) is not one agentrl renders: "+
		"it knows the templates of Qwen2.5-Instruct, Qwen3, Qwen3.5, Qwen3.8, Gemma 4 (the revision of 2026-07-09), and Llama 3.1, 3.2 and 3.3 Instruct, written by hand; "+
		"an edited or other template is refused rather than rendered differently from how the model was trained", hash, len(template))
}
