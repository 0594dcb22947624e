package safetensors

import "encoding/binary"

// FirstNonFinite returns the index of the first NaN or infinity among raw's
// values of dtype dt (F32, F16, BF16 or F64; -1 for other dtypes, which
// have no such values), or -1 when every value is finite. It reads the
// exponent bits only: all ones is an infinity or a NaN.
func FirstNonFinite(dt DType, raw []byte) int {
	switch dt {
	case F16:
		return firstAllOnes(raw, 2, 0x7c00)
	case BF16:
		return firstAllOnes(raw, 2, 0x7f80)
	case F32:
		return firstAllOnes(raw, 4, 0x7f800000)
	case F64:
		return firstAllOnes(raw, 8, 0x7ff0000000000000)
	}
	return -1
}

// firstAllOnes is the index of the first little-endian value of size bytes
// whose exp bits are all set. It tests eight bytes at a time: a value's
// exp bits XOR exp is zero exactly when all are set, and a zero lane shows
// as a borrow into its top bit (which exp never has) when one is
// subtracted from every lane.
func firstAllOnes(raw []byte, size int, exp uint64) int {
	le := binary.LittleEndian
	var lanes, ones, tops uint64
	for i := 0; i < 8; i += size {
		lanes |= exp << (8 * i)
		ones |= 1 << (8 * i)
		tops |= 1 << (8*(i+size) - 1)
	}
	n := len(raw) / size
	i := 0
	for ; i+8 <= n*size; i += 8 {
		v := le.Uint64(raw[i:])&lanes ^ lanes
		if (v-ones)&^v&tops != 0 {
			break
		}
	}
	for k := i / size; k < n; k++ {
		var x uint64
		for b := size - 1; b >= 0; b-- {
			x = x<<8 | uint64(raw[k*size+b])
		}
		if x&exp == exp {
			return k
		}
	}
	return -1
}
