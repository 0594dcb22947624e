package decoding

import (
	"fmt"
	"slices"
	"testing"
)

// countingDecoder samples token 10*slot+k at a slot's k-th step (logprob
// -k), records every call but Seed, and fails PrefillBatch when
// failPrefill is set, Step when fail is.
type countingDecoder struct {
	slots       int
	calls       []string
	steps       map[int]int
	fail        error
	failPrefill error
}

func (d *countingDecoder) Slots() int                 { return d.slots }
func (d *countingDecoder) MaxLen() int                { return 64 }
func (d *countingDecoder) Prefill(int, []int64) error { return nil }
func (d *countingDecoder) Seed(int, uint64) error     { return nil }
func (d *countingDecoder) CopySlot(src, dst int) error {
	d.calls = append(d.calls, fmt.Sprintf("copy %d->%d", src, dst))
	return nil
}
func (d *countingDecoder) Release(slot int) error {
	d.calls = append(d.calls, fmt.Sprintf("release %d", slot))
	return nil
}
func (d *countingDecoder) PrefillBatch(slots []int, ids [][]int64) error {
	d.calls = append(d.calls, fmt.Sprintf("prefill %v", slots))
	return d.failPrefill
}
func (d *countingDecoder) Step(slots []int, s Sampling, tokens []int64, logprobs []float32) error {
	d.calls = append(d.calls, fmt.Sprintf("step %v t=%g", slots, s.Temperature))
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
// slots are listed by Active, and Busy counts them.
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
	if got := b.Active(); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("Active() = %v, want [1 3]", got)
	}

	b.Park(3) // y waits for a tool: claimed, not decoding
	if b.Busy() != 1 || b.At(3) != nil {
		t.Fatalf("after parking slot 3: busy %d, at(3) %v", b.Busy(), b.At(3))
	}
	if got := b.Free(4); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("a parked slot is not free: Free(4) = %v, want [0 2]", got)
	}
	if got := b.Active(); !slices.Equal(got, []int{1}) {
		t.Fatalf("slot 3 parked: Active() = %v, want [1]", got)
	}
	if err := b.Clear(3); err != nil {
		t.Fatal(err)
	}
	b.Activate(3, &y)
	b.Park(3)
	b.Park(3) // parking a parked slot changes nothing
	b.Activate(3, &y)
	if b.Busy() != 2 || !slices.Equal(b.Active(), []int{1, 3}) {
		t.Fatalf("slot 3 resumed: busy %d, active %v, want 2 and [1 3]", b.Busy(), b.Active())
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
	want := []string{"copy 1->0", "copy 1->2", "release 3", "release 1", "release 3"}
	if !slices.Equal(d.calls, want) {
		t.Fatalf("decoder calls\n%v\nwant\n%v", d.calls, want)
	}
}
