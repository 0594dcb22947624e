package tokenizer

import "unicode/utf8"

// The byte-level alphabet of GPT-2: every byte is shown as a printable rune.
// Printable Latin-1 bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) stand for
// themselves; the 68 others (controls, space, 0x7F..0xA0, 0xAD) are mapped in
// increasing order to U+0100, U+0101, ... U+0143.
var (
	byteRune   [256]rune    // byte -> its rune in the alphabet
	byteString [256]string  // byte -> UTF-8 text of that rune
	runeByte   [0x144]int16 // rune -> byte, -1 when the rune is not in the alphabet
)

func init() {
	for i := range runeByte {
		runeByte[i] = -1
	}
	next := rune(0x100)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		r := rune(b)
		if !printable {
			r = next
			next++
		}
		byteRune[b] = r
		byteString[b] = string(r)
		runeByte[r] = int16(b)
	}
}

// toByteLevel returns s with every byte replaced by its rune in the alphabet.
func toByteLevel(s string) string {
	buf := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		buf = append(buf, byteString[s[i]]...)
	}
	return string(buf)
}

// appendFromByteLevel appends the bytes that token stands for. As in the
// reference decoder, a token containing any rune outside the alphabet (an
// added token such as "<|im end|>" with a space, say) is appended verbatim.
func appendFromByteLevel(dst []byte, token string) []byte {
	n := len(dst)
	for _, r := range token {
		if r >= rune(len(runeByte)) || runeByte[r] < 0 {
			return append(dst[:n], token...)
		}
		dst = append(dst, byte(runeByte[r]))
	}
	return dst
}

// byteLevelLen is the number of bytes a byte-level token stands for: one per
// rune.
func byteLevelLen(token string) int {
	return utf8.RuneCountInString(token)
}
