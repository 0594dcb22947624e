package safetensors

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/agentrl/agentrl/internal/fixtures"
)

// qwen2TinyShapes derives the tensor shapes of a Qwen2 checkpoint from
// its config: vocab 384, hidden 64, intermediate 160, 2 layers, 4 heads
// and 2 kv heads of head_dim 16, untied lm_head. q_proj is
// [heads*head_dim, hidden] = [64, 64]; k and v are
// [kv_heads*head_dim, hidden] = [32, 64] with biases [32].
func qwen2TinyShapes() map[string][]int64 {
	const vocab, hidden, inter, layers, heads, kvHeads, headDim = 384, 64, 160, 2, 4, 2, 16
	s := map[string][]int64{
		"model.embed_tokens.weight": {vocab, hidden},
		"model.norm.weight":         {hidden},
		"lm_head.weight":            {vocab, hidden},
	}
	for i := 0; i < layers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		s[p+"input_layernorm.weight"] = []int64{hidden}
		s[p+"post_attention_layernorm.weight"] = []int64{hidden}
		s[p+"self_attn.q_proj.weight"] = []int64{heads * headDim, hidden}
		s[p+"self_attn.q_proj.bias"] = []int64{heads * headDim}
		s[p+"self_attn.k_proj.weight"] = []int64{kvHeads * headDim, hidden}
		s[p+"self_attn.k_proj.bias"] = []int64{kvHeads * headDim}
		s[p+"self_attn.v_proj.weight"] = []int64{kvHeads * headDim, hidden}
		s[p+"self_attn.v_proj.bias"] = []int64{kvHeads * headDim}
		s[p+"self_attn.o_proj.weight"] = []int64{hidden, heads * headDim}
		s[p+"mlp.gate_proj.weight"] = []int64{inter, hidden}
		s[p+"mlp.up_proj.weight"] = []int64{inter, hidden}
		s[p+"mlp.down_proj.weight"] = []int64{hidden, inter}
	}
	return s
}

func TestQwen2TinyFixture(t *testing.T) {
	dir := fixtures.Path(t, "fixtures", "qwen2-tiny-a")
	path := filepath.Join(dir, SingleFileName)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases struct {
		SHA string `json:"model_safetensors_sha256"`
	}
	cj, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(cj, &cases); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != cases.SHA {
		t.Fatalf("sha256 %s, cases.json says %s", got, cases.SHA)
	}

	r, err := Open(dir) // the folder holds model.safetensors only
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := qwen2TinyShapes()
	var wantNames []string
	for n := range want {
		wantNames = append(wantNames, n)
	}
	sort.Strings(wantNames)
	if got := r.Names(); !reflect.DeepEqual(got, wantNames) {
		t.Fatalf("names %v\nwant %v", got, wantNames)
	}
	if got := r.Metadata(); !reflect.DeepEqual(got, map[string]string{"format": "pt"}) {
		t.Errorf("metadata %v", got)
	}
	var tensors []Tensor
	for _, name := range wantNames {
		info, _ := r.Info(name)
		if info.DType != F32 || !reflect.DeepEqual(info.Shape, want[name]) || info.File != path {
			t.Errorf("%s: %s %v in %s, want F32 %v", name, info.DType, info.Shape, info.File, want[name])
		}
		b, err := r.Bytes(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := r.Float32s(name)
		if err != nil || len(f)*4 != len(b) {
			t.Fatalf("Float32s(%s): %d values, %v", name, len(f), err)
		}
		tensors = append(tensors, Tensor{Name: name, DType: info.DType, Shape: info.Shape, Data: b})
	}

	// The file was written by HF's safetensors: writing its tensors and
	// metadata back must reproduce it byte for byte.
	out := filepath.Join(t.TempDir(), SingleFileName)
	if err := Write(out, tensors, r.Metadata()); err != nil {
		t.Fatal(err)
	}
	again, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, raw) {
		t.Errorf("rewritten file differs from the HF-written fixture (%d vs %d bytes)", len(again), len(raw))
	}
}
