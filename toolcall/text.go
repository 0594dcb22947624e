// Package toolcall is the text of an agent's turns, in one place: how each
// model family writes a tool call (CallSyntax: Hermes' JSON between
// <tool_call> tags, Llama 3's bare JSON object, Qwen3.5's XML, Gemma 4's
// call:NAME{...} between <|tool_call> tokens), parsing a
// turn's calls (Parse, with a *ParseError the model is shown when they are
// malformed) and its answer (ParseAnswer), splitting a turn into its content
// and its calls as written (Split), and rendering them (ToolCall,
// LlamaToolCall, XMLToolCall, Gemma4ToolCall). Beside the calls it holds the rest of the
// protocol a policy writes and reads: the tags (<think>, <answer>,
// <tool_response>), the chat's special tokens and the system prompts.
//
// The tool environment and its observations (envs), the format reward
// (envs/reward), the chat formats and the tiny models' vocabulary
// (tokenizer), the gateway's reading of a completion, the rollouts'
// contexts and the scripted demonstrations all take them from here, so they
// cannot drift apart. It imports nothing of the project.
//
// The default format is Qwen2.5/Qwen3's: ChatML turns (<|im_start|>role ...
// <|im_end|>) and Hermes-style tool calls, a JSON object
// {"name": ..., "arguments": {...}} between <tool_call> tags. The reasoning
// of a turn (up to Qwen3's and Qwen3.5's last </think>, Gemma 4's thought
// channel) is split off (CallSyntax.ContentStart) before its calls are
// parsed.
package toolcall

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
