package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

// Cases for the Qwen tokenizer with ids worked out by hand: the pieces from
// the Split pattern's rules, each piece's bytes in the byte-level alphabet,
// then the merges of tokenizer.json applied lowest rank first (ranks and ids
// looked up in the file and written next to each case).
var qwenCases = []struct {
	name string
	text string
	ids  []int32
}{
	// "a" | " " | " b": \s+(?!\S) leaves the run's last space to the word.
	// "a"=64, "Ġ"=220; Ġ+b (rank 37) -> "Ġb"=293.
	{"space run before a word", "a  b", []int32{64, 220, 293}},
	// "x" | "  ": at the end of the text \s+(?!\S) takes the whole run.
	// "x"=87; Ġ+Ġ (rank 0) -> "ĠĠ"=256.
	{"trailing spaces", "x  ", []int32{87, 256}},
	// "x" | " \n" | " x": \s*[\r\n]+ stops after the run's last newline.
	// Ġ+Ċ (rank 459) -> "ĠĊ"=715; Ġ+x (rank 600) -> "Ġx"=856.
	{"space newline space", "x \n x", []int32{87, 715, 856}},
	// "x" | "\n\n" | " " | " x": "\n\n  " ends at its last newline, then
	// the two spaces before "x" split as in the first case.
	// Ċ+Ċ (rank 15) -> "ĊĊ"=271.
	{"newlines then spaces", "x\n\n  x", []int32{87, 271, 220, 856}},
	// "  \n" | " " | " x": Ġ+Ġ (rank 0), then ĠĠ+Ċ (rank 2047) -> "ĠĠĊ"=2303.
	{"leading spaces and newline", "  \n  x", []int32{2303, 220, 856}},
	// One piece: Ċ+Ċ (rank 15) -> ĊĊ, ĊĊ+Ċ (rank 1150) -> "ĊĊĊ"=1406.
	{"newline run", "\n\n\n", []int32{1406}},
	// Every digit is a piece: "0"=15 ... "4"=19; " is": i+s (rank 29),
	// Ġ+is (rank 118) -> "Ġis"=374; " " before a digit is alone (220);
	// ","=11.
	{"digits", "2024 is 1,234", []int32{17, 15, 17, 19, 374, 220, 16, 11, 17, 18, 19}},
	// "你好" | "，世界" (the full-width comma leads the letters in).
	// 你好 = e4 bd a0 e5 a5 bd = ä ½ ł å ¥ ½: ä+½ (8263), å+¥ (26839),
	// å¥+½ (52545), ä½+ł (56312), ä½ł+å¥½ (108130) -> 108386.
	// ，世界 = ï ¼ Į ä ¸ ĸ ç ķ Į: ï+¼ (1284), ä+¸ (3234), ï¼+Į (3581),
	// ç+ķ (38842), çķ+Į (96864), ä¸+ĸ (98988), ä¸ĸ+çķĮ (99233)
	// -> "ï¼Į"=3837, "ä¸ĸçķĮ"=99489.
	{"CJK", "你好，世界", []int32{108386, 3837, 99489}},
	// One piece of symbols: ð Ł ¤ ĸ ð Ł ĳ į. ð+Ł (9028) twice, ðŁ+ĳ
	// (123555), ðŁ+¤ (123574), ðŁĳ+į (144093), ðŁ¤+ĸ (146982)
	// -> "ðŁ¤ĸ"=147238, "ðŁĳį"=144349.
	{"emoji", "🤖👍", []int32{147238, 144349}},
	// "I" | "'M" | " can" | "'t": contractions match in any case.
	// "I"=40; '+M (27347) -> 27603; Ġ+c (16), a+n (20), Ġc+an (390)
	// -> "Ġcan"=646; '+t (688) -> "'t"=944.
	{"contractions", "I'M can't", []int32{40, 27603, 646, 944}},
	// An invalid byte is a one-byte piece character of the "other" class:
	// "a" | "\xffb" (it leads the letter in). 0xff is "ÿ"=187, no merge
	// ÿ+b, "b"=65.
	{"invalid byte", "a\xffb", []int32{64, 187, 65}},
	// A cut-off character: e4 bd are two invalid bytes, one "other" piece:
	// ä+½ (8263) -> "ä½"=8519.
	{"truncated character", "\xe4\xbd", []int32{8519}},
	// NFC composes e + U+0301 into é = c3 a9: Ã+© (707) -> "Ã©"=963.
	{"NFC", "e\u0301", []int32{963}},
	// Added tokens are cut out before anything else, even inside words.
	// "x"=87, "<|im_end|>"=151645, "y"=88.
	{"added token inside a word", "x<|im_end|>y", []int32{87, 151645, 88}},
}

