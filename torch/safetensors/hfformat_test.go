package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// le64 is n as 8 little-endian bytes.
func le64(n byte) []byte { return []byte{n, 0, 0, 0, 0, 0, 0, 0} }

// cat concatenates byte slices.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// writeAndRead writes tensors with Write and returns the file's bytes.
func writeAndRead(t *testing.T, tensors []Tensor, meta map[string]string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := Write(path, tensors, meta); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The float32 values 0..5 as little-endian bytes: 1.0 = 0x3F800000,
// 2.0 = 0x40000000, 3.0 = 0x40400000, 4.0 = 0x40800000, 5.0 = 0x40A00000.
var zeroToFive = []byte{0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64}

// The expected files below are the byte vectors of the tests in HF's
// safetensors crate (tensor.rs: test_serialization, test_empty,
// test_serialization_forced_alignement), spelled out as text.
func TestWriteMatchesHFVectors(t *testing.T) {
	cases := []struct {
		name    string
		tensors []Tensor
		meta    map[string]string
		want    []byte
	}{
		{
			// A 64-byte header is already 8-aligned: no padding.
			name:    "serialization",
			tensors: []Tensor{{Name: "attn.0", DType: F32, Shape: []int64{1, 2, 3}, Data: zeroToFive}},
			want: cat(le64(64),
				[]byte(`{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}`), zeroToFive),
		},
		{
			// A 65-byte header gets 7 spaces to reach 72.
			name:    "forced alignment",
			tensors: []Tensor{{Name: "attn0", DType: F32, Shape: []int64{1, 1, 2, 3}, Data: zeroToFive}},
			want: cat(le64(72),
				[]byte(`{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}       `), zeroToFive),
		},
		{
			name: "empty",
			want: cat(le64(8), []byte(`{}      `)),
		},
		{
			// 35 header bytes + 5 spaces = 40.
			name: "empty with metadata",
			meta: map[string]string{"framework": "pt"},
			want: cat(le64(40), []byte(`{"__metadata__":{"framework":"pt"}}     `)),
		},
	}
	for _, c := range cases {
		if got := writeAndRead(t, c.tensors, c.meta); !bytes.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// A mixed-dtype file built by hand from the format: HF lays tensors out by
// descending dtype alignment (I64 > F32 > F16 > BOOL in its Dtype enum),
// then by name, and writes the header entries in that order, metadata first.
func TestWriteMixedDTypesLayout(t *testing.T) {
	i64 := []byte{1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff} // {1, -1}
	f32 := []byte{0, 0, 0, 0xC0}                                                          // -2.0 = 0xC0000000
	f16 := []byte{0x00, 0x3C, 0xFF, 0x7B, 0x01, 0x00}                                     // 1.0, 65504, 2^-24
	bools := []byte{1, 0}
	tensors := []Tensor{
		{Name: "a", DType: F16, Shape: []int64{3}, Data: f16},
		{Name: "b", DType: I64, Shape: []int64{2}, Data: i64},
		{Name: "c", DType: F32, Shape: []int64{1}, Data: f32},
		{Name: "d", DType: BOOL, Shape: []int64{2}, Data: bools},
	}
	// 252 header bytes + 4 spaces = 256 = 0x100.
	head := `{"__metadata__":{"format":"pt"},` +
		`"b":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},` +
		`"c":{"dtype":"F32","shape":[1],"data_offsets":[16,20]},` +
		`"a":{"dtype":"F16","shape":[3],"data_offsets":[20,26]},` +
		`"d":{"dtype":"BOOL","shape":[2],"data_offsets":[26,28]}}    `
	want := cat([]byte{0, 1, 0, 0, 0, 0, 0, 0}, []byte(head), i64, f32, f16, bools)
	got := writeAndRead(t, tensors, map[string]string{"format": "pt"})
	if !bytes.Equal(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
	// FromFloat32s produces the same F16 bytes from the float values.
	ft, err := FromFloat32s("a", F16, []int64{3}, []float32{1, 65504, pow2(-24)})
	if err != nil || !bytes.Equal(ft.Data, f16) {
		t.Errorf("FromFloat32s F16 = % x, %v; want % x", ft.Data, err, f16)
	}
}

// serde_json does not escape <, > or &; neither must the writer.
func TestWriteHeaderNoHTMLEscape(t *testing.T) {
	got := writeAndRead(t, nil, map[string]string{"k": "a<b&c>"})
	// `{"__metadata__":{"k":"a<b&c>"}}` is 31 bytes + 1 space = 32.
	want := cat(le64(32), []byte(`{"__metadata__":{"k":"a<b&c>"}} `))
	if !bytes.Equal(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
}
