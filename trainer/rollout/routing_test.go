package rollout

import (
	"context"
	"strings"
	"testing"
)

// routingDecoder is the scripted decoder recording, as a routing, one
// byte per cached token: the token itself.
type routingDecoder struct{ *scriptedDecoder }

func (d routingDecoder) RoutingBytes(slot int) ([]byte, error) {
	out := make([]byte, len(d.hist[slot]))
	for i, v := range d.hist[slot] {
		out[i] = byte(v)
	}
	return out, nil
}

// With RecordRouting each trajectory keeps its slot's record of every
// token it holds (the prompt, the observations, every sampled token, the
// last one included), taken before the slot is released; without it none;
// a decoder that records nothing is refused.
func TestRecordRouting(t *testing.T) {
	reqs := []Request{{Task: task(0), Group: 0, Samples: 2}, {Task: task(1), Group: 1, Samples: 2}}
	for _, on := range []bool{false, true} {
		o := opts()
		o.RecordRouting = on
		trs, _, err := Run(context.Background(), routingDecoder{newScripted(t, 4)}, &fakeChat{}, factory(10, 1000, 0), reqs, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range trs {
			if !on {
				if tr.Routing != nil {
					t.Errorf("%s: routing recorded with RecordRouting off", tr.ID)
				}
				continue
			}
			if len(tr.Routing) != len(tr.Tokens) {
				t.Fatalf("%s: routing of %d tokens for %d tokens", tr.ID, len(tr.Routing), len(tr.Tokens))
			}
			for i, v := range tr.Tokens {
				if tr.Routing[i] != byte(v) {
					t.Fatalf("%s: token %d (%d) has the record %d", tr.ID, i, v, tr.Routing[i])
				}
			}
		}
	}
	o := opts()
	o.RecordRouting = true
	if _, _, err := Run(context.Background(), newScripted(t, 4), &fakeChat{}, factory(10, 1000, 0), reqs, o); err == nil || !strings.Contains(err.Error(), "routing replay") {
		t.Errorf("a decoder that records no routing: %v", err)
	}
}
