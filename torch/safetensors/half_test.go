package safetensors

import (
	"math"
	"testing"
)

// pow2 returns 2^e as a float32 (exact for the exponents used here).
func pow2(e int) float32 { return float32(math.Ldexp(1, e)) }

func TestF32ToF16(t *testing.T) {
	nan := float32(math.NaN())
	cases := []struct {
		name string
		in   float32
		want uint16
	}{
		// sign 0, exponent 15 (bias 15) -> 0 01111 0000000000.
		{"one", 1, 0x3C00},
		// sign 1, exponent 16 -> 1 10000 0000000000.
		{"minus two", -2, 0xC000},
		{"minus zero", float32(math.Copysign(0, -1)), 0x8000},
		// (2 - 2^-10) * 2^15: exponent 30, mantissa all ones.
		{"max finite 65504", 65504, 0x7BFF},
		// Half ulp above 65504 is 65520, a tie; 0x7BFF is odd so it rounds
		// up to 0x7C00 = +inf. One below the tie stays finite.
		{"65520 ties up to inf", 65520, 0x7C00},
		{"65519 stays 65504", 65519, 0x7BFF},
		{"1e6 overflows", 1e6, 0x7C00},
		// Smallest subnormal: 1 unit of 2^-24.
		{"2^-24", pow2(-24), 0x0001},
		// Largest subnormal 1023 * 2^-24, smallest normal 2^-14.
		{"largest subnormal", 1023 * pow2(-24), 0x03FF},
		{"smallest normal", pow2(-14), 0x0400},
		// 2^-25 is halfway between 0 and 2^-24: ties to the even 0.
		{"2^-25 ties to zero", pow2(-25), 0x0000},
		{"just above 2^-25", pow2(-25) + pow2(-40), 0x0001},
		// 1.5 * 2^-24 is halfway between units 1 and 2: ties to 2.
		{"1.5 units ties to 2", 3 * pow2(-25), 0x0002},
		{"2^-26 underflows", pow2(-26), 0x0000},
		{"-2^-24", -pow2(-24), 0x8001},
		// 1 + 2^-11 is halfway between 0x3C00 (even) and 0x3C01.
		{"tie to even down", 1 + pow2(-11), 0x3C00},
		// 1 + 3*2^-11 is halfway between 0x3C01 (odd) and 0x3C02.
		{"tie to even up", 1 + 3*pow2(-11), 0x3C02},
		{"above tie rounds up", 1 + pow2(-11) + pow2(-20), 0x3C01},
		// 0.1 = 1.6 * 2^-4: exponent 11 (0x2C00), mantissa 0.6*1024 = 614.4 -> 614 = 0x266.
		{"0.1", 0.1, 0x2E66},
		// 2^-14 - 2^-25 is 1023.5 units of 2^-24, halfway between the
		// largest subnormal 0x03FF (odd) and 0x0400: ties to 0x0400.
		{"subnormal carries into normal", pow2(-14) - pow2(-25), 0x0400},
		{"+inf", float32(math.Inf(1)), 0x7C00},
		{"-inf", float32(math.Inf(-1)), 0xFC00},
		{"nan", nan, 0x7E00},
	}
	for _, c := range cases {
		if got := F32ToF16(c.in); got != c.want {
			t.Errorf("%s: F32ToF16(%g) = %#04x, want %#04x", c.name, c.in, got, c.want)
		}
	}
}

func TestF16ToF32(t *testing.T) {
	cases := []struct {
		in   uint16
		want float32
	}{
		{0x3C00, 1},
		{0xC000, -2},
		{0x7BFF, 65504},
		{0x0001, pow2(-24)},
		{0x8001, -pow2(-24)},
		{0x03FF, 1023 * pow2(-24)},
		{0x0400, pow2(-14)},
		// 0 01101 0101010101: (1 + 341/1024) * 2^-2 = 0.333251953125.
		{0x3555, 0.333251953125},
		{0x7C00, float32(math.Inf(1))},
		{0xFC00, float32(math.Inf(-1))},
	}
	for _, c := range cases {
		if got := F16ToF32(c.in); got != c.want {
			t.Errorf("F16ToF32(%#04x) = %g, want %g", c.in, got, c.want)
		}
	}
	if z := F16ToF32(0x8000); z != 0 || !math.Signbit(float64(z)) {
		t.Errorf("F16ToF32(0x8000) = %g, want -0", z)
	}
	if v := F16ToF32(0x7E00); v == v {
		t.Errorf("F16ToF32(0x7E00) = %g, want NaN", v)
	}
}

// Every non-NaN half converts to float32 and back to itself.
func TestF16RoundTripAllValues(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		if h&0x7C00 == 0x7C00 && h&0x3FF != 0 {
			continue // NaN payloads are canonicalised
		}
		if got := F32ToF16(F16ToF32(uint16(h))); got != uint16(h) {
			t.Fatalf("half %#04x -> %g -> %#04x", h, F16ToF32(uint16(h)), got)
		}
	}
}

func TestF32ToBF16(t *testing.T) {
	cases := []struct {
		name string
		in   float32
		want uint16
	}{
		// bfloat16 is the top 16 bits of a float32: 1.0 = 0x3F800000.
		{"one", 1, 0x3F80},
		// -2.0 = 0xC0000000.
		{"minus two", -2, 0xC000},
		// 7 mantissa bits: ulp at 1 is 2^-7, 1 + 2^-8 is a tie.
		{"tie to even down", 1 + pow2(-8), 0x3F80},
		{"tie to even up", 1 + 3*pow2(-8), 0x3F82},
		{"above tie rounds up", 1 + pow2(-8) + pow2(-20), 0x3F81},
		// 0.1 = 0x3DCCCCCD: low half 0xCCCD > 0x8000 rounds 0x3DCC up.
		{"0.1", 0.1, 0x3DCD},
		// Smallest bfloat16 subnormal 2^-133 = 0x00010000.
		{"2^-133", pow2(-133), 0x0001},
		// Smallest float32 subnormal 0x00000001 is below half a unit.
		{"2^-149", math.Float32frombits(1), 0x0000},
		// 0x7F7F0000 is the largest bfloat16; max float32 0x7F7FFFFF
		// rounds past it to inf, as torch does.
		{"max bf16", math.Float32frombits(0x7F7F0000), 0x7F7F},
		{"max f32 to inf", math.MaxFloat32, 0x7F80},
		{"-inf", float32(math.Inf(-1)), 0xFF80},
		{"nan", float32(math.NaN()), 0x7FC0},
	}
	for _, c := range cases {
		if got := F32ToBF16(c.in); got != c.want {
			t.Errorf("%s: F32ToBF16(%g) = %#04x, want %#04x", c.name, c.in, got, c.want)
		}
	}
}

func TestBF16ToF32(t *testing.T) {
	cases := []struct {
		in   uint16
		want float32
	}{
		{0x3F80, 1},
		{0xC000, -2},
		{0x0001, pow2(-133)},
		// 0 10000000 1001001: (1 + 73/128) * 2 = 3.140625.
		{0x4049, 3.140625},
		{0x7F80, float32(math.Inf(1))},
	}
	for _, c := range cases {
		if got := BF16ToF32(c.in); got != c.want {
			t.Errorf("BF16ToF32(%#04x) = %g, want %g", c.in, got, c.want)
		}
	}
	if v := BF16ToF32(0x7FC0); v == v {
		t.Errorf("BF16ToF32(0x7FC0) = %g, want NaN", v)
	}
}
