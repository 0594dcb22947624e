package safetensors

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/agentrl/agentrl/internal/atomicfile"
)

// Tensor is a tensor to write: Data holds its raw little-endian bytes,
// exactly DType.Size() times the element count of Shape. When Data is nil
// and Fill is set, the writer calls Fill with a buffer of that size when
// the tensor's turn comes and writes what it put there: a file of such
// tensors holds one tensor's bytes in memory at a time, not the whole
// file's (the buffer is reused from tensor to tensor).
type Tensor struct {
	Name  string
	DType DType
	Shape []int64
	Data  []byte
	Fill  func(dst []byte) error
}

// filled reports whether the writer gets the tensor's bytes from Fill.
func (t Tensor) filled() bool { return t.Data == nil && t.Fill != nil }

// size is the number of data bytes the tensor takes in the file.
func (t Tensor) size() int64 {
	if t.filled() {
		n, _ := byteSize(t.DType, t.Shape) // checked by checkTensors
		return n
	}
	return int64(len(t.Data))
}

// Write writes tensors and metadata (nil or empty for none) to one
// .safetensors file laid out as HF's writer does: tensors by descending
// dtype alignment then by name, header padded to 8 bytes. The file is
// written atomically.
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	sorted, err := checkTensors(tensors)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	sort.SliceStable(sorted, func(i, j int) bool {
		ri, rj := dtypeRank[sorted[i].DType], dtypeRank[sorted[j].DType]
		if ri != rj {
			return ri > rj
		}
		return sorted[i].Name < sorted[j].Name
	})
	entries := make([]headerEntry, len(sorted))
	var off, largestFill int64
	for i, t := range sorted {
		n := t.size()
		entries[i] = headerEntry{name: t.Name, dtype: t.DType, shape: t.Shape, begin: off, end: off + n}
		off += n
		if t.filled() {
			largestFill = max(largestFill, n)
		}
	}
	head := encodeHeader(entries, metadata)
	return atomicfile.Write(path, func(w io.Writer) error {
		var prefix [8]byte
		binary.LittleEndian.PutUint64(prefix[:], uint64(len(head)))
		if _, err := w.Write(prefix[:]); err != nil {
			return err
		}
		if _, err := w.Write(head); err != nil {
			return err
		}
		var buf []byte
		if largestFill > 0 {
			buf = make([]byte, largestFill)
		}
		for _, t := range sorted {
			data := t.Data
			if t.filled() {
				data = buf[:t.size()]
				if err := t.Fill(data); err != nil {
					return fmt.Errorf("tensor %q: %w", t.Name, err)
				}
			}
			if _, err := w.Write(data); err != nil {
				return err
			}
		}
		return nil
	})
}

// checkTensors validates names, dtypes and data sizes, and returns a copy
// of the slice sorted by name.
func checkTensors(tensors []Tensor) ([]Tensor, error) {
	out := append([]Tensor(nil), tensors...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i, t := range out {
		if t.Name == "" || t.Name == metadataKey {
			return nil, fmt.Errorf("invalid tensor name %q", t.Name)
		}
		if i > 0 && out[i-1].Name == t.Name {
			return nil, fmt.Errorf("tensor %q given twice", t.Name)
		}
		if err := t.DType.valid(); err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		want, err := byteSize(t.DType, t.Shape)
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if t.filled() {
			continue
		}
		if int64(len(t.Data)) != want {
			return nil, fmt.Errorf("tensor %q: %d data bytes, but %s %v needs %d", t.Name, len(t.Data), t.DType, t.Shape, want)
		}
	}
	return out, nil
}

// shardPattern matches HF shard file names.
var shardPattern = regexp.MustCompile(`^model-\d{5}-of-\d{5}\.safetensors$`)

// WriteSharded writes a model folder's weights as transformers does:
// model.safetensors when all tensors fit in maxShardBytes, else shards
// model-0000i-of-0000n.safetensors of at most maxShardBytes of tensor data
// each (a larger tensor gets a shard of its own) plus
// model.safetensors.index.json. Each shard carries metadata. Weight files
// left in dir by an earlier save that are not part of this one are removed
// once the new files are in place.
func WriteSharded(dir string, tensors []Tensor, metadata map[string]string, maxShardBytes int64) error {
	if maxShardBytes <= 0 {
		return fmt.Errorf("write sharded %s: max shard size %d must be positive", dir, maxShardBytes)
	}
	sorted, err := checkTensors(tensors)
	if err != nil {
		return fmt.Errorf("write sharded %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write sharded %s: %w", dir, err)
	}
	shards := planShards(sorted, maxShardBytes)
	keep := map[string]bool{}
	if len(shards) == 1 {
		if err := Write(filepath.Join(dir, SingleFileName), shards[0], metadata); err != nil {
			return err
		}
		keep[SingleFileName] = true
	} else {
		weightMap := map[string]string{}
		var total int64
		for i, shard := range shards {
			name := shardFileName(i+1, len(shards))
			if err := Write(filepath.Join(dir, name), shard, metadata); err != nil {
				return err
			}
			keep[name] = true
			for _, t := range shard {
				weightMap[t.Name] = name
				total += t.size()
			}
		}
		if err := writeIndex(filepath.Join(dir, IndexFileName), total, weightMap); err != nil {
			return err
		}
		keep[IndexFileName] = true
	}
	return removeStale(dir, keep)
}

// planShards splits name-sorted tensors greedily into shards of at most
// maxBytes data bytes; there is always at least one shard.
func planShards(tensors []Tensor, maxBytes int64) [][]Tensor {
	shards := [][]Tensor{nil}
	var size int64
	for _, t := range tensors {
		n := t.size()
		last := len(shards) - 1
		if len(shards[last]) > 0 && size+n > maxBytes {
			shards = append(shards, nil)
			last++
			size = 0
		}
		shards[last] = append(shards[last], t)
		size += n
	}
	return shards
}

// removeStale deletes checkpoint weight files in dir that are not in keep.
func removeStale(dir string, keep map[string]bool) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("clean %s: %w", dir, err)
	}
	for _, e := range ents {
		name := e.Name()
		stale := name == SingleFileName || name == IndexFileName || shardPattern.MatchString(name)
		if stale && !keep[name] {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("remove stale %s: %w", filepath.Join(dir, name), err)
			}
		}
	}
	return nil
}
