package trainer

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
)

// readScalars decodes a TensorBoard event file written by
// tensorboard (a test of that package reads its files with
// Python's protobuf): each record's Event, its step and its summary's
// simple values by tag. The records are a uint64 length, a 4-byte CRC,
// the Event, a 4-byte CRC; the protobuf fields are those of event.proto
// (wall_time 1, step 2, file_version 3, summary 5) and summary.proto
// (value 1; tag 1, simple_value 2).
func readScalars(path string) (map[int64]map[string]float32, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[int64]map[string]float32{}
	for len(data) > 0 {
		if len(data) < 12 {
			return nil, fmt.Errorf("%s: a record cut short", path)
		}
		n := binary.LittleEndian.Uint64(data)
		if uint64(len(data)) < 16+n {
			return nil, fmt.Errorf("%s: a record of %d bytes cut short", path, n)
		}
		step, values, err := decodeEvent(data[12 : 12+n])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(values) > 0 {
			out[step] = values
		}
		data = data[16+n:]
	}
	return out, nil
}

// fields splits a protobuf message into its fields: number, wire type,
// and the varint value or the bytes.
func fields(b []byte, f func(num, wire int, v uint64, bs []byte) error) error {
	for len(b) > 0 {
		k, n := binary.Uvarint(b)
		if n <= 0 {
			return fmt.Errorf("bad field key")
		}
		b = b[n:]
		num, wire := int(k>>3), int(k&7)
		var v uint64
		var bs []byte
		switch wire {
		case 0:
			v, n = binary.Uvarint(b)
			if n <= 0 {
				return fmt.Errorf("bad varint")
			}
			b = b[n:]
		case 1:
			v, b = binary.LittleEndian.Uint64(b), b[8:]
		case 2:
			l, n := binary.Uvarint(b)
			bs, b = b[n:n+int(l)], b[n+int(l):]
		case 5:
			v, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
		default:
			return fmt.Errorf("wire type %d", wire)
		}
		if err := f(num, wire, v, bs); err != nil {
			return err
		}
	}
	return nil
}

// decodeEvent returns an Event's step and its scalar values.
func decodeEvent(b []byte) (int64, map[string]float32, error) {
	var step int64
	values := map[string]float32{}
	err := fields(b, func(num, _ int, v uint64, bs []byte) error {
		switch num {
		case 2:
			step = int64(v)
		case 5:
			return fields(bs, func(num, _ int, _ uint64, value []byte) error {
				var tag string
				var x float32
				err := fields(value, func(num, _ int, v uint64, bs []byte) error {
					switch num {
					case 1:
						tag = string(bs)
					case 2:
						x = math.Float32frombits(uint32(v))
					}
					return nil
				})
				values[tag] = x
				return err
			})
		}
		return nil
	})
	return step, values, err
}
