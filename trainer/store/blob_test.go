package store

import (
	"bytes"
	"testing"
)

// The expected bytes are the little-endian layouts worked out by hand:
// int32 1 = 01 00 00 00, -2 = FE FF FF FF (two's complement);
// int16 258 = 0x0102 -> 02 01, -1 = FF FF;
// float32 1.0 = 0x3F800000 -> 00 00 80 3F, -2.5 = 0xC0200000 -> 00 00 20 C0.
func TestBlobLayout(t *testing.T) {
	if got, want := encodeInt32([]int32{1, -2}), []byte{1, 0, 0, 0, 0xFE, 0xFF, 0xFF, 0xFF}; !bytes.Equal(got, want) {
		t.Errorf("int32 blob = % X, want % X", got, want)
	}
	if got, want := encodeInt16([]int16{258, -1}), []byte{2, 1, 0xFF, 0xFF}; !bytes.Equal(got, want) {
		t.Errorf("int16 blob = % X, want % X", got, want)
	}
	if got, want := encodeFloat32([]float32{1, -2.5}), []byte{0, 0, 0x80, 0x3F, 0, 0, 0x20, 0xC0}; !bytes.Equal(got, want) {
		t.Errorf("float32 blob = % X, want % X", got, want)
	}
	ids, err := decodeInt32([]byte{1, 0, 0, 0, 0xFE, 0xFF, 0xFF, 0xFF})
	if err != nil || len(ids) != 2 || ids[0] != 1 || ids[1] != -2 {
		t.Errorf("decodeInt32 = %v, %v; want [1 -2]", ids, err)
	}
	turns, err := decodeInt16([]byte{2, 1, 0xFF, 0xFF})
	if err != nil || len(turns) != 2 || turns[0] != 258 || turns[1] != -1 {
		t.Errorf("decodeInt16 = %v, %v; want [258 -1]", turns, err)
	}
	fs, err := decodeFloat32([]byte{0, 0, 0x80, 0x3F, 0, 0, 0x20, 0xC0})
	if err != nil || len(fs) != 2 || fs[0] != 1 || fs[1] != -2.5 {
		t.Errorf("decodeFloat32 = %v, %v; want [1 -2.5]", fs, err)
	}
}

func TestBlobNilEmptyAndBadLength(t *testing.T) {
	if encodeInt32(nil) != nil || encodeFloat32(nil) != nil || encodeInt16(nil) != nil || encodeUint8(nil) != nil {
		t.Error("nil slices must encode as nil (SQL NULL)")
	}
	if b := encodeInt32([]int32{}); b == nil || len(b) != 0 {
		t.Errorf("empty slice encodes as %v, want a non-nil empty blob", b)
	}
	if v, err := decodeFloat32([]byte{}); err != nil || v == nil || len(v) != 0 {
		t.Errorf("empty blob decodes as %v, %v; want a non-nil empty slice", v, err)
	}
	if v, err := decodeInt16(nil); err != nil || v != nil {
		t.Errorf("NULL decodes as %v, %v; want nil", v, err)
	}
	if _, err := decodeInt32(make([]byte, 6)); err == nil {
		t.Error("a 6-byte int32 blob must be an error")
	}
	if _, err := decodeInt16(make([]byte, 3)); err == nil {
		t.Error("a 3-byte int16 blob must be an error")
	}
	if _, err := decodeFloat32(make([]byte, 5)); err == nil {
		t.Error("a 5-byte float32 blob must be an error")
	}
}
