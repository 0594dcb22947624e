package torch

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// bf16Reference is a fixture's bf16.json (scripts/gpu/fixture.py): how far
// transformers' own bf16 forward lands from the float64 logits of the
// fixture's full case, over its unpadded positions.
type bf16Reference struct {
	Case    string    `json:"case"`
	MaxDiff float64   `json:"transformers_bf16_max_abs_diff"`
	Argmax  [][]int64 `json:"transformers_bf16_argmax"`
	Scale   float64   `json:"reference_max_abs_logit"`
}

// TestBF16FixtureParity loads the fixture in $AGENTRL_BF16_FIXTURE (one
// that scripts/gpu/fixture.py wrote, with bf16.json) in bf16 on
// $AGENTRL_TEST_DEVICE and holds its logits to the float64 reference: over
// the unpadded positions of the full case, agentrl's largest difference
// must be at most twice transformers' own in bf16. bf16 keeps 8 bits of
// mantissa, so no fixed tolerance suits every model; the library's own
// bf16 forward is the yardstick.
func TestBF16FixtureParity(t *testing.T) {
	dir := os.Getenv("AGENTRL_BF16_FIXTURE")
	if dir == "" {
		t.Skip("AGENTRL_BF16_FIXTURE is unset: scripts/gpu-check.sh sets it to a fixture written by scripts/gpu/fixture.py")
	}
	b, err := os.ReadFile(filepath.Join(dir, "bf16.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref bf16Reference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatalf("%s/bf16.json: %v", dir, err)
	}
	var c *fixtureCase
	cases := loadCases(t, dir)
	for i := range cases {
		if cases[i].Name == ref.Case {
			c = &cases[i]
		}
	}
	if c == nil || ref.MaxDiff <= 0 {
		t.Fatalf("%s/bf16.json: case %q (difference %g) not among the fixture's cases", dir, ref.Case, ref.MaxDiff)
	}
	dev := testDevice(t)
	m, err := LoadModel(dir, BFloat16, dev, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	V := m.Config.Vocab
	B, T := len(c.InputIDs), len(c.InputIDs[0])
	got := caseLogits(t, m, *c)
	worst := 0.0
	var same, n int
	for b := 0; b < B; b++ {
		for p := 0; p < T; p++ {
			if c.AttentionMask[b][p] == 0 {
				continue
			}
			row := got[(b*T+p)*V : (b*T+p+1)*V]
			worst = math.Max(worst, maxDiff(row, c.Logits[b][p]))
			best := 0
			for i, v := range row {
				if v > row[best] {
					best = i
				}
			}
			n++
			if int64(best) == ref.Argmax[b][p] {
				same++
			}
		}
	}
	t.Logf("%s on %s, bf16: max |diff| to float64 %.3e (transformers bf16: %.3e; largest reference logit %.3g); argmax equal to transformers' bf16 at %d of %d positions",
		dir, dev, worst, ref.MaxDiff, ref.Scale, same, n)
	if worst > 2*ref.MaxDiff {
		t.Fatalf("agentrl's bf16 logits are %.3e from float64, more than twice transformers' bf16 (%.3e)", worst, ref.MaxDiff)
	}
}
