package envs

import (
	"encoding/json"
	"strings"

	"github.com/agentrl/agentrl/envs/reward"
	"github.com/agentrl/agentrl/toolcall"
	"github.com/agentrl/agentrl/trajectory"
)

// episodeMemo remembers what earlier turns did, for the process rewards:
// which calls were made (to spot repeats) and which supporting passages
// were already retrieved (to reward each only once).
type episodeMemo struct {
	seen  map[string]bool // tool name + canonical arguments of valid calls
	found map[string]bool // supporting titles retrieved, lowercased
}

func newEpisodeMemo() episodeMemo {
	return episodeMemo{seen: map[string]bool{}, found: map[string]bool{}}
}

// facts counts the turn's valid, invalid and repeated calls and newly
// found supporting passages (never from another world's corpus), and
// remembers them. outs is nil for a turn whose calls did not parse. A call
// whose tool panicked or timed out counts as neither valid nor invalid:
// the fault is the tool's.
func (m *episodeMemo) facts(calls []trajectory.ToolCall, outs []callOutcome, support []string) reward.TurnFacts {
	var f reward.TurnFacts
	for i, c := range calls {
		if c.ParseError != "" || outs[i].status == callRejected {
			f.Invalid++
			continue
		}
		if outs[i].status != callDone {
			continue
		}
		key := c.Name + " " + canonicalArgs(c.Args)
		if m.seen[key] {
			f.Repeated++
		} else {
			m.seen[key] = true
			f.Valid++
		}
		if outs[i].foreign {
			continue
		}
		for _, s := range reward.MatchSupport(c.Refs, support) {
			k := strings.ToLower(strings.TrimSpace(s))
			if !m.found[k] {
				m.found[k] = true
				f.NewSupport++
			}
		}
	}
	return f
}

// canonicalArgs renders JSON arguments with sorted keys and every string
// lowercased with its whitespace collapsed, so that {"query": "Paris "} and
// {"query":"paris"} count as the same call.
func canonicalArgs(args string) string {
	v, err := toolcall.DecodeJSON([]byte(args))
	if err != nil {
		return args
	}
	b, err := json.Marshal(canonicalValue(v))
	if err != nil {
		return args
	}
	return string(b)
}

func canonicalValue(v any) any {
	switch x := v.(type) {
	case string:
		return strings.Join(strings.Fields(strings.ToLower(x)), " ")
	case []any:
		for i := range x {
			x[i] = canonicalValue(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = canonicalValue(x[k])
		}
	}
	return v
}
