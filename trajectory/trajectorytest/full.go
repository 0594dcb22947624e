// Package trajectorytest holds trajectories for tests of the packages that
// store, render or read trajectories.
package trajectorytest

import "github.com/agentrl/agentrl/trajectory"

// Full is a trajectory with every field set, in two turns: a turn with two
// tool calls (one failed) and a turn whose call did not parse. Its text
// mixes scripts and emoji, one turn holds invalid UTF-8, its tokens reach
// the int32 limits and its answer is correct.
func Full() *trajectory.Trajectory {
	return &trajectory.Trajectory{
		ID: "3-train-1-2", TaskID: "hp-0042", Dataset: "hotpotqa", Hops: 2, Group: 1, Sample: 2,
		Split: trajectory.Train, Iteration: 3, PolicyVersion: 5,
		Question: "Qui a écrit « Le Petit Prince » ? 作者は誰? 🚀",
		Gold:     []string{"Antoine de Saint-Exupéry", "Saint-Exupéry"},
		Answer:   "Antoine de Saint-Exupéry",
		Correct:  true,
		Outcome:  1, Reward: 1.125, Support: 2, Evidence: 2, Components: map[string]float64{"em": 1, "format": 0.1, "process": 0.025, "neg": -0.5},
		Stop: trajectory.StopMaxTokens, Error: "tool timeout after 5s", DurationMS: 4321.25, Dropped: trajectory.DroppedSurplus,
		PromptLen:     3,
		Tokens:        []int32{151644, 0, -1, 2147483647, 42, 7},
		Logprobs:      []float32{0, 0, 0, -0.125, -3.5, 0},
		Mask:          []uint8{0, 0, 0, 1, 1, 0},
		TurnOf:        []int16{-1, -1, -1, 0, 0, 1},
		Values:        []float32{0.5, -0.25, 1e-7, 3e8, -1, 0},
		Advantages:    []float32{0, 0, 0, 0.75, -0.75, 0},
		Returns:       []float32{1, 1, 1, 1.5, 0.5, 0},
		TrainLogprobs: []float32{0, 0, 0, -0.25, -3.25, 0},
		Entropies:     []float32{0, 0, 0, 1.5, 0.0625, 0},
		Routing:       []byte{0, 1, 2, 3, 3, 0, 1, 2, 0, 3, 2, 1}, // 6 tokens, 1 sparse layer, top-2
		Turns: []trajectory.Turn{
			{Text: "Je cherche… <tool_call>", GenTokens: 2, ProcessReward: 0.025, Evidence: 2, LatencyMS: 13, PolicyVersion: 5, Calls: []trajectory.ToolCall{
				{Name: "search", Args: `{"query":"Petit Prince auteur"}`, Result: "Le Petit Prince — Saint-Exupéry (1943)\nligne 2",
					OK: true, LatencyMS: 12.5, Refs: []string{"Le Petit Prince", "Saint-Exupéry"}},
				{Name: "lookup", Args: `{"title":"Vol de nuit"}`, Result: "Error: no passage is titled \"Vol de nuit\"", LatencyMS: 0.75},
			}},
			{Text: "bad bytes \xff\xfe here", GenTokens: 1, ProcessReward: -0.1, LatencyMS: 0, PolicyVersion: 6, Calls: []trajectory.ToolCall{
				{ParseError: "unexpected end of JSON input", Result: "error: could not parse tool call"},
			}},
		},
		Requests: []trajectory.Request{
			{Index: 0, PromptTokens: 3, CompletionTokens: 2, Link: "start", Segment: 0, Finish: "tool_calls", Status: 200, LatencyMS: 41.5},
			{Index: 1, Status: 400, Segment: -1, LatencyMS: 0.25},
			{Index: 2, PromptTokens: 5, CompletionTokens: 1, Link: "extend", Segment: 0, Finish: "stop", Status: 200, LatencyMS: 7},
		},
	}
}
