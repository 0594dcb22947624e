// Package protocol is the agent's protocol, in one place: the tags a
// policy writes (<think>, <tool_call>, <answer>) and reads
// (<tool_response>), the chat's special tokens, the system prompts and
// the text of a tool call, an answer and a tool response. The tool-call
// parser and the observations (envs), the format reward (envs/reward),
// the chat format and the tiny models' vocabulary (tokenizer), the
// scripted demonstrations and the prompts (trainer) all take them from
// here, so they cannot drift apart. It imports nothing of the project.
//
// The format is Qwen2.5/Qwen3's: ChatML turns (<|im_start|>role ...
// <|im_end|>) and Hermes-style tool calls, a JSON object
// {"name": ..., "arguments": {...}} between <tool_call> tags. Llama 3
// writes its calls otherwise, as a bare JSON object with "parameters", and
// Qwen3.5 as XML between the same tags (xmlcall.go); CallSyntax (calls.go)
// names the three.
package protocol

// The tags of the agent's turns and of the tool responses it reads.
const (
	ThinkOpen         = "<think>"
	ThinkClose        = "</think>"
	ToolCallOpen      = "<tool_call>"
	ToolCallClose     = "</tool_call>"
	AnswerOpen        = "<answer>"
	AnswerClose       = "</answer>"
	ToolResponseOpen  = "<tool_response>"
	ToolResponseClose = "</tool_response>"
)

// The chat's special tokens: a turn is TurnStart + role + "\n" + content
// + TurnEnd; EndOfText pads and ends a document.
const (
	EndOfText = "<|endoftext|>"
	TurnStart = "<|im_start|>"
	TurnEnd   = "<|im_end|>"
)

// SystemPrompt is the agent's instruction, shown above the tools block.
const SystemPrompt = "Answer the question. Search for the facts you need, one search per step. " +
	"When you know the answer, reply with " + AnswerOpen + "the answer" + AnswerClose + "."

// RAGSystemPrompt is the naive-RAG baseline's instruction: the passages
// are in the question, there are no tools.
const RAGSystemPrompt = "Answer the question using the passages given. Reply with " + AnswerOpen + "the answer" + AnswerClose + "."

// SpecialTokens lists the added tokens of the word-level tokenizers
// agentrl builds for its tiny models, in id order: the chat's special
// tokens, then every tag of the protocol. A fresh slice on each call.
func SpecialTokens() []string {
	return []string{EndOfText, TurnStart, TurnEnd, ToolCallOpen, ToolCallClose,
		ToolResponseOpen, ToolResponseClose, AnswerOpen, AnswerClose, ThinkOpen, ThinkClose}
}

// Answer is the final answer as the policy writes it.
func Answer(text string) string { return AnswerOpen + text + AnswerClose }

// ToolCall is one call as the chat template renders it; arguments is the
// call's JSON object, already encoded.
func ToolCall(name, arguments string) string {
	return ToolCallOpen + "\n{\"name\": \"" + name + "\", \"arguments\": " + arguments + "}\n" + ToolCallClose
}

// A tool response as the chat template renders it in the user turn that
// follows the calls is ToolResponseBefore + the response's text +
// ToolResponseAfter.
const (
	ToolResponseBefore = "\n" + ToolResponseOpen + "\n"
	ToolResponseAfter  = "\n" + ToolResponseClose
)

// Think is a reasoning block as the chat template renders it before the
// content of an assistant turn.
func Think(reasoning string) string {
	return ThinkOpen + "\n" + reasoning + "\n" + ThinkClose + "\n\n"
}
