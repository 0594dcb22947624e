package decoding

import (
	"sync/atomic"
	"time"
)

// Stats are what a Loop has done since it started. Generated/Steps is
// the mean decode batch.
type Stats struct {
	Steps     int64         // decode calls that succeeded
	Generated int64         // tokens they sampled
	Prefilled int64         // tokens prefilled
	Decode    time.Duration // in decode calls
	Prefill   time.Duration // in prefill calls and what follows each (Prefill's done)
	Idle      time.Duration // in Policy.Wait, no slot able to run
}

// counters are a Loop's Stats as it runs, safe to read from any goroutine.
type counters struct {
	steps, generated, prefilled atomic.Int64
	decode, prefill, idle       atomic.Int64 // nanoseconds
}

func (c *counters) load() Stats {
	return Stats{Steps: c.steps.Load(), Generated: c.generated.Load(), Prefilled: c.prefilled.Load(),
		Decode: time.Duration(c.decode.Load()), Prefill: time.Duration(c.prefill.Load()), Idle: time.Duration(c.idle.Load())}
}
