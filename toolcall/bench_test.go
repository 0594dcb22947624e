package toolcall

import "testing"

func BenchmarkParseHermes(b *testing.B) {
	text := "<think>I need the birthplace first.</think>\n" + ToolCall("search", `{"query": "Gustave Eiffel birthplace", "k": 5}`)
	for b.Loop() {
		if _, err := ParseHermes(text); err != nil {
			b.Fatal(err)
		}
	}
}
