package safetensors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// metadataKey is the header entry holding the free-form string map.
const metadataKey = "__metadata__"

// maxHeaderBytes is the largest header accepted, as in HF's reader.
const maxHeaderBytes = 100_000_000

// headerEntry is one tensor as described by a file header; begin and end
// are offsets into the data section.
type headerEntry struct {
	name       string
	dtype      DType
	shape      []int64
	begin, end int64
}

// header is a parsed and validated file header.
type header struct {
	metadata map[string]string
	tensors  map[string]headerEntry
}

// rawEntry is a tensor entry as spelled in the JSON header.
type rawEntry struct {
	DType       string  `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// parseHeader parses the JSON header and checks every tensor against a
// data section of dataLen bytes: known dtype, offsets inside the data,
// byte size equal to dtype size times element count, and no overlaps.
func parseHeader(buf []byte, dataLen int64) (header, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(buf, &raw); err != nil {
		return header{}, fmt.Errorf("bad header JSON: %w", err)
	}
	h := header{metadata: map[string]string{}, tensors: make(map[string]headerEntry, len(raw))}
	var order []headerEntry
	for name, msg := range raw {
		if name == metadataKey {
			if err := json.Unmarshal(msg, &h.metadata); err != nil {
				return header{}, fmt.Errorf("%s is not a string map: %w", metadataKey, err)
			}
			continue
		}
		e, err := parseEntry(name, msg, dataLen)
		if err != nil {
			return header{}, fmt.Errorf("tensor %q: %w", name, err)
		}
		h.tensors[name] = e
		order = append(order, e)
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].begin != order[j].begin {
			return order[i].begin < order[j].begin
		}
		return order[i].end < order[j].end
	})
	for i := 1; i < len(order); i++ {
		if prev, cur := order[i-1], order[i]; cur.begin < prev.end {
			return header{}, fmt.Errorf("tensor %q: data_offsets [%d,%d] overlap tensor %q at [%d,%d]",
				cur.name, cur.begin, cur.end, prev.name, prev.begin, prev.end)
		}
	}
	return h, nil
}

// parseEntry decodes and checks one tensor entry.
func parseEntry(name string, msg json.RawMessage, dataLen int64) (headerEntry, error) {
	var r rawEntry
	if err := json.Unmarshal(msg, &r); err != nil {
		return headerEntry{}, fmt.Errorf("bad entry: %w", err)
	}
	dt := DType(r.DType)
	if err := dt.valid(); err != nil {
		return headerEntry{}, err
	}
	if r.Shape == nil {
		return headerEntry{}, fmt.Errorf("missing shape")
	}
	if len(r.DataOffsets) != 2 {
		return headerEntry{}, fmt.Errorf("data_offsets %v: want [begin, end]", r.DataOffsets)
	}
	begin, end := r.DataOffsets[0], r.DataOffsets[1]
	if begin < 0 || end < begin || end > dataLen {
		return headerEntry{}, fmt.Errorf("data_offsets [%d,%d] outside the %d data bytes", begin, end, dataLen)
	}
	want, err := byteSize(dt, r.Shape)
	if err != nil {
		return headerEntry{}, err
	}
	if end-begin != want {
		return headerEntry{}, fmt.Errorf("data_offsets [%d,%d] hold %d bytes, but %s %v needs %d",
			begin, end, end-begin, dt, r.Shape, want)
	}
	return headerEntry{name: name, dtype: dt, shape: r.Shape, begin: begin, end: end}, nil
}

// byteSize returns dtype size times the element count of shape, with an
// error for negative dimensions or a size that overflows int64.
func byteSize(dt DType, shape []int64) (int64, error) {
	n := int64(dt.Size())
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, fmt.Errorf("shape %v of %s overflows", shape, dt)
		}
		n *= d
	}
	return n, nil
}

// encodeHeader writes the header as HF's writer does: compact JSON with
// "__metadata__" first (keys sorted) when there is any, then the tensors in
// the order given (which is the data order), padded with spaces to a
// multiple of 8 bytes.
func encodeHeader(tensors []headerEntry, metadata map[string]string) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	sep := ""
	if len(metadata) > 0 {
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString(jsonString(metadataKey) + ":{")
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonString(k) + ":" + jsonString(metadata[k]))
		}
		b.WriteByte('}')
		sep = ","
	}
	for _, t := range tensors {
		dims := make([]string, len(t.shape))
		for i, d := range t.shape {
			dims[i] = fmt.Sprint(d)
		}
		fmt.Fprintf(&b, `%s%s:{"dtype":%s,"shape":[%s],"data_offsets":[%d,%d]}`,
			sep, jsonString(t.name), jsonString(string(t.dtype)), strings.Join(dims, ","), t.begin, t.end)
		sep = ","
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	return b.Bytes()
}

// jsonString quotes s as JSON without Go's HTML escaping of <, > and &,
// which serde_json (HF's writer) does not do either.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// Encoding a string cannot fail.
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
