package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/trajectory"
)

// RenderOptions choose what Render shows and how.
type RenderOptions struct {
	ShowMask bool                     // list the tokens in runs of equal action-mask bit
	Color    bool                     // highlight with ANSI escape codes
	Decode   func(ids []int32) string // turns token ids into text; nil shows the ids
}

// ANSI styles used when RenderOptions.Color is set.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
)

// renderer writes one trajectory, remembering the first write error.
type renderer struct {
	w     io.Writer
	color bool
	err   error
}

// style wraps s in an ANSI style when colour is on.
func (r *renderer) style(code, s string) string {
	if !r.color || s == "" {
		return s
	}
	return code + s + ansiReset
}

// line writes one formatted line.
func (r *renderer) line(format string, args ...any) {
	if r.err == nil {
		_, r.err = fmt.Fprintf(r.w, format+"\n", args...)
	}
}

// block writes text with every line indented.
func (r *renderer) block(indent, code, text string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		r.line("%s%s", indent, r.style(code, l))
	}
}

// Render writes a readable account of a trajectory: the question, each
// turn's text with its tool calls and their results, the answer, rewards
// and stop reason, and with ShowMask the tokens grouped by action-mask bit.
func Render(w io.Writer, t *trajectory.Trajectory, opts RenderOptions) error {
	if t == nil {
		return fmt.Errorf("render: nil trajectory")
	}
	r := &renderer{w: w, color: opts.Color}
	r.line("%s", r.style(ansiBold, fmt.Sprintf("== trajectory %s: iteration %d, %s, policy version %d ==",
		t.ID, t.Iteration, t.Split, t.PolicyVersion)))
	r.line("task %s (%s, %d hops), group %d, sample %d", t.TaskID, t.Dataset, t.Hops, t.Group, t.Sample)
	if t.Support > 0 {
		r.line("evidence: %d of its %d supporting passages retrieved", t.Evidence, t.Support)
	}
	r.line("%s %s", r.style(ansiBold, "question:"), t.Question)
	r.line("%s %s", r.style(ansiBold, "gold:"), strings.Join(t.Gold, " | "))
	for i, u := range t.Turns {
		r.turn(i, len(t.Turns), u)
	}
	verdict := r.style(ansiRed, "wrong")
	if t.Correct {
		verdict = r.style(ansiGreen, "correct")
	}
	r.line("%s %s (%s)", r.style(ansiBold, "answer:"), strconv.Quote(t.Answer), verdict)
	stop := string(t.Stop)
	if t.Stop.Truncated() {
		stop += " (truncated)"
	}
	r.line("%s %s, outcome %s, reward %s%s", r.style(ansiBold, "stop:"), stop,
		shortNum(t.Outcome), shortNum(t.Reward), components(t.Components))
	if t.Error != "" {
		r.line("%s %s", r.style(ansiRed, "error:"), t.Error)
	}
	r.line("tokens: %d prompt, %d total, %d action; %s ms", t.PromptLen, len(t.Tokens), t.ActionTokens(), shortNum(t.DurationMS))
	if opts.ShowMask {
		r.mask(t, opts.Decode)
	}
	if r.err != nil {
		return fmt.Errorf("render %s: %w", t.ID, r.err)
	}
	return nil
}

// turn writes one turn: its text, then each of its tool calls.
func (r *renderer) turn(i, n int, u trajectory.Turn) {
	evidence := ""
	if u.Evidence > 0 {
		evidence = fmt.Sprintf(", evidence %d", u.Evidence)
	}
	r.line("%s", r.style(ansiBold, fmt.Sprintf("-- turn %d/%d, %d tokens, process reward %s%s --", i+1, n, u.GenTokens, shortNum(u.ProcessReward), evidence)))
	r.block("  ", "", u.Text)
	for _, c := range u.Calls {
		r.call(c)
	}
}

// call writes one tool call, or why the turn's calls did not parse, and
// the result the model was shown.
func (r *renderer) call(c trajectory.ToolCall) {
	switch {
	case c.ParseError != "":
		r.line("  %s %s", r.style(ansiRed, "tool call unparsed:"), c.ParseError)
	case c.Name != "":
		status := r.style(ansiGreen, "ok")
		if !c.OK {
			status = r.style(ansiRed, "failed")
		}
		r.line("  %s %s (%s, %s ms)", r.style(ansiCyan, "tool call: "+c.Name), c.Args, status, shortNum(c.LatencyMS))
	}
	if c.Result != "" {
		r.line("  %s", r.style(ansiYellow, "result:"))
		r.block("    ", ansiYellow, c.Result)
	}
}

// mask writes the tokens in runs of equal mask bit, each run decoded when a
// decoder is given, else as ids.
func (r *renderer) mask(t *trajectory.Trajectory, decode func([]int32) string) {
	r.line("%s", r.style(ansiBold, "-- tokens by action mask (1 = sampled by the policy, 0 = prompt, template or tool output) --"))
	n := min(len(t.Tokens), len(t.Mask))
	for start := 0; start < n; {
		end := start + 1
		for end < n && t.Mask[end] == t.Mask[start] {
			end++
		}
		ids := t.Tokens[start:end]
		var text string
		if decode != nil {
			text = strconv.Quote(decode(ids))
		} else {
			parts := make([]string, len(ids))
			for i, id := range ids {
				parts[i] = strconv.Itoa(int(id))
			}
			text = strings.Join(parts, " ")
		}
		code := ansiDim
		if t.Mask[start] != 0 {
			code = ansiGreen
		}
		r.line("%s %s", r.style(code, fmt.Sprintf("[%d] %d tokens:", t.Mask[start], end-start)), r.style(code, text))
		start = end
	}
}

// shortNum formats a float shortly (four significant digits).
func shortNum(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// components formats reward components as " (name=value, ...)" in name
// order.
func components(c map[string]float64) string {
	if len(c) == 0 {
		return ""
	}
	return " (" + joinComponents(c, func(k string, v float64) string { return k + "=" + shortNum(v) }) + ")"
}
