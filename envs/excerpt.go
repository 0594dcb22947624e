package envs

import "unicode/utf8"

// Excerpt shortens text that an error message quotes (a service's answer,
// a scorer's stderr) to at most n bytes, cut on a rune boundary, with
// "..." after a cut. Tools and scorers outside the process use it, so their
// messages are bounded the same way.
func Excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
