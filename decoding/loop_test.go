package decoding

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// seq is a scripted sequence: it decodes with temperature temp until it
// has want tokens; with tool set it parks after its first token until its
// reply arrives on the policy's replies.
type seq struct {
	name   string
	temp   float64
	want   int
	tool   bool
	slot   int
	tokens []int64
}

// script is a Policy over seqs that records what the loop asked of it.
type script struct {
	l       *Loop[seq]
	queue   []*seq
	replies chan *seq
	inTool  int
	failErr error // what Failed returns
	failed  []string
	stopped error
}

func (p *script) Admit() error {
	for len(p.queue) > 0 {
		free := p.l.Free(1)
		if len(free) == 0 {
			return nil
		}
		x := p.queue[0]
		p.queue, x.slot = p.queue[1:], free[0]
		p.l.Activate(x.slot, x)
		p.l.Prefill(x.slot, []int32{1, 2, 3}, x.name, nil)
	}
	return nil
}

func (p *script) Arrive() error {
	for {
		select {
		case x := <-p.replies:
			p.resume(x)
		default:
			return nil
		}
	}
}

// resume queues a reply's observation; x decodes again once it is cached.
func (p *script) resume(x *seq) {
	p.inTool--
	p.l.Prefill(x.slot, []int32{7, 7}, "reply of "+x.name, func() error {
		p.l.Activate(x.slot, x)
		return nil
	})
}

func (p *script) Wait(ctx context.Context) (bool, error) {
	if p.inTool == 0 {
		return len(p.queue) == 0, nil
	}
	p.resume(<-p.replies)
	return false, nil
}

func (p *script) Sampling(x *seq) Sampling     { return Sampling{Temperature: x.temp} }
func (p *script) BeforeStep(slots []int) error { return nil }

func (p *script) Sampled(slots []int, toks []int64, lps []float32) error {
	for i, sl := range slots {
		x := p.l.At(sl)
		x.tokens = append(x.tokens, toks[i])
		switch {
		case len(x.tokens) >= x.want:
			p.l.Release(sl)
		case x.tool && len(x.tokens) == 1:
			p.l.Park(sl)
			p.inTool++
			go func() { p.replies <- x }()
		}
	}
	return nil
}

func (p *script) Failed(slots []int, err error) error {
	for _, sl := range slots {
		p.failed = append(p.failed, p.l.At(sl).name+": "+err.Error())
		p.l.Release(sl)
	}
	return p.failErr
}

func (p *script) Stop(err error) error {
	p.stopped = err
	return err
}

func newScript(d Decoder, xs ...*seq) *script {
	p := &script{queue: xs, replies: make(chan *seq, len(xs))}
	p.l = NewLoop[seq](d, p)
	return p
}

// Two slots, three sequences: the first two are admitted and prefilled in
// one call, decode in one call per temperature, and the third takes the
// slot the second frees, joining the first in one call at their common
// temperature; the loop ends when nothing is left. Stats count the calls.
func TestLoopAdmitsPrefillsStepsAndEnds(t *testing.T) {
	d := &countingDecoder{slots: 2, steps: map[int]int{}}
	a, b, c := &seq{name: "a", want: 3}, &seq{name: "b", temp: 1, want: 2}, &seq{name: "c", want: 1}
	p := newScript(d, a, b, c)
	if err := p.l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"prefill [0 1]", "step [0] t=0", "step [1] t=1", "step [0] t=0", "step [1] t=1", "release 1",
		"prefill [1]", "step [0 1] t=0", "release 0", "release 1"}
	if !slices.Equal(d.calls, want) {
		t.Fatalf("decoder calls\n%v\nwant\n%v", d.calls, want)
	}
	if !slices.Equal(a.tokens, []int64{0, 1, 2}) || !slices.Equal(b.tokens, []int64{10, 11}) || !slices.Equal(c.tokens, []int64{12}) {
		t.Fatalf("tokens a %v b %v c %v, want [0 1 2] [10 11] [12]", a.tokens, b.tokens, c.tokens)
	}
	if st := p.l.Stats(); st.Steps != 5 || st.Generated != 6 || st.Prefilled != 9 {
		t.Fatalf("stats %+v, want 5 steps, 6 tokens generated, 9 prefilled", st)
	}
}

// A sequence that parks for a tool leaves the batch; with no slot active
// the loop waits for its reply, prefills the observation and decodes it
// again in the same slot.
func TestLoopParksUntilReply(t *testing.T) {
	d := &countingDecoder{slots: 1, steps: map[int]int{}}
	x := &seq{name: "x", want: 2, tool: true}
	p := newScript(d, x)
	if err := p.l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"prefill [0]", "step [0] t=0", "prefill [0]", "step [0] t=0", "release 0"}
	if !slices.Equal(d.calls, want) {
		t.Fatalf("decoder calls\n%v\nwant\n%v", d.calls, want)
	}
	if st := p.l.Stats(); st.Steps != 2 || st.Prefilled != 5 {
		t.Fatalf("stats %+v, want 2 steps and 5 tokens prefilled", st)
	}
}

// A failing decode call goes to Failed with the decoder's error and is not
// counted; the loop goes on when Failed returns nil and ends with its
// error otherwise (a failing prefill).
func TestLoopFailures(t *testing.T) {
	lost := errors.New("device lost")
	d := &countingDecoder{slots: 1, steps: map[int]int{}, fail: lost}
	p := newScript(d, &seq{name: "x", want: 2}, &seq{name: "y", want: 2})
	if err := p.l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"x: decode step: device lost", "y: decode step: device lost"}; !slices.Equal(p.failed, want) {
		t.Fatalf("failed %q, want %q", p.failed, want)
	}
	if st := p.l.Stats(); st.Steps != 0 || st.Generated != 0 {
		t.Fatalf("stats %+v, want no step counted", st)
	}

	d = &countingDecoder{slots: 2, steps: map[int]int{}, failPrefill: lost}
	p = newScript(d, &seq{name: "x", want: 2}, &seq{name: "y", want: 2})
	p.failErr = errors.New("stop here")
	if err := p.l.Run(context.Background()); err != p.failErr {
		t.Fatalf("Run returned %v, want Failed's error", err)
	}
	if want := []string{"x: prefill x, y: device lost", "y: prefill x, y: device lost"}; !slices.Equal(p.failed, want) {
		t.Fatalf("failed %q, want %q", p.failed, want)
	}
	if !slices.Equal(d.calls, []string{"prefill [0 1]", "release 0", "release 1"}) {
		t.Fatalf("decoder calls %v", d.calls)
	}
}

// When the context has ended, Run hands the policy's Stop the context's
// error and returns what Stop returns, decoding nothing.
func TestLoopStopsOnCancel(t *testing.T) {
	d := &countingDecoder{slots: 1, steps: map[int]int{}}
	p := newScript(d, &seq{name: "x", want: 2})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.l.Run(ctx); !errors.Is(err, context.Canceled) || !errors.Is(p.stopped, context.Canceled) {
		t.Fatalf("Run returned %v, Stop got %v; want the context's error", err, p.stopped)
	}
	if len(d.calls) != 0 {
		t.Fatalf("decoder calls %v, want none", d.calls)
	}
}