func TestEncodeHandDerived(t *testing.T) {
	tok := qwen(t)
	for _, c := range qwenCases {
		if got := tok.Encode(c.text); !slices.Equal(got, c.ids) {
			t.Errorf("%s: Encode(%q) = %v, want %v", c.name, c.text, got, c.ids)
		}
	}
}

func TestDecodeHandDerived(t *testing.T) {
	tok := qwen(t)
	for _, c := range qwenCases {
		want := c.text
		if c.name == "NFC" {
			want = "\u00e9"
		}
		if got := tok.Decode(c.ids, false); got != want {
			t.Errorf("%s: Decode(%v) = %q, want %q", c.name, c.ids, got, want)
		}
	}
}

// qwenAdded are Qwen3's 26 added tokens, ids 151643 to 151668 in this order
// (tokenizer.json "added_tokens").
var qwenAdded = []string{
	"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
	"<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
	"<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
	"</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
	"<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
}

func TestAddedTokens(t *testing.T) {
	tok := qwen(t)
	var want []int32
	for i, s := range qwenAdded {
		id := int32(151643 + i)
		want = append(want, id)
		if got := tok.Encode(s); !slices.Equal(got, []int32{id}) {
			t.Errorf("Encode(%q) = %v, want [%d]", s, got, id)
		}
		if got, ok := tok.TokenID(s); !ok || got != id {
			t.Errorf("TokenID(%q) = %d, %v; want %d", s, got, ok, id)
		}
		if got := tok.IDToken(id); got != s {
			t.Errorf("IDToken(%d) = %q, want %q", id, got, s)
		}
	}
	all := strings.Join(qwenAdded, "")
	if got := tok.Encode(all); !slices.Equal(got, want) {
		t.Errorf("Encode(all added tokens) = %v, want %v", got, want)
	}
	if got := tok.Decode(want, false); got != all {
		t.Errorf("Decode(all) = %q", got)
	}
	// Only the first 14 (up to <|video_pad|>) are special; Qwen's tool and
	// think tags are plain added tokens and stay.
	wantSkip := strings.Join(qwenAdded[14:], "")
	if got := tok.Decode(want, true); got != wantSkip {
		t.Errorf("Decode(all, skipSpecial) = %q, want %q", got, wantSkip)
	}
}

func TestQwenAccessors(t *testing.T) {
	tok := qwen(t)
	// 151643 vocabulary entries (ids 0..151642) and 26 added tokens.
	if got := tok.VocabSize(); got != 151669 {
		t.Errorf("VocabSize = %d, want 151669", got)
	}
	if tok.EOS() != 151645 || tok.PAD() != 151643 {
		t.Errorf("EOS, PAD = %d, %d; want 151645 (<|im_end|>), 151643 (<|endoftext|>)", tok.EOS(), tok.PAD())
	}
	// "Ġhello" is " hello" in the byte-level alphabet.
	if id, ok := tok.TokenID("Ġhello"); !ok || tok.Decode([]int32{id}, false) != " hello" {
		t.Errorf("TokenID(Ġhello) = %d, %v", id, ok)
	}
	if _, ok := tok.TokenID("no such token"); ok {
		t.Error("TokenID found a token that does not exist")
	}
	if tok.IDToken(-1) != "" || tok.IDToken(1<<30) != "" {
		t.Error("IDToken of an unknown id is not empty")
	}
	// Unknown ids are skipped by Decode.
	if got := tok.Decode([]int32{9707, -5, 1 << 30}, false); got != "Hello" {
		t.Errorf("Decode with unknown ids = %q", got)
	}
}
