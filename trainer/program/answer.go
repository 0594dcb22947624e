package program

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// answerOf reads what the program printed: its last non-empty line is the
// answer, or, when that line is a JSON object, the object's "answer"
// (a string) and "reward" (a number, optional).
func answerOf(stdout []byte) (answer string, reward float64, err error) {
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return "", 0, fmt.Errorf("printed no answer on stdout")
	}
	if !strings.HasPrefix(last, "{") {
		return last, 0, nil
	}
	var obj struct {
		Answer *string         `json:"answer"`
		Reward json.RawMessage `json:"reward"`
	}
	if err := json.Unmarshal([]byte(last), &obj); err != nil {
		return "", 0, fmt.Errorf("printed a line that starts like JSON but is not an object (%v): %.200q", err, last)
	}
	if obj.Answer == nil {
		return "", 0, fmt.Errorf(`printed a JSON object without a string "answer": %.200q`, last)
	}
	if len(obj.Reward) > 0 && string(obj.Reward) != "null" {
		if err := json.Unmarshal(obj.Reward, &reward); err != nil || math.IsNaN(reward) || math.IsInf(reward, 0) {
			return "", 0, fmt.Errorf(`printed a "reward" that is not a finite number: %s`, obj.Reward)
		}
	}
	return *obj.Answer, reward, nil
}
