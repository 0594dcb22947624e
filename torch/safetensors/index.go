package safetensors

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/agentrl/agentrl/internal/atomicfile"
	"github.com/agentrl/agentrl/internal/regular"
)

// IndexFileName is the file that maps tensor names to shards in a sharded
// model folder.
const IndexFileName = "model.safetensors.index.json"

// index is the content of model.safetensors.index.json.
type index struct {
	Metadata  map[string]any    `json:"metadata"`
	WeightMap map[string]string `json:"weight_map"`
}

// shardFileName returns HF's name for shard i (1-based) of n.
func shardFileName(i, n int) string {
	return fmt.Sprintf("model-%05d-of-%05d.safetensors", i, n)
}

// addIndexed opens the shards listed by an index file and makes the
// tensors of its weight_map available.
func (r *Reader) addIndexed(path string) error {
	raw, err := regular.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read index %s: %w", path, err)
	}
	var idx index
	if err := json.Unmarshal(raw, &idx); err != nil {
		return fmt.Errorf("index %s: bad JSON: %w", path, err)
	}
	if len(idx.WeightMap) == 0 {
		return fmt.Errorf("index %s: empty or missing weight_map", path)
	}
	names := make([]string, 0, len(idx.WeightMap))
	for name := range idx.WeightMap {
		names = append(names, name)
	}
	sort.Strings(names)
	dir := filepath.Dir(path)
	shards := map[string]*shard{}
	for _, name := range names {
		file := idx.WeightMap[name]
		if file == "" || file != filepath.Base(file) || file == "." || file == ".." {
			return fmt.Errorf("index %s: tensor %q: shard %q is not a file name in the folder", path, name, file)
		}
		s, ok := shards[file]
		if !ok {
			if s, err = r.openShard(filepath.Join(dir, file)); err != nil {
				return fmt.Errorf("index %s: tensor %q: %w", path, name, err)
			}
			shards[file] = s
		}
		if err := r.add(s, name); err != nil {
			return fmt.Errorf("index %s: %w", path, err)
		}
	}
	return nil
}

// writeIndex writes the index as transformers does: two-space indented
// JSON with sorted keys and a final newline.
func writeIndex(path string, totalSize int64, weightMap map[string]string) error {
	idx := index{Metadata: map[string]any{"total_size": totalSize}, WeightMap: weightMap}
	buf, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return fmt.Errorf("encode index %s: %w", path, err)
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(append(buf, '\n'))
		return err
	})
}
