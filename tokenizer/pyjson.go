package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// pyJSON re-writes a JSON value the way the chat template's `tojson` filter
// prints it in transformers: Python's json.dumps(value, ensure_ascii=False)
// on the value json.loads read. That is: ", " and ": " separators, keys in
// their order (a repeated key keeps its first place and its last value),
// non-ASCII text as is, integers as written (-0 as 0), other numbers as
// Python's repr of the float (1e5 -> 100000.0, 1e16 -> 1e+16).
func pyJSON(raw []byte) (string, error) { return pyJSONIndent(raw, 0) }

// pyJSONIndent is pyJSON with json.dumps's indent: with indent > 0 every
// member and element is on its own line, indented by that many spaces a
// level, separated by "," (not ", "); empty arrays and objects stay [] and {}.
func pyJSONIndent(raw []byte, indent int) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := readPyValue(dec)
	if err != nil {
		return "", err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("unexpected data after the JSON value")
	}
	w := pyWriter{indent: indent}
	if err := w.value(v, 0); err != nil {
		return "", err
	}
	return w.b.String(), nil
}

// pyMember is one key of an object, in order.
type pyMember struct {
	key   string
	value any
}

// readPyValue reads one value: nil, bool, string, json.Number, []any or
// []pyMember (an object).
func readPyValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('['):
		list := []any{}
		for dec.More() {
			v, err := readPyValue(dec)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := dec.Token()
		return list, err
	case json.Delim('{'):
		obj := []pyMember{}
		index := map[string]int{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key := k.(string)
			v, err := readPyValue(dec)
			if err != nil {
				return nil, err
			}
			if i, ok := index[key]; ok {
				obj[i].value = v
				continue
			}
			index[key] = len(obj)
			obj = append(obj, pyMember{key, v})
		}
		_, err := dec.Token()
		return obj, err
	}
	return tok, nil
}

// pyWriter prints values read by readPyValue as json.dumps does.
type pyWriter struct {
	b      strings.Builder
	indent int
}

// value writes v at nesting depth depth.
func (w *pyWriter) value(v any, depth int) error {
	b := &w.b
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		writePyString(b, v)
	case json.Number:
		s, err := pyNumber(string(v))
		if err != nil {
			return err
		}
		b.WriteString(s)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			w.separate(i, depth+1)
			if err := w.value(e, depth+1); err != nil {
				return err
			}
		}
		w.close(len(v), depth, ']')
	case []pyMember:
		b.WriteByte('{')
		for i, m := range v {
			w.separate(i, depth+1)
			writePyString(b, m.key)
			b.WriteString(": ")
			if err := w.value(m.value, depth+1); err != nil {
				return err
			}
		}
		w.close(len(v), depth, '}')
	default:
		return fmt.Errorf("unexpected JSON token %v", v)
	}
	return nil
}

// separate starts the i-th item of a container whose items are at depth.
func (w *pyWriter) separate(i, depth int) {
	switch {
	case w.indent > 0 && i > 0:
		w.b.WriteString(",\n" + strings.Repeat(" ", w.indent*depth))
	case w.indent > 0:
		w.b.WriteString("\n" + strings.Repeat(" ", w.indent*depth))
	case i > 0:
		w.b.WriteString(", ")
	}
}

// close ends a container of n items at depth.
func (w *pyWriter) close(n, depth int, c byte) {
	if w.indent > 0 && n > 0 {
		w.b.WriteString("\n" + strings.Repeat(" ", w.indent*depth))
	}
	w.b.WriteByte(c)
}

// writePyString quotes s as json.dumps does with ensure_ascii=False.
func writePyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// pyNumber prints a JSON number as Python prints what json.loads made of it.
func pyNumber(s string) (string, error) {
	if !strings.ContainsAny(s, ".eE") {
		if strings.TrimLeft(s, "-0") == "" {
			return "0", nil
		}
		return s, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return "", fmt.Errorf("number %s: %w", s, err)
	}
	return pyFloatRepr(f), nil
}

// pyFloatRepr is Python's repr(float): the shortest digits that read back
// to f, in fixed notation when the decimal exponent is in [-4, 16), else in
// scientific notation with a signed exponent of at least two digits; json
// writes the infinities as Infinity and -Infinity.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	sign := ""
	if math.Signbit(f) {
		sign, f = "-", -f
	}
	// Shortest digits d1 d2 ... dn with f = 0.d1...dn x 10^point.
	e := strconv.FormatFloat(f, 'e', -1, 64) // "d.ddde±XX"
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	point := x + 1
	if f == 0 {
		return sign + "0.0"
	}
	if point > -4 && point <= 16 {
		switch {
		case point <= 0:
			return sign + "0." + strings.Repeat("0", -point) + digits
		case point >= len(digits):
			return sign + digits + strings.Repeat("0", point-len(digits)) + ".0"
		default:
			return sign + digits[:point] + "." + digits[point:]
		}
	}
	m := digits[:1]
	if len(digits) > 1 {
		m += "." + digits[1:]
	}
	expSign := "+"
	if x < 0 {
		expSign, x = "-", -x
	}
	return fmt.Sprintf("%s%se%s%02d", sign, m, expSign, x)
}
