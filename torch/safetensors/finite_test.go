package safetensors

import (
	"encoding/binary"
	"math"
	"testing"
)

// Each float dtype's NaN and infinities are found at their index, and its
// largest finite value and subnormals pass (bit patterns written by hand
// from IEEE 754 and bfloat16's layout).
func TestFirstNonFinite(t *testing.T) {
	u16 := func(v ...uint16) []byte {
		b := make([]byte, 2*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint16(b[2*i:], x)
		}
		return b
	}
	u32 := func(v ...uint32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], x)
		}
		return b
	}
	u64 := func(v ...uint64) []byte {
		b := make([]byte, 8*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint64(b[8*i:], x)
		}
		return b
	}
	for _, c := range []struct {
		name string
		dt   DType
		raw  []byte
		want int
	}{
		{"f32 finite", F32, u32(0x7f7fffff, 0x00000001, 0xff7fffff, 0), -1},
		{"f32 NaN", F32, u32(0, 0x3f800000, 0x7fc00000), 2},
		{"f32 -Inf", F32, u32(0xff800000), 0},
		{"f16 finite", F16, u16(0x7bff, 0x0001, 0xfbff), -1},
		{"f16 +Inf", F16, u16(0x3c00, 0x7c00), 1},
		{"f16 NaN", F16, u16(0x7e00), 0},
		{"bf16 finite", BF16, u16(0x7f7f, 0x0001, 0xff7f), -1},
		{"bf16 NaN", BF16, u16(0x3f80, 0x3f80, 0x7fc0), 2},
		{"bf16 -Inf", BF16, u16(0xff80), 0},
		{"f64 finite", F64, u64(math.Float64bits(math.MaxFloat64), 1), -1},
		{"f64 +Inf", F64, u64(0, 0x7ff0000000000000), 1},
		{"i32", I32, u32(0x7f800000), -1},
	} {
		if got := FirstNonFinite(c.dt, c.raw); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// In a longer buffer of the largest finite values (whose exponent bits are
// all set but the lowest), one infinity is found wherever it is.
func TestFirstNonFiniteEveryPosition(t *testing.T) {
	for _, c := range []struct {
		dt       DType
		size     int
		max, inf uint64
	}{{F16, 2, 0x7bff, 0x7c00}, {BF16, 2, 0x7f7f, 0x7f80}, {F32, 4, 0x7f7fffff, 0x7f800000}, {F64, 8, 0x7fefffffffffffff, 0x7ff0000000000000}} {
		const n = 37
		put := func(b []byte, k int, v uint64) {
			for i := 0; i < c.size; i++ {
				b[k*c.size+i] = byte(v >> (8 * i))
			}
		}
		raw := make([]byte, n*c.size)
		for k := 0; k < n; k++ {
			put(raw, k, c.max)
		}
		if got := FirstNonFinite(c.dt, raw); got != -1 {
			t.Errorf("%s all finite: %d", c.dt, got)
		}
		for p := 0; p < n; p++ {
			put(raw, p, c.inf)
			if got := FirstNonFinite(c.dt, raw); got != p {
				t.Errorf("%s infinity at %d: found at %d", c.dt, p, got)
			}
			put(raw, p, c.max)
		}
	}
}
