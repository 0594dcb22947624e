package toolcall

import "strings"

// The tags of a tool call in Qwen3.5's XML syntax (QwenXML), inside the
// <tool_call> tags.
const (
	FunctionOpen   = "<function="
	FunctionClose  = "</function>"
	ParameterOpen  = "<parameter="
	ParameterClose = "</parameter>"
)

// XMLParam is one parameter of a call in the XML syntax: its name and its
// value as the chat template writes it (a string as it is, a number or a
// boolean as Python prints it, an object or a list through tojson).
type XMLParam struct {
	Key, Value string
}

// XMLToolCall is one call as Qwen3.5's chat template renders it:
//
//	<tool_call>
//	<function=NAME>
//	<parameter=KEY>
//	VALUE
//	</parameter>
//	</function>
//	</tool_call>
func XMLToolCall(name string, params []XMLParam) string {
	var b strings.Builder
	b.WriteString(ToolCallOpen + "\n" + FunctionOpen + name + ">\n")
	for _, p := range params {
		b.WriteString(ParameterOpen + p.Key + ">\n" + p.Value + "\n" + ParameterClose + "\n")
	}
	b.WriteString(FunctionClose + "\n" + ToolCallClose)
	return b.String()
}
