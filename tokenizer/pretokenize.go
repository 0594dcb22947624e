package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The regular expressions of the Split pre-tokenizers this package knows. Go's
// regexp has no lookahead, so each is implemented by a hand-written scanner
// that follows the leftmost-first alternation and backtracking of the
// original exactly.
const (
	// qwenPattern is Qwen2/2.5/3's pattern: every digit is a piece of its own.
	qwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// llama3Pattern is Llama-3's: the same with runs of up to three digits.
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// gpt2Pattern is the one the ByteLevel pre-tokenizer uses with use_regex.
	gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// splitter cuts a normalized segment into pre-tokens. next returns the end of
// the piece that starts at i (i < len(s)); pieces cover s without gaps, as
// the patterns above match every character (Split's "Isolated" behaviour).
type splitter interface {
	next(s string, i int) int
}

// splitterFor returns the scanner for a known pattern.
func splitterFor(pattern string) (splitter, bool) {
	switch pattern {
	case qwenPattern:
		return chatSplitter{maxDigits: 1}, true
	case llama3Pattern:
		return chatSplitter{maxDigits: 3}, true
	case gpt2Pattern:
		return gpt2Splitter{}, true
	}
	return nil, false
}

// wholeSplitter keeps a segment as a single piece (no pre-tokenizer).
type wholeSplitter struct{}

func (wholeSplitter) next(s string, _ int) int { return len(s) }

// Character classes of the patterns, in Unicode terms: \p{L} letters, \p{N}
// numbers, \s White_Space (which is what unicode.IsSpace tests). An invalid
// UTF-8 byte decodes as utf8.RuneError (U+FFFD, a symbol), so it falls in the
// "anything else" class, one byte wide.
const (
	classOther = iota
	classLetter
	classNumber
	classSpace
)

var asciiClass [utf8.RuneSelf]uint8

func init() {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		asciiClass[r] = classOfSlow(r)
	}
}

func classOfSlow(r rune) uint8 {
	switch {
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classNumber
	case unicode.IsSpace(r):
		return classSpace
	}
	return classOther
}

// runeAt decodes the rune at i with its class and width.
func runeAt(s string, i int) (r rune, class uint8, width int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), asciiClass[c], 1
	}
	r, width = utf8.DecodeRuneInString(s[i:])
	return r, classOfSlow(r), width
}

// skipClass returns the end of the run of runes of class c starting at i,
// stopping after at most max runes when max > 0.
func skipClass(s string, i int, c uint8, max int) int {
	for n := 0; i < len(s) && (max <= 0 || n < max); n++ {
		_, class, w := runeAt(s, i)
		if class != c {
			break
		}
		i += w
	}
	return i
}

// contraction returns the length of a match of 's|'t|'re|'ve|'m|'ll|'d at i
// (s[i] is the apostrophe), or 0. foldCase applies Unicode simple case
// folding as (?i:...) does: S for s and also U+017F LONG S, and so on.
func contraction(s string, i int, foldCase bool) int {
	lower := func(j int) (rune, int) {
		if j >= len(s) {
			return 0, 0
		}
		r, w := utf8.DecodeRuneInString(s[j:])
		if foldCase {
			switch r {
			case 'S', 'T', 'R', 'E', 'V', 'M', 'L', 'D':
				r += 'a' - 'A'
			case 'ſ':
				r = 's'
			}
		}
		return r, w
	}
	j := i + 1
	r1, w1 := lower(j)
	switch r1 {
	case 's', 't', 'm', 'd':
		return 1 + w1
	case 'r', 'v':
		if r2, w2 := lower(j + w1); r2 == 'e' {
			return 1 + w1 + w2
		}
	case 'l':
		if r2, w2 := lower(j + w1); r2 == 'l' {
			return 1 + w1 + w2
		}
	}
	return 0
}

// chatSplitter scans Qwen's pattern (maxDigits 1) and Llama-3's (maxDigits 3):
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,maxDigits}
//	| ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
type chatSplitter struct{ maxDigits int }

func (p chatSplitter) next(s string, i int) int {
	r, class, w := runeAt(s, i)
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if r == '\'' {
		if n := contraction(s, i, true); n > 0 {
			return i + n
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+ : one optional lead-in rune, then letters.
	if class == classLetter {
		return skipClass(s, i, classLetter, 0)
	}
	if class != classNumber && r != '\r' && r != '\n' && i+w < len(s) {
		if _, c2, _ := runeAt(s, i+w); c2 == classLetter {
			return skipClass(s, i+w, classLetter, 0)
		}
	}
	// \p{N}{1,maxDigits}
	if class == classNumber {
		return skipClass(s, i, classNumber, p.maxDigits)
	}
	// " ?[^\s\p{L}\p{N}]+[\r\n]*"
	j := i
	if r == ' ' {
		j = i + 1
	}
	if k := skipClass(s, j, classOther, 0); k > j {
		for k < len(s) && (s[k] == '\r' || s[k] == '\n') {
			k++
		}
		return k
	}
	// Only whitespace is left: r is White_Space.
	return whitespace(s, i, true)
}

// whitespace matches, at a whitespace rune i, the alternatives
// \s*[\r\n]+ (when withNewlines) | \s+(?!\S) | \s+ .
func whitespace(s string, i int, withNewlines bool) int {
	end := i       // end of the whitespace run
	lastStart := i // start of the run's last rune
	afterNewline := -1
	for end < len(s) {
		r, class, w := runeAt(s, end)
		if class != classSpace {
			break
		}
		lastStart = end
		end += w
		if r == '\r' || r == '\n' {
			afterNewline = end
		}
	}
	// \s*[\r\n]+ : \s* backtracks to the run's last newline, [\r\n]+ takes it.
	if withNewlines && afterNewline >= 0 {
		return afterNewline
	}
	// \s+(?!\S) : the whole run at the end of the text; otherwise all but its
	// last rune, so that the next piece may start with that rune.
	if end == len(s) {
		return end
	}
	if lastStart > i {
		return lastStart
	}
	// \s+ : a single whitespace rune before a non-space.
	return end
}

// gpt2Splitter scans GPT-2's pattern:
//
//	's|'t|'re|'ve|'m|'ll|'d | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+(?!\S) | \s+
type gpt2Splitter struct{}

func (gpt2Splitter) next(s string, i int) int {
	r, class, _ := runeAt(s, i)
	if r == '\'' {
		if n := contraction(s, i, false); n > 0 {
			return i + n
		}
	}
	j := i
	if r == ' ' && i+1 < len(s) {
		if _, c2, _ := runeAt(s, i+1); c2 != classSpace {
			j, class = i+1, c2
		}
	}
	if class != classSpace {
		return skipClass(s, j, class, 0)
	}
	return whitespace(s, i, false)
}
