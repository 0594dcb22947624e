package store

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Token arrays are stored in trajectory_tokens as little-endian blobs, one
// element after the other with no header, so a blob's length fixes the
// element count:
//
//	ids, turn_of ... ids int32 (4 bytes), turn_of int16 (2 bytes), two's complement
//	logprobs, critic_values, advantages, returns ... float32 IEEE 754 bits (4 bytes)
//	mask ... uint8 (1 byte), 1 where the policy sampled the token
//
// A nil slice is stored as NULL and an empty one as a zero-length blob, so
// both read back as they were written.

// encodeInt32 lays out v as little-endian int32s.
func encodeInt32(v []int32) []byte {
	if v == nil {
		return nil
	}
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return b
}

// encodeInt16 lays out v as little-endian int16s.
func encodeInt16(v []int16) []byte {
	if v == nil {
		return nil
	}
	b := make([]byte, 0, 2*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint16(b, uint16(x))
	}
	return b
}

// encodeFloat32 lays out v as little-endian IEEE 754 float32s.
func encodeFloat32(v []float32) []byte {
	if v == nil {
		return nil
	}
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// encodeUint8 copies v (bytes are their own layout); nil stays nil.
func encodeUint8(v []uint8) []byte {
	if v == nil {
		return nil
	}
	return append(make([]byte, 0, len(v)), v...)
}

// decodeInt32 reads little-endian int32s; NULL gives nil.
func decodeInt32(b []byte) ([]int32, error) {
	if b == nil {
		return nil, nil
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("int32 blob of %d bytes is not a multiple of 4", len(b))
	}
	v := make([]int32, len(b)/4)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// decodeInt16 reads little-endian int16s; NULL gives nil.
func decodeInt16(b []byte) ([]int16, error) {
	if b == nil {
		return nil, nil
	}
	if len(b)%2 != 0 {
		return nil, fmt.Errorf("int16 blob of %d bytes is not a multiple of 2", len(b))
	}
	v := make([]int16, len(b)/2)
	for i := range v {
		v[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return v, nil
}

// decodeFloat32 reads little-endian float32s; NULL gives nil.
func decodeFloat32(b []byte) ([]float32, error) {
	if b == nil {
		return nil, nil
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("float32 blob of %d bytes is not a multiple of 4", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
