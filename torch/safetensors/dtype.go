// Package safetensors reads and writes Hugging Face safetensors checkpoints:
// single files and sharded model folders with model.safetensors.index.json.
//
// A file is an 8-byte little-endian header length N, N bytes of JSON
// ({name: {"dtype", "shape", "data_offsets"}} plus an optional
// "__metadata__" string map), then the tensor bytes; data offsets count
// from the end of the header. Reading is lazy: Open parses headers only and
// a tensor's bytes are read when asked for.
package safetensors

import "fmt"

// DType is a safetensors element type, spelled as in the file header.
type DType string

// The element types this package reads and writes.
const (
	F64  DType = "F64"
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	I64  DType = "I64"
	I32  DType = "I32"
	U8   DType = "U8"
	BOOL DType = "BOOL"
)

// dtypeRank is the position of each dtype in the Rust crate's Dtype enum,
// which orders dtypes by increasing alignment. HF's writer lays tensors out
// by descending rank, then by name, and so does Write.
var dtypeRank = map[DType]int{
	BOOL: 0, U8: 1, F16: 7, BF16: 8, I32: 9, F32: 11, F64: 12, I64: 13,
}

// Size returns the size of one element in bytes, or 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case F64, I64:
		return 8
	case F32, I32:
		return 4
	case F16, BF16:
		return 2
	case U8, BOOL:
		return 1
	}
	return 0
}

// valid reports an error for a dtype this package does not know.
func (d DType) valid() error {
	if d.Size() == 0 {
		return fmt.Errorf("unknown dtype %q", string(d))
	}
	return nil
}
