package safetensors

import "math"

// F16ToF32 converts IEEE 754 binary16 bits to a float32. Every half value
// (subnormals, infinities, NaN payloads) is represented exactly.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0:
		// Zero or subnormal: mant * 2^-24, exact in float32.
		v := float32(math.Ldexp(float64(mant), -24))
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	// Rebias the exponent from 15 to 127.
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// F32ToF16 converts a float32 to IEEE 754 binary16 bits, rounding to
// nearest with ties to even as torch does. Values beyond the half range
// become infinity; NaN becomes the quiet NaN 0x7E00 with the input's sign.
func F32ToF16(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int(bits>>23) & 0xff
	mant := bits & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Half subnormal (or zero): the result counts units of 2^-24.
		// With the implicit bit, |f| = m * 2^(exp-150), so the count
		// is m >> (14 - e) before rounding.
		if e < -10 {
			// Below 2^-25, half the smallest half subnormal: zero.
			return sign
		}
		return sign | uint16(roundShift(mant|0x800000, uint(14-e)))
	}
	// Normal: keep 10 mantissa bits; a carry out of the mantissa moves to
	// the next exponent (and from the largest finite value to infinity).
	return sign | uint16(roundShift(uint32(e)<<23|mant, 13))
}

// roundShift returns v >> s rounded to nearest, ties to even.
func roundShift(v uint32, s uint) uint32 {
	q := v >> s
	rem := v & (1<<s - 1)
	half := uint32(1) << (s - 1)
	if rem > half || (rem == half && q&1 == 1) {
		q++
	}
	return q
}

// BF16ToF32 converts bfloat16 bits to a float32 (exact: bfloat16 is the
// top half of a float32).
func BF16ToF32(b uint16) float32 {
	return math.Float32frombits(uint32(b) << 16)
}

// F32ToBF16 converts a float32 to bfloat16 bits, rounding to nearest with
// ties to even as torch does; any NaN becomes torch's 0x7FC0.
func F32ToBF16(f float32) uint16 {
	if f != f {
		return 0x7fc0
	}
	return uint16(roundShift(math.Float32bits(f), 16))
}
