package torch

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A profile of a tiny model's training forward and backward on the CPU
// names the operators such a step runs (matrix products, and the
// gradients of the backward pass), counts them, and reduces them to self
// times whose shares sum to 100%; its table parses back to the same.
func TestRecordProfileForwardBackward(t *testing.T) {
	m, err := NewRandomModel(tinyConfig(), Float32, CPU, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	const B, T = 2, 8
	b := Batch{B: B, T: T}
	for i := 0; i < B; i++ {
		b.IDs = append(b.IDs, seq(T, int64(i+1))...)
		for j := 0; j < T; j++ {
			b.Attn, b.Positions = append(b.Attn, 1), append(b.Positions, int64(j))
		}
	}
	p, err := RecordProfile(false, func() error {
		s := NewScope()
		defer s.Close()
		o, err := m.Forward(b, ForwardOptions{Temperature: 1, Grad: true})
		if err != nil {
			return err
		}
		s.Own(o.LogProbs)
		return s.Sum(o.LogProbs).Backward()
	})
	if err != nil {
		if strings.Contains(err.Error(), "profile_") {
			t.Skipf("the linked libtorch cannot record a profile here: %v", err)
		}
		t.Fatal(err)
	}
	if len(p.Entries) == 0 {
		t.Skip("the linked libtorch's profiler recorded no events (built without its profiler?)")
	}
	byName := map[string]ProfileEntry{}
	var sum float64
	for _, e := range p.Entries {
		if e.CUDA {
			t.Fatalf("a CPU profile has a CUDA entry: %+v", e)
		}
		if e.Calls <= 0 || e.Self < 0 || e.Self > e.Total {
			t.Fatalf("entry %+v: want calls > 0 and 0 <= self <= total", e)
		}
		byName[e.Name] = e
		sum += float64(e.Self)
	}
	// The products: aten::mm (and aten::matmul, aten::linear above it) in
	// the forward and the backward; the backward's nodes are autograd's.
	products := 0
	for _, n := range []string{"aten::mm", "aten::matmul", "aten::linear", "aten::addmm", "aten::bmm"} {
		if e, ok := byName[n]; ok && e.Calls > 0 {
			products++
		}
	}
	if products == 0 {
		t.Fatalf("no matrix product operator among %d entries: %v", len(p.Entries), names(p.Entries))
	}
	backward := false
	for n := range byName {
		if strings.Contains(n, "Backward") {
			backward = true
		}
	}
	if !backward {
		t.Fatalf("no autograd backward node among the entries: %v", names(p.Entries))
	}
	if sum <= 0 {
		t.Fatal("the entries' self times sum to 0")
	}
	for i := 1; i < len(p.Entries); i++ {
		if p.Entries[i].Self > p.Entries[i-1].Self {
			t.Fatalf("entries not sorted by self time: %+v before %+v", p.Entries[i-1], p.Entries[i])
		}
	}

	// The table: the top rows, one more for the rest; shares sum to 100%.
	const top = 5
	tab := p.Table("### tiny forward and backward", top)
	var shares float64
	rows := 0
	for _, line := range strings.Split(tab, "\n") {
		if !strings.HasPrefix(line, "| `") && !strings.HasPrefix(line, "| (") {
			continue
		}
		rows++
		cells := strings.Split(line, " | ")
		v, err := strconv.ParseFloat(strings.TrimSuffix(cells[1], "%"), 64)
		if err != nil {
			t.Fatalf("share of row %q: %v", line, err)
		}
		shares += v
	}
	if want := min(top, len(p.Entries)) + boolInt(len(p.Entries) > top); rows != want {
		t.Fatalf("table has %d rows, want %d:\n%s", rows, want, tab)
	}
	if math.Abs(shares-100) > 0.1*float64(rows) {
		t.Fatalf("shares sum to %.2f%%, want 100%%:\n%s", shares, tab)
	}
	if !strings.Contains(tab, "`"+p.Entries[0].Name+"`") || !strings.Contains(tab, "operator (CPU)") {
		t.Fatalf("table lacks the top operator %s:\n%s", p.Entries[0].Name, tab)
	}
	t.Logf("\n%s", tab)

	// A CUDA profile in a CPU build is refused, naming the build.
	if BuildKind != "cuda" {
		_, err := RecordProfile(true, func() error { return nil })
		if err == nil || !strings.Contains(err.Error(), "no CUDA") {
			t.Fatalf("a CUDA profile in a CPU build: %v, want a refusal naming CUDA", err)
		}
	}
}

func names(es []ProfileEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name)
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A CUDA profile's table lists its kernels alone, by self time, with
// shares, averages and a row for the rest worked out by hand; a name with
// '|' stays in its cell; a profile without kernels says so.
func TestProfileTable(t *testing.T) {
	us := time.Microsecond
	p := Profile{CUDA: true, Entries: []ProfileEntry{
		{Name: "gemm<a|b>", CUDA: true, Calls: 4, Total: 600 * us, Self: 600 * us},
		{Name: "aten::mm", Calls: 4, Total: 900 * us, Self: 900 * us}, // a CPU operator: left out
		{Name: "softmax", CUDA: true, Calls: 2, Total: 300 * us, Self: 300 * us},
		{Name: "copy", CUDA: true, Calls: 5, Total: 60 * us, Self: 60 * us},
		{Name: "fill", CUDA: true, Calls: 1, Total: 40 * us, Self: 40 * us},
	}}
	// Kernels: 600 + 300 + 60 + 40 = 1000 us; the top 2 are 60% and 30%,
	// the other two 10% in 6 calls.
	want := "### t\n\n4 kernel names, 1.000 ms in all (self time)\n\n" +
		"| kernel (CUDA) | share | calls | self ms | avg µs | total ms |\n|---|---:|---:|---:|---:|---:|\n" +
		"| `gemm<a\\|b>` | 60.0% | 4 | 0.600 | 150.0 | 0.600 |\n" +
		"| `softmax` | 30.0% | 2 | 0.300 | 150.0 | 0.300 |\n" +
		"| (2 others) | 10.0% | 6 | 0.100 | | |\n"
	if got := p.Table("### t", 2); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	if got := (Profile{CUDA: true, Entries: p.Entries[1:2]}).Table("### t", 2); !strings.Contains(got, "no kernel events") {
		t.Errorf("a CUDA profile without kernels:\n%s", got)
	}
}
