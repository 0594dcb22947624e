// Package jsonpos turns byte offsets in a JSON document into line numbers,
// so that loaders can name the line of a broken record.
package jsonpos

import (
	"bytes"
	"encoding/json"
	"errors"
)

// ErrLine is the line of a decoding error: where the syntax error is when
// err is one, else where the value being decoded starts (offset at).
func ErrLine(data []byte, at int64, err error) int {
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset > 0 {
		return 1 + bytes.Count(data[:min(int(se.Offset)-1, len(data))], []byte("\n"))
	}
	return LineAt(data, at)
}

// LineAt returns the 1-based line of the first byte at or after off that is
// not white space, a comma or a colon: where the next JSON value starts.
func LineAt(data []byte, off int64) int {
	i := int(off)
	for i < len(data) && bytes.IndexByte([]byte(" \t\r\n,:"), data[i]) >= 0 {
		i++
	}
	return 1 + bytes.Count(data[:min(i, len(data))], []byte("\n"))
}
