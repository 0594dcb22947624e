package rollout

import (
	"reflect"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/trajectory"
)

// A turn keeps each of its calls apart: its own name, arguments, success
// and latency, and as result the response the model was shown for it.
func TestTurnRecordKeepsEachCall(t *testing.T) {
	full := "a long passage the observation cap cut"
	env := []trajectory.ToolCall{
		{Name: "search", Args: `{"query":"q"}`, Result: full, OK: true, LatencyMS: 12, Refs: []string{"Paris"}},
		{Name: "lookup", Args: `{"title":"x"}`, Result: "Error: no such title", LatencyMS: 3},
	}
	r := envReply{text: "<tool_call>...</tool_call>", gen: 7, latency: 15 * time.Millisecond,
		res: envs.StepResult{Calls: env, Responses: []string{"a long passage\n...[truncated]", "Error: no such title"}, ProcessReward: 0.02}}
	got := turnRecord(r)
	want := trajectory.Turn{Text: "<tool_call>...</tool_call>", GenTokens: 7, ProcessReward: 0.02, LatencyMS: 15,
		Calls: []trajectory.ToolCall{
			{Name: "search", Args: `{"query":"q"}`, Result: "a long passage\n...[truncated]", OK: true, LatencyMS: 12, Refs: []string{"Paris"}},
			{Name: "lookup", Args: `{"title":"x"}`, Result: "Error: no such title", LatencyMS: 3},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("turn record\n%+v\nwant\n%+v", got, want)
	}
	if env[0].Result != full {
		t.Errorf("the environment's own call record was changed: %q", env[0].Result)
	}
}

// Calls of a turn that ended the episode were never shown to the model:
// they keep no result.
func TestTurnRecordUnshownCalls(t *testing.T) {
	r := envReply{res: envs.StepResult{Done: true, Stop: trajectory.StopCancelled,
		Calls: []trajectory.ToolCall{{Name: "search", Args: "{}", Result: "whole output", LatencyMS: 4}}}}
	got := turnRecord(r).Calls
	if len(got) != 1 || got[0].Name != "search" || got[0].Result != "" || got[0].LatencyMS != 4 {
		t.Errorf("calls %+v; want the search call without a result", got)
	}
}
