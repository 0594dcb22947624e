package tensorboard

import (
	"encoding/binary"
	"math"
)

// Protocol buffer encoding of the few TensorFlow messages an event file of
// scalars needs (tensorflow/core/util/event.proto, summary.proto):
//
//	Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//	Summary { repeated Value value = 1; }
//	Value   { string tag = 1; float simple_value = 2; }
//
// A field is a key (field number << 3 | wire type) then its value: a
// varint (type 0), 8 little-endian bytes (type 1), a varint length and the
// bytes (type 2) or 4 little-endian bytes (type 5).
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// key appends a field's key.
func key(b []byte, field, wire int) []byte { return binary.AppendUvarint(b, uint64(field<<3|wire)) }

// bytesField appends a length-delimited field.
func bytesField(b []byte, field int, v []byte) []byte {
	b = key(b, field, wireBytes)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// scalar is one summary value.
type scalar struct {
	tag   string
	value float32
}

// event encodes an Event: its wall time (seconds since the epoch), its
// step, and either a file version (the file's first event) or a summary
// of scalars.
func event(wall float64, step int64, fileVersion string, scalars []scalar) []byte {
	var b []byte
	b = key(b, 1, wireFixed64)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(wall))
	if step != 0 {
		b = key(b, 2, wireVarint)
		b = binary.AppendUvarint(b, uint64(step)) // int64 as a varint: two's complement, 10 bytes when negative
	}
	if fileVersion != "" {
		b = bytesField(b, 3, []byte(fileVersion))
	}
	if len(scalars) > 0 {
		var summary []byte
		for _, s := range scalars {
			var v []byte
			v = bytesField(v, 1, []byte(s.tag))
			v = key(v, 2, wireFixed32)
			v = binary.LittleEndian.AppendUint32(v, math.Float32bits(s.value))
			summary = bytesField(summary, 1, v)
		}
		b = bytesField(b, 5, summary)
	}
	return b
}
