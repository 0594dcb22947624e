package safetensors

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestFillWritesTheSameFile: a file whose tensors come from Fill is byte
// for byte the file written from Data, sharded or not, and Fill is given
// exactly the tensor's size.
func TestFillWritesTheSameFile(t *testing.T) {
	dir := t.TempDir()
	var eager, lazy []Tensor
	for i, n := range []int{3, 40, 7, 0} {
		data := make([]byte, 4*n)
		for j := range data {
			data[j] = byte(i*31 + j)
		}
		name := string(rune('a'+i)) + ".weight"
		shape := []int64{int64(n)}
		eager = append(eager, Tensor{Name: name, DType: F32, Shape: shape, Data: data})
		lazy = append(lazy, Tensor{Name: name, DType: F32, Shape: shape, Fill: func(dst []byte) error {
			if len(dst) != len(data) {
				t.Errorf("%s: Fill got %d bytes, want %d", name, len(dst), len(data))
			}
			copy(dst, data)
			return nil
		}})
	}
	meta := map[string]string{"format": "pt"}
	for _, max := range []int64{1 << 20, 100} { // one file; then shards
		a, b := filepath.Join(dir, "eager"), filepath.Join(dir, "lazy")
		if err := WriteSharded(a, eager, meta, max); err != nil {
			t.Fatal(err)
		}
		if err := WriteSharded(b, lazy, meta, max); err != nil {
			t.Fatal(err)
		}
		ents, _ := os.ReadDir(a)
		if max == 100 && len(ents) < 3 {
			t.Fatalf("max %d: %d files, want shards and an index", max, len(ents))
		}
		for _, e := range ents {
			x, _ := os.ReadFile(filepath.Join(a, e.Name()))
			y, err := os.ReadFile(filepath.Join(b, e.Name()))
			if err != nil || !bytes.Equal(x, y) {
				t.Errorf("max %d: %s differs between Data and Fill (%v)", max, e.Name(), err)
			}
		}
		os.RemoveAll(a)
		os.RemoveAll(b)
	}
}

// TestFillHoldsOneTensor: writing 16 tensors of 4 MiB from Fill allocates
// one tensor's buffer (and the file writer's 1 MiB), not the file's 64 MiB.
func TestFillHoldsOneTensor(t *testing.T) {
	const n, each = 16, 4 << 20
	var ts []Tensor
	for i := range n {
		ts = append(ts, Tensor{Name: "t" + string(rune('a'+i)), DType: U8, Shape: []int64{each}, Fill: func(dst []byte) error {
			for j := range dst {
				dst[j] = byte(i)
			}
			return nil
		}})
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := Write(filepath.Join(t.TempDir(), "x.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*each {
		t.Errorf("writing %d tensors of %d bytes allocated %d bytes: want about one tensor's", n, each, got)
	}
}

// TestFillErrorNamesTheTensor: a failing Fill fails the write, naming the
// tensor, and leaves no file.
func TestFillErrorNamesTheTensor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	ts := []Tensor{{Name: "bad", DType: F32, Shape: []int64{2}, Fill: func([]byte) error { return errors.New("device lost") }}}
	err := Write(path, ts, nil)
	if err == nil || !strings.Contains(err.Error(), `"bad"`) || !strings.Contains(err.Error(), "device lost") {
		t.Fatalf("err = %v, want one naming the tensor and the cause", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a failed write left %s (%v)", path, err)
	}
}
