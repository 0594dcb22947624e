package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// u8s returns an U8 tensor of n bytes all equal to v.
func u8s(name string, n int, v byte) Tensor {
	return Tensor{Name: name, DType: U8, Shape: []int64{int64(n)}, Data: bytes.Repeat([]byte{v}, n)}
}

// dirNames lists the entries of dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func TestShardedRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Name order a, b, c, d, e with 16, 16, 40, 8, 8 bytes and max 32:
	// a+b = 32 fits; c (40 > 32) gets a shard of its own; d+e = 16.
	// total_size = 16+16+40+8+8 = 88.
	tensors := []Tensor{u8s("e", 8, 5), u8s("c", 40, 3), u8s("a", 16, 1), u8s("d", 8, 4), u8s("b", 16, 2)}
	if err := WriteSharded(dir, tensors, map[string]string{"format": "pt"}, 32); err != nil {
		t.Fatal(err)
	}
	s1, s2, s3 := "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"
	wantFiles := []string{"config.json", s1, s2, s3, IndexFileName}
	if got := dirNames(t, dir); !reflect.DeepEqual(got, wantFiles) {
		t.Fatalf("files %v, want %v", got, wantFiles)
	}
	// transformers writes json.dumps(index, indent=2, sort_keys=True) + "\n".
	wantIndex := `{
  "metadata": {
    "total_size": 88
  },
  "weight_map": {
    "a": "` + s1 + `",
    "b": "` + s1 + `",
    "c": "` + s2 + `",
    "d": "` + s3 + `",
    "e": "` + s3 + `"
  }
}
`
	if got, _ := os.ReadFile(filepath.Join(dir, IndexFileName)); string(got) != wantIndex {
		t.Errorf("index:\n%s\nwant:\n%s", got, wantIndex)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Names(); !reflect.DeepEqual(got, []string{"a", "b", "c", "d", "e"}) {
		t.Errorf("Names = %v", got)
	}
	if got := r.Metadata(); !reflect.DeepEqual(got, map[string]string{"format": "pt"}) {
		t.Errorf("Metadata = %v", got)
	}
	wantFile := map[string]string{"a": s1, "b": s1, "c": s2, "d": s3, "e": s3}
	for _, ten := range tensors {
		info, _ := r.Info(ten.Name)
		if info.File != filepath.Join(dir, wantFile[ten.Name]) {
			t.Errorf("%s in %s, want %s", ten.Name, info.File, wantFile[ten.Name])
		}
		if b, err := r.Bytes(ten.Name); err != nil || !bytes.Equal(b, ten.Data) {
			t.Errorf("Bytes(%s) = %v, %v", ten.Name, b, err)
		}
	}
	r.Close()
	// Each shard is a complete safetensors file of its own.
	r, err = Open(filepath.Join(dir, s3))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Names(); !reflect.DeepEqual(got, []string{"d", "e"}) {
		t.Errorf("shard 3 names %v", got)
	}
	r.Close()

	// Saving a checkpoint that fits one shard replaces the sharded one.
	small := []Tensor{u8s("z", 4, 9)}
	if err := WriteSharded(dir, small, nil, 32); err != nil {
		t.Fatal(err)
	}
	if got := dirNames(t, dir); !reflect.DeepEqual(got, []string{"config.json", SingleFileName}) {
		t.Fatalf("after single save: files %v", got)
	}
	r, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Names(); !reflect.DeepEqual(got, []string{"z"}) {
		t.Errorf("Names = %v", got)
	}
	r.Close()

	// And sharding again removes model.safetensors.
	if err := WriteSharded(dir, []Tensor{u8s("p", 20, 1), u8s("q", 20, 2)}, nil, 32); err != nil {
		t.Fatal(err)
	}
	want := []string{"config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", IndexFileName}
	if got := dirNames(t, dir); !reflect.DeepEqual(got, want) {
		t.Errorf("after resharding: files %v, want %v", got, want)
	}
}

func TestWriteShardedRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	if err := WriteSharded(dir, []Tensor{u8s("a", 1, 1)}, nil, 0); err == nil {
		t.Error("max shard size 0 accepted")
	}
	bad := []Tensor{{Name: "bad", DType: F32, Shape: []int64{1}, Data: []byte{1}}}
	if err := WriteSharded(dir, bad, nil, 32); err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Errorf("err %v, want one naming the tensor", err)
	}
	if got := dirNames(t, dir); len(got) != 0 {
		t.Errorf("a rejected save wrote %v", got)
	}
}
