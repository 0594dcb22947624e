package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Float32s reads tensor name as float32 values, converting from F32, F16,
// BF16 or F64 (F64 rounds to nearest float32).
func (r *Reader) Float32s(name string) ([]float32, error) {
	info, ok := r.Info(name)
	if !ok {
		return nil, fmt.Errorf("safetensors: no tensor %q", name)
	}
	raw, err := r.Bytes(name)
	if err != nil {
		return nil, err
	}
	n := len(raw) / info.DType.Size()
	out := make([]float32, n)
	le := binary.LittleEndian
	switch info.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
	case F16:
		for i := range out {
			out[i] = F16ToF32(le.Uint16(raw[2*i:]))
		}
	case BF16:
		for i := range out {
			out[i] = BF16ToF32(le.Uint16(raw[2*i:]))
		}
	case F64:
		for i := range out {
			out[i] = float32(math.Float64frombits(le.Uint64(raw[8*i:])))
		}
	default:
		return nil, fmt.Errorf("safetensors %s: tensor %q is %s, not a float dtype", info.File, name, info.DType)
	}
	return out, nil
}

// FromFloat32s builds a tensor of dtype F32, F16, BF16 or F64 from float32
// values (F16 and BF16 round to nearest even). len(values) must equal the
// element count of shape.
func FromFloat32s(name string, dtype DType, shape []int64, values []float32) (Tensor, error) {
	n, err := byteSize(U8, shape)
	if err != nil {
		return Tensor{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	if n != int64(len(values)) {
		return Tensor{}, fmt.Errorf("tensor %q: %d values for shape %v (%d elements)", name, len(values), shape, n)
	}
	buf := make([]byte, len(values)*dtype.Size())
	le := binary.LittleEndian
	switch dtype {
	case F32:
		for i, v := range values {
			le.PutUint32(buf[4*i:], math.Float32bits(v))
		}
	case F16:
		for i, v := range values {
			le.PutUint16(buf[2*i:], F32ToF16(v))
		}
	case BF16:
		for i, v := range values {
			le.PutUint16(buf[2*i:], F32ToBF16(v))
		}
	case F64:
		for i, v := range values {
			le.PutUint64(buf[8*i:], math.Float64bits(float64(v)))
		}
	default:
		return Tensor{}, fmt.Errorf("tensor %q: %q is not a float dtype", name, string(dtype))
	}
	return Tensor{Name: name, DType: dtype, Shape: slices.Clone(shape), Data: buf}, nil
}
