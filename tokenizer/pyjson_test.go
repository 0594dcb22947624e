package tokenizer

import (
	"math"
	"testing"
)

// Expected strings are what Python's json.dumps(json.loads(x),
// ensure_ascii=False) prints, worked out from Python's rules.
func TestPyJSON(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a":1,"b":[true,false,null]}`, `{"a": 1, "b": [true, false, null]}`},
		// Key order is kept; a repeated key keeps its first place and last value.
		{`{"z":1,"a":2,"z":3}`, `{"z": 3, "a": 2}`},
		// Non-ASCII as is; control characters escaped, \u00XX in lower case.
		{`"é\u00e9 \/ \u001f \b\f\n\r\t \" \\"`, `"éé / \u001f \b\f\n\r\t \" \\"`},
		// Integers as written, -0 is 0; floats as repr(float).
		{`[-0, 12345678901234567890, 1.0, 1.50, 1e5, 1E+2, 1e16, 1e15, 0.0001, 0.00001, -0.0, 1.5e-7, 1e400, -1e400]`,
			`[0, 12345678901234567890, 1.0, 1.5, 100000.0, 100.0, 1e+16, 1000000000000000.0, 0.0001, 1e-05, -0.0, 1.5e-07, Infinity, -Infinity]`},
		{`{}`, `{}`},
		{` [ ] `, `[]`},
	}
	for _, c := range cases {
		got, err := pyJSON([]byte(c.in))
		if err != nil {
			t.Errorf("pyJSON(%s): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("pyJSON(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{``, `{`, `{"a":}`, `[1] 2`, `nul`} {
		if _, err := pyJSON([]byte(bad)); err == nil {
			t.Errorf("pyJSON(%q) gave no error", bad)
		}
	}
}

func TestPyFloatRepr(t *testing.T) {
	cases := []struct {
		f    float64
		want string
	}{
		{0.1, "0.1"}, {1.0 / 3, "0.3333333333333333"}, {123.456, "123.456"},
		{1e22, "1e+22"}, {1.2345678901234568e17, "1.2345678901234568e+17"},
		{5e-324, "5e-324"}, {math.MaxFloat64, "1.7976931348623157e+308"},
		{-2.5, "-2.5"}, {0, "0.0"}, {9999999999999998, "9999999999999998.0"},
	}
	for _, c := range cases {
		if got := pyFloatRepr(c.f); got != c.want {
			t.Errorf("pyFloatRepr(%v) = %s, want %s", c.f, got, c.want)
		}
	}
}
