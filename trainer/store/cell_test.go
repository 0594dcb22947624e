package store

import "testing"

func TestCell(t *testing.T) {
	cases := []struct {
		v    any
		want string
	}{
		{nil, "NULL"},
		{[]byte{1, 2, 3}, "<blob 3 bytes>"},
		{[]byte{}, "<blob 0 bytes>"},
		{int64(-42), "-42"},
		{12345.5, "12345.5"},         // six significant digits: no exponent below a million
		{2.0 / 3.0, "0.666667"},      // rounded at the sixth digit
		{1234567.0, "1.23457e+06"},   // a million and more in exponent form
		{0.00003, "3e-05"},           // small values keep their digits
		{"two\nlines", "two\nlines"}, // text whole: callers clip it
	}
	for _, c := range cases {
		if got := Cell(c.v); got != c.want {
			t.Errorf("Cell(%#v) = %q, want %q", c.v, got, c.want)
		}
	}
}
