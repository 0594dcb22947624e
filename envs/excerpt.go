package envs

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Excerpt shortens text that an error message quotes (a service's answer,
// a scorer's stderr) to at most n bytes of s, cut on a rune boundary, with
// "..." after a cut, and makes it Printable. Tools and scorers outside the
// process use it, so their messages are bounded and escaped the same way.
func Excerpt(s string, n int) string {
	if len(s) <= n {
		return Printable(s)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return Printable(s[:cut]) + "..."
}

// Printable escapes the control characters of text from outside the
// process (a server's stderr, a scorer's message) before it reaches a
// terminal or a log: an ANSI escape sequence becomes the literal text
// \x1b[...; C1 controls and bytes that are not UTF-8 are escaped too.
// Newlines and tabs are kept.
func Printable(s string) string {
	if !strings.ContainsFunc(s, unprintable) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unprintable(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unprintable(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unprintable reports a C0 control other than newline and tab, DEL, or
// a C1 control.
func unprintable(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
}
