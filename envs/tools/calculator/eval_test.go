package calculator

import (
	"errors"
	"strings"
	"testing"
)

// Every expected value is worked out by hand from the usual precedence:
// parentheses, then ^ (right-associative, binding tighter than unary minus),
// then * and /, then + and -.
func TestEvalValues(t *testing.T) {
	cases := []struct {
		expr string
		want string // Format of the value
	}{
		{"1+2*3", "7"},
		{"(1+2)*3", "9"},
		{"2^10", "1024"},
		{"2**10", "1024"},
		{"-2^2", "-4"},   // -(2^2)
		{"(-2)^2", "4"},  // the sign is inside
		{"2^-1", "0.5"},  // a signed exponent
		{"2^3^2", "512"}, // 2^(3^2) = 2^9
		{"10/4", "2.5"},
		{"7 - 10", "-3"},
		{"--3", "3"},
		{"-(2+3)", "-5"},
		{"+5", "5"},
		{"8/2/2", "2"}, // left-associative: (8/2)/2
		{"1.5e3", "1500"},
		{"2.5E-2*4", "0.1"},
		{".5+.25", "0.75"},
		{"  3 *\t4 ", "12"},
		{"sqrt(16)", "4"},
		{"abs(-3.5)", "3.5"},
		{"min(3, 1, 2)", "1"},
		{"max(3,1,2)", "3"},
		{"round(2.5)", "3"},   // half away from zero
		{"round(-2.5)", "-3"}, // half away from zero
		{"round(3.14159, 2)", "3.14"},
		{"floor(-1.5)", "-2"},
		{"ceil(1.2)", "2"},
		{"log10(1000)", "3"},
		{"log2(8)", "3"},
		{"log(8, 2)", "3"},
		{"ln(e)", "1"},
		{"log(e^2)", "2"}, // log is natural
		{"exp(0)", "1"},
		{"2*pi", "6.28318530717959"},         // 6.283185307179586 to 15 significant digits
		{"SQRT(4)+PI", "5.14159265358979"},   // names ignore case: 2 + 3.14159265358979
		{"0.1+0.2", "0.3"},                   // 0.30000000000000004 to 15 digits
		{"1/3", "0.333333333333333"},         // 15 threes
		{"2^60", "1.15292150460685e+18"},     // 1152921504606846976 to 15 digits
		{"1e15", "1e+15"},                    // not below 1e15: no integer form
		{"123456789012.5", "123456789012.5"}, // 13 significant digits kept
		{"-0", "0"},                          // no negative zero
		{"1e-7", "1e-07"},
		{"1e-6", "0.000001"},
		{"1234567.5", "1234567.5"},
		{"-1.5e20", "-1.5e+20"},
		{strings.Repeat("(", 63) + "1" + strings.Repeat(")", 63), "1"}, // 64 levels: at the limit
	}
	for _, c := range cases {
		x, err := Eval(c.expr)
		if err != nil {
			t.Errorf("Eval(%q): %v", c.expr, err)
			continue
		}
		if got := Format(x); got != c.want {
			t.Errorf("Eval(%q) = %s, want %s", c.expr, got, c.want)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	cases := []struct {
		expr string
		pos  int
		msg  string // a fragment of the message
	}{
		{"2 + x", 5, `unknown name "x"`},
		{"2 +", 4, "got end of expression"},
		{"", 1, "got end of expression"},
		{"1/0", 2, "division by zero"},
		{"1/(2-2)", 2, "division by zero"},
		{"(1+2", 5, `expected ")"`},
		{"1+2)", 4, `unexpected ")"`},
		{"2(3)", 2, `unexpected "("`},
		{"3 # 4", 3, "unexpected character '#'"},
		{"2 × 3", 3, "unexpected character '×'"},
		{"10^400", 3, "too large"},
		{"1e400", 1, "too large"},
		{"0^-1", 2, "zero raised to a negative power"},
		{"sqrt(-1)", 1, "square root of a negative number"},
		{"log(0)", 1, "not positive"},
		{"log(8, 1)", 1, "base"},
		{"(-8)^(1/3)", 5, "not a real number"},
		{"foo(1)", 1, `unknown function "foo"`},
		{"sqrt(1, 2)", 1, "takes 1 argument(s), got 2"},
		{"min()", 5, `got ")"`},
		{"max(1 2)", 7, `expected "," or ")"`},
		{"round(1.5, 0.5)", 1, "decimal places"},
		{"1.2.3", 4, `unexpected ".3"`},
		{"2e", 2, `unexpected "e"`},
		{".", 1, "bad number"},
		{strings.Repeat("1+", 500) + "1", MaxLength + 1, "longer than the limit"}, // 1001 characters
		// Each "(" costs one level; the 65th "(" (position 65) is the first
		// beyond MaxDepth = 64.
		{strings.Repeat("(", 65) + "1" + strings.Repeat(")", 65), 65, "nested deeper"},
		{strings.Repeat("-", 70) + "1", 65, "nested deeper"},
	}
	for _, c := range cases {
		_, err := Eval(c.expr)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Eval(%q): err = %v, want an *Error", c.expr, err)
			continue
		}
		if e.Pos != c.pos || !strings.Contains(e.Msg, c.msg) {
			t.Errorf("Eval(%q): %q at %d, want %q at %d", c.expr, e.Msg, e.Pos, c.msg, c.pos)
		}
	}
}

func FuzzEval(f *testing.F) {
	for _, s := range []string{"1+2*3", "-(2^-1)", "max(1,2,3)/0", "((((", "1e400", "sqrt(2)**2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		x, err := Eval(expr)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Pos < 1 {
				t.Fatalf("Eval(%q): %v is not an *Error with a position", expr, err)
			}
			return
		}
		if s := Format(x); s == "" || strings.Contains(s, "Inf") || strings.Contains(s, "NaN") {
			t.Fatalf("Eval(%q) formatted as %q", expr, s)
		}
	})
}
