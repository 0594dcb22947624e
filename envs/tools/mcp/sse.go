package mcp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// readEvents reads a server-sent event stream and passes the data of each
// event to match until match accepts one; it returns that event's
// message. Fields other than data (event, id, retry) and comments are
// skipped; a data field over several lines is joined with newlines, as
// the SSE format says. A stream over max bytes before the match is an
// error.
func readEvents(r io.Reader, max int, match func(data []byte) (*message, bool)) (*message, error) {
	lr := &io.LimitedReader{R: r, N: int64(max) + 1}
	br := bufio.NewReader(lr)
	var data []byte
	for {
		line, err := br.ReadBytes('\n')
		trimmed := bytes.TrimRight(line, "\r\n")
		switch {
		case len(trimmed) == 0 && len(line) > 0: // a blank line ends an event
			if len(data) > 0 {
				if m, ok := match(data); ok {
					return m, nil
				}
			}
			data = data[:0]
		case bytes.HasPrefix(trimmed, []byte("data:")):
			v := bytes.TrimPrefix(trimmed[len("data:"):], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
		if err != nil {
			if lr.N <= 0 {
				return nil, fmt.Errorf("the event stream is over %d bytes (tools.mcp[].max_message_mb)", max)
			}
			if len(data) > 0 {
				if m, ok := match(data); ok {
					return m, nil
				}
			}
			return nil, fmt.Errorf("%w: the event stream ended before the response (%v)", errBroken, err)
		}
	}
}
