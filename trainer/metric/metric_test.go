package metric

import "testing"

// Every declared name is unique and documented, every charted key is
// declared, and the prefixes apply to the episode metrics only.
func TestDeclarations(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Defs {
		if seen[d.Name] || d.Doc == "" {
			t.Errorf("%q: declared twice or without a doc", d.Name)
		}
		seen[d.Name] = true
	}
	for _, c := range Charts {
		for _, s := range c.Keys {
			if !Declared(s.Key) || !Plotted(s.Key) {
				t.Errorf("chart %s draws %q, which is not declared", c.File, s.Key)
			}
		}
	}
	for name, want := range map[string]bool{
		"reward_mean": true, "eval/reward_mean": true, "baseline/naive_rag/em": true, "eval/em_hop3": true,
		"eval/grad_norm": false, "grad_norm": true, "no_such_metric": false, "em_hopx": false, "eval/evidence_recall_hop2": true, "evidence_recall": true, "evidence_recall_hopx": false,
	} {
		if got := Declared(name); got != want {
			t.Errorf("Declared(%q) = %v, want %v", name, got, want)
		}
	}
	if Plotted(GradNorm) || !Plotted(Entropy) {
		t.Error("Plotted: grad_norm is not drawn, entropy is")
	}
}
