package calculator

import (
	"fmt"
	"math"
	"unicode/utf8"
)

// Limits on what Eval accepts.
const (
	MaxLength = 1000 // characters of an expression
	MaxDepth  = 64   // nesting of parentheses, function calls and unary signs
)

// Eval evaluates an arithmetic expression:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/") unary }
//	unary   = ("-" | "+") unary | power
//	power   = primary [ ("^" | "**") unary ]      (right-associative)
//	primary = number | name | name "(" expr { "," expr } ")" | "(" expr ")"
//
// so -2^2 = -4, 2^-1 = 0.5 and 2^3^2 = 512. Numbers are decimals with an
// optional exponent (1.5e-3); names are the constants pi and e and the
// functions of the functions table, without regard to case. Every error is
// an *Error with the position of the offending token: bad syntax, unknown
// names, division by zero, results out of range or not real, an expression
// longer than MaxLength or nested deeper than MaxDepth.
func Eval(expr string) (float64, error) {
	if n := utf8.RuneCountInString(expr); n > MaxLength {
		return 0, &Error{MaxLength + 1, fmt.Sprintf("expression of %d characters is longer than the limit of %d", n, MaxLength)}
	}
	toks, err := lex(expr)
	if err != nil {
		return 0, err
	}
	p := &parser{toks: toks}
	x, err := p.expr()
	if err != nil {
		return 0, err
	}
	if t := p.peek(); t.kind != tokEnd {
		return 0, &Error{t.pos, fmt.Sprintf("unexpected %s", t.describe())}
	}
	return x, nil
}

// parser evaluates while it parses.
type parser struct {
	toks  []token
	i     int
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEnd {
		p.i++
	}
	return t
}

// isOp reports whether the next token is the operator op.
func (p *parser) isOp(op string) bool {
	t := p.peek()
	return t.kind == tokOp && t.text == op
}

func (p *parser) expr() (float64, error) {
	x, err := p.term()
	for err == nil && (p.isOp("+") || p.isOp("-")) {
		op := p.next()
		var y float64
		if y, err = p.term(); err == nil {
			if op.text == "+" {
				x, err = checked(x+y, op.pos)
			} else {
				x, err = checked(x-y, op.pos)
			}
		}
	}
	return x, err
}

func (p *parser) term() (float64, error) {
	x, err := p.unary()
	for err == nil && (p.isOp("*") || p.isOp("/")) {
		op := p.next()
		var y float64
		if y, err = p.unary(); err != nil {
			break
		}
		switch {
		case op.text == "*":
			x, err = checked(x*y, op.pos)
		case y == 0:
			err = &Error{op.pos, "division by zero"}
		default:
			x, err = checked(x/y, op.pos)
		}
	}
	return x, err
}

func (p *parser) unary() (float64, error) {
	if p.depth++; p.depth > MaxDepth {
		return 0, &Error{p.peek().pos, fmt.Sprintf("expression nested deeper than %d levels", MaxDepth)}
	}
	defer func() { p.depth-- }()
	switch {
	case p.isOp("-"):
		p.next()
		x, err := p.unary()
		return -x, err
	case p.isOp("+"):
		p.next()
		return p.unary()
	}
	return p.power()
}

func (p *parser) power() (float64, error) {
	x, err := p.primary()
	if err != nil || !p.isOp("^") {
		return x, err
	}
	op := p.next()
	y, err := p.unary()
	if err != nil {
		return 0, err
	}
	if x == 0 && y < 0 {
		return 0, &Error{op.pos, "zero raised to a negative power"}
	}
	return checked(math.Pow(x, y), op.pos)
}

func (p *parser) primary() (float64, error) {
	t := p.next()
	switch {
	case t.kind == tokNumber:
		return t.num, nil
	case t.kind == tokName:
		if !p.isOp("(") {
			if c, ok := constants[t.text]; ok {
				return c, nil
			}
			return 0, &Error{t.pos, fmt.Sprintf("unknown name %q (constants: pi, e; functions: %s)", t.text, functionNames())}
		}
		return p.call(t)
	case t.kind == tokOp && t.text == "(":
		x, err := p.expr()
		if err != nil {
			return 0, err
		}
		if !p.isOp(")") {
			return 0, &Error{p.peek().pos, fmt.Sprintf("expected \")\" to close the \"(\" at position %d, got %s", t.pos, p.peek().describe())}
		}
		p.next()
		return x, nil
	}
	return 0, &Error{t.pos, fmt.Sprintf("expected a number, a name or \"(\", got %s", t.describe())}
}

// call evaluates name(args...); the next token is "(".
func (p *parser) call(name token) (float64, error) {
	f, ok := functions[name.text]
	if !ok {
		return 0, &Error{name.pos, fmt.Sprintf("unknown function %q (functions: %s)", name.text, functionNames())}
	}
	open := p.next()
	var args []float64
	for {
		x, err := p.expr()
		if err != nil {
			return 0, err
		}
		args = append(args, x)
		if p.isOp(",") {
			p.next()
			continue
		}
		if !p.isOp(")") {
			return 0, &Error{p.peek().pos, fmt.Sprintf("expected \",\" or \")\" to close the \"(\" at position %d, got %s", open.pos, p.peek().describe())}
		}
		p.next()
		break
	}
	if len(args) < f.minArgs || f.maxArgs >= 0 && len(args) > f.maxArgs {
		return 0, &Error{name.pos, fmt.Sprintf("%s takes %s, got %d", name.text, f.arity(), len(args))}
	}
	x, err := f.eval(args)
	if err != nil {
		return 0, &Error{name.pos, fmt.Sprintf("%s: %v", name.text, err)}
	}
	return checked(x, name.pos)
}

// checked refuses results that are infinite or not a number.
func checked(x float64, pos int) (float64, error) {
	switch {
	case math.IsInf(x, 0):
		return 0, &Error{pos, "result is too large"}
	case math.IsNaN(x):
		return 0, &Error{pos, "result is not a real number"}
	}
	return x, nil
}
