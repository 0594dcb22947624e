package program

import "testing"

// What a program prints, read as its answer: the last non-empty line, or
// that line's JSON object; anything else is no answer.
func TestAnswerOf(t *testing.T) {
	cases := []struct {
		out    string
		answer string
		reward float64
		ok     bool
	}{
		{"Tarn\n", "Tarn", 0, true},
		{"searching...\nfound it\n  Tarn town  \n\n", "Tarn town", 0, true},
		{`{"answer": "Tarn", "reward": 0.25}`, "Tarn", 0.25, true},
		{"log line\n{\"answer\": \"\"}\n", "", 0, true},
		{"", "", 0, false},
		{"  \n\n", "", 0, false},
		{`{"reward": 1}`, "", 0, false},
		{`{"answer": 3}`, "", 0, false},
		{`{"answer": "x", "reward": "high"}`, "", 0, false},
		{`{"answer": "x"`, "", 0, false},
	}
	for _, c := range cases {
		a, r, err := answerOf([]byte(c.out))
		if (err == nil) != c.ok || a != c.answer || r != c.reward {
			t.Errorf("%q: answer %q reward %v err %v; want %q %v ok=%v", c.out, a, r, err, c.answer, c.reward, c.ok)
		}
	}
}
