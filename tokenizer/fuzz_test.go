package tokenizer

import (
	"regexp"
	"slices"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The fuzz targets run, one at a time, as
//
//	go test -run XXX -fuzz '^FuzzSplitters$' -fuzztime 60s -fuzzminimizetime 3s -parallel 1 ./tokenizer
//
// (a short minimize time: minimizing each new interesting input otherwise
// takes up to a minute). The inputs they found are kept in testdata/fuzz and
// run with every go test.
var fuzzSeeds = []string{
	"", "Hello, world!", "a  b", "x  ", " \n \n  x", "\r\n\t\u3000\u0085\u00a0", "I'M can't 'ſ", "2024½Ⅻ",
	"你好，世界！", "🤖👍🏽👨‍👩‍👧", "e\u0301 \u1100\u1161", "<|im_start|>user\nhi<|im_end|>", "<tool_call>\n{}\n</tool_call>",
	"|>\u0338", "\xff\xfe\x80", "\xe4\xbd", "a\x00b", "   trailing   ",
}

// whitespace is \s as the reference's regex engine reads it (Unicode
// White_Space), spelled out because Go's \s is ASCII only.
const whitespaceClass = `\t\n\v\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`

// regexOracle splits text with Go's regexp, which picks the match a
// backtracking engine would (leftmost-first, greedy), trying the pattern's
// alternatives in order at each position. Only \s+(?!\S), which Go cannot
// write, is done by hand: the whitespace run, less its last rune unless the
// run ends the text.
type regexOracle struct {
	alts []*regexp.Regexp // the alternatives before \s+(?!\S), anchored
	ws   *regexp.Regexp
}

func newRegexOracle(alts ...string) regexOracle {
	o := regexOracle{ws: regexp.MustCompile(`^[` + whitespaceClass + `]+`)}
	for _, a := range alts {
		o.alts = append(o.alts, regexp.MustCompile(`^(?:`+a+`)`))
	}
	return o
}

func (o regexOracle) split(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		n := 0
		for _, re := range o.alts {
			if m := re.FindStringIndex(text[i:]); m != nil && m[1] > 0 {
				n = m[1]
				break
			}
		}
		if n == 0 {
			run := o.ws.FindString(text[i:])
			n = len(run)
			if _, w := utf8.DecodeLastRuneInString(run); i+n < len(text) && w < len(run) {
				n -= w
			}
		}
		if n == 0 {
			return append(out, "<oracle stuck>")
		}
		out = append(out, text[i:i+n])
		i += n
	}
	return out
}

var (
	qwenOracle = newRegexOracle(
		`(?i:'s|'t|'re|'ve|'m|'ll|'d)`, `[^\r\n\pL\pN]?\pL+`, `\pN`,
		` ?[^`+whitespaceClass+`\pL\pN]+[\r\n]*`, `[`+whitespaceClass+`]*[\r\n]+`)
	llama3Oracle = newRegexOracle(
		`(?i:'s|'t|'re|'ve|'m|'ll|'d)`, `[^\r\n\pL\pN]?\pL+`, `\pN{1,3}`,
		` ?[^`+whitespaceClass+`\pL\pN]+[\r\n]*`, `[`+whitespaceClass+`]*[\r\n]+`)
	gpt2Oracle = newRegexOracle(
		`'s|'t|'re|'ve|'m|'ll|'d`, ` ?\pL+`, ` ?\pN+`, ` ?[^`+whitespaceClass+`\pL\pN]+`)
)

// FuzzSplitters compares the hand-written scanners with the regex oracle.
func FuzzSplitters(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	cases := []struct {
		pattern string
		oracle  regexOracle
	}{{qwenPattern, qwenOracle}, {llama3Pattern, llama3Oracle}, {gpt2Pattern, gpt2Oracle}}
	f.Fuzz(func(t *testing.T, text string) {
		// Go's regexp clears a table as long as the input on every call, so
		// the oracle is quadratic: keep inputs short.
		if len(text) > 512 {
			return
		}
		for _, c := range cases {
			s, _ := splitterFor(c.pattern)
			if got, want := pieces(s, text), c.oracle.split(text); !slices.Equal(got, want) {
				t.Fatalf("%.20s... on %q:\n got %q\nwant %q", c.pattern, text, got, want)
			}
		}
	})
}

// naiveMerge is BPE as first described: merge the lowest-ranked adjacent
// pair (the leftmost of equals) until none is left. O(n^2), for checking.
func naiveMerge(m *bpe, piece []byte) []int32 {
	ids := make([]int32, len(piece))
	for i, c := range piece {
		ids[i] = m.byteIDs[c]
	}
	for {
		best, at := merge{rank: -1}, -1
		for i := 0; i+1 < len(ids); i++ {
			if mg, ok := m.merges[pairKey(ids[i], ids[i+1])]; ok && (at < 0 || mg.rank < best.rank) {
				best, at = mg, i
			}
		}
		if at < 0 {
			return ids
		}
		ids = append(ids[:at+1], ids[at+2:]...)
		ids[at] = best.id
	}
}

// FuzzBPEMerge checks the heap-based merge against naiveMerge, and that the
// tokens spell the piece's bytes, on the Qwen vocabulary.
func FuzzBPEMerge(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, piece []byte) {
		if len(piece) == 0 || len(piece) > 256 {
			return
		}
		tok := qwen(t)
		got := tok.bpe.merge(nil, string(piece))
		if want := naiveMerge(tok.bpe, piece); !slices.Equal(got, want) {
			t.Fatalf("merge(%q) = %v, naive %v", piece, got, want)
		}
		var spelled []byte
		for _, id := range got {
			spelled = appendFromByteLevel(spelled, tok.tokens[id])
		}
		if string(spelled) != string(piece) {
			t.Fatalf("tokens of %q spell %q", piece, spelled)
		}
	})
}

// roundTrip checks Decode(Encode(s)): the text back, up to the NFC
// normalization the tokenizer applies (and byte for byte when s is NFC).
func roundTrip(t *testing.T, s string) {
	tok := qwen(t)
	out := tok.Decode(tok.Encode(s), false)
	if norm.NFC.String(out) != norm.NFC.String(s) {
		t.Fatalf("Decode(Encode(%q)) = %q", s, out)
	}
	if norm.NFC.IsNormalString(s) && out != s {
		t.Fatalf("NFC text %q came back as %q", s, out)
	}
}

// FuzzRoundTripText: any valid UTF-8 text round-trips.
func FuzzRoundTripText(f *testing.F) {
	for _, s := range fuzzSeeds {
		if utf8.ValidString(s) {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		if utf8.ValidString(s) {
			roundTrip(t, s)
		}
	})
}

// FuzzRoundTripBytes: any byte string round-trips through the byte-level
// alphabet, invalid UTF-8 included.
func FuzzRoundTripBytes(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, string(b))
	})
}
