package calculator

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentrl/agentrl/envs"
)

// Name is the tool's registered name.
const Name = "calculator"

// Tool is the calculator tool.
type Tool struct{}

// New returns the calculator, which has no settings.
func New() Tool { return Tool{} }

// Name returns "calculator".
func (Tool) Name() string { return Name }

// Description tells the model what the calculator understands.
func (Tool) Description() string {
	return "Evaluate an arithmetic expression and return its value. Supports + - * / ^ (or **), " +
		"parentheses, unary minus, decimals, scientific notation (1.5e3), the constants pi and e, " +
		"and the functions sqrt, abs, round(x) or round(x, digits), floor, ceil, exp, ln, " +
		"log(x) (natural) or log(x, base), log10, log2, min, max."
}

// Parameters is the JSON schema of the arguments: {"expression": string}.
func (Tool) Parameters() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"expression":{"type":"string",`+
		`"description":"the expression to evaluate, e.g. (3 + 4.5) * 2^10","minLength":1,"maxLength":%d}},`+
		`"required":["expression"],"additionalProperties":false}`, MaxLength))
}

// Call evaluates args.expression. A bad expression is an error naming the
// position of the offending token.
func (Tool) Call(ctx context.Context, args json.RawMessage) (envs.Result, error) {
	if err := ctx.Err(); err != nil {
		return envs.Result{}, err
	}
	var in struct {
		Expression string `json:"expression"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return envs.Result{}, fmt.Errorf("calculator: bad arguments %s: %w", args, err)
	}
	x, err := Eval(in.Expression)
	if err != nil {
		return envs.Result{}, fmt.Errorf("cannot evaluate %q: %w", in.Expression, err)
	}
	return envs.Result{Content: Format(x), OK: true}, nil
}
