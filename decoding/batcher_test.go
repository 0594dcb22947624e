package decoding

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// countingDecoder samples token 10*slot+k at a slot's k-th step (logprob
// -k), records every call, and fails Step when fail is set.
type countingDecoder struct {
	slots int
	calls []string
	steps map[int]int
	fail  error
}

func (d *countingDecoder) Slots() int                               { return d.slots }
func (d *countingDecoder) MaxLen() int                              { return 64 }
func (d *countingDecoder) Prefill(int, []int64) error               { return nil }
func (d *countingDecoder) PrefillBatch(sl []int, _ [][]int64) error { return nil }
func (d *countingDecoder) Seed(int, uint64) error                   { return nil }
func (d *countingDecoder) CopySlot(src, dst int) error {
	d.calls = append(d.calls, fmt.Sprintf("copy %d->%d", src, dst))
	return nil
}
func (d *countingDecoder) Release(slot int) error {
	d.calls = append(d.calls, fmt.Sprintf("release %d", slot))
	return nil
}
func (d *countingDecoder) Step(slots []int, s Sampling, tokens []int64, logprobs []float32) error {
	d.calls = append(d.calls, fmt.Sprintf("step %v", slots))
	if d.fail != nil {
		return d.fail
	}
	for i, sl := range slots {
		k := d.steps[sl]
		d.steps[sl]++
		tokens[i], logprobs[i] = int64(10*sl+k), -float32(k)
	}
	return nil
}

// A slot goes free -> active -> parked -> active -> free; only active
// slots decode, Busy counts them, and the steps' counts are those of the
// successful calls.
func TestBatcherSlotLifecycle(t *testing.T) {
	d := &countingDecoder{slots: 4, steps: map[int]int{}}
	b := NewBatcher[string](d)
	if got := b.Free(3); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("Free(3) of 4 free slots = %v, want [0 1 2]", got)
	}
	x, y := "x", "y"
	b.Activate(1, &x)
	b.Activate(3, &y)
	if got := b.Free(4); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("Free(4) with slots 1 and 3 claimed = %v, want [0 2]", got)
	}
	if b.Busy() != 2 || b.At(1) != &x || b.At(3) != &y || b.At(0) != nil {
		t.Fatalf("after two activations: busy %d, at(1) %v, at(3) %v", b.Busy(), b.At(1), b.At(3))
	}
	if err := b.Share(1, []int{0, 2}); err != nil {
		t.Fatal(err)
	}

	toks, lps, err := b.Step(b.Active(), Sampling{Temperature: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(toks, []int64{10, 30}) || !slices.Equal(lps, []float32{0, 0}) {
		t.Fatalf("first step: tokens %v logprobs %v, want [10 30] [0 0]", toks, lps)
	}

	b.Park(3) // y waits for a tool: claimed, not decoding
	if b.Busy() != 1 || b.At(3) != nil {
		t.Fatalf("after parking slot 3: busy %d, at(3) %v", b.Busy(), b.At(3))
	}
	if got := b.Free(4); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("a parked slot is not free: Free(4) = %v, want [0 2]", got)
	}
	if toks, _, _ = b.Step(b.Active(), Sampling{}); !slices.Equal(toks, []int64{11}) {
		t.Fatalf("step with slot 3 parked: tokens %v, want [11]", toks)
	}
	if err := b.Clear(3); err != nil {
		t.Fatal(err)
	}
	b.Activate(3, &y)
	b.Park(3)
	b.Park(3) // parking a parked slot changes nothing
	b.Activate(3, &y)
	if b.Busy() != 2 {
		t.Fatalf("slot 3 resumed: busy %d, want 2", b.Busy())
	}
	if toks, lps, _ = b.Step(b.Active(), Sampling{}); !slices.Equal(toks, []int64{12, 31}) || !slices.Equal(lps, []float32{-2, -1}) {
		t.Fatalf("third step: tokens %v logprobs %v, want [12 31] [-2 -1]", toks, lps)
	}

	d.fail = errors.New("device lost")
	if _, _, err := b.Step(b.Active(), Sampling{}); !errors.Is(err, d.fail) {
		t.Fatalf("failing step: error %v, want the decoder's", err)
	}
	if steps, gen := b.Stats(); steps != 3 || gen != 5 {
		t.Fatalf("stats: %d steps, %d tokens; want 3 and 5 (the failed call not counted)", steps, gen)
	}

	if err := b.Release(1); err != nil {
		t.Fatal(err)
	}
	b.Park(3)
	if err := b.Release(3); err != nil { // a parked slot is released too
		t.Fatal(err)
	}
	if b.Busy() != 0 || len(b.Active()) != 0 {
		t.Fatalf("all released: busy %d, active %v", b.Busy(), b.Active())
	}
	if got := b.Free(4); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("all released: Free(4) = %v", got)
	}
	want := []string{"copy 1->0", "copy 1->2", "step [1 3]", "step [1]", "release 3", "step [1 3]", "step [1 3]", "release 1", "release 3"}
	if !slices.Equal(d.calls, want) {
		t.Fatalf("decoder calls\n%v\nwant\n%v", d.calls, want)
	}
}
