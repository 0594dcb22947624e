package safetensors

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rawFile writes a safetensors file from a literal header and data.
func rawFile(t *testing.T, dir, name, head string, data []byte) string {
	t.Helper()
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(len(head)))
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, cat(prefix[:], []byte(head), data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantOpenError opens path and checks the error mentions every string in want.
func wantOpenError(t *testing.T, path string, want ...string) {
	t.Helper()
	r, err := Open(path)
	if err == nil {
		r.Close()
		t.Fatalf("Open(%s) succeeded, want an error mentioning %q", path, want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Open error %q does not mention %q", err, w)
		}
	}
}

func TestCorruptFiles(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		head string
		data []byte
		want []string // besides the file path
	}{
		{"bad json", `{"w":{"dtype":"F32",`, nil, []string{"bad header JSON"}},
		{"unknown dtype", `{"w":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4),
			[]string{`tensor "w"`, `unknown dtype "Q7"`}},
		// F32 [2] needs 8 bytes but the data section holds 4.
		{"offsets beyond data", `{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 4),
			[]string{`tensor "w"`, "outside the 4 data bytes"}},
		{"reversed offsets", `{"w":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}}`, make([]byte, 4),
			[]string{`tensor "w"`}},
		// F32 [3] needs 12 bytes, the offsets give 8.
		{"size mismatch", `{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, make([]byte, 8),
			[]string{`tensor "w"`, "needs 12"}},
		{"overlap", `{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`,
			make([]byte, 12), []string{`tensor "y"`, `tensor "x"`, "overlap"}},
		{"bad offsets arity", `{"w":{"dtype":"U8","shape":[1],"data_offsets":[0]}}`, make([]byte, 1),
			[]string{`tensor "w"`, "data_offsets"}},
		{"missing shape", `{"w":{"dtype":"U8","data_offsets":[0,1]}}`, make([]byte, 1),
			[]string{`tensor "w"`, "shape"}},
		{"overflowing shape", `{"w":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,8]}}`, make([]byte, 8),
			[]string{`tensor "w"`, "overflows"}},
		{"metadata not strings", `{"__metadata__":{"n":1}}`, nil, []string{"__metadata__"}},
	}
	for _, c := range cases {
		path := rawFile(t, dir, strings.ReplaceAll(c.name, " ", "_")+".safetensors", c.head, c.data)
		t.Run(c.name, func(t *testing.T) { wantOpenError(t, path, append(c.want, path)...) })
	}
}

func TestTruncatedFiles(t *testing.T) {
	dir := t.TempDir()
	// The length prefix promises 1000 header bytes; the file has 20.
	long := filepath.Join(dir, "long.safetensors")
	if err := os.WriteFile(long, cat([]byte{0xe8, 0x03, 0, 0, 0, 0, 0, 0}, []byte("{}          ")), 0o644); err != nil {
		t.Fatal(err)
	}
	wantOpenError(t, long, long, "header length 1000 exceeds the file size 20")

	short := filepath.Join(dir, "short.safetensors")
	if err := os.WriteFile(short, []byte{1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	wantOpenError(t, short, short, "too short")

	// A valid file cut inside its data: the last tensor lies beyond the end.
	path := filepath.Join(dir, "cut.safetensors")
	ts := []Tensor{
		{Name: "a", DType: U8, Shape: []int64{4}, Data: []byte{1, 2, 3, 4}},
		{Name: "b", DType: U8, Shape: []int64{4}, Data: []byte{5, 6, 7, 8}},
	}
	if err := Write(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if err := os.Truncate(path, st.Size()-2); err != nil {
		t.Fatal(err)
	}
	wantOpenError(t, path, path, `tensor "b"`, "outside the 6 data bytes")
}

// A file truncated after Open fails at Bytes with the file and tensor named.
func TestTruncatedAfterOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.safetensors")
	if err := Write(path, []Tensor{{Name: "v", DType: U8, Shape: []int64{4}, Data: []byte{1, 2, 3, 4}}}, nil); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st, _ := os.Stat(path)
	if err := os.Truncate(path, st.Size()-1); err != nil {
		t.Fatal(err)
	}
	_, err = r.Bytes("v")
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `"v"`) {
		t.Errorf("Bytes after truncation: err %v, want one naming %s and v", err, path)
	}
}

func TestCorruptIndex(t *testing.T) {
	dir := t.TempDir()
	shard := filepath.Join(dir, "model-00001-of-00002.safetensors")
	if err := Write(shard, []Tensor{{Name: "a", DType: U8, Shape: []int64{1}, Data: []byte{1}}}, nil); err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(dir, IndexFileName)
	cases := []struct {
		name, json string
		want       []string
	}{
		{"missing file", `{"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}`,
			[]string{`tensor "b"`, "model-00002-of-00002.safetensors"}},
		{"missing tensor", `{"weight_map":{"a":"model-00001-of-00002.safetensors","c":"model-00001-of-00002.safetensors"}}`,
			[]string{`tensor "c"`, shard, "not found"}},
		{"escaping path", `{"weight_map":{"a":"../model.safetensors"}}`,
			[]string{`tensor "a"`, "../model.safetensors"}},
		{"bad json", `{"weight_map":`, []string{"bad JSON"}},
		{"no weight_map", `{"metadata":{}}`, []string{"weight_map"}},
	}
	for _, c := range cases {
		if err := os.WriteFile(index, []byte(c.json), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Run(c.name, func(t *testing.T) { wantOpenError(t, dir, append(c.want, index)...) })
	}
}
