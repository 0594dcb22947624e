// Package calculator is the "calculator" tool: it evaluates arithmetic
// expressions with its own recursive-descent evaluator (no shell, no eval).
package calculator

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Error is a problem with an expression at a character position (1-based).
type Error struct {
	Pos int
	Msg string
}

// Error returns the message and the position.
func (e *Error) Error() string { return fmt.Sprintf("%s at position %d", e.Msg, e.Pos) }

// tokenKind is the kind of a lexical token.
type tokenKind int

const (
	tokNumber tokenKind = iota
	tokName             // a function or constant name, lowercased
	tokOp               // + - * / ^ ** ( ) ,
	tokEnd              // end of input
)

// token is one lexical token and the position of its first character.
type token struct {
	kind tokenKind
	text string
	num  float64
	pos  int
}

// describe names a token for error messages.
func (t token) describe() string {
	if t.kind == tokEnd {
		return "end of expression"
	}
	return strconv.Quote(t.text)
}

// lex splits an expression into tokens.
func lex(expr string) ([]token, error) {
	rs := []rune(expr)
	var toks []token
	for i := 0; i < len(rs); {
		r, pos := rs[i], i+1
		switch {
		case unicode.IsSpace(r):
			i++
		case r >= '0' && r <= '9' || r == '.':
			end := scanNumber(rs, i)
			text := string(rs[i:end])
			x, err := strconv.ParseFloat(text, 64)
			if math.IsInf(x, 0) {
				return nil, &Error{pos, fmt.Sprintf("number %s is too large", text)}
			}
			if err != nil {
				return nil, &Error{pos, fmt.Sprintf("bad number %q", text)}
			}
			toks = append(toks, token{kind: tokNumber, text: text, num: x, pos: pos})
			i = end
		case unicode.IsLetter(r) || r == '_':
			end := i
			for end < len(rs) && (unicode.IsLetter(rs[end]) || unicode.IsDigit(rs[end]) || rs[end] == '_') {
				end++
			}
			toks = append(toks, token{kind: tokName, text: strings.ToLower(string(rs[i:end])), pos: pos})
			i = end
		case r == '*' && i+1 < len(rs) && rs[i+1] == '*':
			toks = append(toks, token{kind: tokOp, text: "^", pos: pos})
			i += 2
		case strings.ContainsRune("+-*/^(),", r):
			toks = append(toks, token{kind: tokOp, text: string(r), pos: pos})
			i++
		default:
			return nil, &Error{pos, fmt.Sprintf("unexpected character %q", r)}
		}
	}
	return append(toks, token{kind: tokEnd, pos: len(rs) + 1}), nil
}

// scanNumber returns the end of the number starting at rs[i]: digits with
// at most one decimal point, then an optional exponent (e or E, an optional
// sign, digits). An e not followed by digits is not part of the number.
func scanNumber(rs []rune, i int) int {
	digits := func(j int) int {
		for j < len(rs) && rs[j] >= '0' && rs[j] <= '9' {
			j++
		}
		return j
	}
	j := digits(i)
	if j < len(rs) && rs[j] == '.' {
		j = digits(j + 1)
	}
	if j < len(rs) && (rs[j] == 'e' || rs[j] == 'E') {
		k := j + 1
		if k < len(rs) && (rs[k] == '+' || rs[k] == '-') {
			k++
		}
		if e := digits(k); e > k {
			j = e
		}
	}
	return j
}
